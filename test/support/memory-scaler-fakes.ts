/**
 * memory-scaler's world in memory, for tests without an API server: a {@link Cluster} that
 * applies JSON Patches all-or-nothing like the API server (including `test` operations), the
 * original demo's objects in it, and the flow's dependencies.
 */
import { setImmediate as tick } from "node:timers/promises";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import type { AlertEventData } from "../../functions/lib/alert-event.ts";
import type { Cluster } from "../../functions/memory-scaler/kube/cluster.ts";
import type { Verifier } from "../../functions/memory-scaler/kube/prometheus.ts";
import type { KnativeObject, WorkloadKind, WorkloadObject } from "../../functions/memory-scaler/model.ts";
import { createEventRecorder } from "../../functions/memory-scaler/kube/event-recorder.ts";
import type { JsonPatchOperation } from "../../functions/memory-scaler/model.ts";
import type { FlowDeps } from "../../functions/memory-scaler/scale/deps.ts";
import { createStatusWriter } from "../../functions/memory-scaler/kube/status-writer.ts";

const silent = pino({ level: "silent" });
/** The namespace of {@link memhogCluster}'s objects. */
export const NS = "team-a";

/** An error as the Kubernetes client throws it for an API server answer `code` with a Status `message`. */
export function apiError(code: number, message: string): k8s.ApiException<string> {
  return new k8s.ApiException(code, "error", JSON.stringify({ kind: "Status", code, message }), {});
}

/** A JSON value, as a JSON Patch reads and writes it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * RFC 6902 `test`/`replace`/`add`/`remove` applied to a copy of `doc`, all or nothing, failing with
 * `fail(message)` — by default the way the API server does, a 422 {@link apiError} — whose message
 * names the operation (a failed `test` with the value found, a missing path or key). The tests'
 * one JSON Patch applier: the fake cluster's writes and the patch builders' tables.
 */
export function applyJsonPatch(doc: Json, ops: readonly JsonPatchOperation[], fail: (message: string) => Error = (message) => apiError(422, message)): Json {
  const out = structuredClone(doc);
  for (const op of ops) {
    const tokens = op.path.split("/").slice(1).map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
    const last = tokens.pop() ?? "";
    let parent: Json | undefined = out;
    for (const t of tokens) parent = Array.isArray(parent) ? parent[Number(t)] : parent !== null && typeof parent === "object" ? parent[t] : undefined;
    if (parent === null || typeof parent !== "object" || Array.isArray(parent)) throw fail(`${op.op} operation does not apply: doc is missing path: ${op.path}`);
    // A missing member tests as null, as the API server's JSON Patch has it (a `test` of null: still absent).
    if (op.op === "test" && JSON.stringify(parent[last] ?? null) !== JSON.stringify(op.value)) throw fail(`testing value ${op.path} failed: test failed: ${op.path} is ${JSON.stringify(parent[last]) ?? "missing"}`);
    if ((op.op === "replace" || op.op === "remove") && !Object.hasOwn(parent, last)) throw fail(`${op.op} operation does not apply: doc is missing key: ${op.path}`);
    if (op.op === "remove") delete parent[last];
    else if (op.op !== "test") parent[last] = op.value as Json;
  }
  return out;
}

/** An in-memory {@link Cluster}; every call yields to the event loop first, so concurrent flows interleave. */
export class FakeCluster implements Cluster {
  pods = new Map<string, k8s.V1Pod>();
  workloads = new Map<string, WorkloadObject>();
  appMonitors = new Map<string, Record<string, unknown>>();
  events: k8s.EventsV1Event[] = [];
  writes: { kind: WorkloadKind; name: string; patch: readonly JsonPatchOperation[] }[] = [];
  dryRuns = 0;
  /** ResourceQuotas, any namespace. */
  quotas: k8s.V1ResourceQuota[] = [];
  /** HorizontalPodAutoscalers, any namespace. */
  hpas: k8s.V2HorizontalPodAutoscaler[] = [];
  /** VerticalPodAutoscalers (raw objects), any namespace; undefined: the CRD is not installed (a 404 on the resource type). */
  vpas: Record<string, unknown>[] | undefined = [];
  /** Names of the Pods deleted through {@link deletePod}. */
  deletedPods: string[] = [];
  /** Set to make every call fail this way (e.g. a refused connection). */
  down: Error | undefined;
  /** Set to refuse the admission of Pods (a LimitRange). */
  podRefusal: Error | undefined;
  /** Each Node's `status.allocatable.memory` (one kwok-sized Node by default). */
  nodeMemory: (string | undefined)[] = ["256Gi"];
  /** Set to make the Node list fail this way (e.g. a 403 on an install whose RBAC predates it). */
  nodeListFailure: Error | undefined;

  async #enter(): Promise<void> {
    await tick();
    if (this.down !== undefined) throw this.down;
  }
  async readPod(namespace: string, name: string) {
    await this.#enter();
    return structuredClone(this.pods.get(`${namespace}/${name}`));
  }
  async readWorkload(kind: WorkloadKind, namespace: string, name: string) {
    await this.#enter();
    return structuredClone(this.workloads.get(`${kind}/${namespace}/${name}`));
  }
  /** Knative Revisions and Configurations, keyed `<kind>/<namespace>/<name>` as {@link workloads}. */
  knative = new Map<string, KnativeObject>();
  async readKnative(kind: "Revision" | "Configuration", namespace: string, name: string) {
    await this.#enter();
    return structuredClone(this.knative.get(`${kind}/${namespace}/${name}`));
  }
  async patchWorkload(kind: WorkloadKind, namespace: string, name: string, patch: readonly JsonPatchOperation[], dryRun: boolean) {
    await this.#enter();
    const key = `${kind}/${namespace}/${name}`;
    const current = this.workloads.get(key);
    if (current === undefined) throw apiError(404, "not found");
    const next = applyJsonPatch(current as Json, patch) as WorkloadObject;
    const generation = (current.metadata?.generation ?? 1) + 1;
    if (dryRun) {
      this.dryRuns += 1;
      return { generation: current.metadata?.generation };
    }
    next.metadata = { ...next.metadata, generation };
    this.workloads.set(key, next);
    this.writes.push({ kind, name, patch });
    return { generation };
  }
  /** Pods resized in place through {@link resizePod}, with their patches. */
  resizes: { name: string; patch: readonly JsonPatchOperation[] }[] = [];
  /** Set to refuse every resize (the API server's validation or an admission plugin). */
  resizeRefusal: Error | undefined;
  /** Dry runs of resizes (`?dryRun=All`): validated, nothing written. */
  resizeDryRuns = 0;
  async resizePod(namespace: string, name: string, patch: readonly JsonPatchOperation[], dryRun = false) {
    await this.#enter();
    if (this.resizeRefusal !== undefined) throw this.resizeRefusal;
    const key = `${namespace}/${name}`;
    const current = this.pods.get(key);
    if (current === undefined) throw apiError(404, "not found");
    const next = applyJsonPatch(current as Json, patch) as k8s.V1Pod;
    const generation = (current.metadata?.generation ?? 1) + 1;
    if (dryRun) {
      this.resizeDryRuns += 1;
      return { generation: current.metadata?.generation };
    }
    const time = "2025-06-01T12:00:00Z";
    const managedFields = [...(current.metadata?.managedFields ?? []).filter((f) => f.subresource !== "resize"), { manager: "appmonitor-memory-scaler", operation: "Update", subresource: "resize", time: time as unknown as Date }];
    next.metadata = { ...next.metadata, generation, resourceVersion: String(Number(current.metadata?.resourceVersion ?? "1") + 1), managedFields };
    this.pods.set(key, next);
    this.resizes.push({ name, patch });
    return { generation };
  }
  async dryRunCreatePod() {
    await this.#enter();
    if (this.podRefusal !== undefined) throw this.podRefusal;
  }
  async listNodeAllocatableMemory() {
    await this.#enter();
    if (this.nodeListFailure !== undefined) throw this.nodeListFailure;
    return [...this.nodeMemory];
  }
  async listResourceQuotas(namespace: string) {
    await this.#enter();
    return this.quotas.filter((q) => q.metadata?.namespace === namespace).map((q) => structuredClone(q));
  }
  async listHorizontalPodAutoscalers(namespace: string) {
    await this.#enter();
    return this.hpas.filter((h) => h.metadata?.namespace === namespace).map((h) => structuredClone(h));
  }
  async listVerticalPodAutoscalers(namespace: string) {
    await this.#enter();
    if (this.vpas === undefined) throw new k8s.ApiException(404, "error", JSON.stringify({ kind: "Status", code: 404, reason: "NotFound", message: "the server could not find the requested resource" }), {});
    return this.vpas.filter((v) => (v.metadata as { namespace?: string } | undefined)?.namespace === namespace).map((v) => structuredClone(v));
  }
  async listPods(namespace: string, labelSelector: string) {
    await this.#enter();
    const wanted = labelSelector.split(",").filter((s) => s !== "").map((s) => s.split("="));
    return [...this.pods.values()]
      .filter((p) => p.metadata?.namespace === namespace && wanted.every(([k, v]) => k !== undefined && p.metadata?.labels?.[k] === v))
      .map((p) => structuredClone(p));
  }
  async deletePod(namespace: string, name: string, uid: string | undefined) {
    await this.#enter();
    const key = `${namespace}/${name}`;
    const pod = this.pods.get(key);
    if (pod === undefined) return;
    if (uid !== undefined && pod.metadata?.uid !== uid) throw apiError(409, "Precondition failed: UID in precondition");
    this.pods.delete(key);
    this.deletedPods.push(name);
  }
  async listAllAppMonitors() {
    await this.#enter();
    return [...this.appMonitors.values()].map((am) => structuredClone(am));
  }
  async listAppMonitors(namespace: string) {
    await this.#enter();
    return [...this.appMonitors.values()].filter((am) => (am.metadata as { namespace: string }).namespace === namespace).map((am) => structuredClone(am));
  }
  async readAppMonitor(namespace: string, name: string) {
    await this.#enter();
    return structuredClone(this.appMonitors.get(`${namespace}/${name}`));
  }
  async replaceAppMonitorStatus(namespace: string, name: string, body: Record<string, unknown>) {
    await this.#enter();
    const key = `${namespace}/${name}`;
    const current = this.appMonitors.get(key);
    const rv = (current?.metadata as { resourceVersion: string } | undefined)?.resourceVersion;
    if ((body.metadata as { resourceVersion?: string }).resourceVersion !== rv) throw apiError(409, "the object has been modified");
    const next = { ...current, status: body.status, metadata: { ...(current?.metadata as object), resourceVersion: String(Number(rv) + 1) } };
    this.appMonitors.set(key, next);
    return structuredClone(next);
  }
  async createEvent(_namespace: string, event: k8s.EventsV1Event) {
    await this.#enter();
    if (this.events.some((e) => e.metadata?.name === event.metadata?.name)) throw apiError(409, "already exists");
    this.events.push(event);
  }
  async probe() {
    await this.#enter();
  }
}

/** The original demo: Deployment memhog → ReplicaSet → Pod, annotated, 384Mi/256Mi, and `mymonitor`. */
export function memhogCluster(spec: Record<string, unknown> = { memThresholdPercent: 75, memMultiplier: 2 }): FakeCluster {
  const cluster = new FakeCluster();
  const container = (limit: string, request: string): k8s.V1Container => ({ name: "memhog", image: "quay.io/metral/memhog:v0.0.1", resources: { limits: { memory: limit }, requests: { memory: request } } });
  const template = { metadata: { labels: { name: "memhog" }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } }, spec: { containers: [container("384Mi", "256Mi")] } };
  cluster.workloads.set(`Deployment/${NS}/memhog`, { metadata: { name: "memhog", namespace: NS, uid: "d1" }, spec: { template } });
  cluster.workloads.set(`ReplicaSet/${NS}/memhog-5d8f`, {
    metadata: { name: "memhog-5d8f", namespace: NS, uid: "r1", ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name: "memhog", uid: "d1", controller: true }] },
    spec: { template },
  });
  cluster.pods.set(`${NS}/memhog-5d8f-x2`, {
    metadata: { name: "memhog-5d8f-x2", namespace: NS, uid: "p1", ...template.metadata, labels: { ...template.metadata.labels, "pod-template-hash": "5d8f" }, ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "memhog-5d8f", uid: "r1", controller: true }] },
    spec: template.spec,
  });
  cluster.appMonitors.set(`${NS}/mymonitor`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor", namespace: NS, uid: "a1", resourceVersion: "1" }, spec });
  return cluster;
}

/**
 * Removes the opt-in annotation from the Deployment's Pod template only; the ReplicaSet's copy
 * and the live Pod keep it, as they would until a rollout. Replaces objects rather than
 * mutating them: memhogCluster shares one template between the three.
 */
export function unannotateTemplate(cluster: FakeCluster): void {
  const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
  const template = deployment?.spec?.template;
  if (deployment === undefined || template === undefined) throw new Error("no memhog Deployment");
  cluster.workloads.set(`Deployment/${NS}/memhog`, { ...deployment, spec: { ...deployment.spec, template: { ...template, metadata: { labels: { name: "memhog" } } } } });
}

/** Makes a Job the memhog Pod's controller, as for a Pod no template of a scalable workload describes. */
export function ownedByJob(cluster: FakeCluster): void {
  editPod(cluster, (meta) => ({ ...meta, ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "j", uid: "j1", controller: true }] }));
}

/** Replaces the live Pod's metadata as `kubectl annotate` / `kubectl label` on that one Pod would. */
export function editPod(cluster: FakeCluster, edit: (meta: k8s.V1ObjectMeta) => k8s.V1ObjectMeta): void {
  const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
  if (pod?.metadata === undefined) throw new Error("no memhog Pod");
  cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, metadata: edit(pod.metadata) });
}

/** The firing alert's data for the memhog Pod of {@link memhogCluster}, as `mymonitor`'s rule raises it. */
export function alertData(over: Partial<AlertEventData> = {}): AlertEventData {
  return {
    alertname: "AppMonitorMemoryHigh",
    status: "firing",
    namespace: NS,
    pod: "memhog-5d8f-x2",
    container: "memhog",
    appmonitor: "mymonitor",
    fingerprint: "f",
    startsAt: "2025-06-01T11:59:00Z",
    endsAt: null,
    labels: { alertname: "AppMonitorMemoryHigh", namespace: NS, pod: "memhog-5d8f-x2", container: "memhog", appmonitor: "mymonitor", severity: "warning" },
    annotations: {},
    generatorURL: "",
    ...over,
  };
}

/**
 * A Prometheus that answers the working sets, predictions and peaks it is given (bytes per container),
 * or fails with the error given instead; a question it was given no answer for fails too: the
 * test did not expect it to be asked.
 */
export function fakeVerifier(answers: { workingSets?: Map<string, number> | Error; predictions?: Map<string, number> | Error; peaks?: Map<string, number> | Error; heapPercents?: Map<string, number> | Error }): Verifier {
  const answer = (what: keyof typeof answers) => async () => {
    const given = answers[what] ?? new Error(`Prometheus was asked for ${what}`);
    if (given instanceof Error) throw given;
    return given;
  };
  return { workingSets: answer("workingSets"), predictions: answer("predictions"), peaks: answer("peaks"), heapPercents: answer("heapPercents") };
}

/** The flow's dependencies on `cluster`, a fixed clock (2025-06-01T12:00:00Z), fast status retries and no wait before a read again. */
export function flowDeps(cluster: FakeCluster, over: Partial<FlowDeps> = {}): FlowDeps {
  return {
    cluster,
    events: createEventRecorder(cluster, "test"),
    status: createStatusWriter(cluster, 10, silent, { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 2 }),
    verifier: undefined,
    maxAttempts: 5,
    now: () => new Date("2025-06-01T12:00:00Z"),
    wait: async () => undefined,
    ...over,
  };
}

/** The Knative objects of {@link knativeCluster}: Service `web`, its Revision's Pod and that Pod's name. */
export const KNATIVE = { service: "web", revision: "web-00001", replicaSet: "web-00001-deployment-7b9c", pod: "web-00001-deployment-7b9c-x2" } as const;

/**
 * A Knative Service `web` as Serving reconciles it: Service → Configuration → Revision `web-00001`
 * → Deployment `web-00001-deployment` → ReplicaSet → Pod, the Pod labelled as Serving labels it
 * and running queue-proxy beside `user-container` (384Mi/256Mi, annotated in the Service's
 * `spec.template`), on a node; and `mymonitor` with `spec`.
 */
export function knativeCluster(spec: Record<string, unknown> = { memThresholdPercent: 75, memMultiplier: 2 }): FakeCluster {
  const cluster = new FakeCluster();
  const ksvc = "serving.knative.dev/v1";
  const controller = (apiVersion: string, kind: string, name: string, uid: string) => [{ apiVersion, kind, name, uid, controller: true }];
  const user: k8s.V1Container = { name: "user-container", image: "memhog", resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } };
  const queue: k8s.V1Container = { name: "queue-proxy", image: "queue", resources: { requests: { cpu: "25m" }, limits: { memory: "128Mi" } } };
  const annotations = { "app-monitor.kubedemo.com/monitor": "true", "autoscaling.knative.dev/min-scale": "1" };
  const template = { metadata: { annotations }, spec: { containers: [user] } };
  cluster.workloads.set(`Service/${NS}/web`, { metadata: { name: "web", namespace: NS, uid: "ks1", generation: 1 }, spec: { template }, status: { observedGeneration: 1, latestCreatedRevisionName: KNATIVE.revision, latestReadyRevisionName: KNATIVE.revision } });
  cluster.knative.set(`Configuration/${NS}/web`, { metadata: { name: "web", namespace: NS, uid: "kc1", ownerReferences: controller(ksvc, "Service", "web", "ks1") } });
  cluster.knative.set(`Revision/${NS}/${KNATIVE.revision}`, { metadata: { name: KNATIVE.revision, namespace: NS, uid: "kr1", ownerReferences: controller(ksvc, "Configuration", "web", "kc1") } });
  const labels = { "serving.knative.dev/service": "web", "serving.knative.dev/serviceUID": "ks1", "serving.knative.dev/revision": KNATIVE.revision, "serving.knative.dev/configuration": "web" };
  const podTemplate = { metadata: { labels, annotations }, spec: { containers: [user, queue] } };
  cluster.workloads.set(`Deployment/${NS}/web-00001-deployment`, { metadata: { name: "web-00001-deployment", namespace: NS, uid: "kd1", ownerReferences: controller(ksvc, "Revision", KNATIVE.revision, "kr1") }, spec: { template: podTemplate } });
  cluster.workloads.set(`ReplicaSet/${NS}/${KNATIVE.replicaSet}`, { metadata: { name: KNATIVE.replicaSet, namespace: NS, uid: "krs1", ownerReferences: controller("apps/v1", "Deployment", "web-00001-deployment", "kd1") }, spec: { template: podTemplate } });
  cluster.pods.set(`${NS}/${KNATIVE.pod}`, {
    metadata: { name: KNATIVE.pod, namespace: NS, uid: "kp1", generation: 1, annotations, labels: { ...labels, "pod-template-hash": "7b9c" }, ownerReferences: controller("apps/v1", "ReplicaSet", KNATIVE.replicaSet, "krs1") },
    spec: { ...podTemplate.spec, nodeName: "node-1" },
  });
  cluster.appMonitors.set(`${NS}/mymonitor`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor", namespace: NS, uid: "a1", resourceVersion: "1" }, spec });
  return cluster;
}
