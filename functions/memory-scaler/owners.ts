/**
 * From a Pod to the workload whose Pod template made it, by the controller owner references
 * (https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/):
 * Pod → ReplicaSet → Deployment, Pod → ReplicaSet (no Deployment), Pod → StatefulSet, Pod →
 * DaemonSet. Scaling the owner, not the Pod, is DESIGN.md's first correctness decision: a Pod
 * changed behind its controller's back is undone by it.
 */
import type * as k8s from "@kubernetes/client-node";
import type { Cluster, WorkloadKind, WorkloadObject } from "./cluster.ts";

/** `apiVersion` of every workload kind memory-scaler scales. */
export const APPS_V1 = "apps/v1";

/** A workload memory-scaler can patch. */
export interface Workload {
  readonly kind: WorkloadKind;
  readonly name: string;
  readonly namespace: string;
  /** The object as read: its `spec.template` and `metadata` (annotations, uid) are what the decision and the patch use. */
  readonly object: WorkloadObject & { spec: { template: k8s.V1PodTemplateSpec } };
}

/**
 * The result of {@link resolveWorkload}:
 * - `found`: the workload;
 * - `unsupported`: the Pod has no controller, or one memory-scaler does not scale (a Job, an
 *   Argo Rollout's ReplicaSet, a kind it does not know) — the caller warns with `message`;
 * - `gone`: an owner named in a reference no longer exists (or is another object with the same
 *   name): the Pod is being garbage-collected, nothing to scale.
 */
export type Resolution =
  | { readonly result: "found"; readonly workload: Workload }
  | { readonly result: "unsupported"; readonly message: string }
  | { readonly result: "gone"; readonly message: string };

/** The reference with `controller: true`, which names the object that manages this one (at most one exists). */
export function controllerOf(meta: k8s.V1ObjectMeta | undefined): k8s.V1OwnerReference | undefined {
  return meta?.ownerReferences?.find((ref) => ref.controller === true);
}

const DIRECT_KINDS: ReadonlySet<string> = new Set(["ReplicaSet", "StatefulSet", "DaemonSet"]);

/**
 * Walks the Pod's controller references to the workload to patch.
 * @throws whatever the {@link Cluster} throws for a failed read (the caller classifies it).
 */
export async function resolveWorkload(cluster: Cluster, pod: k8s.V1Pod): Promise<Resolution> {
  const namespace = pod.metadata?.namespace ?? "";
  const podName = pod.metadata?.name ?? "";
  const owner = controllerOf(pod.metadata);
  if (owner === undefined) {
    return { result: "unsupported", message: `Pod ${podName} has no controller: a bare Pod has no template to scale` };
  }
  if (owner.apiVersion !== APPS_V1 || !DIRECT_KINDS.has(owner.kind)) {
    return { result: "unsupported", message: `Pod ${podName} is controlled by ${owner.kind} ${owner.name} (${owner.apiVersion}), which memory-scaler does not scale` };
  }
  // A Deployment names its ReplicaSets `<deployment>-<pod-template-hash>` and labels their Pods
  // with that hash (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#pod-template-hash-label):
  // read the likely Deployment together with the ReplicaSet, saving a round trip. It is used
  // only if the ReplicaSet's controller reference names it, uid included.
  const hash = pod.metadata?.labels?.["pod-template-hash"];
  const guess = owner.kind === "ReplicaSet" && hash !== undefined && owner.name.endsWith(`-${hash}`) ? owner.name.slice(0, -(hash.length + 1)) : undefined;
  const [direct, guessed] = await Promise.all([
    readOwned(cluster, owner.kind as WorkloadKind, namespace, owner),
    guess === undefined || guess === "" ? undefined : cluster.readWorkload("Deployment", namespace, guess),
  ]);
  if ("result" in direct) return direct;
  if (owner.kind !== "ReplicaSet") return found(owner.kind as WorkloadKind, namespace, direct);

  const rsOwner = controllerOf(direct.metadata);
  if (rsOwner === undefined) return found("ReplicaSet", namespace, direct);
  if (rsOwner.apiVersion !== APPS_V1 || rsOwner.kind !== "Deployment") {
    return {
      result: "unsupported",
      message: `Pod ${podName} belongs to ReplicaSet ${owner.name}, controlled by ${rsOwner.kind} ${rsOwner.name} (${rsOwner.apiVersion}), which memory-scaler does not scale`,
    };
  }
  const confirmed = guessed !== undefined && guessed.metadata?.name === rsOwner.name && guessed.metadata.uid === rsOwner.uid;
  const deployment = confirmed ? guessed : await readOwned(cluster, "Deployment", namespace, rsOwner);
  if ("result" in deployment) return deployment;
  return found("Deployment", namespace, deployment);
}

/** Reads the referenced object and checks it is the one referenced (same uid), not a namesake. */
async function readOwned(
  cluster: Cluster,
  kind: WorkloadKind,
  namespace: string,
  ref: k8s.V1OwnerReference,
): Promise<WorkloadObject | { result: "gone"; message: string }> {
  const object = await cluster.readWorkload(kind, namespace, ref.name);
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
