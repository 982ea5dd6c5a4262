/**
 * What memory-scaler's integration tests and benchmark share: the function started with a token
 * of exactly its ServiceAccount, memory-threshold CloudEvents sent in binary or structured
 * mode with the CloudEvents SDK (its answer: `post-event.ts`), and the cluster objects the
 * tests look at.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { CloudEvent } from "cloudevents";
import { after, before, type TestContext } from "node:test";
import { fn } from "../../functions/memory-scaler/index.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import type { Env } from "../../functions/lib/runtime/types.ts";
import { startFunction } from "./function-server.ts";
import { manifestFile } from "../harness/lib/manifests.ts";
import { installMemoryScaler } from "./install.ts";
import { postEvent, type EventAnswer } from "./post-event.ts";
import { down, up } from "../harness/stack/stack.ts";
import { adminKubeConfig, promQuery, serviceAccountKubeConfig, waitFor } from "./stack.ts";
import { usageMemoryAnnotation } from "../harness/stack/config-files.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";
import { tempDir } from "./temp-dir.ts";

/** The alert CloudEvent lives with the harness, whose delivery probes send it too. */
export { alertEvent, type AlertEventOptions } from "../harness/lib/alert-event.ts";

/** Namespace of memory-scaler's ServiceAccount (knative/rbac/memory-scaler.yaml). */
export const SCALER_NAMESPACE = "appmonitor";
/** Name of memory-scaler's ServiceAccount (knative/rbac/memory-scaler.yaml). */
export const SCALER_SERVICE_ACCOUNT = "memory-scaler";

/**
 * memory-scaler's environment without Prometheus, as the tests run it unless they give a
 * `PROMETHEUS_URL`: their alerts name kwok Pods, whose working set no Prometheus has, so they ask
 * for alerts taken as they come, which memory-scaler refuses to start without being told.
 */
export const UNVERIFIED: Env = { PROMETHEUS_URL: "", ALLOW_UNVERIFIED_ALERTS: "true" };

/** Writes `kc` as a kubeconfig file in `dir` and returns its path. */
export async function writeKubeconfig(kc: k8s.KubeConfig, dir: string, name = "kubeconfig"): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

/**
 * memory-scaler's ServiceAccount credentials, sent to `server` instead of the API server's address
 * (a closed port, or a TCP proxy a test cuts: `tcp-proxy.ts`).
 * @throws Error when the ServiceAccount's kubeconfig names no cluster or user.
 */
export async function scalerKubeConfigAt(server: string): Promise<k8s.KubeConfig> {
  return movedKubeConfig(await serviceAccountKubeConfig(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT), server);
}

/**
 * `kc`'s current cluster and user, sent to `server` instead of the cluster's address.
 * @throws Error when `kc` names no current cluster or user.
 */
export function movedKubeConfig(kc: k8s.KubeConfig, server: string): k8s.KubeConfig {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (cluster === null || user === null) throw new Error("kubeconfig without cluster or user");
  const moved = new k8s.KubeConfig();
  moved.loadFromOptions({
    clusters: [{ ...cluster, server }],
    users: [user],
    contexts: [{ name: "moved", cluster: cluster.name, user: user.name }],
    currentContext: "moved",
  });
  return moved;
}

/**
 * memory-scaler in this process, its ServiceAccount's requests passing through a TCP proxy of the
 * test's own in front of the API server (`tcp-proxy.ts`: cut, stall, hold), its kubeconfig
 * written as `<dir>/<name>`. Both are stopped when the test ends.
 */
export async function scalerBehindProxy(t: TestContext, dir: string, name: string, env: Env = {}): Promise<{ proxy: TcpProxy; server: RunningServer }> {
  const api = new URL((await adminKubeConfig()).getCurrentCluster()?.server ?? "");
  const proxy = await startTcpProxy(api.hostname, Number(api.port));
  t.after(() => proxy.stop());
  const kubeconfig = await writeKubeconfig(await scalerKubeConfigAt(`https://127.0.0.1:${proxy.port}`), dir, name);
  const server = await startFunction(fn, { ...UNVERIFIED, ...env, KUBECONFIG: kubeconfig });
  t.after(() => server.close());
  return { proxy, server };
}

/**
 * A memhog-like Deployment `web` (384Mi/256Mi, annotated) and an AppMonitor `m` (threshold 75,
 * multiplier 2, and `spec`) in `ns`; `container` adds to the one container `memhog` (its command,
 * args, env). Returns the Running Pod's name.
 */
export async function monitoredDeployment(ns: string, spec: Record<string, unknown> = {}, container: Pick<k8s.V1Container, "command" | "args" | "env"> = {}): Promise<string> {
  await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, ...spec });
  await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name: "web" },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } },
          spec: { containers: [{ name: "memhog", image: "registry.example/app:1", resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } }, ...container }] },
        },
      },
    },
  });
  return (await onlyRunningPod(ns, "app=web")).metadata.name;
}

/** A running memory-scaler and what it runs with. */
export interface ScalerUnderTest {
  readonly server: RunningServer;
  readonly url: string;
  /** The kubeconfig file it uses (memory-scaler's ServiceAccount token). */
  readonly kubeconfig: string;
  /** Stops the server and removes the kubeconfig. */
  stop(): Promise<void>;
}

/**
 * A kubeconfig file authenticating as memory-scaler's ServiceAccount, in a new temporary
 * directory; `remove` deletes it.
 */
export async function scalerKubeconfig(): Promise<{ file: string; remove: () => Promise<void> }> {
  const dir = await tempDir("memory-scaler");
  const file = await writeKubeconfig(await serviceAccountKubeConfig(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT), dir.path);
  return { file, remove: dir.remove };
}

/** Starts memory-scaler in this process as its ServiceAccount, {@link UNVERIFIED}; `env` adds or overrides variables. */
export async function startScaler(env: Env = {}): Promise<ScalerUnderTest> {
  const kubeconfig = await scalerKubeconfig();
  try {
    const server = await startFunction(fn, { ...UNVERIFIED, KUBECONFIG: kubeconfig.file, ...env });
    return {
      server,
      url: server.url,
      kubeconfig: kubeconfig.file,
      stop: async () => {
        await server.close();
        await kubeconfig.remove();
      },
    };
  } catch (error) {
    await kubeconfig.remove();
    throw error;
  }
}

/**
 * For the suite it is called in: memory-scaler's manifests installed and the function started
 * before its tests (with `env`), stopped after them. Returns the running scaler once started.
 */
export function scalerForSuite(env: Env = {}): () => ScalerUnderTest {
  let scaler: ScalerUnderTest | undefined;
  before(async () => {
    await installMemoryScaler();
    scaler = await startScaler(env);
  });
  after(async () => {
    await scaler?.stop();
  });
  return () => {
    if (scaler === undefined) throw new Error("memory-scaler has not started");
    return scaler;
  };
}

/**
 * For the test file it is called in: a stack of its own (one kwok Node) in a temporary
 * directory named after `prefix`, up before its tests and down after them. A file that posts
 * PingSource ticks needs one: a tick follows the pending rollouts of every namespace, which
 * would end other files' rollouts on the shared stack.
 */
export function ownStackForFile(prefix: string): void {
  let stateDir = "";
  before(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), `appmonitor-${prefix}-`));
    // Test files run in processes of their own: this one's support modules read this stack.
    process.env.APPMONITOR_STACK_DIR = stateDir;
    await up({ stateDir, nodes: 1 });
  }, { timeout: 5 * 60_000 });
  after(async () => {
    await down(stateDir);
    await rm(stateDir, { recursive: true, force: true });
  });
}

/** A tick of the resync PingSource, as Knative's PingSource sends it (memory-scaler follows its rollouts on it). */
export function pingTick(): CloudEvent<unknown> {
  return new CloudEvent({
    specversion: "1.0",
    id: randomBytes(8).toString("hex"),
    type: "dev.knative.sources.ping",
    source: "/apis/v1/namespaces/appmonitor/pingsources/rule-sync-resync",
    datacontenttype: "application/json",
    data: { reason: "periodic resync" },
  });
}

/** memory-scaler's answer to one event: 204 with `outcome` and `reason` when handled, else a JSON error body. */
export type Answer = EventAnswer;

/** Sends of one event when memory-scaler answers 429: the first and up to four more. */
const DELIVERIES_ON_429 = 5;

/**
 * POSTs `event` to memory-scaler at `url`, in binary (default) or structured mode. A 429 (the API
 * server throttled memory-scaler; nothing was written) is sent again, the same event, after its
 * `Retry-After` (1–5 s), as a Broker's delivery retries it, up to {@link DELIVERIES_ON_429} sends in
 * all: the answer is then the last one. Any other status is the answer at once.
 */
export async function deliver(url: string, event: CloudEvent<unknown>, mode: "binary" | "structured" = "binary"): Promise<Answer> {
  for (let sent = 1; ; sent += 1) {
    const answer = await postEvent(`${url}/`, event, mode);
    if (answer.status !== 429 || sent >= DELIVERIES_ON_429) return answer;
    const seconds = Math.min(5, Math.max(1, Number(answer.headers.get("retry-after")) || 1));
    await sleep(seconds * 1000);
  }
}

/** The memhog Deployment of knative/examples/memhog.yaml, as written. */
export async function memhogManifest(): Promise<k8s.V1Deployment> {
  const [deployment] = (await manifestFile("knative/examples/memhog.yaml")) as unknown as k8s.V1Deployment[];
  if (deployment === undefined) throw new Error("knative/examples/memhog.yaml has no object");
  return deployment;
}

/** The AppMonitor of knative/examples/appmonitor.yaml, as written. */
export async function exampleAppMonitor(): Promise<k8s.KubernetesObject & { spec: Record<string, unknown> }> {
  const [monitor] = (await manifestFile("knative/examples/appmonitor.yaml")) as unknown as (k8s.KubernetesObject & { spec: Record<string, unknown> })[];
  if (monitor === undefined) throw new Error("knative/examples/appmonitor.yaml has no object");
  return monitor;
}

/** The original demo: knative/examples/memhog.yaml and appmonitor.yaml, unchanged, created in `ns`; returns memhog's Running Pod. */
export async function originalDemo(ns: string): Promise<k8s.V1Pod & { metadata: k8s.V1ObjectMeta & { name: string } }> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(await adminKubeConfig());
  const deployment = await memhogManifest();
  await objects.create({ ...deployment, metadata: { ...deployment.metadata, namespace: ns } });
  const monitor = await exampleAppMonitor();
  await objects.create({ ...monitor, metadata: { ...monitor.metadata, namespace: ns } });
  return onlyRunningPod(ns, "name=memhog");
}

/** Creates an AppMonitor named `name` in `namespace` with `spec`, as the admin. */
export async function createAppMonitor(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
  const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
  await custom.createNamespacedCustomObject({
    group: "kubedemo.com",
    version: "v1",
    plural: "appmonitors",
    namespace,
    body: { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name }, spec },
  });
}

/** Merges `spec` into an AppMonitor's spec (a JSON merge patch), as the admin; returns its new resourceVersion. */
export async function patchAppMonitorSpec(namespace: string, name: string, spec: Record<string, unknown>): Promise<string | undefined> {
  const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
  const patched = (await custom.patchNamespacedCustomObject(
    { group: "kubedemo.com", version: "v1", plural: "appmonitors", namespace, name, body: { spec } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  )) as { metadata?: { resourceVersion?: string } };
  return patched.metadata?.resourceVersion;
}

/**
 * Waits until a list served from the API server's watch cache (`resourceVersion=0`, as
 * memory-scaler lists AppMonitors, HPAs and VPAs) shows the object `name` of `plural` in
 * `namespace` and `check` holds for it: what a test wrote is then what memory-scaler reads.
 */
export async function waitForWatchCache(
  resource: { group: string; version: string; plural: string },
  namespace: string,
  name: string,
  check: (object: Record<string, unknown>) => boolean = () => true,
): Promise<void> {
  const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
  await waitFor(`${resource.plural} ${namespace}/${name} in the watch cache`, async () => {
    const list = (await custom.listNamespacedCustomObject({ ...resource, namespace, resourceVersion: "0" })) as { items?: Record<string, unknown>[] };
    return (list.items ?? []).some((o) => (o.metadata as { name?: string } | undefined)?.name === name && check(o));
  }, 10_000, 20);
}

/** An AppMonitor's `metadata.resourceVersion`, as the admin reads it: it moves with every write, status included. */
export async function appMonitorResourceVersion(namespace: string, name: string): Promise<string | undefined> {
  const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
  const object = (await custom.getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", plural: "appmonitors", namespace, name })) as { metadata?: { resourceVersion?: string } };
  return object.metadata?.resourceVersion;
}

/** An AppMonitor's status, as the admin reads it. */
export async function appMonitorStatus(namespace: string, name: string): Promise<Record<string, unknown> & { scaleCount?: number; lastScaleTime?: string; recentScales?: Record<string, unknown>[] }> {
  const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
  const object = (await custom.getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", plural: "appmonitors", namespace, name })) as { status?: Record<string, unknown> };
  return object.status ?? {};
}

/** Pods of `namespace` matching `labelSelector` that are Running and not terminating. */
export async function runningPods(namespace: string, labelSelector: string): Promise<k8s.V1Pod[]> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  const list = await core.listNamespacedPod({ namespace, labelSelector });
  return list.items.filter((p) => p.status?.phase === "Running" && p.metadata?.deletionTimestamp === undefined);
}

/** Waits for exactly one Running Pod matching `labelSelector` and returns it. */
export async function onlyRunningPod(namespace: string, labelSelector: string, timeoutMs = 60_000): Promise<k8s.V1Pod & { metadata: k8s.V1ObjectMeta & { name: string } }> {
  const [pod] = await waitFor(`one Running Pod ${labelSelector} in ${namespace}`, async () => {
    const pods = await runningPods(namespace, labelSelector);
    return pods.length === 1 ? pods : undefined;
  }, timeoutMs);
  if (pod?.metadata?.name === undefined) throw new Error("Pod without a name");
  return pod as k8s.V1Pod & { metadata: k8s.V1ObjectMeta & { name: string } };
}

/** events.k8s.io/v1 Events in `namespace` regarding `kind`/`name`. */
export async function eventsRegarding(namespace: string, kind: string, name: string): Promise<k8s.EventsV1Event[]> {
  const events = (await adminKubeConfig()).makeApiClient(k8s.EventsV1Api);
  const list = await events.listNamespacedEvent({ namespace });
  return list.items.filter((e) => e.regarding?.kind === kind && e.regarding.name === name && e.reportingController === "kubedemo.com/memory-scaler");
}

/**
 * Sets the working set kwok's cAdvisor emulation reports for the container `memhog` of Pod
 * `pod` to `quantity` (`bytes` whole bytes) and waits until Prometheus has scraped it.
 */
export async function setWorkingSet(ns: string, pod: string, quantity: string, bytes: number): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  await core.patchNamespacedPod({ namespace: ns, name: pod, body: { metadata: { annotations: { [usageMemoryAnnotation]: quantity } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  await waitFor(`Prometheus to see ${quantity} for ${pod}`, async () => {
    const samples = await promQuery(`container_memory_working_set_bytes{namespace="${ns}",pod="${pod}",container="memhog"}`);
    return samples.length === 1 && samples[0]?.value === bytes;
  });
}
