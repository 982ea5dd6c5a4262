/**
 * Where the in-place resize of a workload's Pods stands (`scale/targets/in-place-target.ts`), from plain
 * data: the pending entry of `status.rollouts` (its `inPlace.pods`), each of those Pods as read
 * now, and the AppMonitor's `spec.updateMode`. Pure: `follow-up/flow.ts` reads and writes.
 *
 * Each Pod is judged as a bare Pod's resize is (`resize.ts` `decideResizeFollowUp`: the kubelet's
 * `PodResizePending` and `PodResizeInProgress` conditions and container statuses), and one more
 * rule, the VPA's for its `InPlaceOrRecreate` mode: a resize `Deferred` for more than
 * {@link IN_PLACE_DEFERRED_SECONDS} fails (`Deferred`), since the Pod meanwhile runs short of the
 * memory its crossing asked for. Then, for the workload:
 * 1. every Pod gone (deleted, or replaced) → `gone`;
 * 2. a Pod failed (`Infeasible`, `ResizeError`, `ProgressDeadlineExceeded`, `Deferred`) → under
 *    `InPlaceOrRollout` `fallBack` (the template patch, `scale/flow.ts` `handleFallback`), else
 *    `failed`, each with the Pod's reason and message;
 * 3. a Pod still resizing → `progressing`, naming it and why;
 * 4. else `rolledOut`: each Pod's memory and restarts.
 */
import type { UpdateMode } from "../../lib/appmonitor.ts";
import type { PodResizeView } from "../kube/views.ts";
import type { PendingRollout } from "../status/rollouts.ts";
import { decideResizeFollowUp, POD_RESIZE_PENDING } from "./resize.ts";
import type { FollowUp, RolloutFailure } from "./follow-up.ts";

/**
 * Seconds a resize may stay `Deferred` before the in-place update of a workload's Pod counts as
 * failed: the VPA updater's own deadline for `InPlaceOrRecreate` before it evicts instead
 * (kubernetes/autoscaler, vertical-pod-autoscaler AEP-4016, "deferred for more than 5 minutes").
 */
export const IN_PLACE_DEFERRED_SECONDS = 300;

/** What {@link decideInPlaceFollowUp} compares. */
export interface InPlaceFollowUpInput {
  /** The pending entry; without `inPlace` nothing was resized (`gone`). */
  readonly rollout: PendingRollout;
  /** Each Pod of `rollout.inPlace.pods` as read now, by name; undefined: no longer exists. */
  readonly pods: ReadonlyMap<string, PodResizeView | undefined>;
  /** The AppMonitor's `spec.updateMode` now: `InPlaceOrRollout` falls back. */
  readonly updateMode: UpdateMode | undefined;
  readonly now: Date;
}

/** How one Pod's resize stands. */
type PodFollowUp = { readonly podName: string } & FollowUp;

/** One Pod (module comment): its resize, failed after {@link IN_PLACE_DEFERRED_SECONDS} `Deferred`. */
function followPod(rollout: PendingRollout, name: string, generation: number, pod: PodResizeView | undefined, now: Date): PodFollowUp {
  const follow = decideResizeFollowUp({ rollout: { workload: { kind: "Pod", name }, generation, startedAt: rollout.startedAt }, pod, now });
  const deferred = pod?.conditions.find((c) => c.type === POD_RESIZE_PENDING && c.status === "True" && c.reason === "Deferred");
  const elapsed = (now.getTime() - Date.parse(rollout.startedAt)) / 1000;
  if (follow.result === "progressing" && deferred !== undefined && elapsed > IN_PLACE_DEFERRED_SECONDS) {
    return { podName: name, result: "failed", reason: "Deferred", message: `Pod ${name}: the kubelet deferred the resize for more than ${IN_PLACE_DEFERRED_SECONDS}s: ${deferred.message ?? ""}` };
  }
  return { podName: name, ...follow };
}

/** Where the in-place update of `input.rollout`'s workload stands (module comment). */
export function decideInPlaceFollowUp(input: InPlaceFollowUpInput): FollowUp {
  const { rollout, now } = input;
  const subject = `${rollout.workload.kind} ${rollout.workload.name}`;
  const pods = (rollout.inPlace?.pods ?? []).map((p) => followPod(rollout, p.name, p.generation, input.pods.get(p.name), now));
  const live = pods.filter((p) => p.result !== "gone");
  if (live.length === 0) return { result: "gone", message: `${subject}: none of the Pods resized in place is left` };

  const failed = live.find((p): p is PodFollowUp & { result: "failed"; reason: RolloutFailure } => p.result === "failed");
  if (failed !== undefined) {
    const message = `${subject}: ${failed.message}`;
    return input.updateMode === "InPlaceOrRollout" ? { result: "fallBack", reason: failed.reason, message } : { result: "failed", reason: failed.reason, message };
  }
  const waiting = live.filter((p) => p.result !== "rolledOut");
  if (waiting.length > 0) return { result: "progressing", message: `${subject}: ${waiting.map((p) => p.message).join("; ")}` };
  return { result: "rolledOut", message: `${subject}: ${live.length} Pod${live.length === 1 ? "" : "s"} resized in place: ${live.map((p) => p.message).join("; ")}` };
}
