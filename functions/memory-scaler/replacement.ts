/**
 * Whether a scale replaces the workload's Pods, and whether that loses what they hold, from plain
 * data (the workload's kind, `spec.replicas`, update strategy and Pod template volumes). Pure: the
 * flow reads the workload (`scale/observe.ts`) and reports what this decides (`events.ts`).
 *
 * A template patch reaches the Pods only through new Pods: the workload's controller deletes each
 * old Pod and creates one from the new template (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#updating-a-deployment,
 * https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#rolling-updates). Every
 * container restarts; what a Pod held in memory, and the contents of its `emptyDir` volumes
 * (https://kubernetes.io/docs/concepts/storage/volumes/#emptydir: "the data in the emptyDir is
 * deleted permanently" when the Pod is removed), are gone. Under `spec.updateMode: Rollout` (the
 * default; `InPlace` and `InPlaceOrRollout` resize the running Pods instead, `scale/targets/in-place-target.ts`)
 * every `Scaled` note says that the Pods are replaced, and a workload whose Pods likely keep
 * state there gets a `PodsReplaced` Warning naming why and `InPlace` as the way to keep it:
 *
 * | at risk | when |
 * | --- | --- |
 * | `SingleReplica` | a Deployment with `spec.replicas` 1 (absent means 1): no other Pod holds what its one Pod held, and nothing serves while it is replaced |
 * | `StatefulSet` | any StatefulSet: its Pods have identities and keep state; their PersistentVolumeClaims outlive the replacement, their memory does not |
 * | `EmptyDir` | a Pod template with an `emptyDir` volume (any `medium`; `Memory` is a tmpfs counted in the container's memory) |
 *
 * How the Pods are replaced: a Deployment's rollout (either strategy), a StatefulSet's or
 * DaemonSet's `RollingUpdate` → `rollout`; `updateStrategy: OnDelete` → `onDelete` (each Pod when
 * someone deletes it, which the `RolloutWaitsForDelete` Warning asks for); a ReplicaSet without a
 * Deployment → `none` (it never replaces a running Pod: only Pods it creates later get the new
 * template), and then nothing is at risk.
 */

/** Why a scale's replacement of the Pods loses what they hold (the `PodsReplaced` Warning); module table. */
export type StateAtRisk = "SingleReplica" | "StatefulSet" | "EmptyDir";

/** What {@link podReplacement} reads of the workload, as plain data. */
export interface ReplacementInput {
  /** `Deployment`, `StatefulSet`, `DaemonSet` or `ReplicaSet`. */
  readonly kind: string;
  /** `spec.replicas` (Deployment, StatefulSet, ReplicaSet); absent means 1. */
  readonly replicas: number | undefined;
  /** StatefulSet and DaemonSet `spec.updateStrategy.type` (`RollingUpdate` when absent); ignored for the other kinds. */
  readonly updateStrategy: string | undefined;
  /** The Pod template's `spec.volumes`: each volume's name and, for an `emptyDir` one, its `medium`. */
  readonly volumes: readonly { readonly name: string; readonly emptyDir?: { readonly medium?: string | undefined } | undefined }[];
}

/** How a scale's new template reaches the Pods, and what that loses. */
export interface PodReplacement {
  /** `rollout`: the controller replaces the Pods now; `onDelete`: each Pod when it is deleted; `none`: no Pod is replaced. */
  readonly how: "rollout" | "onDelete" | "none";
  /** Why the replaced Pods lose state (module table), in that order; empty when `how` is `none`. */
  readonly atRisk: readonly StateAtRisk[];
  /** The template's `emptyDir` volumes, by name, in spec order (listed when `atRisk` has `EmptyDir`). */
  readonly emptyDirs: readonly string[];
}

/** Decides {@link PodReplacement} for `input` (module table). */
export function podReplacement(input: ReplacementInput): PodReplacement {
  const how = input.kind === "ReplicaSet" ? "none" : (input.kind === "StatefulSet" || input.kind === "DaemonSet") && input.updateStrategy === "OnDelete" ? "onDelete" : "rollout";
  const emptyDirs = input.volumes.filter((v) => v.emptyDir !== undefined).map((v) => (v.emptyDir?.medium === "Memory" ? `${v.name} (medium Memory)` : v.name));
  if (how === "none") return { how, atRisk: [], emptyDirs };
  const atRisk: StateAtRisk[] = [];
  if (input.kind === "Deployment" && (input.replicas ?? 1) === 1) atRisk.push("SingleReplica");
  if (input.kind === "StatefulSet") atRisk.push("StatefulSet");
  if (emptyDirs.length > 0) atRisk.push("EmptyDir");
  return { how, atRisk, emptyDirs };
}

/**
 * What the `Scaled` note adds after the changes: "; the rollout replaces (restarts) its Pods", or
 * for OnDelete "; each Pod is replaced (restarted) when deleted"; nothing for `none`.
 */
export function replacementClause(replacement: PodReplacement): string {
  if (replacement.how === "rollout") return "; the rollout replaces (restarts) its Pods";
  if (replacement.how === "onDelete") return "; each Pod is replaced (restarted) when deleted";
  return "";
}

const why = (reason: StateAtRisk, workload: { readonly kind: string; readonly name: string }, emptyDirs: readonly string[]): string => {
  if (reason === "SingleReplica") return `${workload.kind} ${workload.name} has a single replica, so no other Pod holds what its Pod holds`;
  if (reason === "StatefulSet") return `${workload.name} is a StatefulSet, whose Pods keep state (their PersistentVolumeClaims are kept, their memory is not)`;
  return `its Pod template has emptyDir volume${emptyDirs.length === 1 ? "" : "s"} ${emptyDirs.join(", ")}`;
};

/**
 * The note of the `PodsReplaced` Warning, or undefined when none is due (`how` is `none` or
 * nothing is at risk): that the Pods are replaced, why their state is at risk (each reason of
 * `atRisk`), that their memory and emptyDir contents are lost, and that `spec.updateMode: InPlace`
 * avoids it.
 */
export function podsReplacedNote(workload: { readonly kind: string; readonly name: string }, replacement: PodReplacement): string | undefined {
  if (replacement.how === "none" || replacement.atRisk.length === 0) return undefined;
  const replaced = replacement.how === "rollout" ? "the rollout of this scale replaces (restarts) its Pods" : "its Pods get the new memory only when each is deleted and replaced (restarted, updateStrategy OnDelete)";
  return (
    `${replaced}, and what they hold in memory and in emptyDir volumes is lost: ${replacement.atRisk.map((r) => why(r, workload, replacement.emptyDirs)).join("; ")}. ` +
    "spec.updateMode: InPlace (or InPlaceOrRollout) on the AppMonitor resizes the running Pods instead, without replacing them"
  );
}
