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
import { apiStatus, isPatchConflict, isRefusal, toHttpFailure } from "../../../lib/kube-api-errors.ts";
import type { Cluster } from "../../kube/cluster.ts";
import { admissibleContainer } from "../../knative.ts";
import { NODE_VIEW_REFUSAL_AGE_MS } from "../../kube/node-memory.ts";
import { quotaView } from "../../kube/views.ts";
import type { Logger } from "pino";
import type { AppMonitorRef, StatusWriter } from "../../kube/status-writer.ts";
import type { ContainerChange, Workload } from "../../model.ts";
import { type PendingScale, withoutPendingScale, withPendingScale } from "../../status/pending-scales.ts";
import { decideFit, decideQuota, summarizeAllocatable, type NodeMemorySummary, podMemoryLimit, podMemoryRequest, type RolloutShape } from "../decide/capacity.ts";
import type { buildTemplatePatch } from "./template-patch.ts";

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
 * both lists), named by `generateName` (`<workload>-`) and without owner references; a Knative
 * Service's containers without the probes Serving rewrites (`../../knative.ts` `admissibleContainer`).
 */
export function podForAdmission(workload: Workload, changes: readonly ContainerChange[]): k8s.V1Pod {
  const template = workload.object.spec.template;
  const spec = template.spec ?? { containers: [] };
  const admissible = workload.kind === "Service" ? admissibleContainer : (c: k8s.V1Container) => c;
  const containers = spec.containers.map((c) => admissible(withChange(c, changes)));
  const initContainers = spec.initContainers?.map((c) => withChange(c, changes));
  const metadata: k8s.V1ObjectMeta = { generateName: `${workload.name.slice(0, 200)}-`, namespace: workload.namespace };
  if (template.metadata?.labels !== undefined) metadata.labels = template.metadata.labels;
  if (template.metadata?.annotations !== undefined) metadata.annotations = template.metadata.annotations;
  return { apiVersion: "v1", kind: "Pod", metadata, spec: { ...spec, containers, ...(initContainers === undefined ? {} : { initContainers }) } };
}

/** How the write step ended: written (with the generation the patch gave the workload) or why not. */
export type WriteResult =
  | { result: "written"; generation: number | undefined }
  /** A dry run (`dryRun`): every check passed, nothing was written. */
  | { result: "checked" }
  | { result: "conflict"; message: string }
  | { result: "refused"; message: string }
  | { result: "overQuota"; message: string }
  | { result: "unschedulable"; message: string };

/** The peak of a rollout depends on these (`scale/decide/capacity.ts`). */
function shapeOf(workload: Workload): RolloutShape {
  const spec = workload.object.spec;
  return { kind: workload.kind, name: workload.name, replicas: spec.replicas ?? 1, strategy: spec.strategy?.type, maxSurge: spec.strategy?.rollingUpdate?.maxSurge };
}

/**
 * Dry-runs the patch and the Pod it would produce, and lists the Nodes and the namespace's
 * ResourceQuotas, all four in parallel (the lists cost no round trip of their own); then, when
 * the patch and the Pod pass, the rollout fits the quotas and the Pod fits some Node, writes the
 * patch. Failures are reported in this order: the patch's (a lost race makes the rest moot), the
 * Pod's admission, the quotas, the fit. `before`, when given, is awaited after the checks pass and
 * before the patch: the flow's listing of the scale in `status.pendingScales`, started beside the
 * dry runs (`status/pending-scales.ts`), must be written before the patch it stands for. A Node or quota list that fails — forbidden by RBAC that
 * predates it, the API server unavailable — or a Node list that says nothing (no Node, none
 * reporting allocatable memory) never blocks the scale: `onWarning` hears why and the write goes on.
 * With `dryRun` (`spec.mode: DryRun`, or the install paused) every check runs and nothing is
 * written: `checked` where the patch would have been.
 * @returns `written` with the workload's new `metadata.generation`, or `conflict` (a `test`
 * operation failed: the workload changed since it was read), `refused` (admission, with the API
 * server's message), `overQuota` or `unschedulable`, each with a message.
 * @throws HttpError for any other API failure (`toHttpFailure`), before anything was written.
 */
export async function writeWorkload(
  cluster: Cluster,
  workload: Workload,
  patch: ReturnType<typeof buildTemplatePatch>,
  pod: k8s.V1Pod,
  onWarning: (message: string) => void,
  before?: Promise<unknown>,
  dryRun = false,
): Promise<WriteResult> {
  const { kind, name, namespace } = workload;
  const classify = (error: unknown, doing: string): WriteResult => {
    if (isPatchConflict(error)) return { result: "conflict", message: apiStatus(error).message };
    if (isRefusal(error)) return { result: "refused", message: apiStatus(error).message };
    throw toHttpFailure(error, doing);
  };
  const [patchTrial, podTrial, nodes, quotas] = await Promise.allSettled([
    cluster.patchWorkload(kind, namespace, name, patch, true),
    cluster.dryRunCreatePod(namespace, pod),
    cluster.listNodeAllocatableMemory(),
    cluster.listResourceQuotas(namespace),
  ]);
  if (patchTrial.status === "rejected") return classify(patchTrial.reason, `dry-run the patch of ${kind} ${namespace}/${name}`);
  if (podTrial.status === "rejected") return classify(podTrial.reason, `dry-run a Pod of ${kind} ${namespace}/${name}`);
  if (quotas.status === "rejected") {
    onWarning(`could not list ResourceQuotas to check that the rollout fits them (scaling anyway): ${apiStatus(quotas.reason).message}`);
  } else if (quotas.value.length > 0) {
    const before = workload.object.spec.template.spec ?? { containers: [] };
    const after = pod.spec ?? { containers: [] };
    const fit = decideQuota(
      shapeOf(workload),
      { request: podMemoryRequest(before), limit: podMemoryLimit(before) },
      { request: podMemoryRequest(after), limit: podMemoryLimit(after) },
      quotas.value.map(quotaView),
    );
    if (fit.result === "refused") return { result: "overQuota", message: fit.message };
  }
  const fit = await fitOnNodes(cluster, podMemoryRequest(pod.spec ?? { containers: [] }), nodes, onWarning);
  if (fit !== undefined) return fit;
  if (dryRun) return { result: "checked" };
  await before;
  try {
    const { generation } = await cluster.patchWorkload(kind, namespace, name, patch, false);
    return { result: "written", generation };
  } catch (error) {
    return classify(error, `patch ${kind} ${namespace}/${name}`);
  }
}

/** Each shared view's summary, made once: the view's array is the same object until it is read again, so a check costs the same at 4 Nodes as at 5,000. */
const summaries = new WeakMap<readonly (string | undefined)[], NodeMemorySummary>();
function summaryOf(allocatable: readonly (string | undefined)[]): NodeMemorySummary {
  let summary = summaries.get(allocatable);
  if (summary === undefined) {
    summary = summarizeAllocatable(allocatable);
    summaries.set(allocatable, summary);
  }
  return summary;
}

/**
 * The Node-fit check on the shared view of the Nodes (`kube/node-memory.ts`): a view that would
 * refuse is read again first when older than {@link NODE_VIEW_REFUSAL_AGE_MS}, so no scale is
 * refused on a view that predates a larger Node. A list that failed, or says nothing, warns and
 * lets the scale go on.
 * @returns `unschedulable` with its message, or undefined when the Pod fits or nothing can be concluded.
 */
async function fitOnNodes(cluster: Cluster, request: bigint, listed: PromiseSettledResult<readonly (string | undefined)[]>, onWarning: (message: string) => void): Promise<WriteResult | undefined> {
  let nodes = listed;
  let fit = nodes.status === "fulfilled" ? decideFit(request, summaryOf(nodes.value)) : undefined;
  if (fit?.result === "unschedulable") {
    [nodes] = await Promise.allSettled([cluster.listNodeAllocatableMemory(NODE_VIEW_REFUSAL_AGE_MS)]);
    fit = nodes.status === "fulfilled" ? decideFit(request, summaryOf(nodes.value)) : undefined;
  }
  if (nodes.status === "rejected") {
    onWarning(`could not list Nodes to check that the scaled Pod fits one (scaling anyway): ${apiStatus(nodes.reason).message}`);
    return undefined;
  }
  if (fit?.result === "unschedulable") return { result: "unschedulable", message: fit.message };
  if (fit?.result === "unknown") onWarning(`${fit.message} (scaling anyway)`);
  return undefined;
}

/**
 * Lists the scale `pending` in the AppMonitor's `status.pendingScales` before the workload's write
 * (`status/pending-scales.ts`): should the status write after it fail, the follow-up tick finds the
 * workload there and records the scale from its last-scale record. Started beside the dry runs (no
 * round trip of its own) and awaited before the write; its failure (a status RBAC never granted)
 * only loses that repair path, so it resolves false and the scale goes on. A lost compare-and-swap
 * leaves it listed: the winning scale's status write removes it when it is the same event's, the
 * next tick otherwise.
 * @returns `listed` (whether it was written) and `unlist`, to call when nothing was written after all.
 */
export function listPendingScale(statusWriter: StatusWriter, amRef: AppMonitorRef, pending: PendingScale, listed: Record<string, unknown>, log: Logger): { listed: Promise<boolean>; unlist: () => Promise<void> } {
  const workload = `${pending.workload.kind}/${pending.workload.name}`;
  const writing = statusWriter.update(amRef, (status) => withPendingScale(status, pending), listed).then(
    () => true,
    (error: unknown) => {
      log.warn({ workload }, `could not list the scale in status.pendingScales, scaling anyway: ${(error as Error).message}`);
      return false;
    },
  );
  return {
    listed: writing,
    // Nothing was written: the listing goes (else the next tick drops it).
    unlist: async () => {
      if (await writing) await statusWriter.update(amRef, (status) => withoutPendingScale(status, pending)).catch((error: unknown) => log.warn((error as Error).message));
    },
  };
}
