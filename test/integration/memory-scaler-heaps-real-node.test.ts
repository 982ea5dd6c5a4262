// A fixed heap on the real node, for real: one of our images (memory-scaler's, which has Node.js)
// running `node --max-old-space-size=64` under a 512Mi limit keeps allocating until V8 aborts; the
// kubelet reports the end as exit code 134, reason Error (not OOMKilled), and memory-scaler's
// answer to a threshold alert and to an OOM-kill alert for it is FixedHeap: not scaled, the flag
// named, the heap failure called not an OOM kill, no patch and no rollout.
//
// Node.js as PID 1 of its container (exec form, as our Dockerfile's CMD) does not end in 134: the
// kernel ignores a signal a PID namespace's init sends itself with the default action, so V8's
// abort() (SIGABRT) does not end it and glibc's fallback instruction faults: SIGSEGV, exit code
// 139 (as measured here). The first test shares the Pod's process namespace (the pause process is PID 1), so Node.js
// dies of its SIGABRT; the second records what PID 1 gives (still held by the flag, but with no
// heap failure named, since memory-scaler reads only 134 as one).
//
// On the run's shared real-node stack beside the run's other such files (real-node-alongside.ts),
// memory-scaler in this process as its ServiceAccount serving this file's namespaces alone, the
// alerts delivered as Alertmanager's would be.
import { after, before, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { MONITOR_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { alertEvent, createAppMonitor, deliver, eventsRegarding, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { type ScalerOnRealNode } from "../support/real-node-file.ts";
import { startScalerOnRealNodeAlongside } from "../support/real-node-alongside.ts";
import { waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

/** This file's namespaces, one per test. */
const NAMESPACES = ["heap-abort", "heap-pid1"] as const;
/** Keeps live JS objects (strings inside) until the old space is full and V8 aborts. */
const ALLOCATE = "const kept = []; for (;;) kept.push({ s: String(Math.random()).repeat(8) });";
let running: ScalerOnRealNode | undefined;
let core: k8s.CoreV1Api;
let apps: k8s.AppsV1Api;
let scaler: ScalerUnderTest | undefined;
let image = "";

before(async () => {
  running = await startScalerOnRealNodeAlongside("appmonitor-heaps-", NAMESPACES);
  ({ core, apps } = running.stack);
  ({ image, scaler } = running);
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  await running?.stop();
});

/** A namespace `ns` of the test's own (an annotated workload is covered by every AppMonitor of its namespace), with AppMonitor `m`. */
async function heapNamespace(ns: string): Promise<void> {
  await running?.stack.namespace(ns);
  await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
}

/** A Deployment `web` in `ns` of our image running Node.js with a 64 MiB old space until it aborts, 512Mi/256Mi, annotated for an AppMonitor. */
function heapDeployment(ns: string, shareProcessNamespace: boolean): k8s.V1Deployment {
  const name = "web";
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations: { [MONITOR_ANNOTATION]: "true" } },
        spec: {
          ...REAL_NODE_PLACEMENT,
          shareProcessNamespace,
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "app",
            image,
            imagePullPolicy: "Never",
            command: ["node", "--max-old-space-size=64", "-e", ALLOCATE],
            resources: { limits: { memory: "512Mi" }, requests: { memory: "256Mi" } },
          }],
        },
      },
    },
  };
}

interface Crashed {
  readonly pod: k8s.V1Pod;
  readonly terminated: k8s.V1ContainerStateTerminated;
  readonly restartCount: number;
}

/** Creates the Deployment and waits until its Pod's container has run, ended and restarted once. */
async function crashed(t: TestContext, deployment: k8s.V1Deployment): Promise<Crashed> {
  const name = deployment.metadata?.name ?? "";
  const ns = deployment.metadata?.namespace ?? "";
  await apps.createNamespacedDeployment({ namespace: ns, body: deployment });
  t.after(() => core.deleteNamespace({ name: ns }).then(() => undefined, () => undefined));
  return waitFor(`${name}'s container ended and restarted`, async () => {
    const [pod] = (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${name}` })).items;
    const status = pod?.status?.containerStatuses?.[0];
    const terminated = status?.lastState?.terminated;
    return pod !== undefined && terminated !== undefined && (status?.restartCount ?? 0) >= 1 ? { pod, terminated, restartCount: status?.restartCount ?? 0 } : undefined;
  }, 180_000, 200);
}

const seconds = (from: Date | string | undefined, to: Date | string | undefined) => (new Date(to ?? 0).getTime() - new Date(from ?? 0).getTime()) / 1000;

/** The Deployment's generation, template resources and ReplicaSets, to compare before and after. */
async function written(ns: string) {
  const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: "web" });
  const replicaSets = (await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: "app=web" })).items.map((r) => r.metadata?.name);
  return { generation: deployment.metadata?.generation, resources: JSON.parse(JSON.stringify(deployment.spec?.template.spec?.containers[0]?.resources)) as unknown, replicaSets };
}

/** memory-scaler's FixedHeap Warnings in `ns`, once there are some on both the Deployment and the AppMonitor. */
function fixedHeapWarnings(ns: string): Promise<k8s.EventsV1Event[]> {
  return waitFor("the FixedHeap Warnings", async () => {
    const on = async (kind: string, name: string) => (await eventsRegarding(ns, kind, name)).filter((e) => e.reason === "FixedHeap" && e.type === "Warning");
    const [deployment, appMonitor] = [await on("Deployment", "web"), await on("AppMonitor", "m")];
    return deployment.length > 0 && appMonitor.length > 0 ? [...deployment, ...appMonitor] : undefined;
  }, 10_000);
}

const FLAG = /heap is fixed by --max-old-space-size=64 in command\[1\] \(64\), within its memory limit 512Mi/;
const NOT_OOM = /its last run ended in exit code 134 \(Error\), an in-process heap failure, not an OOM kill/;

test("Node.js with --max-old-space-size=64 under 512Mi dies of a V8 heap error (exit code 134, reason Error, not OOMKilled): a threshold alert and an OOM-kill alert are not scaled, FixedHeap naming the flag and the heap failure", { timeout: 300_000 }, async (t) => {
  const ns = NAMESPACES[0];
  await heapNamespace(ns);
  const { pod, terminated, restartCount } = await crashed(t, heapDeployment(ns, true));
  t.diagnostic(`Pod start → heap failure: ${seconds(pod.status?.startTime, terminated.finishedAt).toFixed(0)} s (container ran ${seconds(terminated.startedAt, terminated.finishedAt).toFixed(0)} s; whole seconds, as the kubelet reports them); exit code ${terminated.exitCode}, reason ${terminated.reason}, restartCount ${restartCount}`);
  assert.equal(terminated.exitCode, 134, JSON.stringify(terminated));
  assert.equal(terminated.reason, "Error");
  assert.notEqual(terminated.reason, "OOMKilled");
  assert.ok(restartCount >= 1);
  const before_ = await written(ns);
  assert.equal(before_.replicaSets.length, 1);

  for (const alertname of ["AppMonitorMemoryHigh", "AppMonitorOOMKilled"]) {
    const answer = await deliver(scaler?.url ?? "", alertEvent({ namespace: ns, pod: pod.metadata?.name ?? "", container: "app", appmonitor: "m", alertname }));
    t.diagnostic(`${alertname}: ${describeAnswer(answer)}`);
    assert.equal(answer.status, 204, describeAnswer(answer));
    assert.deepEqual([answer.outcome, answer.reason], ["skipped", "FixedHeap"], describeAnswer(answer));
  }
  assert.deepEqual(await written(ns), before_, "no patch, no new ReplicaSet");
  // One FixedHeap pair per workload per cooldown window; HeapFailure is written only beside a raise.
  const warnings = await fixedHeapWarnings(ns);
  t.diagnostic(`FixedHeap Warning: ${warnings[0]?.note}`);
  for (const warning of warnings) {
    assert.match(warning.note ?? "", FLAG);
    assert.match(warning.note ?? "", NOT_OOM);
  }
  const reasons = [...(await eventsRegarding(ns, "Deployment", "web")), ...(await eventsRegarding(ns, "AppMonitor", "m"))].map((e) => e.reason);
  assert.deepEqual([...new Set(reasons)], ["FixedHeap"], "no other Event (no HeapFailure without a raise)");
});

test("Node.js as PID 1 of its container: V8's abort does not end it in exit code 134 (the kernel ignores PID 1's own SIGABRT), so it is still held FixedHeap by the flag, but no heap failure is named", { timeout: 300_000 }, async (t) => {
  const ns = NAMESPACES[1];
  await heapNamespace(ns);
  const { pod, terminated } = await crashed(t, heapDeployment(ns, false));
  t.diagnostic(`PID 1: Pod start → heap failure ${seconds(pod.status?.startTime, terminated.finishedAt).toFixed(0)} s; exit code ${terminated.exitCode}, reason ${terminated.reason}`);
  assert.notEqual(terminated.exitCode, 134, JSON.stringify(terminated));
  assert.equal(terminated.reason, "Error");
  const before_ = await written(ns);
  const answer = await deliver(scaler?.url ?? "", alertEvent({ namespace: ns, pod: pod.metadata?.name ?? "", container: "app", appmonitor: "m" }));
  assert.equal(answer.status, 204, describeAnswer(answer));
  assert.deepEqual([answer.outcome, answer.reason], ["skipped", "FixedHeap"], describeAnswer(answer));
  assert.deepEqual(await written(ns), before_, "no patch, no new ReplicaSet");
  const warnings = await fixedHeapWarnings(ns);
  t.diagnostic(`FixedHeap Warning: ${warnings[0]?.note}`);
  for (const warning of warnings) {
    assert.match(warning.note ?? "", FLAG);
    assert.doesNotMatch(warning.note ?? "", /exit code/, "memory-scaler reads only exit code 134 as a heap failure");
  }
});
