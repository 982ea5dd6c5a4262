/**
 * What memory-scaler knows of a Knative Service (`serving.knative.dev/v1`) beyond what every
 * workload has, pure: which containers of a Revision's Pod are the user's, which Pods are the
 * Service's, and whether a new Revision serves traffic. Shared by the scale targets and the
 * follow-up. Names are Serving's own (knative.dev/serving `pkg/apis/serving/register.go`, the
 * labels it puts on every Revision Pod; `pkg/reconciler/revision/resources`, the queue-proxy
 * container it adds to each).
 */
import type * as k8s from "@kubernetes/client-node";
import type { ContainerMemory, KnativeTrafficTarget } from "./model.ts";

/** Knative Serving's resources memory-scaler reads (and, the Service, patches), by kind (https://knative.dev/docs/serving/reference/serving-api/). */
export const KNATIVE_SERVING = {
  Service: { group: "serving.knative.dev", version: "v1", plural: "services" },
  Configuration: { group: "serving.knative.dev", version: "v1", plural: "configurations" },
  Revision: { group: "serving.knative.dev", version: "v1", plural: "revisions" },
} as const;

/** The container Serving adds to every Revision Pod beside the user's: never scaled, never resized. */
export const QUEUE_PROXY = "queue-proxy";

/** The labels Serving puts on a Revision's Pods: its Service's name and uid, and the Revision's name. */
export const SERVICE_LABEL = "serving.knative.dev/service";
export const SERVICE_UID_LABEL = "serving.knative.dev/serviceUID";
export const REVISION_LABEL = "serving.knative.dev/revision";

/** `memory` without queue-proxy's: the containers a Revision Pod runs from its Service's template. */
export function userContainers<T extends Pick<ContainerMemory, "name">>(memory: readonly T[]): T[] {
  return memory.filter((c) => c.name !== QUEUE_PROXY);
}

/** The label selector of a Service's Pods, every Revision's (`serving.knative.dev/service=<name>`). */
export function servicePodSelector(service: string): string {
  return `${SERVICE_LABEL}=${service}`;
}

/**
 * Whether `pod` is one of Service `service`'s Revision Pods, keyed as a Deployment's are (the
 * in-place admission policy's rule too, `scripts/in-place-policy.ts`): its controller is the
 * ReplicaSet `<revision>-deployment-<pod-template-hash>` of its Revision's Deployment, and Serving's
 * labels name the Service (and its uid, where the Pod has that label).
 */
export function isRevisionPodOf(service: { readonly name: string; readonly uid: string | undefined }, pod: k8s.V1Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  const owner = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
  const revision = labels[REVISION_LABEL];
  const hash = labels["pod-template-hash"];
  if (owner?.apiVersion !== "apps/v1" || owner.kind !== "ReplicaSet" || revision === undefined || hash === undefined) return false;
  const uid = labels[SERVICE_UID_LABEL];
  return owner.name === `${revision}-deployment-${hash}` && labels[SERVICE_LABEL] === service.name && (uid === undefined || uid === service.uid);
}

/**
 * Why a new Revision of the Service would not serve traffic, or undefined when it would: its
 * `spec.traffic` is set and no entry follows the latest Revision (`latestRevision: true`), so every
 * request goes to Revisions named there, and a Revision the patch makes serves none
 * (https://knative.dev/docs/serving/traffic-management/).
 */
export function pinnedTrafficNote(service: string, traffic: readonly KnativeTrafficTarget[] | undefined): string | undefined {
  if (traffic === undefined || traffic.length === 0 || traffic.some((t) => t.latestRevision === true)) return undefined;
  const named = [...new Set(traffic.flatMap((t) => (t.revisionName === undefined ? [] : [t.revisionName])))];
  return `the new memory does not serve traffic: Service ${service}'s spec.traffic sends every request to ${named.length === 0 ? "named Revisions" : `Revision${named.length === 1 ? "" : "s"} ${named.join(", ")}`} and none with latestRevision: true; move the traffic to the new Revision to give it the memory`;
}

/**
 * A Service's Revision template as a Pod spec the API server admits (the dry run of the scaled
 * Pod, `scale/targets/write.ts`): without the probes, which Serving fills in and rewrites for its
 * queue-proxy (a `tcpSocket` of port 0 is valid in a Revision template, not in a Pod), and which
 * no memory admission reads.
 */
export function admissibleContainer(container: k8s.V1Container): k8s.V1Container {
  const { readinessProbe: _r, livenessProbe: _l, startupProbe: _s, ...rest } = container;
  return rest;
}
