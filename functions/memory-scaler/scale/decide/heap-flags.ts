/**
 * The heap cap a container's command, args and env set, read from its spec (pure): a runtime
 * told how much heap to use keeps that heap whatever its memory limit, so a raised limit gives it
 * nothing and the crash moves from an OOM kill (exit 137) to an in-process heap error (exit 134).
 *
 * Read, in each runtime's order of precedence (the last one set wins):
 * - JVM: `JAVA_TOOL_OPTIONS`, then `JDK_JAVA_OPTIONS` (the `java` launcher puts it before the
 *   command line), then the command and args, then `_JAVA_OPTIONS`
 *   (https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html, "Using the JDK_JAVA_OPTIONS
 *   Launcher Environment Variable"; HotSpot reads `_JAVA_OPTIONS` last). `-Xmx<size>` bounds the
 *   heap; without it `-XX:MaxRAM=<size>` bounds the memory the JVM sizes its heap from, and
 *   `-XX:MaxRAMPercentage=<percent>` sizes it from the limit. Sizes: digits and `k`, `m`, `g`, `t`
 *   (either case, powers of 1024), none for bytes.
 * - Node.js: `--max-old-space-size=<MiB>` (or `--max_old_space_size`) in `NODE_OPTIONS`, then in
 *   the command and args (https://nodejs.org/api/cli.html#--max-old-space-sizesize-in-mib).
 * - Go: `GOMEMLIMIT=<bytes>[B|KiB|MiB|GiB|TiB]`; `off` sets none (https://pkg.go.dev/runtime).
 *
 * Env values and args are split at whitespace, so a flag inside `sh -c "java -Xmx512m …"` is
 * found too; each flag is named with its place (an env var, or an index in `command` or `args`),
 * where a rewrite replaces that one token. An env var the spec sets from `valueFrom` (a
 * ConfigMap or Secret) is not known here: it is listed in `unknown`, never guessed.
 */

/** Where a flag is written: an env var's value, or one element of `command` or `args`. */
export type HeapFlagPlace = { readonly env: string } | { readonly command: number } | { readonly args: number };

/** One heap flag as found: which, where, as written, and the cap it sets. */
export interface HeapFlag {
  /** `-Xmx`, `-XX:MaxRAM`, `-XX:MaxRAMPercentage`, `--max-old-space-size` (as spelled), `GOMEMLIMIT`. */
  readonly flag: string;
  /** The whole token as written, e.g. `-Xmx512m`, `--max-old-space-size=512`, `GOMEMLIMIT`'s value `512MiB`. */
  readonly token: string;
  /** The value as written, e.g. `512m`, `75.0`, `512MiB`. */
  readonly value: string;
  readonly place: HeapFlagPlace;
  /** The cap: `bytes` (absolute, kept whatever the limit), or `percent` of the limit (follows it). */
  readonly cap: { readonly bytes: bigint } | { readonly percent: number };
  /** memory-scaler wrote it after a heap error (`heap-settings.ts` `markOwned`): raised with the limit, never held. */
  readonly owned?: true;
}

/** What {@link readHeapFlags} found for one container. */
export interface ContainerHeap {
  readonly container: string;
  /** The flag that binds the heap (the runtimes' precedence), if any. */
  readonly binding: HeapFlag | undefined;
  /** Every heap flag found, in the order read. */
  readonly flags: readonly HeapFlag[];
  /** Heap env vars set from `valueFrom`: their values are not in the spec. */
  readonly unknown: readonly string[];
}

/** What is read of a container (V1Container fits). */
export interface ContainerSpecLike {
  readonly name: string;
  readonly command?: readonly string[] | undefined;
  readonly args?: readonly string[] | undefined;
  readonly env?: readonly { readonly name: string; readonly value?: string | undefined; readonly valueFrom?: unknown }[] | undefined;
}

const KIB = 1024n;
const JVM_UNITS: Readonly<Record<string, bigint>> = { "": 1n, k: KIB, m: KIB ** 2n, g: KIB ** 3n, t: KIB ** 4n };
const GO_UNITS: Readonly<Record<string, bigint>> = { "": 1n, B: 1n, KiB: KIB, MiB: KIB ** 2n, GiB: KIB ** 3n, TiB: KIB ** 4n };
/** The JVM's env vars, in the order HotSpot applies them around the command line. */
const JVM_ENV_BEFORE = ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"] as const;
const JVM_ENV_AFTER = "_JAVA_OPTIONS";
const NODE_ENV = "NODE_OPTIONS";
const GO_ENV = "GOMEMLIMIT";
/** Every env var read here. */
export const HEAP_ENV_VARS: readonly string[] = [...JVM_ENV_BEFORE, JVM_ENV_AFTER, NODE_ENV, GO_ENV];

const JVM_SIZE = /^([0-9]+)([kKmMgGtT]?)$/;
const GO_SIZE = /^([0-9]+)(B|KiB|MiB|GiB|TiB)?$/;

/** A JVM size (`512m`, `1g`, `1073741824`) in bytes; undefined when not one. */
export function jvmBytes(text: string): bigint | undefined {
  const m = JVM_SIZE.exec(text);
  if (m === null) return undefined;
  return BigInt(m[1] ?? "0") * (JVM_UNITS[(m[2] ?? "").toLowerCase()] ?? 1n);
}

/** A `GOMEMLIMIT` value (`512MiB`, `1GiB`, `536870912`) in bytes; undefined when not one (or `off`). */
export function goBytes(text: string): bigint | undefined {
  const m = GO_SIZE.exec(text.trim());
  if (m === null) return undefined;
  return BigInt(m[1] ?? "0") * (GO_UNITS[m[2] ?? ""] ?? 1n);
}

/** The heap flags in one whitespace-split token of `place` (JVM and Node.js alike). */
function flagOf(token: string, place: HeapFlagPlace): HeapFlag | undefined {
  if (token.startsWith("-Xmx")) {
    const value = token.slice(4);
    const bytes = jvmBytes(value);
    return bytes === undefined ? undefined : { flag: "-Xmx", token, value, place, cap: { bytes } };
  }
  const eq = token.indexOf("=");
  if (eq < 0) return undefined;
  const name = token.slice(0, eq);
  const value = token.slice(eq + 1);
  if (name === "-XX:MaxRAM") {
    const bytes = jvmBytes(value);
    return bytes === undefined ? undefined : { flag: name, token, value, place, cap: { bytes } };
  }
  if (name === "-XX:MaxRAMPercentage") {
    const percent = Number(value);
    return value === "" || !Number.isFinite(percent) ? undefined : { flag: name, token, value, place, cap: { percent } };
  }
  if (name === "--max-old-space-size" || name === "--max_old_space_size") {
    return /^[0-9]+$/.test(value) ? { flag: name, token, value, place, cap: { bytes: BigInt(value) * KIB ** 2n } } : undefined;
  }
  return undefined;
}

const tokens = (text: string): string[] => text.split(/\s+/).filter((t) => t !== "");

/**
 * The flag that binds: the last `-Xmx`, else the last `-XX:MaxRAM` (the heap is sized from it,
 * not from the limit), else the last `-XX:MaxRAMPercentage`; the last `--max-old-space-size`;
 * `GOMEMLIMIT`. A container running more than one runtime's flags (rare) is bound by the first
 * absolute one found in that order.
 */
function bindingOf(flags: readonly HeapFlag[]): HeapFlag | undefined {
  const last = (names: readonly string[]) => flags.filter((f) => names.includes(f.flag)).at(-1);
  const order = [["-Xmx"], ["-XX:MaxRAM"], ["--max-old-space-size", "--max_old_space_size"], [GO_ENV], ["-XX:MaxRAMPercentage"]];
  for (const names of order) {
    const found = last(names);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The heap flags of `container` (module comment). Never throws: what is not a flag is ignored. */
export function readHeapFlags(container: ContainerSpecLike): ContainerHeap {
  const env = new Map<string, string>();
  const unknown: string[] = [];
  for (const e of container.env ?? []) {
    if (!HEAP_ENV_VARS.includes(e.name)) continue;
    // A later entry of the same name wins, as the kubelet applies them.
    if (e.valueFrom !== undefined && e.valueFrom !== null) {
      env.delete(e.name);
      if (!unknown.includes(e.name)) unknown.push(e.name);
    } else {
      env.set(e.name, e.value ?? "");
      const i = unknown.indexOf(e.name);
      if (i >= 0) unknown.splice(i, 1);
    }
  }
  const fromEnv = (name: string) => tokens(env.get(name) ?? "").flatMap((t) => flagOf(t, { env: name }) ?? []);
  const fromList = (list: "command" | "args") =>
    (container[list] ?? []).flatMap((text, i) => tokens(text).flatMap((t) => flagOf(t, list === "command" ? { command: i } : { args: i }) ?? []));
  const go = env.get(GO_ENV);
  const goCap = go === undefined ? undefined : goBytes(go);
  const flags: HeapFlag[] = [
    ...JVM_ENV_BEFORE.flatMap(fromEnv),
    ...fromEnv(NODE_ENV),
    ...fromList("command"),
    ...fromList("args"),
    ...fromEnv(JVM_ENV_AFTER),
    ...(go === undefined || goCap === undefined ? [] : [{ flag: GO_ENV, token: go.trim(), value: go.trim(), place: { env: GO_ENV }, cap: { bytes: goCap } }]),
  ];
  return { container: container.name, binding: bindingOf(flags), flags, unknown };
}

/** The heap flags of every container and init container of a Pod spec (V1PodSpec fits), in that order. */
export function podHeaps(spec: { readonly containers?: readonly ContainerSpecLike[]; readonly initContainers?: readonly ContainerSpecLike[] | undefined } | undefined): ContainerHeap[] {
  return [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].map(readHeapFlags);
}

/** Where `flag` is, as a user reads it: `env JAVA_TOOL_OPTIONS`, `args[1]`, `command[2]`. */
export function describePlace(place: HeapFlagPlace): string {
  if ("env" in place) return `env ${place.env}`;
  return "command" in place ? `command[${place.command}]` : `args[${place.args}]`;
}

/** A flag as written and where: `-Xmx512m in env JAVA_TOOL_OPTIONS`, `GOMEMLIMIT=512MiB`. */
export function describeFlag(flag: HeapFlag): string {
  if (flag.flag === GO_ENV) return `${GO_ENV}=${flag.value}`;
  return `${flag.token} in ${describePlace(flag.place)}`;
}

/** The unit a scaled size is written in: the original's when it divides the new size, else a finer one. */
function formatSize(bytes: bigint, flag: HeapFlag): string {
  if (flag.flag === GO_ENV) {
    for (const unit of ["TiB", "GiB", "MiB", "KiB"] as const) {
      const size = GO_UNITS[unit] ?? 1n;
      if (bytes % size === 0n && bytes >= size) return `${bytes / size}${unit}`;
    }
    return `${bytes}`;
  }
  // JVM: the largest unit that divides it, in the case the flag used.
  const upper = /[KMGT]$/.test(flag.value);
  for (const unit of ["t", "g", "m", "k"] as const) {
    const size = JVM_UNITS[unit] ?? 1n;
    if (bytes % size === 0n && bytes >= size) return `${bytes / size}${upper ? unit.toUpperCase() : unit}`;
  }
  return `${bytes}`;
}

/**
 * The flag raised by the factor `to / from` (the limit's: `memMultiplier`, or less at
 * `maxMemory`), rounded down to whole MiB (Node.js counts in MiB; a JVM or Go heap a little under
 * the exact product is still below the new limit); its new token.
 * @throws {RangeError} for a percentage flag (it follows the limit: nothing to scale) or `from` ≤ 0.
 */
export function scaledFlag(flag: HeapFlag, from: bigint, to: bigint): { readonly token: string; readonly value: string; readonly bytes: bigint } {
  if (!("bytes" in flag.cap)) throw new RangeError(`${flag.flag} is a percentage of the limit: it follows the limit`);
  if (from <= 0n) throw new RangeError("the limit scaled from must be positive");
  const mib = KIB ** 2n;
  const exact = (flag.cap.bytes * to) / from;
  const bytes = exact >= mib ? (exact / mib) * mib : exact;
  if (flag.flag === "--max-old-space-size" || flag.flag === "--max_old_space_size") {
    const value = `${bytes / mib}`;
    return { token: `${flag.flag}=${value}`, value, bytes };
  }
  const value = formatSize(bytes, flag);
  if (flag.flag === GO_ENV) return { token: value, value, bytes };
  return { token: flag.flag === "-Xmx" ? `-Xmx${value}` : `${flag.flag}=${value}`, value, bytes };
}

/**
 * `text` (an env value or one element of `command`/`args`) with the whitespace-separated token
 * `from` replaced by `to`, the whitespace kept as it was.
 * @throws {RangeError} when `text` has no such token.
 */
export function replaceToken(text: string, from: string, to: string): string {
  const parts = text.split(/(\s+)/);
  const i = parts.lastIndexOf(from);
  if (i < 0) throw new RangeError(`no ${from} in ${JSON.stringify(text)}`);
  parts[i] = to;
  return parts.join("");
}
