/**
 * A runtime's heap error at a crash, read from the container's termination message (pure): the
 * heap-error trigger's evidence (`../triggers/heap-error.ts`).
 *
 * A runtime that sizes its own heap (Node.js, the JVM, .NET; Go with `GOMEMLIMIT`) can run out of
 * it far below the container's limit, and ends with its own message, not an OOM kill: the kubelet
 * says reason `Error` and the process's exit code, which alone proves nothing (139 is also any
 * segfault, 1 any error). So memory-scaler scales only on the runtime's own words.
 *
 * Where they are read: `lastState.terminated.message` (or `state.terminated` while the container
 * is down). The kubelet fills it from the container's log tail (at most 80 lines, 2048 bytes) when
 * the container's `terminationMessagePolicy` is `FallbackToLogsOnError` and the process wrote no
 * termination file (https://kubernetes.io/docs/tasks/debug/debug-application/determine-reason-pod-failure/#customizing-the-termination-message).
 * The previous container's log would say the same without that setting, but reading it needs
 * `get` on `pods/log`, which reads whatever any covered program logs: a broad privilege for one
 * line. The Pod memory-scaler already reads carries the message, so the policy is the price, and
 * an empty message says so (`NoTerminationMessage`).
 *
 * The heap errors (each a line the runtime writes as it dies):
 * - Node.js (V8): `FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of
 *   memory`, `FATAL ERROR: Ineffective mark-compacts near heap limit …`, `… CALL_AND_RETRY_LAST
 *   Allocation failed …`; exit code 134 (SIGABRT), or 139 as a PID namespace's init.
 * - JVM: `java.lang.OutOfMemoryError: Java heap space` and `… GC overhead limit exceeded` (the
 *   collector spends nearly all its time freeing almost nothing of the heap). Not heap, so not
 *   answered by a bigger heap: `Metaspace` and `Compressed class space` (class metadata, bounded
 *   by `-XX:MaxMetaspaceSize`, outside the heap), `unable to create native thread` (a thread or
 *   process limit, `pids.max`, not memory for objects), `Requested array size exceeds VM limit`
 *   (an array longer than the VM allows at any heap size), `Direct buffer memory` (NIO buffers
 *   bounded by `-XX:MaxDirectMemorySize`, outside the heap).
 * - Go: `fatal error: runtime: out of memory` (the runtime could not get memory from the OS).
 * - .NET: `System.OutOfMemoryException`, or the runtime's own `Out of memory.` line.
 */

import type { ContainerChange, SkippedContainer } from "../../model.ts";
import type { HeapError, HeapErrorLine, HeapRuntime } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";

/** One pattern: its runtime, whether what it names is the heap, and why (for the tests and the docs). */
interface Pattern {
  readonly runtime: HeapRuntime;
  readonly test: RegExp;
  readonly heap: boolean;
}

/**
 * Tried in order on each line; the first that matches a line decides it. The JVM's non-heap
 * errors come before its generic form so that `OutOfMemoryError: Metaspace` is never read as heap.
 */
const PATTERNS: readonly Pattern[] = [
  { runtime: "Node.js", test: /JavaScript heap out of memory|Reached heap limit|Ineffective mark-compacts near heap limit|CALL_AND_RETRY_LAST/, heap: true },
  { runtime: "JVM", test: /OutOfMemoryError: (Metaspace|Compressed class space|unable to create (new )?native thread|Requested array size exceeds VM limit|Direct buffer memory)/, heap: false },
  { runtime: "JVM", test: /java\.lang\.OutOfMemoryError: (Java heap space|GC overhead limit exceeded)/, heap: true },
  { runtime: "Go", test: /fatal error: runtime: out of memory/, heap: true },
  { runtime: ".NET", test: /System\.OutOfMemoryException|^\s*Out of memory\.\s*$/, heap: true },
];

/**
 * The heap error `message` names, or undefined: none, or only errors that are not the heap's
 * (module comment). The last heap line wins (a log tail may hold an earlier, caught one).
 */
export function classifyHeapError(message: string | undefined): HeapErrorLine | undefined {
  let found: HeapErrorLine | undefined;
  let heap: string | undefined;
  for (const line of (message ?? "").split(/\r?\n/)) {
    const gc = V8_GC_LINE.exec(line);
    if (gc !== null) heap = `${gc[1] ?? ""} MB`;
    const pattern = PATTERNS.find((p) => p.test.test(line));
    if (pattern?.heap === true) found = { runtime: pattern.runtime, line: line.trim() };
  }
  if (found === undefined) return undefined;
  return found.runtime === "Node.js" && heap !== undefined ? { ...found, heap } : found;
}

/** V8's trace of a full collection as it dies: `Mark-Compact (reduce) 255.9 (259.5) -> 255.8 (259.5) MB`; the last parenthesis is the heap's committed size. */
const V8_GC_LINE = /Mark-Compact(?: \(reduce\))? [0-9.]+ \([0-9.]+\) -> [0-9.]+ \(([0-9.]+)\) MB/;

/** One end of a container's run, as a ContainerStateTerminated says it. */
export interface TerminatedLike {
  readonly reason?: string | undefined;
  readonly exitCode?: number | undefined;
  readonly message?: string | undefined;
  readonly finishedAt?: Date | string | undefined;
}

/** The parts of a container status read here (V1ContainerStatus fits). */
export interface HeapStatusLike {
  readonly name: string;
  readonly state?: { readonly terminated?: TerminatedLike | undefined } | undefined;
  readonly lastState?: { readonly terminated?: TerminatedLike | undefined } | undefined;
}

/** The container's last end: the current state while it is down, else the last one. */
function lastEnd(status: HeapStatusLike | undefined): TerminatedLike | undefined {
  return status?.state?.terminated ?? status?.lastState?.terminated;
}

/** Milliseconds since the epoch, or undefined for a missing or unparseable time. */
function finishedMs(time: Date | string | undefined): number | undefined {
  if (time === undefined) return undefined;
  const ms = time instanceof Date ? time.getTime() : Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}

/** What one container's last end says: a heap error, no message to tell, or something else. */
export type HeapVerdict =
  | { readonly result: "heapError"; readonly error: HeapError }
  | { readonly result: "noMessage"; readonly exitCode: number | undefined }
  | { readonly result: "other"; readonly shows: string };

/**
 * What `container`'s last end says (module comment): a heap error when it ended with reason
 * `Error`, within `recentSeconds` of `now` (a missing or unparseable time counts: the kubelet
 * always sets it; a future one counts, the node's clock ahead), and a message naming its runtime's
 * heap error; `noMessage` when such an end carries no message; else `other`, with what it shows.
 * Never an exit code alone.
 */
export function heapVerdict(container: string, statuses: readonly HeapStatusLike[], now: Date, recentSeconds: number): HeapVerdict {
  const status = statuses.find((s) => s.name === container);
  const end = lastEnd(status);
  if (status === undefined) return { result: "other", shows: "the Pod reports no status for it" };
  if (end === undefined) return { result: "other", shows: "it has not terminated" };
  const code = end.exitCode === undefined ? "" : ` in exit code ${end.exitCode}`;
  if (end.reason !== "Error") return { result: "other", shows: `its last run ended${code} with reason ${end.reason ?? "none"}, not Error` };
  const finished = finishedMs(end.finishedAt);
  if (finished !== undefined && now.getTime() - finished > recentSeconds * 1000) {
    return { result: "other", shows: `its last error exit ended at ${new Date(finished).toISOString()}, more than ${recentSeconds}s ago` };
  }
  if ((end.message ?? "").trim() === "") return { result: "noMessage", exitCode: end.exitCode };
  const found = classifyHeapError(end.message);
  if (found === undefined) return { result: "other", shows: `its last run ended${code} (Error) and its termination message names no heap error of Node.js, the JVM, Go or .NET (an exit code alone is never taken for one: 139 is also a segfault, 1 any error)` };
  return { result: "heapError", error: { container, exitCode: end.exitCode, ...found } };
}

/**
 * The containers whose last run ended in a heap error, read as {@link heapVerdict} reads them but
 * at any age: what a `FixedHeap` or `HeapFailure` Warning names beside any trigger's decision.
 */
export function heapErrors(statuses: readonly HeapStatusLike[]): HeapError[] {
  return statuses.flatMap((s) => {
    const verdict = heapVerdict(s.name, [s], new Date(0), Number.POSITIVE_INFINITY);
    return verdict.result === "heapError" ? [verdict.error] : [];
  });
}

/** `Node.js's heap error (exit code 139: "FATAL ERROR: … JavaScript heap out of memory")`, for messages. */
export function describeHeapError(error: HeapError): string {
  const code = error.exitCode === undefined ? "" : `exit code ${error.exitCode}: `;
  const line = error.line.length > 160 ? `${error.line.slice(0, 157)}...` : error.line;
  return `${error.runtime}'s heap error (${code}${JSON.stringify(line)})`;
}

/** What to set on a container so that the kubelet keeps its runtime's last words, for `NoTerminationMessage`. */
export const TERMINATION_MESSAGE_HINT =
  "set terminationMessagePolicy: FallbackToLogsOnError on the container, so that the kubelet keeps its log's tail as the termination message, where memory-scaler reads the runtime's heap error (it reads no logs)";

/** What {@link checkHeapErrors} found: the changes whose containers' last run was a heap error, and the others. */
export interface HeapChecked {
  readonly keep: readonly ContainerChange[];
  readonly errors: readonly HeapError[];
  readonly skipped: readonly SkippedContainer<"NotHeapError" | "NoTerminationMessage">[];
}

/**
 * Splits `changes` by what each container's last end says ({@link heapVerdict}): kept with its
 * heap error; `NoTerminationMessage` when an error exit left no message to read (the
 * message says to set `terminationMessagePolicy: FallbackToLogsOnError`); else `NotHeapError`.
 */
export function checkHeapErrors(changes: readonly ContainerChange[], statuses: readonly HeapStatusLike[], now: Date, recentSeconds: number): HeapChecked {
  const keep: ContainerChange[] = [];
  const errors: HeapError[] = [];
  const skipped: SkippedContainer<"NotHeapError" | "NoTerminationMessage">[] = [];
  for (const change of changes) {
    const { container } = change;
    const verdict = heapVerdict(container, statuses, now, recentSeconds);
    if (verdict.result === "heapError") {
      keep.push(change);
      errors.push(verdict.error);
    } else if (verdict.result === "noMessage") {
      const code = verdict.exitCode === undefined ? "" : ` in exit code ${verdict.exitCode}`;
      skipped.push({ container, reason: "NoTerminationMessage", message: `container ${container}'s last run ended${code} (Error) with no termination message, so whether its runtime's heap ran out cannot be told (an exit code alone is never taken for it): ${TERMINATION_MESSAGE_HINT}` });
    } else {
      skipped.push({ container, reason: "NotHeapError", message: `container ${container} did not end in a heap error in the last ${recentSeconds}s: ${verdict.shows}` });
    }
  }
  return { keep, errors, skipped };
}

/** What a resize in place cannot do for a heap error, and what would: for `HeapNeedsRollout` (a bare Pod, which has no template to roll out). */
export function inPlaceNote(errors: readonly HeapError[]): string {
  const which = errors.map((e) => `container ${e.container}'s last run ended in ${describeHeapError(e)}`).join("; ");
  return `${which}: a resize in place cannot reach a heap its runtime sized when it started, so the Pod was not resized, and a bare Pod has no Pod template to roll out with the heap setting: recreate it with a larger limit and its heap set, or run it under a Deployment`;
}

/**
 * The plan after the heap-error check: the scale with the containers it confirmed and their
 * errors (for the heap settings of the write, `heap-settings.ts`), or the skip: `NoTerminationMessage`
 * when any container left no message to read, else `NotHeapError`; and `HeapNeedsRollout`
 * when the target resizes in place (`rollsOut` false: a bare Pod; a workload's heap error always
 * rolls out, `heap-relief.ts`), where a raise would not reach the heap (DESIGN.md "Decisions that matter for correctness"). A confirmed scale has no
 * `heapFailed`: its write sets the heap (`heap-settings.ts`), or the runtime follows the new limit.
 */
export function afterHeapCheck(scale: Scale, checked: HeapChecked, rollsOut: boolean): Skip | Scale {
  const skipped = [...scale.skipped, ...checked.skipped];
  if (checked.keep.length === 0) {
    const reason = checked.skipped.some((s) => s.reason === "NoTerminationMessage") ? "NoTerminationMessage" : "NotHeapError";
    return { action: "skip", reason, message: checked.skipped.map((s) => s.message).join("; "), skipped };
  }
  if (!rollsOut) return { action: "skip", reason: "HeapNeedsRollout", message: inPlaceNote(checked.errors), skipped };
  // The write sets the heap where the runtime needs it, so no HeapFailure Warning doubts the raise.
  const { heapFailed: _doubted, ...confirmed } = scale;
  return { ...confirmed, changes: checked.keep, skipped, heapErrors: checked.errors };
}

/**
 * A skip the plan decided for a heap-error alert, said with the heap error it leaves unanswered
 * (a `FixedHeap`, `AtCap` or `ProbableLeak` hold, a `PolicyOff` container): the runtime, the heap
 * where the log tail tells it, and what would help. Other skips pass unchanged.
 */
export function unansweredHeapError(skip: Skip, errors: readonly HeapError[]): Skip {
  const help: Partial<Record<string, string>> = {
    AtCap: "raise the cap (spec.maxMemory or the container's containerPolicies maxMemory) or give the heap a larger share of the limit",
    ProbableLeak: "a heap that keeps running out after each raise may be a leak: fix the program, or wait for the leak guard's window",
    PolicyOff: "its containerPolicies entry says mode: Off",
  };
  const what = help[skip.reason];
  if (what === undefined || errors.length === 0 || skip.reason === "FixedHeap") return skip;
  const said = errors.map((e) => `container ${e.container}'s last run ended in ${describeHeapError(e)}${e.heap === undefined ? "" : ` with a heap of ${e.heap}`}`).join("; ");
  return { ...skip, message: `${skip.message}; ${said}, and nothing was raised: ${what}` };
}
