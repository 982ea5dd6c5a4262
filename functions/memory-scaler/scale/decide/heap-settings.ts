/**
 * The heap setting written with a raised limit after a runtime's heap error (pure): a runtime
 * that sizes its heap from the limit when it starts gets the new limit only through a new start,
 * and some do not size it as a share of the limit at all, so the rollout's patch sets the heap
 * explicitly, in the same compare-and-swap as the limit (docs/fixed-heaps.md).
 *
 * - Node.js: V8 picks its heap limit from the memory it sees, by steps that do not follow the
 *   limit (259 MiB at both 256Mi and 512Mi, 560 MiB at 1Gi, measured on the real node with Node.js
 *   24), so a raised limit alone may give the heap nothing. `--max-old-space-size=<MiB>` is
 *   appended to `NODE_OPTIONS`: {@link NODE_HEAP_PERCENT} of the new limit. Node.js's own advice
 *   is that share ("on a machine with 2 GiB of memory, consider setting this to 1536 (1.5 GiB) to
 *   leave some memory for other uses", https://nodejs.org/api/cli.html#--max-old-space-sizesize-in-mib):
 *   the rest of the limit holds what lies outside the old space (the young generation, code,
 *   Buffers and ArrayBuffers, the binary, thread stacks), so the heap's own error comes before an
 *   OOM kill. Absolute, since `--max-old-space-size-percentage` exists only from Node.js 24.8 and
 *   an older Node.js refuses to start with an option it does not know in `NODE_OPTIONS`. The
 *   value written is recorded on the workload ({@link HEAP_SETTINGS_ANNOTATION}), so a later
 *   raise treats it as memory-scaler's own (raised with the limit whatever `spec.heapFlags`
 *   says), not as a flag the user fixed.
 * - JVM: its default heap is 25 % of the limit (`-XX:MaxRAMPercentage=25`), read at start; a
 *   raised limit rolled out gives it 25 % of more, and leaves three quarters of the limit to a
 *   heap that ran out. `-XX:MaxRAMPercentage=75` is appended to `JAVA_TOOL_OPTIONS`, which every
 *   HotSpot JVM reads: a share, so it follows every later limit (never held, `fixed-heap.ts`).
 * - Go, .NET: nothing to set. Go sizes no heap of its own but `GOMEMLIMIT` (read as a heap flag,
 *   `heap-flags.ts`); .NET's GC limit is 75 % of the container's limit, read at start, so a rollout
 *   reaches it.
 *
 * The runtime is known from the container's heap error, or, before any, from its
 * `spec.containerPolicies` entry's `runtime` ({@link knownRuntimes}): then every raise of it
 * writes the setting, whatever the trigger, and `InPlace` and `InPlaceOrRollout` roll it out
 * ({@link heapSizedAtStart}), so that the first raise already reaches the heap.
 *
 * A container whose flags already size that runtime's heap (`-Xmx`, `-XX:MaxRAM`,
 * `-XX:MaxRAMPercentage`, `--max-old-space-size`) gets no setting: a flag the user fixed stays
 * theirs (`spec.heapFlags`, `fixed-heap.ts`). Nor does one whose env var comes from `valueFrom`
 * (a ConfigMap or Secret): its value is not in the spec to append to.
 */
import type { AppMonitorSpec } from "../../../lib/appmonitor.ts";
import { floor, parseQuantity } from "../../../lib/quantity.ts";
import { policyOf } from "../../caps.ts";
import type { ContainerChange } from "../../model.ts";
import type { HeapError, HeapRuntime } from "../../model.ts";
import type { ContainerHeap } from "./heap-flags.ts";

/** The share of the new limit given to Node.js's old space, in percent (module comment). */
export const NODE_HEAP_PERCENT = 75;
/** The JVM's `-XX:MaxRAMPercentage` written (module comment). */
export const JVM_RAM_PERCENT = 75;

/**
 * The workload annotation naming the heap settings memory-scaler wrote, per container: JSON
 * `{"<container>": "<token>"}` (`{"app":"--max-old-space-size=384"}`). A flag whose token is still
 * the one recorded is memory-scaler's own: raised with the limit, never held.
 */
export const HEAP_SETTINGS_ANNOTATION = "app-monitor.kubedemo.com/heap-settings";

/** One setting to write: the env var, the token appended to it, and why. */
export interface HeapSetting {
  readonly container: string;
  readonly runtime: HeapRuntime;
  readonly env: "NODE_OPTIONS" | "JAVA_TOOL_OPTIONS";
  /** `--max-old-space-size=1536`, `-XX:MaxRAMPercentage=75`. */
  readonly token: string;
  /** Whether the token is recorded as memory-scaler's own ({@link HEAP_SETTINGS_ANNOTATION}): an absolute one is. */
  readonly recorded: boolean;
}

/** Flags that size each runtime's heap: a container with one gets no setting. */
const SIZING_FLAGS: Readonly<Record<"Node.js" | "JVM", readonly string[]>> = {
  "Node.js": ["--max-old-space-size", "--max_old_space_size"],
  JVM: ["-Xmx", "-XX:MaxRAM", "-XX:MaxRAMPercentage"],
};

const MIB = 1024n * 1024n;

/** What {@link heapSettings} leaves unset, and why (for the outcome's message). */
export interface HeapSettingsResult {
  readonly settings: readonly HeapSetting[];
  readonly notes: readonly string[];
}

/** A container and the runtime known to size its heap: from its heap error, or declared. */
export type KnownRuntime = Pick<HeapError, "container" | "runtime">;

/**
 * The runtimes known for `containers`: each one's heap error (`errors`) where it had one, else
 * its `spec.containerPolicies` entry's `runtime` (its own entry, else `*`'s). Pure.
 */
export function knownRuntimes(containers: readonly string[], errors: readonly HeapError[], spec: Pick<AppMonitorSpec, "containerPolicies">): KnownRuntime[] {
  return containers.flatMap((container) => {
    const error = errors.find((e) => e.container === container);
    if (error !== undefined) return [{ container, runtime: error.runtime }];
    const runtime = policyOf(spec, container)?.runtime;
    return runtime === undefined ? [] : [{ container, runtime }];
  });
}

/**
 * The first of `containers` whose `spec.containerPolicies` declares a runtime that sizes its heap
 * when it starts (Node.js, JVM, .NET; not Go, whose `GOMEMLIMIT` is a heap flag), as
 * `container app (Node.js)`; undefined for none. A resize in place does not reach such a heap, so
 * `InPlace` and `InPlaceOrRollout` roll its raises out (`heap-relief.ts`). Pure.
 */
export function heapSizedAtStart(containers: readonly string[], spec: Pick<AppMonitorSpec, "containerPolicies">): string | undefined {
  for (const container of containers) {
    const runtime = policyOf(spec, container)?.runtime;
    if (runtime !== undefined && runtime !== "Go") return `container ${container} (${runtime})`;
  }
  return undefined;
}

/**
 * The settings for `changes` whose containers' runtime is known (`runtimes`: after a heap error,
 * or declared; {@link knownRuntimes}), by runtime (module comment). Pure.
 * @param heaps each container's heap flags, as the template has them.
 */
export function heapSettings(changes: readonly ContainerChange[], runtimes: readonly KnownRuntime[], heaps: readonly ContainerHeap[]): HeapSettingsResult {
  const settings: HeapSetting[] = [];
  const notes: string[] = [];
  for (const change of changes) {
    const error = runtimes.find((e) => e.container === change.container);
    if (error === undefined || (error.runtime !== "Node.js" && error.runtime !== "JVM")) continue;
    const heap = heaps.find((h) => h.container === change.container);
    const sizing = heap?.flags.find((f) => SIZING_FLAGS[error.runtime as "Node.js" | "JVM"].includes(f.flag));
    if (sizing !== undefined) continue;
    const env = error.runtime === "Node.js" ? "NODE_OPTIONS" : "JAVA_TOOL_OPTIONS";
    if (heap?.unknown.includes(env) === true) {
      notes.push(`container ${change.container}'s ${env} is set from valueFrom, so its heap setting was not written: set it in the ConfigMap or Secret`);
      continue;
    }
    if (error.runtime === "Node.js") {
      const mib = (floor(parseQuantity(change.to.limit)) * BigInt(NODE_HEAP_PERCENT)) / 100n / MIB;
      settings.push({ container: change.container, runtime: "Node.js", env, token: `--max-old-space-size=${mib}`, recorded: true });
    } else {
      settings.push({ container: change.container, runtime: "JVM", env, token: `-XX:MaxRAMPercentage=${JVM_RAM_PERCENT}`, recorded: false });
    }
  }
  return { settings, notes };
}

/** `container app: NODE_OPTIONS += --max-old-space-size=1536`, for the outcome and the `Scaled` note. */
export function describeHeapSettings(settings: readonly HeapSetting[]): string {
  return settings.map((s) => `container ${s.container}: ${s.env} += ${s.token}`).join(", ");
}

/** The recorded tokens per container ({@link HEAP_SETTINGS_ANNOTATION}); empty for none or for a value that is not such JSON. */
export function parseHeapSettings(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"));
  } catch {
    return {};
  }
}

/**
 * `heaps` with each flag whose token is the one recorded for its container marked `owned`:
 * memory-scaler wrote it, so it is raised with the limit whatever `spec.heapFlags` says.
 */
export function markOwned(heaps: readonly ContainerHeap[], recorded: Readonly<Record<string, string>>): ContainerHeap[] {
  return heaps.map((h) => {
    const token = recorded[h.container];
    if (token === undefined) return h;
    const own = (f: ContainerHeap["flags"][number]) => ("env" in f.place && f.place.env === "NODE_OPTIONS" && f.token === token ? { ...f, owned: true as const } : f);
    return { ...h, flags: h.flags.map(own), binding: h.binding === undefined ? undefined : own(h.binding) };
  });
}
