/**
 * memory-scaler's Kubernetes adapter: the only module that calls the API server. Each method
 * is one request (but the Node list: `kube/node-memory.ts`); reads turn an object's 404 into `undefined` (not a 404 for a resource type
 * that is not served), every other failure is thrown as the client's error (`ApiException`, or a
 * transport error) for `functions/lib/kube-api-errors.ts` to classify.
 * The RBAC these calls need is `knative/rbac/memory-scaler.yaml`.
 */
import * as k8s from "@kubernetes/client-node";
import { APPMONITOR_GROUP, APPMONITOR_PLURAL, APPMONITOR_VERSION } from "../../lib/appmonitor.ts";
import { isObjectNotFound } from "../../lib/kube-api-errors.ts";
import { FIELD_MANAGER, type JsonPatchOperation, type KnativeObject, type WorkloadKind, type WorkloadObject } from "../model.ts";
import { scopeNamespaces, type NamespaceScope } from "../../lib/namespace-scope.ts";
import { createNodeMemoryView } from "./node-memory.ts";
import { KNATIVE_SERVING } from "../knative.ts";

/** The VerticalPodAutoscaler resource (https://github.com/kubernetes/autoscaler/tree/master/vertical-pod-autoscaler). */
export const VERTICAL_POD_AUTOSCALERS = { group: "autoscaling.k8s.io", version: "v1", plural: "verticalpodautoscalers" } as const;

/** The API calls memory-scaler makes; an interface so the flow can be tested without a cluster. */
export interface Cluster {
  /** GET pods/{name}; undefined on 404. */
  readPod(namespace: string, name: string): Promise<k8s.V1Pod | undefined>;
  /** GET apps/v1 {kind}s/{name} (a Knative Service: serving.knative.dev/v1 services/{name}); undefined on 404. */
  readWorkload(kind: WorkloadKind, namespace: string, name: string): Promise<WorkloadObject | undefined>;
  /** GET serving.knative.dev/v1 revisions/{name} or configurations/{name}: a link of a Revision Pod's owner walk, and the Revision a Service's rollout made; undefined on 404. */
  readKnative(kind: "Revision" | "Configuration", namespace: string, name: string): Promise<KnativeObject | undefined>;
  /**
   * PATCH apps/v1 {kind}s/{name} (a Knative Service: serving.knative.dev/v1 services/{name}) with `application/json-patch+json`; with `dryRun` the API
   * server runs every admission step and persists nothing (`?dryRun=All`,
   * https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run).
   */
  patchWorkload(kind: WorkloadKind, namespace: string, name: string, patch: readonly JsonPatchOperation[], dryRun: boolean): Promise<{ generation: number | undefined }>;
  /**
   * PATCH pods/{name}/resize with `application/json-patch+json`: a bare Pod's container resources
   * changed in place (https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/).
   * The API server accepts changes to `resources` (and `resizePolicy`) only through this
   * subresource. Resolves the Pod's `metadata.generation` after the write. With `dryRun` every
   * admission step runs and nothing is persisted (`?dryRun=All`): a workload's Pods are resized only
   * once each of their resizes passed.
   */
  resizePod(namespace: string, name: string, patch: readonly JsonPatchOperation[], dryRun?: boolean): Promise<{ generation: number | undefined }>;
  /** POST pods?dryRun=All: admission of a Pod as the workload would create it, nothing persisted. */
  dryRunCreatePod(namespace: string, pod: k8s.V1Pod): Promise<void>;
  /**
   * Each Node's `status.allocatable.memory`, a quantity, or undefined for a Node that reports none:
   * the one method that is not one request. It reads `kube/node-memory.ts`'s view, shared by the
   * calls in flight, of paged LISTs of nodes (cluster-scoped, a consistent read) of which only
   * that field is kept: up to its maximum age old, or `fresherThanMs` (ms) when given. The array
   * is shared: read-only.
   */
  listNodeAllocatableMemory(fresherThanMs?: number): Promise<readonly (string | undefined)[]>;
  /** LIST resourcequotas in `namespace`, from the watch cache (`resourceVersion=0`). */
  listResourceQuotas(namespace: string): Promise<k8s.V1ResourceQuota[]>;
  /** LIST autoscaling/v2 horizontalpodautoscalers in `namespace`, from the watch cache (`resourceVersion=0`). */
  listHorizontalPodAutoscalers(namespace: string): Promise<k8s.V2HorizontalPodAutoscaler[]>;
  /**
   * LIST autoscaling.k8s.io/v1 verticalpodautoscalers in `namespace` (from the watch cache): the raw objects (a custom
   * resource; a 404 without an object name when its CRD is not installed).
   */
  listVerticalPodAutoscalers(namespace: string): Promise<unknown[]>;
  /** LIST pods in `namespace` matching `labelSelector` (the selector's string form). */
  listPods(namespace: string, labelSelector: string): Promise<k8s.V1Pod[]>;
  /** DELETE pods/{name} with `uid` as precondition (409 when it is another Pod now); a Pod already gone is no error. */
  deletePod(namespace: string, name: string, uid: string | undefined): Promise<void>;
  /**
   * LIST kubedemo.com/v1 appmonitors in every namespace served (one list across all, or one per
   * watched namespace; served from the API server's watch cache since consistent reads from it
   * became the default: https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list).
   */
  listAllAppMonitors(): Promise<unknown[]>;
  /** LIST kubedemo.com/v1 appmonitors in `namespace` from the watch cache (`resourceVersion=0`): the raw objects, unvalidated. */
  listAppMonitors(namespace: string): Promise<unknown[]>;
  /** GET an AppMonitor as a raw object; undefined on 404. */
  readAppMonitor(namespace: string, name: string): Promise<Record<string, unknown> | undefined>;
  /** PUT appmonitors/{name}/status; `body.metadata.resourceVersion` makes it a compare-and-swap (409 when stale). Resolves the object as written. */
  replaceAppMonitorStatus(namespace: string, name: string, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** POST events.k8s.io/v1 events. */
  createEvent(namespace: string, event: k8s.EventsV1Event): Promise<void>;
  /** LIST appmonitors with `limit=1` (across namespaces, or in the first watched one): answers only when the API server does and the CRD is installed. */
  probe(): Promise<void>;
}

/**
 * `resourceVersion=0` on the lists of an alert's first round trip and of the checks before the
 * patch: served from the API server's watch cache as it is, a few milliseconds behind etcd
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list). A
 * list without it is a consistent read, which since ConsistentListFromCache waits for the watch
 * cache to catch up with etcd's current revision: after any write in the cluster, a progress
 * notification away (60–85 ms measured on the local stack, against 1–2 ms for the list itself).
 * Nothing these lists feed needs more: the decision rests on the Pod and the workload, read
 * fresh, and on the patch's compare-and-swap; a status write that starts from a stale
 * AppMonitor conflicts and reads it again; the quota, HPA and VPA checks judge the cluster as
 * of milliseconds ago. (The Node list is paged instead, and shared: `kube/node-memory.ts`.)
 */
const FROM_CACHE = { resourceVersion: "0" } as const;

/**
 * A NodeList answer cut down, before the client turns it into typed objects, to what the Node-fit
 * check reads: each Node's `status.allocatable.memory` and the list's `continue`. The client's
 * typed deserialization costs two to five times the `JSON.parse` of a Node's 14 KB, for fields
 * nothing reads. Other answers (errors) pass unchanged.
 */
async function onlyAllocatableMemory(response: k8s.ResponseContext): Promise<k8s.ResponseContext> {
  if (response.httpStatusCode !== 200) return response;
  const list = JSON.parse(await response.body.text()) as { metadata?: { continue?: string }; items?: { status?: { allocatable?: { memory?: string } } }[] };
  const text = JSON.stringify({
    apiVersion: "v1",
    kind: "NodeList",
    metadata: list.metadata?.continue === undefined ? {} : { continue: list.metadata.continue },
    items: (list.items ?? []).map((node) => ({ status: { allocatable: { memory: node.status?.allocatable?.memory } } })),
  });
  return new k8s.ResponseContext(response.httpStatusCode, response.headers, { text: async () => text, binary: async () => Buffer.from(text) });
}
const ONLY_ALLOCATABLE_MEMORY: k8s.ConfigurationOptions = {
  middleware: [{ pre: (request) => new k8s.Observable(Promise.resolve(request)), post: (response) => new k8s.Observable(onlyAllocatableMemory(response)) }],
  middlewareMergeStrategy: "append",
};

/**
 * A JSON Patch body with `<`, `>` and `&` written as `\u003c`, `\u003e` and `\u0026`, as Go's
 * encoder writes them: the API server's JSON Patch (evanphx/json-patch) compares a `test`
 * operation's value with the object's by their encoded text, so a value holding one of them (the
 * in-place record `app=384Mi>768Mi/…`, a heap flag in a shell line) sent as `JSON.stringify`
 * writes it never matches, and every such patch would fail as if the object had changed. The
 * escapes are the same JSON string; these characters occur only inside strings.
 */
export function goEscapedJson(body: string): string {
  return body.replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
}
const JSON_PATCH: k8s.ConfigurationOptions = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch, {
  middleware: [{
    pre: (request) => {
      const body = request.getBody();
      if (typeof body === "string") request.setBody(goEscapedJson(body));
      return new k8s.Observable(Promise.resolve(request));
    },
    post: (response) => new k8s.Observable(Promise.resolve(response)),
  }],
  middlewareMergeStrategy: "append",
});

/** The {@link Cluster} backed by @kubernetes/client-node with `kc`'s credentials, listing AppMonitors in `scope`. */
export function createCluster(kc: k8s.KubeConfig, scope: NamespaceScope = { all: true }, nodeView: { maxAgeMs?: number } = {}): Cluster {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const events = kc.makeApiClient(k8s.EventsV1Api);
  const autoscaling = kc.makeApiClient(k8s.AutoscalingV2Api);
  const jsonPatch = JSON_PATCH;
  const appMonitors = { group: APPMONITOR_GROUP, version: APPMONITOR_VERSION, plural: APPMONITOR_PLURAL };
  const nodeMemory = createNodeMemoryView(async (limit, token) => {
    const page = await core.listNode({ limit, ...(token === undefined ? {} : { _continue: token }) }, ONLY_ALLOCATABLE_MEMORY);
    return { allocatable: page.items.map((node) => node.status?.allocatable?.memory), continue: page.metadata?._continue };
  }, nodeView);

  return {
    readPod: (namespace, name) => orUndefined(core.readNamespacedPod({ namespace, name })),

    readWorkload(kind, namespace, name) {
      const param = { namespace, name };
      switch (kind) {
        case "Deployment":
          return orUndefined(apps.readNamespacedDeployment(param));
        case "StatefulSet":
          return orUndefined(apps.readNamespacedStatefulSet(param));
        case "DaemonSet":
          return orUndefined(apps.readNamespacedDaemonSet(param));
        case "ReplicaSet":
          return orUndefined(apps.readNamespacedReplicaSet(param));
        case "Service":
          return orUndefined(custom.getNamespacedCustomObject({ ...KNATIVE_SERVING.Service, ...param }) as Promise<WorkloadObject>);
      }
    },

    readKnative: (kind, namespace, name) => orUndefined(custom.getNamespacedCustomObject({ ...KNATIVE_SERVING[kind], namespace, name }) as Promise<KnativeObject>),

    async patchWorkload(kind, namespace, name, patch, dryRun) {
      const param = { namespace, name, body: patch, fieldManager: FIELD_MANAGER, ...(dryRun ? { dryRun: "All" } : {}) };
      const written = await (() => {
        switch (kind) {
          case "Deployment":
            return apps.patchNamespacedDeployment(param, jsonPatch);
          case "StatefulSet":
            return apps.patchNamespacedStatefulSet(param, jsonPatch);
          case "DaemonSet":
            return apps.patchNamespacedDaemonSet(param, jsonPatch);
          case "ReplicaSet":
            return apps.patchNamespacedReplicaSet(param, jsonPatch);
          case "Service":
            return custom.patchNamespacedCustomObject({ ...KNATIVE_SERVING.Service, ...param }, jsonPatch) as Promise<WorkloadObject>;
        }
      })();
      return { generation: written.metadata?.generation };
    },

    async resizePod(namespace, name, patch, dryRun = false) {
      const written = await core.patchNamespacedPodResize({ namespace, name, body: patch, fieldManager: FIELD_MANAGER, ...(dryRun ? { dryRun: "All" } : {}) }, jsonPatch);
      return { generation: written.metadata?.generation };
    },

    async listResourceQuotas(namespace) {
      return (await core.listNamespacedResourceQuota({ namespace, ...FROM_CACHE })).items;
    },

    async listHorizontalPodAutoscalers(namespace) {
      return (await autoscaling.listNamespacedHorizontalPodAutoscaler({ namespace, ...FROM_CACHE })).items;
    },

    async listVerticalPodAutoscalers(namespace) {
      const list = (await custom.listNamespacedCustomObject({ ...VERTICAL_POD_AUTOSCALERS, namespace, ...FROM_CACHE })) as { items?: unknown };
      return Array.isArray(list.items) ? (list.items as unknown[]) : [];
    },

    async listPods(namespace, labelSelector) {
      return (await core.listNamespacedPod({ namespace, labelSelector })).items;
    },

    async deletePod(namespace, name, uid) {
      await orUndefined(core.deleteNamespacedPod({ namespace, name, body: uid === undefined ? {} : { preconditions: { uid } } }));
    },

    async listAllAppMonitors() {
      const lists = await Promise.all(scopeNamespaces(scope).map(async (namespace) => {
        const list = (namespace === undefined ? await custom.listClusterCustomObject({ ...appMonitors }) : await custom.listNamespacedCustomObject({ ...appMonitors, namespace })) as { items?: unknown };
        return Array.isArray(list.items) ? (list.items as unknown[]) : [];
      }));
      return lists.flat();
    },

    async dryRunCreatePod(namespace, pod) {
      await core.createNamespacedPod({ namespace, body: pod, dryRun: "All", fieldManager: FIELD_MANAGER });
    },

    listNodeAllocatableMemory: nodeMemory,

    async listAppMonitors(namespace) {
      const list = (await custom.listNamespacedCustomObject({ ...appMonitors, namespace, ...FROM_CACHE })) as { items?: unknown };
      return Array.isArray(list.items) ? (list.items as unknown[]) : [];
    },

    readAppMonitor: (namespace, name) =>
      orUndefined(custom.getNamespacedCustomObject({ ...appMonitors, namespace, name }) as Promise<Record<string, unknown>>),

    async replaceAppMonitorStatus(namespace, name, body) {
      return (await custom.replaceNamespacedCustomObjectStatus({ ...appMonitors, namespace, name, body, fieldManager: FIELD_MANAGER })) as Record<string, unknown>;
    },

    async createEvent(namespace, event) {
      await events.createNamespacedEvent({ namespace, body: event, fieldManager: FIELD_MANAGER });
    },

    async probe() {
      const [namespace] = scopeNamespaces(scope);
      await (namespace === undefined ? custom.listClusterCustomObject({ ...appMonitors, limit: 1 }) : custom.listNamespacedCustomObject({ ...appMonitors, namespace, limit: 1 }));
    },
  };
}

async function orUndefined<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (isObjectNotFound(error)) return undefined;
    throw error;
  }
}
