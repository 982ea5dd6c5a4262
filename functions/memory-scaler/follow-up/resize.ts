/**
 * Where an in-place resize of a bare Pod stands (`scale/targets/pod-resize-target.ts`), from plain data: the Pod as read
 * now and the pending entry of `status.rollouts` (workload kind `Pod`). Pure: `follow-up/flow.ts`
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
import { sameQuantity } from "../../lib/quantity.ts";
import type { Cluster } from "../kube/cluster.ts";
import { podResizeView, type PodResizeView } from "../kube/views.ts";
import { objectRef, type ObjectRef } from "../model.ts";
import type { PendingRollout } from "../status/rollouts.ts";
import type { FollowUp } from "./follow-up.ts";
import { ROLLOUT_DEADLINE_SECONDS } from "./rollout.ts";

/**
 * The follow-up of a pending resize (`status.rollouts` entry of kind `Pod`): reads the Pod and
 * decides where the resize stands (`decideResizeFollowUp`). `ref` is what the Events regard.
 * @throws whatever the {@link Cluster} throws for a failed read (the follow-up classifies it).
 */
export async function readPodResize(cluster: Cluster, namespace: string, rollout: PendingRollout, now: Date): Promise<{ follow: FollowUp; ref: ObjectRef }> {
  const pod = await cluster.readPod(namespace, rollout.workload.name);
  const uid = pod?.metadata?.uid;
  return {
    follow: decideResizeFollowUp({ rollout, pod: pod === undefined ? undefined : podResizeView(pod), now }),
    ref: objectRef("v1", "Pod", namespace, rollout.workload.name, uid),
  };
}

/** `type` of the Pod condition the kubelet sets while it cannot apply a resize yet or at all. */
export const POD_RESIZE_PENDING = "PodResizePending";
/** `type` of the Pod condition the kubelet sets while it applies a resize. */
export const POD_RESIZE_IN_PROGRESS = "PodResizeInProgress";

/** What {@link decideResizeFollowUp} compares. */
export interface ResizeFollowUpInput {
  readonly rollout: PendingRollout;
  /** Undefined: the Pod no longer exists. */
  readonly pod: PodResizeView | undefined;
  readonly now: Date;
}

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

  const unapplied = pod.containers.filter((c) => c.actual === undefined || !sameQuantity(c.desired.limit, c.actual.limit) || !sameQuantity(c.desired.request, c.actual.request));
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
