/**
 * The read step of a firing alert (the README's "What it does", steps 1–2): one round trip for
 * the Pod, its namespace's AppMonitors, HorizontalPodAutoscalers and VerticalPodAutoscalers, and
 * the owners the Pod's name points to (`ownerGuesses`: a Deployment's ReplicaSet and the
 * Deployment, or a StatefulSet), read beside the Pod rather than after it. A guess is used only
 * when the Pod's controller reference names it, uid included; a wrong guess (a DaemonSet's Pod, a
 * name the controller truncated) costs its GETs and the walk reads the real owners after the Pod,
 * as without a guess. Which owner comes next, and where the walk stops, is the pure rule of
 * `scale/decide/owner-chain.ts`; this module only reads what it names. Plain data out, for the
 * pure plan (`scale/decide/plan.ts`).
 *
 * An autoscaler list whose resource type is not served (a 404 without an object: the VPA's CRD not
 * installed) reads as none; any other failure fails the event like every read, since scaling
 * without knowing whether an autoscaler fights it is what the lists are there to prevent. A
 * guessed read's failure fails the event only if the guess is used.
 */
import type * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";
import { classifyApiError, toHttpFailure } from "../../lib/kube-api-errors.ts";
import type { Ceilings } from "../ceilings.ts";
import { type VerticalPodAutoscalerView, vpaView } from "../coexist/autoscalers.ts";
import type { Cluster } from "../kube/cluster.ts";
import { apiVersionOf, type KnativeObject, KNATIVE_SERVING_V1, type ObjectRef, objectRef, type Workload, type WorkloadKind, type WorkloadObject } from "../model.ts";
import type { NoneGoverns } from "../outcome.ts";
import { type ChainLink, type ControllerRef, type KnativeLinkKind, nextOwnerStep, type OwnerKind, type OwnerSkipReason } from "./decide/owner-chain.ts";
import { namedAppMonitor, type NamespaceAppMonitors, type ValidAppMonitor, validAppMonitors } from "./decide/governing.ts";

/** What the read step found. */
export type Observation =
  /** Nothing to scale, and nothing to tell anyone: the Pod or its owner is gone, the alert's AppMonitor is not there. */
  /** `pod`: the Pod read, when it was (a `NoAppMonitor` Warning regards it). */
  | { readonly result: "ended"; readonly reason: "PodGone" | "OwnerGone" | NoneGoverns["reason"]; readonly message: string; readonly pod?: k8s.V1Pod }
  /**
   * The walk stopped at a controller it does not follow (`decide/owner-chain.ts`): the Pod's
   * (`UnsupportedOwner`: a Job, an unknown kind), or its workload's (`UnknownController`, with
   * that `workload`: a Knative Revision, an operator's resource).
   */
  | { readonly result: "unsupported"; readonly reason: OwnerSkipReason; readonly message: string; readonly pod: k8s.V1Pod; readonly named: ValidAppMonitor; readonly workload?: ObjectRef }
  /** A bare Pod (no controller owner reference): resized in place (`scale/targets/pod-resize-target.ts`). */
  | { readonly result: "bare"; readonly pod: k8s.V1Pod; readonly monitors: NamespaceAppMonitors; readonly named: ValidAppMonitor }
  | {
      readonly result: "observed";
      readonly pod: k8s.V1Pod;
      /** The namespace's AppMonitors, the invalid ones set apart (and logged). */
      readonly monitors: NamespaceAppMonitors;
      /** The AppMonitor the alert names, valid. */
      readonly named: ValidAppMonitor;
      readonly workload: Workload;
      /** The namespace's HorizontalPodAutoscalers (autoscaling/v2). */
      readonly hpas: readonly k8s.V2HorizontalPodAutoscaler[];
      /** The namespace's VerticalPodAutoscalers; none when the API is not served. */
      readonly vpas: readonly VerticalPodAutoscalerView[];
    };

/** `list`, or none when its resource type is not served; `doing` names it in any other failure. */
async function listOrNone<T>(list: Promise<T[]>, doing: string): Promise<T[]> {
  try {
    return await list;
  } catch (error) {
    if (classifyApiError(error) === "NotServed") return [];
    throw toHttpFailure(error, doing);
  }
}

/**
 * Reads what the plan needs for the alert on Pod `namespace/pod` from AppMonitor `appmonitor`,
 * the AppMonitors bounded by the install's `ceilings` (`decide/bound-spec.ts`).
 * @throws HttpError when the API server fails (`toHttpFailure`: 503, 429, 500 or 422 by class).
 */
export async function observeFiring(cluster: Cluster, alert: { readonly namespace: string; readonly pod: string; readonly appmonitor: string }, log: Logger, ceilings?: Ceilings): Promise<Observation> {
  const podKey = `${alert.namespace}/${alert.pod}`;
  const guessed = prefetchOwners(cluster, alert.namespace, ownerGuesses(alert.pod));
  const [pod, items, hpas, vpas] = await Promise.all([
    cluster.readPod(alert.namespace, alert.pod).catch((error: unknown) => {
      throw toHttpFailure(error, `read Pod ${podKey}`);
    }),
    cluster.listAppMonitors(alert.namespace).catch((error: unknown) => {
      throw toHttpFailure(error, `list AppMonitors in namespace ${alert.namespace}`);
    }),
    listOrNone(cluster.listHorizontalPodAutoscalers(alert.namespace), `list HorizontalPodAutoscalers in namespace ${alert.namespace}`),
    listOrNone(cluster.listVerticalPodAutoscalers(alert.namespace), `list VerticalPodAutoscalers in namespace ${alert.namespace}`),
  ]);
  if (pod === undefined) return { result: "ended", reason: "PodGone", message: `Pod ${podKey} no longer exists` };

  const monitors = validAppMonitors(alert.namespace, items, ceilings);
  for (const rejected of monitors.rejected) log.warn({ appmonitor: rejected.name, problem: rejected.problem }, "ignoring an AppMonitor with an invalid spec");
  const named = namedAppMonitor(monitors, alert.appmonitor);
  if (named.result === "none") return { result: "ended", reason: named.reason, message: named.message, pod };

  // The owner before coverage: coverage is judged on the workload's Pod template, not on the
  // live Pod, whose annotations and labels anyone allowed to edit that one Pod can set.
  const resolution = await resolveWorkload(cluster, pod, guessed).catch((error: unknown) => {
    throw toHttpFailure(error, `read the owner of Pod ${podKey}`);
  });
  if (resolution.result === "bare") return { result: "bare", pod, monitors, named: named.appMonitor };
  if (resolution.result === "gone") return { result: "ended", reason: "OwnerGone", message: resolution.message };
  if (resolution.result === "unsupported") {
    const { reason, message, workload } = resolution;
    return { result: "unsupported", reason, message, pod, named: named.appMonitor, ...(workload === undefined ? {} : { workload }) };
  }
  return { result: "observed", pod, monitors, named: named.appMonitor, workload: resolution.workload, hpas, vpas: vpas.map(vpaView) };
}

/** An owner a Pod's name suggests, to read before the Pod's owner references are known. */
export interface OwnerGuess {
  readonly kind: OwnerKind;
  readonly name: string;
}

/**
 * The owners a Pod's name points to, by the names controllers give their Pods: a StatefulSet
 * names them `<statefulset>-<ordinal>`
 * (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#pod-identity); a
 * ReplicaSet (and a DaemonSet) `<owner>-<5 random characters>`, and a Deployment names its
 * ReplicaSets `<deployment>-<pod-template-hash>`
 * (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#pod-template-hash-label),
 * so a suffix of digits reads as a StatefulSet's Pod and any other as a Deployment's. Knative
 * Serving names a Revision's Deployment `<revision>-deployment` and a Configuration's Revisions
 * `<configuration>-<5 digits>`, the Configuration after its Service
 * (knative.dev/serving `pkg/reconciler/revision/resources/names`, `pkg/reconciler/configuration/resources`),
 * so such a Deployment's name adds the Revision, the Configuration and the Service. No guess
 * for a name without a `-`. Pure: a guess is only what to read early, never trusted.
 */
export function ownerGuesses(podName: string): OwnerGuess[] {
  const cut = podName.lastIndexOf("-");
  if (cut <= 0) return [];
  const owner = podName.slice(0, cut);
  if (/^[0-9]+$/.test(podName.slice(cut + 1))) return [{ kind: "StatefulSet", name: owner }];
  const rsCut = owner.lastIndexOf("-");
  const replicaSet: OwnerGuess = { kind: "ReplicaSet", name: owner };
  if (rsCut <= 0) return [replicaSet];
  const deployment = owner.slice(0, rsCut);
  const revision = /^(.+)-deployment$/.exec(deployment)?.[1];
  const service = revision === undefined ? undefined : /^(.+)-[0-9]{5}$/.exec(revision)?.[1];
  const knative: OwnerGuess[] =
    revision === undefined ? [] : [{ kind: "Revision", name: revision }, ...(service === undefined ? [] : [{ kind: "Configuration", name: service } as const, { kind: "Service", name: service } as const])];
  return [replicaSet, { kind: "Deployment", name: deployment }, ...knative];
}

/** Reads started early, by kind and name; looked up by {@link resolveWorkload} before it reads itself. */
export type PrefetchedOwners = (kind: OwnerKind, name: string) => Promise<WorkloadObject | KnativeObject | undefined> | undefined;

/**
 * Starts the reads of `guesses` at once. A read's failure is kept for whoever uses it: a guess
 * never used fails nothing (its rejection is handled here so it is not an unhandled one).
 */
export function prefetchOwners(cluster: Cluster, namespace: string, guesses: readonly OwnerGuess[]): PrefetchedOwners {
  const reads = new Map<string, Promise<WorkloadObject | KnativeObject | undefined>>();
  for (const { kind, name } of guesses) {
    const read = isLink(kind) ? cluster.readKnative(kind, namespace, name) : cluster.readWorkload(kind, namespace, name);
    read.catch(() => undefined);
    reads.set(`${kind}/${name}`, read);
  }
  return (kind, name) => reads.get(`${kind}/${name}`);
}

/**
 * The result of {@link resolveWorkload}:
 * - `found`: the workload;
 * - `bare`: the Pod has no controller: it is resized in place;
 * - `unsupported`: the walk stopped at a controller it does not follow
 *   (`decide/owner-chain.ts`): `UnsupportedOwner` (the Pod's controller is no workload: a Job, a
 *   kind it does not know) or `UnknownController` (the workload's controller is one it does not
 *   know); `workload` is the workload it would have patched, for `UnknownController` — the caller
 *   warns with `message`;
 * - `gone`: an owner named in a reference no longer exists (or is another object with the same
 *   name): the Pod is being garbage-collected, nothing to scale.
 */
export type Resolution =
  | { readonly result: "found"; readonly workload: Workload }
  | { readonly result: "bare" }
  | { readonly result: "unsupported"; readonly reason: OwnerSkipReason; readonly message: string; readonly controller: ControllerRef; readonly workload?: ObjectRef }
  | { readonly result: "gone"; readonly message: string };

/** The reference with `controller: true`, which names the object that manages this one (at most one exists). */
export function controllerOf(meta: k8s.V1ObjectMeta | undefined): k8s.V1OwnerReference | undefined {
  return meta?.ownerReferences?.find((ref) => ref.controller === true);
}

/** An object read, as a link of the walk's chain. */
function linkOf(apiVersion: string, kind: string, meta: k8s.V1ObjectMeta | undefined): ChainLink {
  const ref = controllerOf(meta);
  return { apiVersion, kind, name: meta?.name ?? "", uid: meta?.uid, controller: ref === undefined ? undefined : { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, uid: ref.uid } };
}

/**
 * Walks the Pod's controller references to the workload to patch, as `decide/owner-chain.ts`
 * says at each step, using a read of `prefetched` where it has the owner's kind and name (its
 * object is then checked like any other).
 * @throws whatever the {@link Cluster} throws for a failed read (the caller classifies it).
 */
export async function resolveWorkload(cluster: Cluster, pod: k8s.V1Pod, prefetched: PrefetchedOwners = () => undefined): Promise<Resolution> {
  const namespace = pod.metadata?.namespace ?? "";
  const chain: ChainLink[] = [linkOf("v1", "Pod", pod.metadata)];
  // A Deployment names its ReplicaSets `<deployment>-<pod-template-hash>` and labels their Pods
  // with that hash (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#pod-template-hash-label):
  // read the likely Deployment together with the ReplicaSet, saving a round trip. It is used
  // only if the ReplicaSet's controller reference names it, uid included (`readOwned`).
  const owner = chain[0]?.controller;
  const hash = pod.metadata?.labels?.["pod-template-hash"];
  const guess = owner?.kind === "ReplicaSet" && hash !== undefined && owner.name.endsWith(`-${hash}`) ? owner.name.slice(0, -(hash.length + 1)) : "";
  // A guess is read by its kind's own call, so what it holds is of that kind.
  const direct = (kind: WorkloadKind, name: string) => (prefetched(kind, name) as Promise<WorkloadObject | undefined> | undefined) ?? cluster.readWorkload(kind, namespace, name);
  const likely = guess === "" ? undefined : direct("Deployment", guess);
  likely?.catch(() => undefined);
  const read = (kind: WorkloadKind, name: string) => (kind === "Deployment" && name === guess && likely !== undefined ? likely : direct(kind, name));

  // The last workload read; the rule goes only up kinds it knows, so the loop ends (at most 2
  // reads, 5 for a Knative Revision's Pod: ReplicaSet, Deployment, Revision, Configuration, Service).
  let top: { kind: WorkloadKind; object: WorkloadObject } | undefined;
  for (;;) {
    const step = nextOwnerStep(chain);
    if (step.step === "top") return top === undefined ? { result: "bare" } : found(top.kind, namespace, top.object);
    if (step.step === "skip") {
      const meta = top?.object.metadata;
      const workload = top === undefined ? {} : { workload: objectRef(apiVersionOf(top.kind), top.kind, namespace, meta?.name ?? "", meta?.uid) };
      return { result: "unsupported", reason: step.reason, message: step.message, controller: step.controller, ...workload };
    }
    const object = await readOwned(readStep, step.kind, step.ref);
    if ("result" in object) return object;
    if (!isLink(step.kind)) top = { kind: step.kind, object };
    chain.push(linkOf(isLink(step.kind) ? KNATIVE_SERVING_V1 : apiVersionOf(step.kind), step.kind, object.metadata));
  }

  function readStep(kind: OwnerKind, name: string): Promise<WorkloadObject | KnativeObject | undefined> {
    return isLink(kind) ? (prefetched(kind, name) ?? cluster.readKnative(kind, namespace, name)) : read(kind, name);
  }
}

/** Whether the walk reads `kind` only to go on above it (a Knative Revision or Configuration). */
function isLink(kind: OwnerKind): kind is KnativeLinkKind {
  return kind === "Revision" || kind === "Configuration";
}

/** Reads the referenced object and checks it is the one referenced (same uid), not a namesake. */
async function readOwned<T extends WorkloadObject | KnativeObject>(
  read: (kind: OwnerKind, name: string) => Promise<T | undefined>,
  kind: OwnerKind,
  ref: ControllerRef,
): Promise<T | { result: "gone"; message: string }> {
  const object = await read(kind, ref.name);
  if (object === undefined || (ref.uid !== undefined && object.metadata?.uid !== ref.uid)) {
    return { result: "gone", message: `${kind} ${ref.name} (uid ${ref.uid}) no longer exists` };
  }
  return object;
}

function found(kind: WorkloadKind, namespace: string, object: WorkloadObject): Resolution {
  const template = object.spec?.template;
  const name = object.metadata?.name ?? "";
  if (template === undefined) return { result: "gone", message: `${kind} ${name} has no Pod template` };
  return { result: "found", workload: { kind, name, namespace, object: { ...object, spec: { ...object.spec, template } } } };
}
