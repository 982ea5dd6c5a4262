/**
 * Where an in-place resize of a bare Pod stands (`resize.ts`), from plain data: the Pod as read
 * now and the pending entry of `status.rollouts` (workload kind `Pod`). Pure: `follow-flow.ts`
 * reads the Pod on the follow-up's ticks and writes what this decides, as for a rollout.
 *
 * The kubelet reports a resize through the Pod's conditions and container statuses
 * (https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/, "Pod
 * resize status"):
 * - `PodResizePending`, reason `Infeasible`: the node can never fit it (more than it has) → the
 *   resize failed, with the kubelet's message;
 * - `PodResizePending`, reason `Deferred`: not now, maybe later (other Pods must leave first) →
 *   still pending;
 * - `PodResizeInProgress`: being applied; with reason `Error` its message says why it failed →
 *   failed;
 * - done when neither condition is there and every container's `status.containerStatuses[*].resources`
 *   shows the memory its spec asks for (and the kubelet observed the resize's generation, where
 *   it reports `status.observedGeneration`).
 */
import type { AppMonitorStatus } from "../lib/appmonitor.ts";
import { compare, parseQuantity } from "../lib/quantity.ts";
import { ROLLOUT_DEADLINE_SECONDS, type FollowUp, type PendingRollout } from "./follow-up.ts";
import { pendingRollouts, ROLLOUT_CONDITION } from "./rollout-status.ts";

/** `type` of the Pod condition the kubelet sets while it cannot apply a resize yet or at all. */
export const POD_RESIZE_PENDING = "PodResizePending";
/** `type` of the Pod condition the kubelet sets while it applies a resize. */
export const POD_RESIZE_IN_PROGRESS = "PodResizeInProgress";

/** One container's memory: quantity strings (bytes), absent when unset or not reported. */
export interface MemoryPair {
  readonly limit?: string | undefined;
  readonly request?: string | undefined;
}

/** What the decision reads of the Pod. */
export interface PodResizeView {
  readonly name: string;
  readonly generation: number | undefined;
  /** `status.observedGeneration`: the generation the kubelet acted on; absent when not reported. */
  readonly observedGeneration: number | undefined;
  /** The Pod's conditions (only `PodResizePending` and `PodResizeInProgress` matter). */
  readonly conditions: readonly { readonly type: string; readonly status: string; readonly reason?: string | undefined; readonly message?: string | undefined }[];
  /** Containers and native sidecars: the spec's memory (desired), the status's (applied; undefined when not reported), restarts. */
  readonly containers: readonly { readonly name: string; readonly desired: MemoryPair; readonly actual: MemoryPair | undefined; readonly restartCount: number }[];
}

/** What {@link decideResizeFollowUp} compares. */
export interface ResizeFollowUpInput {
  readonly rollout: PendingRollout;
  /** Undefined: the Pod no longer exists. */
  readonly pod: PodResizeView | undefined;
  readonly now: Date;
}

const sameMemory = (a: string | undefined, b: string | undefined): boolean => a === b || (a !== undefined && b !== undefined && compare(parseQuantity(a), parseQuantity(b)) === 0);

/**
 * Decides where the resize stands. Rules, in order:
 * 1. no Pod, or a generation below the recorded one (deleted and created again) → `gone`;
 * 2. `PodResizePending` `Infeasible` → `failed` `Infeasible`; `PodResizeInProgress` `Error` →
 *    `failed` `ResizeError` (each with the kubelet's message);
 * 3. `PodResizePending` (`Deferred`) or `PodResizeInProgress` → `progressing`, the message the
 *    kubelet's;
 * 4. the kubelet has not observed the generation, or a container's reported memory differs from
 *    its spec or is not reported: `progressing`, or, {@link ROLLOUT_DEADLINE_SECONDS} after the
 *    resize, `failed` `ProgressDeadlineExceeded` (no kubelet confirms it: a node that does not
 *    report container resources);
 * 5. else `rolledOut`: resized in place; the message names the memory and the restarts.
 */
export function decideResizeFollowUp(input: ResizeFollowUpInput): FollowUp {
  const { rollout, pod } = input;
  const subject = `Pod ${rollout.workload.name}`;
  if (pod === undefined) return { result: "gone", message: `${subject} no longer exists` };
  if (pod.generation !== undefined && pod.generation < rollout.generation) return { result: "gone", message: `${subject} was deleted and created again since the resize` };

  const condition = (type: string) => pod.conditions.find((c) => c.type === type && c.status === "True");
  const pending = condition(POD_RESIZE_PENDING);
  const inProgress = condition(POD_RESIZE_IN_PROGRESS);
  if (pending?.reason === "Infeasible") return { result: "failed", reason: "Infeasible", message: `${subject}: the kubelet cannot resize it (Infeasible): ${pending.message ?? ""}` };
  if (inProgress?.reason === "Error") return { result: "failed", reason: "ResizeError", message: `${subject}: the kubelet failed to resize it: ${inProgress.message ?? ""}` };
  if (pending !== undefined) return { result: "progressing", message: `${subject}: resize pending (${pending.reason ?? "Deferred"}): ${pending.message ?? ""}` };
  if (inProgress !== undefined) return { result: "progressing", message: `${subject}: resize in progress` };

  const unapplied = pod.containers.filter((c) => c.actual === undefined || !sameMemory(c.desired.limit, c.actual.limit) || !sameMemory(c.desired.request, c.actual.request));
  const unobserved = pod.observedGeneration !== undefined && pod.observedGeneration < rollout.generation;
  if (unobserved || unapplied.length > 0) {
    const why = unobserved ? `the kubelet has not yet observed generation ${rollout.generation}` : `container${unapplied.length === 1 ? "" : "s"} ${unapplied.map((c) => c.name).join(", ")} not yet running with the new memory`;
    const elapsed = (input.now.getTime() - Date.parse(rollout.startedAt)) / 1000;
    if (elapsed > ROLLOUT_DEADLINE_SECONDS) return { result: "failed", reason: "ProgressDeadlineExceeded", message: `${subject} not resized ${ROLLOUT_DEADLINE_SECONDS}s after the resize was written: ${why} (no kubelet confirmed it)` };
    return { result: "progressing", message: `${subject}: ${why}` };
  }
  const memory = pod.containers.map((c) => `${c.name}: limit ${c.actual?.limit ?? "none"}${c.actual?.request === undefined ? "" : `, request ${c.actual.request}`}, ${c.restartCount} restart${c.restartCount === 1 ? "" : "s"}`).join("; ");
  return { result: "rolledOut", message: `${subject} resized in place (generation ${pod.generation ?? rollout.generation}): ${memory}` };
}

/**
 * `status` with the message of its `RolledOut` condition set to where the pending resize of
 * `rollout` stands (`message`, from {@link decideResizeFollowUp}: the kubelet's `Deferred`
 * reason, say), so that `kubectl describe appmonitor` shows it while it waits. Only while that
 * resize is pending and the condition, `Unknown`, is about its Pod (its message starts with
 * `Pod <name>:`; a later rollout of another workload keeps its own). Returns `status` itself when
 * nothing changes, so the writer skips the write.
 */
export function withResizeProgress(status: AppMonitorStatus | undefined, rollout: PendingRollout, message: string): AppMonitorStatus | undefined {
  const pending = pendingRollouts(status).some((r) => r.workload.kind === "Pod" && r.workload.name === rollout.workload.name && r.generation === rollout.generation);
  const conditions = status?.conditions ?? [];
  const current = conditions.find((c) => c.type === ROLLOUT_CONDITION);
  if (!pending || current === undefined || current.status !== "Unknown" || current.message === message || !(current.message ?? "").startsWith(`Pod ${rollout.workload.name}:`)) return status;
  return { ...status, conditions: conditions.map((c) => (c === current ? { ...c, message } : c)) };
}
