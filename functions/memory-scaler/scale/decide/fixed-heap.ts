/**
 * Whether a raise helps a container whose heap is fixed by a flag (`heap-flags.ts`), pure: a
 * JVM with `-Xmx512m`, Node.js with `--max-old-space-size=512` or Go with `GOMEMLIMIT` keep that
 * heap whatever the limit, so above it the raise is unused and the crash only moves from an OOM
 * kill to an in-process heap error (exit 134); each cooldown would raise it again, to the cap.
 *
 * A change is held when its container's binding flag is absolute (bytes) and at or below the
 * limit it is raised from: the heap cannot grow past the flag, which the current limit already
 * holds, so more memory would not reach it.
 * `spec.heapFlags` says what then: `Hold` (also when absent) leaves the container out as
 * `FixedHeap`, naming the flag and its value; `Scale` keeps the change, and the template patch
 * raises the flag by the limit's factor in the same compare-and-swap (`../targets/template-patch.ts`
 * `heapFlagOps`) — where the target can write the flag: a running Pod's command, args and env
 * cannot be changed, so a resize in place (`InPlace`, a bare Pod) holds under `Scale` too. A
 * percentage flag (`-XX:MaxRAMPercentage`) follows the limit: never held. A flag above the limit
 * leaves room the raise can give: not held.
 *
 * The Pod's containers whose last run ended in exit code 134 with reason `Error` (the kubelet's
 * word for any non-zero exit: an abort, as a JVM's `OutOfMemoryError` with
 * `-XX:+CrashOnOutOfMemoryError` or Node.js's heap-limit abort end) rather than `OOMKilled` are
 * named in the message: their memory ran out inside the process, not at the limit. Such a
 * container raised all the same (no flag read fixes its heap) is listed in the scale's
 * `heapFailed`, for a `HeapFailure` Warning ({@link heapFailureNote}).
 */
import { floor, parseQuantity } from "../../../lib/quantity.ts";
import type { ContainerChange, SkippedContainer } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import type { HeapError } from "../../model.ts";
import { describeHeapError } from "./heap-error.ts";
import { type ContainerHeap, describeFlag, describePlace, type HeapFlag, scaledFlag } from "./heap-flags.ts";

/** `spec.heapFlags`: what a raise the flag makes useless comes to. */
export type HeapFlagsPolicy = "Hold" | "Scale";

/** The exit code of a process ended by SIGABRT (128 + 6): how a runtime's heap exhaustion ends it. */
export const HEAP_ABORT_EXIT_CODE = 134;

/** One end of a container's run as a ContainerStateTerminated says it. */
interface Terminated {
  readonly exitCode?: number;
  readonly reason?: string;
}

/** What is read of a container status (V1ContainerStatus fits). */
export interface TerminationsLike {
  readonly name: string;
  readonly state?: { readonly terminated?: Terminated | undefined } | undefined;
  readonly lastState?: { readonly terminated?: Terminated | undefined } | undefined;
}

/**
 * The containers whose last run ended in exit code {@link HEAP_ABORT_EXIT_CODE} with reason
 * `Error` (not `OOMKilled`): the current state when it is terminated, else the last one.
 */
export function heapFailures(statuses: readonly TerminationsLike[]): string[] {
  return statuses
    .filter((s) => {
      const t = s.state?.terminated ?? s.lastState?.terminated;
      return t?.exitCode === HEAP_ABORT_EXIT_CODE && t.reason === "Error";
    })
    .map((s) => s.name);
}

/** The clause naming `container`'s heap failure (its runtime's own heap error where its termination message says one), or empty. */
function failureClause(container: string, failed: readonly string[], errors: readonly HeapError[]): string {
  const error = errors.find((e) => e.container === container);
  if (error !== undefined) return `; its last run ended in ${describeHeapError(error)}: the heap this flag fixes ran out, not the container's memory`;
  return failed.includes(container) ? `; its last run ended in exit code ${HEAP_ABORT_EXIT_CODE} (Error), an in-process heap failure, not an OOM kill` : "";
}

/** What {@link holdFixedHeaps} weighs besides the decision. */
export interface FixedHeapInput {
  /** Each container's heap flags (`TargetView.heaps`). */
  readonly heaps: readonly ContainerHeap[];
  readonly policy: HeapFlagsPolicy;
  /** Whether the target's write can change a flag (a Pod template can; a running Pod cannot). */
  readonly rewritable: boolean;
  /** The alerting Pod's containers whose last run was a heap failure ({@link heapFailures}). */
  readonly failed: readonly string[];
  /** Those whose termination message names their runtime's heap error (`heap-error.ts` `heapErrors`); absent: none read. */
  readonly errors?: readonly HeapError[];
}

/** The binding flag of `change`'s container when it fixes the heap at or below the limit raised from. */
export function fixingFlag(change: ContainerChange, heaps: readonly ContainerHeap[]): HeapFlag | undefined {
  const flag = heaps.find((h) => h.container === change.container)?.binding;
  if (flag === undefined || !("bytes" in flag.cap)) return undefined;
  return flag.cap.bytes <= floor(parseQuantity(change.from.limit)) ? flag : undefined;
}

/**
 * The decision with each raise a fixed heap makes useless held (module comment). A skip passes
 * unchanged; a scale whose every change is held becomes a `FixedHeap` skip; otherwise the held
 * containers are listed in `skipped` and the rest scale, those of them whose last run was an
 * in-process heap failure with no flag read that fixes their heap listed in `heapFailed`.
 */
export function holdFixedHeaps(decision: Skip | Scale, input: FixedHeapInput): Skip | Scale {
  if (decision.action === "skip") return decision;
  const keep: ContainerChange[] = [];
  const held: SkippedContainer[] = [];
  for (const change of decision.changes) {
    const flag = fixingFlag(change, input.heaps);
    // A flag memory-scaler wrote itself after a heap error is raised with the limit, as under Scale.
    if (flag === undefined || ((input.policy === "Scale" || flag.owned === true) && input.rewritable)) {
      keep.push(change);
      continue;
    }
    const why =
      input.policy === "Scale"
        ? `and a running Pod's command, args and env cannot be changed in place, so spec.heapFlags: Scale cannot raise it`
        : `set spec.heapFlags: Scale to raise the flag with the limit, or raise it in the manifest`;
    held.push({
      container: change.container,
      reason: "FixedHeap",
      message: `container ${change.container}'s heap is fixed by ${describeFlag(flag)} (${flag.value}), within its memory limit ${change.from.limit}: a higher limit would not reach the heap; ${why}${failureClause(change.container, input.failed, input.errors ?? [])}`,
    });
  }
  if (keep.length === 0) return { action: "skip", reason: "FixedHeap", message: held.map((h) => h.message).join("; "), skipped: [...decision.skipped, ...held] };
  // Raised all the same (no flag read, or Scale raises it), yet their heap failed in-process: say so.
  const failed = keep.filter((c) => input.failed.includes(c.container) && fixingFlag(c, input.heaps) === undefined).map((c) => c.container);
  if (held.length === 0 && failed.length === 0) return decision;
  return { ...decision, changes: keep, skipped: [...decision.skipped, ...held], ...(failed.length === 0 ? {} : { heapFailed: failed }) };
}

/**
 * The note of a `HeapFailure` Warning: `containers` were raised, but their last run ended in an
 * in-process heap failure, and no flag read fixes their heap (it may be set where memory-scaler
 * does not read: a ConfigMap, a Secret, a file, the image).
 */
export function heapFailureNote(containers: readonly string[]): string {
  const which = containers.length === 1 ? `container ${containers[0] ?? ""}'s` : `containers ${containers.join(", ")}'`;
  return `${which} last run ended in exit code ${HEAP_ABORT_EXIT_CODE} (Error), an in-process heap failure, not an OOM kill: a higher limit helps only if the heap can use it, and no heap flag memory-scaler reads fixes it (check flags set in a ConfigMap, a Secret, a file or the image)`;
}

/** One flag raised with its container's limit under `spec.heapFlags: Scale`: where, from and to. */
export interface HeapFlagChange {
  readonly container: string;
  readonly flag: HeapFlag;
  /** The new token (`-Xmx1024m`, `--max-old-space-size=1024`, `GOMEMLIMIT`'s `1GiB`). */
  readonly to: string;
}

/**
 * The flags to raise with `changes` under `Scale` (each container's that {@link fixingFlag}
 * finds), by the factor of its limit (`scaledFlag`); under `Hold`, only those memory-scaler wrote
 * itself (`owned`). Pure.
 */
export function heapFlagChanges(changes: readonly ContainerChange[], heaps: readonly ContainerHeap[], policy: HeapFlagsPolicy): HeapFlagChange[] {
  return changes.flatMap((change) => {
    const flag = fixingFlag(change, heaps);
    if (flag === undefined || (policy !== "Scale" && flag.owned !== true)) return [];
    const { token } = scaledFlag(flag, floor(parseQuantity(change.from.limit)), floor(parseQuantity(change.to.limit)));
    return [{ container: change.container, flag, to: token }];
  });
}

/** `container app: -Xmx512m → -Xmx1g in env JAVA_TOOL_OPTIONS`, for the outcome and the `Scaled` note. */
export function describeHeapChanges(changes: readonly HeapFlagChange[]): string {
  return changes.map((c) => `container ${c.container}: ${c.flag.token} → ${c.to} in ${describePlace(c.flag.place)}`).join(", ");
}
