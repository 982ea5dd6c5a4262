// Exact Kubernetes quantity parsing, arithmetic and formatting.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  ceil,
  compare,
  divide,
  floor,
  formatBytes,
  formatMemory,
  fromInteger,
  fromNumber,
  min,
  multiply,
  parseDecimal,
  parseQuantity,
  QuantityError,
  rational,
  sameQuantity,
  type Quantity,
} from "../../../functions/lib/quantity.ts";

const Ki = 1024n;
const Mi = Ki * Ki;
const Gi = Mi * Ki;

describe("parseQuantity", () => {
  const cases: Array<[string, Quantity]> = [
    ["256Mi", rational(256n * Mi)],
    ["384Mi", rational(384n * Mi)],
    ["1.5Gi", rational(1610612736n)],
    ["0.5Gi", rational(536870912n)],
    [".5Gi", rational(536870912n)],
    ["1.Gi", rational(Gi)],
    ["1e9", rational(1_000_000_000n)],
    ["1E3", rational(1000n)],
    ["1e+3", rational(1000n)],
    ["15e-1", rational(3n, 2n)],
    ["500M", rational(500_000_000n)],
    ["128974848000m", rational(128974848n)],
    ["1500m", rational(3n, 2n)],
    ["1Ei", rational(1n << 60n)],
    ["1Pi", rational(1n << 50n)],
    ["2Ti", rational(2n << 40n)],
    ["3Ki", rational(3072n)],
    ["1k", rational(1000n)],
    ["1G", rational(1_000_000_000n)],
    ["1T", rational(10n ** 12n)],
    ["1P", rational(10n ** 15n)],
    ["1E", rational(10n ** 18n)],
    ["5u", rational(5n, 1_000_000n)],
    ["7n", rational(7n, 1_000_000_000n)],
    ["0", rational(0n)],
    ["+1Ki", rational(1024n)],
    ["-1Ki", rational(-1024n)],
    ["123456789012345678901234567890", rational(123456789012345678901234567890n)],
    ["0.000000001Gi", rational(Gi, 1_000_000_000n)],
  ];
  for (const [text, want] of cases) {
    it(`parses ${text}`, () => {
      assert.deepEqual(parseQuantity(text), want);
    });
  }

  const malformed = ["", " ", "Gi", "1 Gi", " 1Gi", "1Gi ", "1.5.5", ".", "1K", "1KiB", "1gi", "1e", "1e1.5", "1ee3", "--1", "1Mi1", "0x10", "1_000", "1e2000", "Infinity", "NaN"];
  for (const text of malformed) {
    it(`refuses ${JSON.stringify(text)} with an error naming it`, () => {
      assert.throws(
        () => parseQuantity(text),
        (err: unknown) => err instanceof QuantityError && err.input === text && err.message.includes(JSON.stringify(text)),
      );
    });
  }
});

describe("parseDecimal and fromNumber", () => {
  const cases: Array<[string, Quantity]> = [
    ["1.5", rational(3n, 2n)],
    ["2", rational(2n)],
    ["1.1", rational(11n, 10n)],
    ["1e-7", rational(1n, 10_000_000n)],
    ["1.2e+21", rational(12n * 10n ** 20n)],
  ];
  for (const [text, want] of cases) {
    it(`parses ${text}`, () => assert.deepEqual(parseDecimal(text), want));
    it(`reads the number ${text} as the decimal it was written as`, () => assert.deepEqual(fromNumber(Number(text)), want));
  }
  for (const text of ["1.5Gi", "1k", "", "x"]) {
    it(`refuses ${JSON.stringify(text)} as a plain decimal`, () => assert.throws(() => parseDecimal(text), QuantityError));
  }
  for (const n of [Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`refuses the number ${n}`, () => assert.throws(() => fromNumber(n), QuantityError));
  }
});

describe("formatMemory of a multiplied quantity", () => {
  const cases: Array<[string, number, string]> = [
    ["384Mi", 1.5, "576Mi"],
    ["256Mi", 1.5, "384Mi"],
    ["384Mi", 2, "768Mi"],
    ["256Mi", 2, "512Mi"],
    ["1Gi", 1.5, "1536Mi"],
    ["1Gi", 10, "10Gi"],
    ["512Ki", 2, "1Mi"],
    ["512Pi", 2, "1Ei"],
    ["1e9", 2, "1953125Ki"], // 2e9 = 1953125 × 1024
    ["500M", 1.1, "550000000"],
    ["128974848000m", 2, "246Mi"],
    ["1000", 1.0001, "1001"], // 1000.1 bytes rounds up
    ["1", 1.5, "2"],
    ["3", 1.1, "4"], // 3.3 → 4
  ];
  for (const [from, factor, want] of cases) {
    it(`${from} × ${factor} → ${want}`, () => {
      assert.equal(formatMemory(multiply(parseQuantity(from), fromNumber(factor))), want);
    });
  }
});

describe("formatBytes", () => {
  const cases: Array<[bigint, string]> = [
    [0n, "0"],
    [1n, "1"],
    [1023n, "1023"],
    [1024n, "1Ki"],
    [1536n, "1536"],
    [3n * 512n, "1536"],
    [1_000_000_000n, "1000000000"],
    [805306368n, "768Mi"],
    [Gi, "1Gi"],
    [1024n * Gi, "1Ti"],
    [1n << 60n, "1Ei"],
    [1n << 70n, "1024Ei"],
    [-2048n, "-2Ki"],
  ];
  for (const [bytes, want] of cases) {
    it(`${bytes} → ${want}`, () => assert.equal(formatBytes(bytes), want));
  }
});

describe("compare, min, ceil, floor", () => {
  it("orders across suffixes", () => {
    assert.equal(compare(parseQuantity("1Gi"), parseQuantity("1G")), 1);
    assert.equal(compare(parseQuantity("1G"), parseQuantity("1Gi")), -1);
    assert.equal(compare(parseQuantity("1024Mi"), parseQuantity("1Gi")), 0);
    assert.equal(compare(parseQuantity("1000m"), parseQuantity("1")), 0);
    assert.equal(compare(parseQuantity("-1"), parseQuantity("0")), -1);
  });
  it("sameQuantity: equal amounts across suffixes, both absent, or neither", () => {
    assert.equal(sameQuantity("512Mi", "536870912"), true);
    assert.equal(sameQuantity(undefined, undefined), true);
    assert.equal(sameQuantity("512Mi", "513Mi"), false);
    assert.equal(sameQuantity("512Mi", undefined), false);
    assert.equal(sameQuantity(undefined, "512Mi"), false);
    assert.throws(() => sameQuantity("512Mi", "lots"), QuantityError);
  });
  it("min picks the smaller", () => {
    assert.deepEqual(min(parseQuantity("2Gi"), parseQuantity("1500Mi")), parseQuantity("1500Mi"));
    assert.deepEqual(min(parseQuantity("1Ki"), parseQuantity("1M")), parseQuantity("1Ki"));
  });
  const rounding: Array<[Quantity, bigint, bigint]> = [
    [rational(3n, 2n), 2n, 1n],
    [rational(-3n, 2n), -1n, -2n],
    [rational(4n), 4n, 4n],
    [rational(1n, 1_000_000_000n), 1n, 0n],
  ];
  for (const [q, up, down] of rounding) {
    it(`ceil/floor of ${q.numerator}/${q.denominator} are ${up}/${down}`, () => {
      assert.equal(ceil(q), up);
      assert.equal(floor(q), down);
    });
  }
  const quotients: Array<[string, string, Quantity]> = [
    ["256Mi", "384Mi", rational(2n, 3n)],
    ["400Mi", "1", rational(400n * Mi)],
    ["1.5", "-3", rational(-1n, 2n)],
    ["0", "1Gi", rational(0n)],
  ];
  for (const [a, b, want] of quotients) {
    it(`divide ${a} by ${b} exactly`, () => assert.deepEqual(divide(parseQuantity(a), parseQuantity(b)), want));
  }
  it("divide refuses a zero divisor", () => assert.throws(() => divide(rational(1n), rational(0n)), RangeError));
  it("rational refuses a zero denominator", () => assert.throws(() => rational(1n, 0n), RangeError));
  it("rational normalises sign and lowest terms", () => assert.deepEqual(rational(6n, -4n), { numerator: -3n, denominator: 2n }));
});

describe("properties", () => {
  const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "k", "M", "G", "m"] as const;
  const quantityText = fc
    .tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.nat({ max: 999 }), fc.constantFrom(...suffixes))
    .map(([whole, frac, suffix]) => `${whole}${frac === 0 ? "" : `.${String(frac).padStart(3, "0")}`}${suffix}`);

  it("formatMemory output parses back to the value rounded up to whole bytes", () => {
    fc.assert(
      fc.property(quantityText, (text) => {
        const q = parseQuantity(text);
        const out = formatMemory(q);
        assert.doesNotMatch(out, /m$|\./);
        const back = parseQuantity(out);
        assert.deepEqual(back, fromInteger(ceil(q)));
        assert.ok(compare(back, q) >= 0);
        assert.ok(compare(back, rational(q.numerator + q.denominator, q.denominator)) < 0);
      }),
    );
  });

  it("formatBytes round-trips every integer", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }), (n) => {
        assert.deepEqual(parseQuantity(formatBytes(n)), fromInteger(n));
      }),
    );
  });

  it("multiplying by a factor above 1 never shrinks a positive quantity", () => {
    fc.assert(
      fc.property(quantityText, fc.integer({ min: 1001, max: 10000 }), (text, milli) => {
        const q = parseQuantity(text);
        fc.pre(q.numerator > 0n);
        const factor = parseDecimal(`${Math.trunc(milli / 1000)}.${String(milli % 1000).padStart(3, "0")}`);
        assert.equal(compare(multiply(q, factor), q), 1);
      }),
    );
  });
});
