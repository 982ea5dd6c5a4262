/**
 * The follow-up's result types, one home for the decisions that return them (`rollout.ts`,
 * `revision.ts`, `resize.ts`, `in-place.ts`), so none imports another for a type.
 */

/**
 * Why a rollout failed (the condition's reason and the Event's note); see `rollout.ts`'s module comment,
 * `follow-up/resize.ts` for a bare Pod's in-place resize (`Infeasible`, `ResizeError`) and
 * `follow-up/in-place.ts` for a workload's Pods resized in place (`Deferred` too long).
 */
export type RolloutFailure = "ProgressDeadlineExceeded" | "FailedCreate" | "PodUnschedulable" | "CrashLoopingPod" | "Infeasible" | "ResizeError" | "Deferred";

/** A Knative Revision's own reason for not being Ready (`revision.ts`), as Serving words it: `ExitCode137`, `ContainerMissing`, …. */
export type RevisionFailure = string;

/** Where a pending rollout or resize stands: the result of each follow-up decision (`rollout.ts` `decideFollowUp`, `revision.ts`, `resize.ts`, `in-place.ts`). */
export type FollowUp =
  /** The workload is gone, or is another one now (another uid, a generation below the recorded one): forget the rollout. */
  | { readonly result: "gone"; readonly message: string }
  | { readonly result: "progressing"; readonly message: string; readonly waitingPods?: readonly string[] }
  | { readonly result: "rolledOut"; readonly message: string }
  | { readonly result: "failed"; readonly reason: RolloutFailure | RevisionFailure; readonly message: string }
  /** `spec.updateMode: InPlaceOrRollout`: the in-place resize failed, write the recorded memory into the template instead (`follow-up/in-place.ts`). */
  | { readonly result: "fallBack"; readonly reason: RolloutFailure; readonly message: string }
  /** `stuckRollout: DeletePod`: delete this Pod (uid as precondition); the rollout stays pending. */
  | { readonly result: "deletePod"; readonly pod: { readonly name: string; readonly uid: string | undefined }; readonly message: string };
