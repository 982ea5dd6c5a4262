/**
 * Kubernetes objects turned into the plain data the pure steps decide from, once: a Pod spec's
 * container memory, the memory its containers run with, its container statuses (read here
 * only), when memory-scaler last resized it, and the follow-up's views of a workload, a Pod and a
 * Pod's resize. No I/O: the objects come from `kube/cluster.ts`.
 */
import type * as k8s from "@kubernetes/client-node";
import { type ContainerKind, type ContainerMemory, FIELD_MANAGER, type KnativeObject, type KnativeTrafficTarget, type WorkloadObject } from "../model.ts";

/**
 * Every container status of the Pod: `status.containerStatuses`, then `initContainerStatuses`
 * (native sidecars and init containers), as the kubelet reports them; the one place they are
 * read (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#PodStatus).
 */
export function containerStatuses(pod: k8s.V1Pod): k8s.V1ContainerStatus[] {
  return [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
}

/** `matchLabels` and `matchExpressions` as the API's `labelSelector` string (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors). */
export function selectorString(selector: k8s.V1LabelSelector | undefined): string | undefined {
  if (selector === undefined) return undefined;
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    if (e.operator === "In" || e.operator === "NotIn") parts.push(`${e.key} ${e.operator.toLowerCase()} (${(e.values ?? []).join(",")})`);
    else if (e.operator === "Exists") parts.push(e.key);
    else if (e.operator === "DoesNotExist") parts.push(`!${e.key}`);
  }
  return parts.length === 0 ? undefined : parts.join(",");
}

/** The decision's view of a workload as read. */
export function workloadView(kind: string, object: WorkloadObject): WorkloadView {
  const st = object.status ?? {};
  const daemon = kind === "DaemonSet";
  return {
    kind,
    name: object.metadata?.name ?? "",
    uid: object.metadata?.uid,
    generation: object.metadata?.generation,
    observedGeneration: st.observedGeneration,
    desired: daemon ? (st.desiredNumberScheduled ?? 0) : (object.spec?.replicas ?? 1),
    current: daemon ? (st.currentNumberScheduled ?? 0) : (st.replicas ?? 0),
    updated: daemon ? (st.updatedNumberScheduled ?? 0) : (st.updatedReplicas ?? 0),
    available: daemon ? (st.numberAvailable ?? 0) : kind === "StatefulSet" ? (st.readyReplicas ?? 0) : (st.availableReplicas ?? 0),
    updateStrategy: kind === "Deployment" ? object.spec?.strategy?.type : object.spec?.updateStrategy?.type,
    partition: object.spec?.updateStrategy?.rollingUpdate?.partition ?? 0,
    updateRevision: st.updateRevision,
    currentRevision: st.currentRevision,
    conditions: st.conditions ?? [],
    latestCreatedRevision: st.latestCreatedRevisionName,
    traffic: object.spec?.traffic,
  };
}

/** The follow-up's view of a Knative Revision as read: its name and its `Ready` condition. */
export function revisionView(revision: KnativeObject): RevisionView {
  return { name: revision.metadata?.name ?? "", ready: revision.status?.conditions?.find((c) => c.type === "Ready") };
}

/** A Knative Revision as the follow-up reads it (`follow-up/revision.ts`). */
export interface RevisionView {
  readonly name: string;
  /** Its `Ready` condition; undefined before Serving reconciled it. */
  readonly ready: WorkloadCondition | undefined;
}

/** The decision's view of a Pod as read. */
export function podView(pod: k8s.V1Pod): PodView {
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  const crashLoopingOOM = containerStatuses(pod)
    .filter((c) => c.state?.waiting?.reason === "CrashLoopBackOff" && c.lastState?.terminated?.reason === "OOMKilled")
    .map((c) => c.name);
  return {
    name: pod.metadata?.name ?? "",
    uid: pod.metadata?.uid,
    revision: pod.metadata?.labels?.["controller-revision-hash"],
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    unschedulable: scheduled?.status === "False" && scheduled.reason === "Unschedulable" ? (scheduled.message ?? "Unschedulable") : undefined,
    crashLoopingOOM,
  };
}

/** A condition of a workload's status (Deployment, StatefulSet, DaemonSet). */
export interface WorkloadCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string | undefined;
  readonly message?: string | undefined;
}

/** What the decision reads of the workload; counts are absent when the controller has not set them. */
export interface WorkloadView {
  readonly kind: string;
  readonly name: string;
  readonly uid: string | undefined;
  readonly generation: number | undefined;
  readonly observedGeneration: number | undefined;
  /** `spec.replicas` (Deployment, StatefulSet; 1 when unset); DaemonSet: `status.desiredNumberScheduled`. */
  readonly desired: number;
  /** Pods that exist (Deployment and StatefulSet `status.replicas`, DaemonSet `currentNumberScheduled`). */
  readonly current: number;
  /** Deployment, StatefulSet `updatedReplicas`; DaemonSet `updatedNumberScheduled`. */
  readonly updated: number;
  /** Deployment `availableReplicas`, StatefulSet `readyReplicas`, DaemonSet `numberAvailable`. */
  readonly available: number;
  /** `spec.updateStrategy.type` (StatefulSet, DaemonSet), `spec.strategy.type` (Deployment). */
  readonly updateStrategy: string | undefined;
  /** StatefulSet `spec.updateStrategy.rollingUpdate.partition`, 0 when unset. */
  readonly partition: number;
  /** StatefulSet `status.updateRevision` / `currentRevision`. */
  readonly updateRevision: string | undefined;
  readonly currentRevision: string | undefined;
  readonly conditions: readonly WorkloadCondition[];
  /** Knative Service `status.latestCreatedRevisionName`: the Revision its template made. */
  readonly latestCreatedRevision?: string | undefined;
  /** Knative Service `spec.traffic`. */
  readonly traffic?: readonly KnativeTrafficTarget[] | undefined;
}

/** What the decision reads of one Pod of the workload. */
export interface PodView {
  readonly name: string;
  readonly uid: string | undefined;
  /** `controller-revision-hash` (StatefulSet, DaemonSet Pods). */
  readonly revision: string | undefined;
  readonly deleting: boolean;
  /** `PodScheduled=False` with reason `Unschedulable`: the scheduler's message. */
  readonly unschedulable: string | undefined;
  /** Containers waiting in `CrashLoopBackOff` whose last termination was `OOMKilled`. */
  readonly crashLoopingOOM: readonly string[];
}

/**
 * The memory a Pod spec sets, as the decision reads it: `containers`, then `initContainers`
 * (a native sidecar when its `restartPolicy` is `Always`), each in spec order.
 */
export function memoryOf(spec: k8s.V1PodSpec | undefined): ContainerMemory[] {
  const one = (c: k8s.V1Container, kind: ContainerKind): ContainerMemory => {
    const memory: ContainerMemory = { name: c.name, kind };
    const request = c.resources?.requests?.memory;
    const limit = c.resources?.limits?.memory;
    if (request !== undefined) memory.request = request;
    if (limit !== undefined) memory.limit = limit;
    return memory;
  };
  return [
    ...(spec?.containers ?? []).map((c) => one(c, "container")),
    ...(spec?.initContainers ?? []).map((c) => one(c, c.restartPolicy === "Always" ? "sidecar" : "init")),
  ];
}

/** The follow-up's view of a Pod as read (`follow-up/resize.ts`). */
export function podResizeView(pod: k8s.V1Pod): PodResizeView {
  const statuses = containerStatuses(pod);
  return {
    name: pod.metadata?.name ?? "",
    generation: pod.metadata?.generation,
    observedGeneration: pod.status?.observedGeneration,
    conditions: pod.status?.conditions ?? [],
    containers: memoryOf(pod.spec)
      .filter((c) => c.kind !== "init")
      .map((desired) => {
        const status = statuses.find((s) => s.name === desired.name);
        const actual = status?.resources;
        return {
          name: desired.name,
          desired: { limit: desired.limit, request: desired.request },
          actual: actual === undefined ? undefined : { limit: actual.limits?.memory, request: actual.requests?.memory },
          restartCount: status?.restartCount ?? 0,
        };
      }),
  };
}

/** One container's memory: quantity strings (bytes), absent when unset or not reported. */
export interface MemoryPair {
  readonly limit?: string | undefined;
  readonly request?: string | undefined;
}

/** What the decision reads of the Pod. */
export interface PodResizeView {
  readonly name: string;
  readonly generation: number | undefined;
  /** `status.observedGeneration`: the generation the kubelet acted on; absent when not reported. */
  readonly observedGeneration: number | undefined;
  /** The Pod's conditions (only `PodResizePending` and `PodResizeInProgress` matter). */
  readonly conditions: readonly { readonly type: string; readonly status: string; readonly reason?: string | undefined; readonly message?: string | undefined }[];
  /** Containers and native sidecars: the spec's memory (desired), the status's (applied; undefined when not reported), restarts. */
  readonly containers: readonly { readonly name: string; readonly desired: MemoryPair; readonly actual: MemoryPair | undefined; readonly restartCount: number }[];
}

/** The resize subresource's name, as the API server records it in `managedFields[].subresource`. */
export const RESIZE_SUBRESOURCE = "resize";

/**
 * The memory the Pod's containers run with now, as the decision's `podContainers`: each
 * container's (and native sidecar's) `status.containerStatuses[*].resources` (`initContainerStatuses`
 * for a sidecar), which the kubelet sets to what it applied; the spec's value where the status
 * reports none (a container not started yet, a node whose kubelet does not report them).
 * Quantities as strings (bytes). A spec above the status is a resize not yet applied, which
 * `decideScale` reports as `RolloutUnderWay`.
 * Source: https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/ (Key concepts: desired and actual resources).
 */
export function runningMemory(pod: k8s.V1Pod): ContainerMemory[] {
  const statuses = containerStatuses(pod);
  return memoryOf(pod.spec).map((desired) => {
    const actual = statuses.find((s) => s.name === desired.name)?.resources;
    if (actual === undefined) return desired;
    const running: ContainerMemory = { ...desired };
    const limit = actual.limits?.memory;
    const request = actual.requests?.memory;
    if (limit !== undefined) running.limit = limit;
    if (request !== undefined) running.request = request;
    return running;
  });
}

/**
 * When memory-scaler last resized the Pod: the `time` of its `managedFields` entry for the
 * `resize` subresource (manager {@link FIELD_MANAGER}), which the API server sets in the same
 * write as the new resources, so it is the cooldown's clock and cannot be lost apart from the
 * resize. RFC 3339 (whole seconds), or undefined when it never resized the Pod.
 * Source: https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
 */
export function lastResizeTime(meta: k8s.V1ObjectMeta | undefined): string | undefined {
  const entry = meta?.managedFields?.find((f) => f.manager === FIELD_MANAGER && f.subresource === RESIZE_SUBRESOURCE);
  const time = entry?.time as Date | string | undefined;
  if (time === undefined) return undefined;
  return typeof time === "string" ? time : time.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A ResourceQuota as the rollout's quota check reads it (`scale/decide/capacity.ts` `decideQuota`): scoped or not, its `hard` and `used` amounts. */
export function quotaView(quota: k8s.V1ResourceQuota): QuotaView {
  return {
    name: quota.metadata?.name ?? "",
    scoped: (quota.spec?.scopes?.length ?? 0) > 0 || quota.spec?.scopeSelector !== undefined,
    hard: quota.status?.hard ?? {},
    used: quota.status?.used ?? {},
  };
}

/** A ResourceQuota of the namespace, as read: `status.hard` and `status.used`, quantity strings. */
export interface QuotaView {
  readonly name: string;
  /** True when it has `spec.scopes` or `spec.scopeSelector`. */
  readonly scoped: boolean;
  readonly hard: Readonly<Record<string, string>>;
  readonly used: Readonly<Record<string, string>>;
}
