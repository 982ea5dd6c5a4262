/**
 * StatefulSets and DaemonSets with `updateStrategy: OnDelete`: a template patch reaches no Pod
 * until the Pod is deleted. The scale is written (that is what OnDelete asks for) but reported
 * with a `RolloutWaitsForDelete` Warning, and later alerts of a Pod still on the old template say
 * so rather than `RolloutUnderWay`. Pure.
 */
import { compare, parseQuantity } from "../../../lib/quantity.ts";
import type { Workload } from "../../model.ts";
import type { PendingRollout } from "../../status/rollouts.ts";

/** The note of a `RolloutWaitsForDelete` skip while the last scale's OnDelete rollout is pending. */
export function unreplacedNote(workload: Workload, rollout: PendingRollout): string {
  const pods = rollout.waitingPods ?? [];
  const which = pods.length > 0 ? `Pod${pods.length === 1 ? "" : "s"} ${pods.join(", ")} still run${pods.length === 1 ? "s" : ""} the old revision` : "its Pods still run the old revision";
  return `${workload.kind} ${workload.name} has updateStrategy OnDelete and its last scale (generation ${rollout.generation}, ${rollout.startedAt}) has not reached every Pod: ${which}; no further scale until they are deleted and replaced`;
}

/**
 * How a template change reaches a workload's Pods: a StatefulSet's or DaemonSet's
 * `spec.updateStrategy.type: OnDelete` means the controller never replaces a Pod for it; each
 * Pod gets the new template only when it is deleted
 * (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#on-delete,
 * https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/#daemonset-update-strategy).
 * Deployments and ReplicaSets have no such strategy (a bare ReplicaSet never replaces its Pods
 * either, but says nothing about it; it is not judged here).
 */
export interface RolloutStrategy {
  /** `Deployment`, `StatefulSet`, `DaemonSet` or `ReplicaSet`. */
  readonly kind: string;
  readonly name: string;
  /** `spec.updateStrategy.type`; absent means `RollingUpdate`. */
  readonly updateStrategy: string | undefined;
  /** StatefulSet `status.updateRevision`: the ControllerRevision the current template makes. */
  readonly updateRevision: string | undefined;
  /** `spec.replicas`, when the kind has it. */
  readonly replicas: number | undefined;
}

/** True when a template patch of this workload reaches no Pod until the Pod is deleted. */
export function waitsForDelete(workload: RolloutStrategy): boolean {
  return (workload.kind === "StatefulSet" || workload.kind === "DaemonSet") && workload.updateStrategy === "OnDelete";
}

/** The Pods the notes name: the alerting one, and how many others the workload has. */
function podsToDelete(workload: RolloutStrategy, pod: string): string {
  if (workload.replicas !== undefined) {
    const others = workload.replicas - 1;
    return others > 0 ? `Pod ${pod} (the alerting one) and the ${others} other Pod${others === 1 ? "" : "s"} of ${workload.kind} ${workload.name}` : `Pod ${pod}`;
  }
  return `Pod ${pod} (the alerting one) and the other Pods of ${workload.kind} ${workload.name}`;
}

/**
 * The note of the `RolloutWaitsForDelete` Warning written after a patch of a workload that
 * {@link waitsForDelete}: the patch reached no Pod, all of them (the alerting `pod` named) still
 * run the old memory until deleted. `summary` is the changes as `describeChanges` writes them.
 */
export function onDeleteScaledNote(workload: RolloutStrategy, pod: string, summary: string): string {
  return `scaled ${workload.kind} ${workload.name} (${summary}), but its updateStrategy is OnDelete: no Pod gets the new memory until it is deleted, and ${podsToDelete(workload, pod)} still run the old template; delete the Pods to apply it`;
}

/** What {@link waitingForDelete} compares. */
export interface WaitingInput {
  readonly workload: RolloutStrategy;
  /** The alerting Pod's name and its `controller-revision-hash` label (StatefulSet and DaemonSet Pods carry one). */
  readonly pod: { readonly name: string; readonly revision: string | undefined };
  /**
   * The memory limits of the containers the alert is about, as the alerting Pod and the
   * workload's template set them (quantity strings; absent when unset).
   */
  readonly limits: readonly { readonly container: string; readonly pod: string | undefined; readonly template: string | undefined }[];
}

/**
 * Why a later alert of a workload that {@link waitsForDelete} is skipped, or undefined when it
 * does not wait: the alerting Pod runs a lower memory limit than the template for one of the
 * alert's containers, so the last scale has not reached it and never will until it is deleted.
 * The caller uses it in place of a `RolloutUnderWay` or `Cooldown` skip, which would let the
 * user believe a rollout is running. Names the Pod's revision and the StatefulSet's
 * `updateRevision` when both are known and differ. Pure.
 * @throws {QuantityError} on a limit that is not a quantity (the API server refuses those).
 */
export function waitingForDelete(input: WaitingInput): string | undefined {
  const { workload, pod } = input;
  if (!waitsForDelete(workload)) return undefined;
  const behind = input.limits.filter((l) => l.pod !== undefined && l.template !== undefined && compare(parseQuantity(l.template), parseQuantity(l.pod)) > 0);
  if (behind.length === 0) return undefined;
  const revision =
    pod.revision !== undefined && workload.updateRevision !== undefined && pod.revision !== workload.updateRevision
      ? ` (revision ${pod.revision}; the template's is ${workload.updateRevision})`
      : "";
  const limits = behind.map((l) => `${l.container}: limit ${l.pod}, the template's ${l.template}`).join("; ");
  return `${workload.kind} ${workload.name} has updateStrategy OnDelete: Pod ${pod.name} still runs the old template${revision} (${limits}) and gets the new memory only when it is deleted; delete Pod ${pod.name} (kubectl delete pod ${pod.name}) to apply it`;
}
