// Knative Services scaled for real: Knative Serving (controller, webhook, autoscaler, activator; no
// ingress) on the stack's real node, a Knative Service running memhog (min-scale 1) whose Revision
// Pod crosses the threshold, and the whole alert path: the kubelet's cAdvisor scraped by the
// stack's Prometheus, the AppMonitor's rule as rule-sync writes it, the stack's Alertmanager,
// alert-receiver, and memory-scaler in this process as its ServiceAccount, checking each alert
// against Prometheus.
//
// - Rollout: the Service's spec.template patched (admitted by Serving's webhook and the writes
//   policy), Serving's new Revision Ready with the new memory in its Pod's cgroup, queue-proxy as it
//   was; the follow-up ends it RolledOut.
// - InPlace: the same Pod, the same container, its cgroup limit raised, the Service's template
//   unchanged; then min-scale raised to 2 (a new Revision), whose Pods the shipped admission policy
//   gives the recorded memory at creation.
// The times from the alert in Alertmanager to memory-scaler's change, and from that change to the
// new Revision Ready and to the in-place raise, are printed, not asserted. Its own stack with the
// real node (Serving needs one of its own), so it waits for the machine-wide real-node lock.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { IN_PLACE_MEMORY_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { buildImages } from "../../scripts/images/build.ts";
import { binarySetsFor, buildBinaries } from "../../scripts/lib/binaries.ts";
import { placeNamespace } from "../harness/stack/eventing-install.ts";
import { REAL_NODE } from "../harness/stack/real-node-config.ts";
import { installServing } from "../harness/stack/serving-install.ts";
import { down, up } from "../harness/stack/stack.ts";
import type { StackState } from "../harness/stack/state.ts";
import { applyFiles, installMemoryScaler } from "../support/install.ts";
import { appMonitorStatus, createAppMonitor, deliver, pingTick, type ScalerUnderTest, startScaler } from "../support/memory-scaler.ts";
import { type AlertPath, startAlertPath } from "../support/alert-path.ts";
import { cgroupLimit, containerId, memhogProcess } from "../support/real-node-memhog.ts";
import { acquireRealNodeLock } from "../harness/stack/real-node-lock.ts";
import { SHORT_FOR_SECONDS, waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

const Mi = 1 << 20;
const NS = "knative-scale";
const SERVING = { group: "serving.knative.dev", version: "v1", namespace: NS } as const;
let state: StackState | undefined;
let stateDir = "";
let releaseLock: (() => Promise<void>) | undefined;
let core: k8s.CoreV1Api;
let custom: k8s.CustomObjectsApi;
let scaler: ScalerUnderTest | undefined;
let alerts: AlertPath | undefined;
/** memhog as the stack's registry holds it, by digest: Serving resolves a tag through the registry, which the real node reaches only as a mirror. */
let memhogImage = "";

before(async () => {
  // Built before the lock: under npm test, while the file before this one holds the node.
  const [memhog] = await buildImages(["memhog"]);
  await buildBinaries(process.env, undefined, binarySetsFor({ realNode: true, serving: true }));
  releaseLock = await acquireRealNodeLock();
  stateDir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-knative-scale-"));
  const say = (line: string) => process.stderr.write(`# stack: ${line}\n`);
  state = await up({ stateDir, nodes: 1, realNode: true, memhogArchive: memhog?.archive ?? "", progress: say });
  process.env.APPMONITOR_STACK_DIR = stateDir;
  const served = state.registry?.images.find((i) => i.reference.startsWith("quay.io/metral/memhog:"));
  assert.ok(served, "the stack's registry serves memhog");
  memhogImage = `quay.io/metral/memhog@${served.digest}`;
  const serving = await installServing(state, { progress: say });
  process.stderr.write(`# Serving ${serving.version} (no ingress) Available in ${serving.seconds.toFixed(1)} s\n`);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  core = kc.makeApiClient(k8s.CoreV1Api);
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await installMemoryScaler();
  await applyFiles("knative/admission/in-place-memory.yaml");
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await placeNamespace(state, NS);
  await waitFor(`ServiceAccount ${NS}/default`, async () => core.readNamespacedServiceAccount({ namespace: NS, name: "default" }).then(() => true, () => false));
  scaler = await startScaler({ PROMETHEUS_URL: state.prometheusUrl, ALLOW_UNVERIFIED_ALERTS: "false" });
  alerts = await startAlertPath(state, NS, scaler.url);
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  await alerts?.stop();
  await scaler?.stop();
  if (state) await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
  await rm(stateDir, { recursive: true, force: true });
  await releaseLock?.();
});

interface KnativeService {
  metadata: k8s.V1ObjectMeta;
  spec: { template: { metadata?: k8s.V1ObjectMeta; spec: { containers: k8s.V1Container[] } } };
  status?: { latestCreatedRevisionName?: string; latestReadyRevisionName?: string };
}

const service = (name: string) => custom.getNamespacedCustomObject({ ...SERVING, plural: "services", name }) as Promise<KnativeService>;

/** Knative Service `name`: memhog holding 52Mi of its 64Mi (81 %; limit = request), min-scale 1, annotated for AppMonitors. */
async function createService(name: string): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...SERVING,
    plural: "services",
    body: {
      apiVersion: "serving.knative.dev/v1",
      kind: "Service",
      metadata: { name },
      spec: {
        template: {
          metadata: { annotations: { "autoscaling.knative.dev/min-scale": "1", "app-monitor.kubedemo.com/monitor": "true" } },
          spec: {
            containers: [{
              name: "memhog",
              image: memhogImage,
              env: [{ name: "MEMHOG_TARGET", value: "52Mi" }, { name: "MEMHOG_RATE", value: "256Mi" }],
              resources: { limits: { memory: "64Mi" }, requests: { memory: "64Mi" } },
            }],
          },
        },
      },
    },
  });
}

/** Revision `revision`'s Pods Running with every container ready, not terminating. */
async function readyPods(revision: string): Promise<k8s.V1Pod[]> {
  const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: `serving.knative.dev/revision=${revision}` })).items;
  return pods.filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === "Running" && p.status.containerStatuses?.every((c) => c.ready));
}

/** Service `name`'s latest Ready Revision once it is `revision`, and its `count` Pods, memhog holding 52Mi in each. */
async function revisionHolding(name: string, revision: string, count = 1): Promise<k8s.V1Pod[]> {
  return waitFor(`Revision ${revision} Ready with ${count} Pod(s) holding 52Mi`, async () => {
    if ((await service(name)).status?.latestReadyRevisionName !== revision) return undefined;
    const pods = await readyPods(revision);
    return pods.length === count && pods.every((p) => p.spec?.nodeName === REAL_NODE.name && memhogProcess(p).rss >= 52 * Mi) ? pods : undefined;
  }, 240_000, 200);
}

const memoryOf = (c: k8s.V1Container | undefined) => ({ limit: c?.resources?.limits?.memory, request: c?.resources?.requests?.memory });
const container = (pod: k8s.V1Pod | undefined, name: string) => pod?.spec?.containers.find((c) => c.name === name);

/** The AppMonitor `name` of a test: 75 %, doubled, a short `for`, its `targetRef` the Knative Service `name`. */
const monitorSpec = (name: string, updateMode: "Rollout" | "InPlace") =>
  ({ memThresholdPercent: 75, memMultiplier: 2, forSeconds: SHORT_FOR_SECONDS, updateMode, targetRef: { apiVersion: "serving.knative.dev/v1", kind: "Service", name } });

/** When `pod`'s threshold alert is first seen active in the stack's Alertmanager (polled every 100 ms). */
async function alertInAlertmanager(pod: k8s.V1Pod | undefined): Promise<number> {
  const url = `${state?.alertmanagerUrl}/api/v2/alerts?${new URLSearchParams({ filter: `pod="${pod?.metadata?.name}"` })}`;
  await waitFor(`the threshold alert of ${pod?.metadata?.name} in Alertmanager`, async () =>
    ((await (await fetch(url)).json()) as { labels: Record<string, string>; status: { state: string } }[])
      .some((a) => a.labels.alertname === "AppMonitorMemoryHigh" && a.status.state === "active"), 120_000, 100);
  return Date.now();
}

test("Rollout: a Revision Pod's crossing patches the Knative Service; Serving's new Revision comes up Ready with the new memory in its cgroup, queue-proxy as it was, and the follow-up ends it RolledOut", { timeout: 600_000 }, async (t) => {
  const spec = monitorSpec("roll", "Rollout");
  await createAppMonitor(NS, "roll", spec);
  await createService("roll");
  const [pod] = await revisionHolding("roll", "roll-00001");
  const queueBefore = memoryOf(container(pod, "queue-proxy"));

  await alerts?.load("roll", spec);
  const fired = await alertInAlertmanager(pod);
  const patched = await waitFor("memory-scaler patches the Service's template", async () => {
    const s = await service("roll");
    return s.spec.template.spec.containers[0]?.resources?.limits?.memory !== "64Mi" ? s : undefined;
  }, 60_000, 100);
  const delivered = Date.now();
  assert.deepEqual(memoryOf(patched.spec.template.spec.containers[0]), { limit: "128Mi", request: "128Mi" });
  assert.match(patched.metadata.annotations?.["serving.knative.dev/lastModifier"] ?? "", /:memory-scaler$/, "Serving's webhook records memory-scaler as the last to change it");

  const [next] = await revisionHolding("roll", "roll-00002");
  const readyAfter = Date.now() - delivered;
  assert.deepEqual(memoryOf(container(next, "memhog")), { limit: "128Mi", request: "128Mi" });
  assert.equal(cgroupLimit(next as k8s.V1Pod), 128 * Mi, "the new Revision's memhog cgroup");
  assert.deepEqual(memoryOf(container(next, "queue-proxy")), queueBefore, "queue-proxy as Serving sets it");

  const ended = await waitFor("the follow-up to end the rollout", async () => {
    await deliver(scaler?.url ?? "", pingTick());
    const conditions = ((await appMonitorStatus(NS, "roll")).conditions ?? []) as { type: string; status: string; reason: string; message: string }[];
    const condition = conditions.find((c) => c.type === "RolledOut");
    return condition !== undefined && condition.status !== "Unknown" ? condition : undefined;
  }, 60_000, 500);
  assert.deepEqual([ended.status, ended.reason, ended.message], ["True", "RolledOut", "Service roll: Revision roll-00002 is Ready with the new memory"]);
  assert.equal((await service("roll")).metadata.generation, 2, "one patch: the alerts that go on firing for the old Revision's Pod scale nothing more");
  t.diagnostic(`alert in Alertmanager → the Service patched: ${((delivered - fired) / 1000).toFixed(1)} s; patched → Revision roll-00002 Ready with 128Mi: ${(readyAfter / 1000).toFixed(1)} s`);
});

test("InPlace: the same Pod and container, its cgroup limit raised, the Service's template unchanged; min-scale 2 makes a Revision whose Pods start with the recorded memory", { timeout: 600_000 }, async (t) => {
  const spec = monitorSpec("cache", "InPlace");
  await createAppMonitor(NS, "cache", spec);
  await createService("cache");
  const [pod] = await revisionHolding("cache", "cache-00001");
  const held = memhogProcess(pod as k8s.V1Pod);
  const queueBefore = memoryOf(container(pod, "queue-proxy"));

  await alerts?.load("cache", spec);
  const fired = await alertInAlertmanager(pod);
  await waitFor("memory-scaler resizes the Pod", async () =>
    container(await core.readNamespacedPod({ namespace: NS, name: pod?.metadata?.name ?? "" }), "memhog")?.resources?.limits?.memory === "128Mi", 60_000, 100);
  const delivered = Date.now();
  await waitFor("the kubelet to raise the running container's cgroup limit", async () => cgroupLimit(pod as k8s.V1Pod) === 128 * Mi, 60_000, 50);
  const raisedAfter = Date.now() - delivered;

  const now = await core.readNamespacedPod({ namespace: NS, name: pod?.metadata?.name ?? "" });
  const status = (p: k8s.V1Pod) => p.status?.containerStatuses?.find((c) => c.name === "memhog");
  assert.equal(containerId(now), containerId(pod as k8s.V1Pod), "the same container");
  assert.equal(status(now)?.restartCount, 0, "not restarted");
  assert.equal(memhogProcess(now).pid, held.pid, "the same memhog process");
  assert.deepEqual(memoryOf(container(now, "queue-proxy")), queueBefore, "queue-proxy not resized");
  const cache = await service("cache");
  assert.deepEqual(memoryOf(cache.spec.template.spec.containers[0]), { limit: "64Mi", request: "64Mi" }, "the template is unchanged: no new Revision");
  assert.equal(cache.metadata.annotations?.[IN_PLACE_MEMORY_ANNOTATION], "memhog=64Mi>128Mi/64Mi>128Mi");
  assert.equal(cache.status?.latestCreatedRevisionName, "cache-00001");

  // A second Pod: min-scale 2 is a new template, so Serving makes Revision cache-00002 with two Pods,
  // which the admission policy gives the recorded memory (the template still says 64Mi).
  await custom.patchNamespacedCustomObject(
    { ...SERVING, plural: "services", name: "cache", body: { spec: { template: { metadata: { annotations: { "autoscaling.knative.dev/min-scale": "2" } } } } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  const pods = await revisionHolding("cache", "cache-00002", 2);
  for (const p of pods) {
    assert.deepEqual(memoryOf(container(p, "memhog")), { limit: "128Mi", request: "128Mi" }, `${p.metadata?.name} created with the recorded memory`);
    assert.equal(cgroupLimit(p), 128 * Mi, `${p.metadata?.name}'s cgroup`);
    assert.deepEqual(memoryOf(container(p, "queue-proxy")), queueBefore, "queue-proxy as Serving sets it");
  }
  t.diagnostic(`alert in Alertmanager → the Pod resized: ${((delivered - fired) / 1000).toFixed(1)} s; resized → cgroup limit 128Mi in place: ${(raisedAfter / 1000).toFixed(1)} s (same container ${containerId(now).slice(0, 12)}, memhog pid ${held.pid}); Revision cache-00002's Pods ${pods.map((p) => p.metadata?.name).join(", ")} created at 128Mi`);
});
