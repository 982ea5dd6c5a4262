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
 * | Deployment, StatefulSet, DaemonSet, ReplicaSet | none | `top`: the workload |
 * | Deployment, StatefulSet, DaemonSet, ReplicaSet | any other (a Knative Revision, an Argo Rollout, an operator's resource) | `UnknownController` |
 *
 * Source: https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/.
 */
import { APPS_V1, type WorkloadKind } from "../../model.ts";

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

/**
 * The next step of the walk:
 * - `read`: the last object's controller is a workload kind the walk knows above it: read it
 *   (by `ref`, uid included) and append it to the chain;
 * - `top`: the last object is what to scale (the Pod itself when it is the only one: a bare Pod);
 * - `skip`: `UnsupportedOwner` (the Pod's own controller is no workload) or `UnknownController`
 *   (the workload's is one the walk does not know); `controller` names it, `message` says so.
 */
export type OwnerStep =
  | { readonly step: "read"; readonly kind: WorkloadKind; readonly ref: ControllerRef }
  | { readonly step: "top" }
  | { readonly step: "skip"; readonly reason: OwnerSkipReason; readonly controller: ControllerRef; readonly message: string };

/** The controllers the walk follows, by the kind of the object they control (module table). */
const KNOWN_ABOVE: Readonly<Record<string, readonly WorkloadKind[]>> = {
  Pod: ["ReplicaSet", "StatefulSet", "DaemonSet"],
  ReplicaSet: ["Deployment"],
};

/**
 * The workload kind the walk reads next when an object of kind `kind` has the controller
 * `controller` (module table); undefined when the walk does not follow it there.
 */
export function knownController(kind: string, controller: ControllerRef): WorkloadKind | undefined {
  return controller.apiVersion === APPS_V1 ? (KNOWN_ABOVE[kind] ?? []).find((known) => known === controller.kind) : undefined;
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
  const controller = last.controller;
  if (controller === undefined) return { step: "top" };
  const known = knownController(last.kind, controller);
  if (known !== undefined) return { step: "read", kind: known, ref: controller };
  if (chain.length === 1) {
    return { step: "skip", reason: "UnsupportedOwner", controller, message: `Pod ${pod.name} is controlled by ${describeController(controller)}, which memory-scaler does not scale` };
  }
  const through = chain.slice(1, -1).map((link) => `${link.kind} ${link.name}`);
  const belongs = `Pod ${pod.name} belongs to ${last.kind} ${last.name}${through.length === 0 ? "" : ` (through ${through.join(", ")})`}`;
  return { step: "skip", reason: "UnknownController", controller, message: `${belongs}, which ${describeController(controller)} controls: ${notPatchedNote(last, controller)}` };
}

/** Why `workload`, which `controller` controls and the walk does not know, is not patched, and what to change instead. */
export function notPatchedNote(workload: { readonly kind: string; readonly name: string }, controller: ControllerRef): string {
  const name = `${workload.kind} ${workload.name}`;
  return `memory-scaler does not know that controller, which would put a patched Pod template back, so ${name} is not patched; change the memory in ${controller.kind} ${controller.name} (or in what controls it) instead`;
}
