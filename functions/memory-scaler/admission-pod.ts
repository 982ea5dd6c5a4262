/**
 * The Pod a scaled workload would create, for a server-side dry run of its admission.
 *
 * LimitRange and ResourceQuota admission only look at Pods (the LimitRanger and ResourceQuota
 * plugins ignore Deployments and other templates:
 * https://kubernetes.io/docs/concepts/policy/limit-range/ , "LimitRange validations occur only
 * at Pod admission stage"), so a dry run of the workload patch alone would accept a limit that
 * every new Pod is then refused, leaving the rollout stuck. Creating this Pod with
 * `dryRun=All` asks the same admission chain the workload controller's Pods will meet, and
 * persists nothing. Pure.
 */
import type * as k8s from "@kubernetes/client-node";
import type { ContainerChange } from "./decide.ts";
import type { Workload } from "./owners.ts";

/** `container` with the memory of the change named after it, if any. */
function withChange(container: k8s.V1Container, changes: readonly ContainerChange[]): k8s.V1Container {
  const change = changes.find((c) => c.container === container.name);
  if (change === undefined) return container;
  const limits = { ...container.resources?.limits, memory: change.to.limit };
  const requests = change.to.request === undefined ? container.resources?.requests : { ...container.resources?.requests, memory: change.to.request };
  return { ...container, resources: { ...container.resources, limits, ...(requests === undefined ? {} : { requests }) } };
}

/**
 * The workload's Pod template as a Pod in its namespace, with `changes` applied to the memory
 * requests and limits of its containers and native sidecars (container names are unique across
 * both lists), named by `generateName` (`<workload>-`) and without owner references.
 */
export function podForAdmission(workload: Workload, changes: readonly ContainerChange[]): k8s.V1Pod {
  const template = workload.object.spec.template;
  const spec = template.spec ?? { containers: [] };
  const containers = spec.containers.map((c) => withChange(c, changes));
  const initContainers = spec.initContainers?.map((c) => withChange(c, changes));
  const metadata: k8s.V1ObjectMeta = { generateName: `${workload.name.slice(0, 200)}-`, namespace: workload.namespace };
  if (template.metadata?.labels !== undefined) metadata.labels = template.metadata.labels;
  if (template.metadata?.annotations !== undefined) metadata.annotations = template.metadata.annotations;
  return { apiVersion: "v1", kind: "Pod", metadata, spec: { ...spec, containers, ...(initContainers === undefined ? {} : { initContainers }) } };
}
