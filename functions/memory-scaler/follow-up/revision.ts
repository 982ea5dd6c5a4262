/**
 * Where a Knative Service's rollout stands, pure: a scale patches the Service's `spec.template`,
 * Serving makes a new Revision of it, and the rollout is that Revision's coming up
 * (https://knative.dev/docs/serving/services/). Called by `rollout.ts` `decideFollowUp` once
 * Serving observed the patched generation, so `status.latestCreatedRevisionName` names the
 * Revision of the patched template (or of a later one).
 *
 * - the Revision `Ready` `True` → `rolledOut`, saying when the Service's `spec.traffic` sends
 *   nothing to it (`../knative.ts` `pinnedTrafficNote`);
 * - `Ready` `False` → `failed` with Serving's own reason (`ExitCode137`, `ProgressDeadlineExceeded`,
 *   `ContainerMissing`, …) and message: Serving gives up on a Revision after its progress deadline
 *   (600 s by default), so no deadline of memory-scaler's is needed;
 * - otherwise (no Revision yet, not read yet, `Ready` `Unknown`) → `progressing`.
 */
import type { RevisionView, WorkloadView } from "../kube/views.ts";
import { pinnedTrafficNote } from "../knative.ts";
import type { FollowUp } from "./follow-up.ts";

/** The follow-up of Service `service` (its view as read) from its latest created Revision `revision` (undefined: not there, or none named). */
export function decideRevisionFollowUp(service: WorkloadView, revision: RevisionView | undefined): FollowUp {
  const subject = `Service ${service.name}`;
  const name = service.latestCreatedRevision;
  if (name === undefined) return { result: "progressing", message: `${subject}: Serving has not created the Revision of generation ${service.observedGeneration ?? "?"} yet` };
  if (revision === undefined || revision.name !== name) return { result: "progressing", message: `${subject}: Revision ${name} is not there yet` };
  const ready = revision.ready;
  if (ready?.status === "True") {
    const pinned = pinnedTrafficNote(service.name, service.traffic);
    return { result: "rolledOut", message: `${subject}: Revision ${name} is Ready with the new memory${pinned === undefined ? "" : `; ${pinned}`}` };
  }
  if (ready?.status === "False") {
    return { result: "failed", reason: ready.reason ?? "RevisionFailed", message: `${subject}: Revision ${name} is not Ready (${ready.reason ?? "no reason"}): ${ready.message ?? "no message"}` };
  }
  return { result: "progressing", message: `${subject}: Revision ${name} is coming up${ready?.reason === undefined ? "" : ` (${ready.reason}${ready.message === undefined ? "" : `: ${ready.message}`})`}` };
}
