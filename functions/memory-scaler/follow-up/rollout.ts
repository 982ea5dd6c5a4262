/**
 * Where a rollout that memory-scaler started stands, from plain data: the workload as read now,
 * its Pods, and the pending rollout recorded in the AppMonitor's status. Pure: the follow-up
 * (`follow-up/flow.ts`) reads the world and writes what this decides.
 *
 * A rollout ends `RolledOut` when the workload's controller reports every replica updated and
 * available at the generation the patch made, as `kubectl rollout status` judges it
 * (k8s.io/kubectl `pkg/polymorphichelpers/rollout_status.go`), or `RolloutFailed` with the reason
 * the workload's own status gives:
 * - `ProgressDeadlineExceeded`: the Deployment's `Progressing` condition says so
 *   (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#failed-deployment);
 *   the message adds the Pods the scheduler left Pending and why;
 * - `FailedCreate`: the Deployment's `ReplicaFailure` condition, which the controller copies from
 *   its new ReplicaSet when Pod creation is refused (a ResourceQuota: `exceeded quota: …`);
 * - `PodUnschedulable`: a StatefulSet or DaemonSet (no progress deadline of their own) whose Pod
 *   has been Pending with `PodScheduled=False`, reason `Unschedulable`, for longer than
 *   {@link ROLLOUT_DEADLINE_SECONDS} after the patch; `ProgressDeadlineExceeded` too for one
 *   whose `RollingUpdate` has not ended by then for another reason (a Pod a quota refuses, which
 *   only an Event says, or one never Ready);
 * - `CrashLoopingPod`: a StatefulSet `RollingUpdate` blocked by a Pod of the old revision that
 *   keeps crashing (here: OOM-killed, as the scaled workload's Pods were). The controller waits for
 *   every Pod to be Running and Ready before it replaces the next one, so it never replaces that
 *   Pod (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#forced-rollback).
 *   With `spec.stuckRollout: DeletePod` the Pod is deleted instead (its controller recreates it at
 *   the new revision) and the rollout stays pending.
 * A StatefulSet or DaemonSet with `updateStrategy: OnDelete` stays pending, naming the Pods still
 * on the old revision, until every Pod has been replaced.
 */
import type { PodView, RevisionView, WorkloadView } from "../kube/views.ts";
import { decideRevisionFollowUp } from "./revision.ts";
import type { PendingRollout } from "../status/rollouts.ts";
import type { FollowUp } from "./follow-up.ts";

/**
 * Seconds after the patch before a StatefulSet or DaemonSet rollout that has not ended fails
 * (`PodUnschedulable` with a Pod Pending as unschedulable, else `ProgressDeadlineExceeded`):
 * Deployment's own default `progressDeadlineSeconds`.
 */
export const ROLLOUT_DEADLINE_SECONDS = 600;

/** What {@link decideFollowUp} compares. */
export interface FollowUpInput {
  readonly rollout: PendingRollout;
  /** The workload's uid when the rollout started, if known; undefined: not compared. */
  readonly uid?: string | undefined;
  /** Undefined: the workload no longer exists. */
  readonly workload: WorkloadView | undefined;
  readonly pods: readonly PodView[];
  /** A Knative Service's latest created Revision, as read (undefined: none, or not a Service). */
  readonly revision?: RevisionView | undefined;
  /** `spec.stuckRollout` of the AppMonitor; absent means `Report`. */
  readonly stuckRollout: "Report" | "DeletePod" | undefined;
  readonly now: Date;
}

const names = (pods: readonly PodView[]): string => pods.map((p) => p.name).join(", ");

function pendingNote(pods: readonly PodView[]): string {
  const pending = pods.filter((p) => p.unschedulable !== undefined && !p.deleting);
  return pending.length === 0 ? "" : `; Pod${pending.length === 1 ? "" : "s"} ${names(pending)} Pending, unschedulable: ${pending[0]?.unschedulable ?? ""}`;
}

/**
 * Decides where `input.rollout` stands. Rules, in order:
 * 1. no workload, or one with another uid, or a generation below the recorded one → `gone`;
 * 2. the controller has not observed the recorded generation → `progressing`;
 * 3. a Knative Service: its latest Revision's `Ready` condition (`revision.ts`);
 *    Deployment: `ReplicaFailure` True → `failed` `FailedCreate` (its message: the quota's);
 *    `Progressing` False with reason `ProgressDeadlineExceeded` → `failed` (with the unschedulable
 *    Pods, if any);
 * 4. StatefulSet or DaemonSet `OnDelete`: Pods whose revision is not `updateRevision` (a DaemonSet:
 *    fewer updated than desired) → `progressing` naming them;
 * 5. StatefulSet `RollingUpdate`: a Pod of the old revision crash-looping after OOM kills →
 *    `deletePod` with `stuckRollout: DeletePod`, else `failed` `CrashLoopingPod`;
 * 6. StatefulSet or DaemonSet: a Pod Pending as unschedulable more than
 *    {@link ROLLOUT_DEADLINE_SECONDS} after the start → `failed` `PodUnschedulable`;
 * 7. every replica updated, no old one left, every updated one available (StatefulSet: up to the
 *    partition, and `currentRevision` = `updateRevision` without one) → `rolledOut`;
 * 8. a StatefulSet or DaemonSet `RollingUpdate` not rolled out {@link ROLLOUT_DEADLINE_SECONDS}
 *    after the start → `failed` `ProgressDeadlineExceeded` (they have no deadline of their own);
 * 9. else `progressing`.
 */
export function decideFollowUp(input: FollowUpInput): FollowUp {
  const { rollout, workload: w, pods } = input;
  const subject = `${rollout.workload.kind} ${rollout.workload.name}`;
  if (w === undefined) return { result: "gone", message: `${subject} no longer exists` };
  if ((input.uid !== undefined && w.uid !== undefined && w.uid !== input.uid) || (w.generation !== undefined && w.generation < rollout.generation)) {
    return { result: "gone", message: `${subject} was deleted and created again since the scale` };
  }
  if (w.observedGeneration === undefined || w.observedGeneration < rollout.generation) {
    return { result: "progressing", message: `${subject}: its controller has not yet seen generation ${rollout.generation}` };
  }

  if (w.kind === "Service") return decideRevisionFollowUp(w, input.revision);

  if (w.kind === "Deployment") {
    const failure = w.conditions.find((c) => c.type === "ReplicaFailure" && c.status === "True");
    if (failure !== undefined) return { result: "failed", reason: "FailedCreate", message: `${subject} cannot create its Pods: ${failure.message ?? failure.reason ?? "ReplicaFailure"}` };
    const progressing = w.conditions.find((c) => c.type === "Progressing");
    if (progressing?.status === "False" && progressing.reason === "ProgressDeadlineExceeded") {
      return { result: "failed", reason: "ProgressDeadlineExceeded", message: `${subject}: ${progressing.message ?? "progress deadline exceeded"}${pendingNote(pods)}` };
    }
  }

  const live = pods.filter((p) => !p.deleting);
  const elapsed = (input.now.getTime() - Date.parse(rollout.startedAt)) / 1000;
  if (w.kind === "StatefulSet" || w.kind === "DaemonSet") {
    if (w.updateStrategy === "OnDelete") {
      const old = w.kind === "StatefulSet" && w.updateRevision !== undefined ? live.filter((p) => p.revision !== w.updateRevision) : [];
      if (old.length > 0) {
        return {
          result: "progressing",
          message: `${subject} has updateStrategy OnDelete: Pod${old.length === 1 ? "" : "s"} ${names(old)} still run${old.length === 1 ? "s" : ""} the old revision; delete ${old.length === 1 ? "it" : "them"} to apply the new memory`,
          waitingPods: old.map((p) => p.name),
        };
      }
    } else if (w.kind === "StatefulSet") {
      const stuck = live.find((p) => p.revision !== w.updateRevision && p.crashLoopingOOM.length > 0);
      if (stuck !== undefined) {
        const why = `Pod ${stuck.name} of the old revision is crash-looping after OOM kills (${stuck.crashLoopingOOM.join(", ")}); the StatefulSet controller waits for it to be Ready before it replaces it, so the rollout cannot go on`;
        if (input.stuckRollout === "DeletePod") return { result: "deletePod", pod: { name: stuck.name, uid: stuck.uid }, message: `${subject}: ${why}: deleting it so that it is recreated at the new revision` };
        return { result: "failed", reason: "CrashLoopingPod", message: `${subject}: ${why}; delete it (kubectl delete pod ${stuck.name}) so that it is recreated at the new revision, or set spec.stuckRollout: DeletePod` };
      }
    }
    const unschedulable = live.filter((p) => p.unschedulable !== undefined);
    if (unschedulable.length > 0 && elapsed > ROLLOUT_DEADLINE_SECONDS) {
      return { result: "failed", reason: "PodUnschedulable", message: `${subject}: after ${ROLLOUT_DEADLINE_SECONDS}s${pendingNote(unschedulable)}` };
    }
  }

  const target = w.kind === "StatefulSet" && w.partition > 0 ? Math.max(0, w.desired - w.partition) : w.desired;
  // Only a RollingUpdate moves currentRevision on; OnDelete leaves it where it was.
  const rolling = w.updateStrategy === undefined || w.updateStrategy === "RollingUpdate";
  const revisionDone = w.kind !== "StatefulSet" || !rolling || w.partition > 0 || w.updateRevision === undefined || w.currentRevision === w.updateRevision;
  const done =
    w.updated >= target &&
    (w.kind === "StatefulSet" && w.partition > 0 ? true : w.current <= w.updated) &&
    w.available >= target &&
    revisionDone;
  if (done) return { result: "rolledOut", message: `${subject} rolled out generation ${w.observedGeneration}: ${w.updated} of ${w.desired} Pod${w.desired === 1 ? "" : "s"} updated and available` };
  // StatefulSets and DaemonSets have no progress deadline of their own; a RollingUpdate still
  // short of its Pods after Deployment's default one has stalled (a Pod refused by a quota or
  // never Ready). OnDelete waits for the user, however long that takes.
  if (w.kind !== "Deployment" && w.updateStrategy !== "OnDelete" && elapsed > ROLLOUT_DEADLINE_SECONDS) {
    return {
      result: "failed",
      reason: "ProgressDeadlineExceeded",
      message: `${subject} has not rolled out generation ${rollout.generation} ${ROLLOUT_DEADLINE_SECONDS}s after the scale: ${w.updated} of ${target} updated, ${w.available} ready; see its Events (FailedCreate) and its Pods`,
    };
  }
  return {
    result: "progressing",
    message: `${subject} is rolling out generation ${rollout.generation}: ${w.updated} of ${target} updated, ${w.available} available${pendingNote(pods)}`,
  };
}
