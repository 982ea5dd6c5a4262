// Exact Kubernetes quantity arithmetic: parse, multiply, compare, round to bytes, format.
// Values are rationals of bigints, so "1.5Gi", "1e9" and "128974848000m" never pass through
// floating point (DESIGN.md "Decisions that matter for correctness", last item).

/**
 * An exact rational value in base units (bytes, for memory): `numerator / denominator`, with
 * `denominator > 0` and the fraction in lowest terms, so equal values have equal fields.
 */
export interface Quantity {
  readonly numerator: bigint;
  readonly denominator: bigint;
}

/** Thrown for a string that is not a valid quantity or decimal; `input` is the offending string. */
export class QuantityError extends Error {
  readonly input: string;

  constructor(input: string, detail: string) {
    super(`invalid quantity ${JSON.stringify(input)}: ${detail}`);
    this.name = "QuantityError";
    this.input = input;
  }
}

/**
 * Exponents beyond this are refused: no memory size needs them, and 10^huge would let one
 * string cost unbounded time and memory.
 */
const MAX_EXPONENT = 1000;

// The grammar of https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
// as the API server implements it (resource.ParseQuantity): the exponent after e/E is an integer.
const QUANTITY_RE = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?\d+))?$/;
const DECIMAL_RE = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/;

const BINARY_POWER: Readonly<Record<string, bigint>> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL_EXPONENT: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
/** Largest first, so formatting picks the largest unit that divides exactly. */
const BINARY_UNITS: ReadonlyArray<readonly [string, bigint]> = [
  ["Ei", 1n << 60n],
  ["Pi", 1n << 50n],
  ["Ti", 1n << 40n],
  ["Gi", 1n << 30n],
  ["Mi", 1n << 20n],
  ["Ki", 1n << 10n],
];

function abs(n: bigint): bigint {
  return n < 0n ? -n : n;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = abs(a);
  let y = abs(b);
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/**
 * Builds the reduced rational `numerator / denominator`.
 * @throws {RangeError} when `denominator` is 0.
 */
export function rational(numerator: bigint, denominator = 1n): Quantity {
  if (denominator === 0n) throw new RangeError("quantity denominator must not be zero");
  const sign = denominator < 0n ? -1n : 1n;
  const g = gcd(numerator, denominator) || 1n;
  return { numerator: (sign * numerator) / g, denominator: (sign * denominator) / g };
}

/** `mantissa × 10^exp10 × 2^exp2`, exactly. */
function scaled(sign: string, intPart: string, fracPart: string, exp10: number, exp2: bigint): Quantity {
  let num = BigInt((intPart || "0") + fracPart);
  let den = 10n ** BigInt(fracPart.length);
  if (sign === "-") num = -num;
  if (exp10 >= 0) num *= 10n ** BigInt(exp10);
  else den *= 10n ** BigInt(-exp10);
  return rational(num << exp2, den);
}

function exponent(input: string, text: string): number {
  const e = Number.parseInt(text, 10);
  if (Math.abs(e) > MAX_EXPONENT) throw new QuantityError(input, `exponent ${text} is out of range (|e| <= ${MAX_EXPONENT})`);
  return e;
}

/**
 * Parses a Kubernetes quantity string exactly: an optionally signed decimal number (`1`, `1.5`,
 * `1.`, `.5`) followed by nothing, a binary-SI suffix (`Ki Mi Gi Ti Pi Ei`, powers of 1024), a
 * decimal-SI suffix (`n u m k M G T P E`, powers of 1000) or a decimal exponent (`e3`, `E-2`).
 * No spaces. `"1.5Gi"` → 1610612736, `"128974848000m"` → 128974848, `"1e9"` → 10^9.
 * Source: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
 * @param text the quantity, e.g. a container's `resources.limits.memory`.
 * @returns the exact value in base units (bytes for memory).
 * @throws {QuantityError} naming `text` when it is malformed or its exponent exceeds ±1000.
 */
export function parseQuantity(text: string): Quantity {
  if (typeof text !== "string") throw new QuantityError(String(text), "not a string");
  const m = QUANTITY_RE.exec(text);
  if (m === null) {
    throw new QuantityError(text, "expected <number><suffix> with suffix one of Ki Mi Gi Ti Pi Ei n u m k M G T P E, e<int>, or none");
  }
  const [, sign = "", intPart = "", frac1, frac2, binary, decimal, exp] = m;
  const fracPart = frac1 ?? frac2 ?? "";
  if (binary !== undefined) return scaled(sign, intPart, fracPart, 0, BINARY_POWER[binary] ?? 0n);
  if (decimal !== undefined) return scaled(sign, intPart, fracPart, DECIMAL_EXPONENT[decimal] ?? 0, 0n);
  return scaled(sign, intPart, fracPart, exp === undefined ? 0 : exponent(text, exp), 0n);
}

/**
 * Parses a plain decimal number string (`"1.5"`, `"2"`, `"1e-7"`, `"1.2e+21"`) exactly; no SI
 * suffixes. Used for factors such as `spec.memMultiplier`: "1.5" → 3/2.
 * @throws {QuantityError} naming `text` when it is malformed.
 */
export function parseDecimal(text: string): Quantity {
  const m = DECIMAL_RE.exec(text);
  if (m === null) throw new QuantityError(text, "expected a decimal number such as 1.5 or 2e3");
  const [, sign = "", intPart = "", frac1, frac2, exp] = m;
  return scaled(sign, intPart, frac1 ?? frac2 ?? "", exp === undefined ? 0 : exponent(text, exp), 0n);
}

/**
 * The exact value of the decimal a JavaScript number was written as: its shortest round-trip
 * string (`String(1.1)` is "1.1"), so a factor read from JSON or YAML means what its author
 * typed rather than the nearest binary double (0.1 is 1/10, not 3602879701896397/2^55).
 * @throws {QuantityError} when `n` is NaN or infinite.
 */
export function fromNumber(n: number): Quantity {
  if (!Number.isFinite(n)) throw new QuantityError(String(n), "not a finite number");
  return parseDecimal(String(n));
}

/** `a × b`, exactly. */
export function multiply(a: Quantity, b: Quantity): Quantity {
  return rational(a.numerator * b.numerator, a.denominator * b.denominator);
}

/**
 * `a ÷ b`, exactly: `divide(parseQuantity("256Mi"), parseQuantity("384Mi"))` is 2/3.
 * @throws {RangeError} when `b` is 0.
 */
export function divide(a: Quantity, b: Quantity): Quantity {
  if (b.numerator === 0n) throw new RangeError("division of a quantity by zero");
  return rational(a.numerator * b.denominator, a.denominator * b.numerator);
}

/** -1, 0 or 1 as `a` is less than, equal to or greater than `b`; exact. */
export function compare(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const l = a.numerator * b.denominator;
  const r = b.numerator * a.denominator;
  return l < r ? -1 : l > r ? 1 : 0;
}

/**
 * Whether two optional quantity texts are the same amount (`512Mi` = `536870912`): both absent,
 * the same text, or equal values; a text present on one side only is not the same.
 * @throws {QuantityError} when two different texts are compared and one is not a quantity.
 */
export function sameQuantity(a: string | undefined, b: string | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && compare(parseQuantity(a), parseQuantity(b)) === 0);
}

/** The smaller of `a` and `b` (either, when equal). */
export function min(a: Quantity, b: Quantity): Quantity {
  return compare(a, b) <= 0 ? a : b;
}

/** Smallest integer ≥ `q` (bytes, for memory): rounding up, so a raised limit never ends lower. */
export function ceil(q: Quantity): bigint {
  const f = q.numerator / q.denominator; // truncates toward zero
  return f * q.denominator < q.numerator ? f + 1n : f;
}

/** Largest integer ≤ `q`: a cap rounded to whole bytes stays within the cap. */
export function floor(q: Quantity): bigint {
  const f = q.numerator / q.denominator;
  return f * q.denominator > q.numerator ? f - 1n : f;
}

/** Whole bytes (or base units) as a {@link Quantity}. */
export function fromInteger(n: bigint): Quantity {
  return { numerator: n, denominator: 1n };
}

/**
 * Formats whole bytes in binary SI: the largest of `Ei Pi Ti Gi Mi Ki` that divides `bytes`
 * exactly, else plain bytes; never `m`, never a fraction. 805306368 → "768Mi",
 * 1000000000 → "1000000000", 0 → "0", -1024 → "-1Ki". `parseQuantity` reads the result back
 * to the same value.
 * Source: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
 */
export function formatBytes(bytes: bigint): string {
  if (bytes < 0n) return `-${formatBytes(-bytes)}`;
  if (bytes === 0n) return "0";
  for (const [suffix, size] of BINARY_UNITS) {
    if (bytes % size === 0n) return `${bytes / size}${suffix}`;
  }
  return bytes.toString();
}

/**
 * Formats a memory amount for a container's resources: rounded UP to whole bytes (so a limit
 * never shrinks through rounding), then {@link formatBytes}. 603979776 → "576Mi".
 */
export function formatMemory(q: Quantity): string {
  return formatBytes(ceil(q));
}
