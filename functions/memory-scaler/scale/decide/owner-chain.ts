/**
 * The owner walk's rule (pure): from the alerting Pod up its controller owner references
 * (`controller: true`, at most one per object) to the workload to scale, one step at a time;
 * the shell (`../observe.ts`) reads what a step names and asks again. A controller reconciles
 * what it owns back to its own spec, so a Pod template patched under another controller is put
 * back and the next alert patches it again: the walk goes on to the top controller it knows, and
 * an object whose controller it does not know is never patched: `UnknownController`, naming that
 * controller as the object to change instead.
 *
 * | the chain's last object | its controller | step |
 * | --- | --- | --- |
 * | Pod | none | `top`: the bare Pod, resized in place |
 * | Pod | apps/v1 `ReplicaSet`, `StatefulSet`, `DaemonSet` | `read` it |
 * | Pod | any other (a Job, a CronJob's Job, …) | `UnsupportedOwner`: no Pod template to scale |
 * | ReplicaSet | apps/v1 `Deployment` | `read` it |
 * | Deployment | serving.knative.dev/v1 `Revision` | `read` it |
 * | Revision | serving.knative.dev/v1 `Configuration` | `read` it |
 * | Configuration | serving.knative.dev/v1 `Service` | `read` it |
 * | Deployment, StatefulSet, DaemonSet, ReplicaSet, Knative Service | none | `top`: the workload |
 * | Revision, Configuration | none | `UnsupportedOwner`: no Knative Service above it (below) |
 * | any of them | any other (an Argo Rollout, an operator's resource) | `UnknownController` |
 *
 * A Knative Revision is scaled through its Service: the Service's `spec.template` is what Serving
 * copies into the Configuration, which stamps out each Revision, whose Deployment is Serving's
 * own (https://knative.dev/docs/serving/architecture/). A Configuration (or Revision) without a
 * Service is skipped: no Service's `traffic` says whether a new Revision would serve anything
 * (the Routes that send it traffic are written by whoever wrote the Configuration, and may name
 * Revisions), so memory-scaler does not make one; the message names the Configuration as the
 * object whose template to change.
 *
 * Source: https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/.
 */
import { APPS_V1, KNATIVE_SERVING_V1, type WorkloadKind } from "../../model.ts";

/** An owner reference with `controller: true` (`metadata.ownerReferences[]`), as the walk reads it. */
export interface ControllerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid?: string | undefined;
}

/** One object of the chain as read: what it is, and its controller (undefined: none). */
export interface ChainLink {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid?: string | undefined;
  readonly controller: ControllerRef | undefined;
}

/** Why the walk stops short of a workload to scale (reasons of `../../outcome.ts`). */
export type OwnerSkipReason = "UnsupportedOwner" | "UnknownController";

/** The Knative objects the walk reads between a Revision's Deployment and its Service, which it never patches. */
export type KnativeLinkKind = "Revision" | "Configuration";

/** What the walk reads: a workload it may scale, or a Knative link above a Revision's Deployment. */
export type OwnerKind = WorkloadKind | KnativeLinkKind;

/**
 * The next step of the walk:
 * - `read`: the last object's controller is a kind the walk knows above it: read it (by `ref`,
 *   uid included) and append it to the chain;
 * - `top`: the last object is what to scale (the Pod itself when it is the only one: a bare Pod);
 * - `skip`: `UnsupportedOwner` (the Pod's own controller is no workload; a Knative Revision or
 *   Configuration without a Service) or `UnknownController` (the workload's is one the walk does
 *   not know); `controller` names the object to change instead, `message` says so.
 */
export type OwnerStep =
  | { readonly step: "read"; readonly kind: OwnerKind; readonly ref: ControllerRef }
  | { readonly step: "top" }
  | { readonly step: "skip"; readonly reason: OwnerSkipReason; readonly controller: ControllerRef; readonly message: string };

/** The controllers the walk follows, by the apiVersion and kind of the object they control (module table). */
const KNOWN_ABOVE: Readonly<Record<string, { readonly apiVersion: string; readonly kinds: readonly OwnerKind[] }>> = {
  "v1 Pod": { apiVersion: APPS_V1, kinds: ["ReplicaSet", "StatefulSet", "DaemonSet"] },
  [`${APPS_V1} ReplicaSet`]: { apiVersion: APPS_V1, kinds: ["Deployment"] },
  [`${APPS_V1} Deployment`]: { apiVersion: KNATIVE_SERVING_V1, kinds: ["Revision"] },
  [`${KNATIVE_SERVING_V1} Revision`]: { apiVersion: KNATIVE_SERVING_V1, kinds: ["Configuration"] },
  [`${KNATIVE_SERVING_V1} Configuration`]: { apiVersion: KNATIVE_SERVING_V1, kinds: ["Service"] },
};

/** The kinds the walk reads but never scales: a chain that ends at one has no workload on top. */
const LINKS: ReadonlySet<string> = new Set([`${KNATIVE_SERVING_V1} Revision`, `${KNATIVE_SERVING_V1} Configuration`]);

/**
 * The kind the walk reads next when an object of `apiVersion` and `kind` has the controller
 * `controller` (module table); undefined when the walk does not follow it there.
 */
export function knownController(apiVersion: string, kind: string, controller: ControllerRef): OwnerKind | undefined {
  const above = KNOWN_ABOVE[`${apiVersion} ${kind}`];
  return above !== undefined && controller.apiVersion === above.apiVersion ? above.kinds.find((known) => known === controller.kind) : undefined;
}

/** `Revision web-00001 (serving.knative.dev/v1)`. */
export function describeController(ref: ControllerRef): string {
  return `${ref.kind} ${ref.name} (${ref.apiVersion})`;
}

/**
 * The step after `chain` (module table), which starts with the Pod (`v1` `Pod`) and holds each
 * object read since, in order.
 * @throws Error when `chain` is empty (a bug of the caller).
 */
export function nextOwnerStep(chain: readonly ChainLink[]): OwnerStep {
  const [pod] = chain;
  const last = chain.at(-1);
  if (pod === undefined || last === undefined) throw new Error("the owner walk starts from the Pod, and none was given");
  const through = chain.slice(1, -1).map((link) => `${link.kind} ${link.name}`);
  const belongs = `Pod ${pod.name} belongs to ${last.kind} ${last.name}${through.length === 0 ? "" : ` (through ${through.join(", ")})`}`;
  const controller = last.controller;
  if (controller === undefined) {
    if (!LINKS.has(`${last.apiVersion} ${last.kind}`)) return { step: "top" };
    const self: ControllerRef = { apiVersion: last.apiVersion, kind: last.kind, name: last.name, uid: last.uid };
    return { step: "skip", reason: "UnsupportedOwner", controller: self, message: `${belongs}, which no Knative Service owns: ${noServiceNote(last)}` };
  }
  const known = knownController(last.apiVersion, last.kind, controller);
  if (known !== undefined) return { step: "read", kind: known, ref: controller };
  if (chain.length === 1) {
    return { step: "skip", reason: "UnsupportedOwner", controller, message: `Pod ${pod.name} is controlled by ${describeController(controller)}, which memory-scaler does not scale` };
  }
  return { step: "skip", reason: "UnknownController", controller, message: `${belongs}, which ${describeController(controller)} controls: ${notPatchedNote(last, controller)}` };
}

/** Why a Knative Revision or Configuration without a Service is not scaled (module comment), and what to change instead. */
export function noServiceNote(link: { readonly kind: string; readonly name: string }): string {
  return `memory-scaler scales a Knative Revision through its Service, whose traffic says whether a new Revision serves; without one it makes no Revision, so change the memory in ${link.kind} ${link.name}'s spec.template (or in what writes it) instead`;
}

/** Why `workload`, which `controller` controls and the walk does not know, is not patched, and what to change instead. */
export function notPatchedNote(workload: { readonly kind: string; readonly name: string }, controller: ControllerRef): string {
  const name = `${workload.kind} ${workload.name}`;
  return `memory-scaler does not know that controller, which would put a patched Pod template back, so ${name} is not patched; change the memory in ${controller.kind} ${controller.name} (or in what controls it) instead`;
}
