// A Node.js heap error on the real node, for real, answered by a rollout that reaches the heap.
//
// One of our images (memory-scaler's, which has Node.js 24) runs a program that prints its own heap
// limit (`v8.getHeapStatistics().heap_size_limit`) and keeps live objects until it holds 400 MiB,
// under a 512Mi limit with Node.js's default heap and `terminationMessagePolicy:
// FallbackToLogsOnError`. V8 sizes its heap at about 259 MiB there, so the program dies of V8's
// heap error at about half the limit, as PID 1 (exit code 139, reason Error, no OOM kill). The
// heap-error alert (delivered as Alertmanager's would be) is answered once, `Rollout`: the limit
// doubled and `NODE_OPTIONS=--max-old-space-size=768` in the same patch; the new Pod's program
// reports a larger heap limit and runs past its old one. A second delivery scales nothing more.
//
// Its own stack with the real node (root, containerd, runc; one real node per machine, so it waits
// for the lock), memory-scaler in this process as its ServiceAccount.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { MONITOR_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { alertEvent, createAppMonitor, deliver, eventsRegarding, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { type ScalerOnRealNode, startScalerOnRealNode } from "../support/real-node-file.ts";
import { waitFor } from "../support/stack.ts";

/** Prints the heap limit V8 chose, then keeps live objects until 400 MiB are held, then holds them (and says so). */
const PROGRAM = `
const MiB = 2 ** 20;
console.log("heap_size_limit " + (require("v8").getHeapStatistics().heap_size_limit / MiB).toFixed(1) + " MiB");
const kept = [];
const grow = () => {
  for (let i = 0; i < 5000; i++) kept.push({ s: String(Math.random()).repeat(8) });
  const used = process.memoryUsage().heapUsed / MiB;
  if (used < 400) return setTimeout(grow, 1);
  console.log("holding " + used.toFixed(0) + " MiB of heap");
  setInterval(() => kept.length, 60000);
};
grow();
`;

const NS = "heap-error";
let running: ScalerOnRealNode | undefined;
let core: k8s.CoreV1Api;
let apps: k8s.AppsV1Api;
let scaler: ScalerUnderTest | undefined;
let image = "";

before(async () => {
  running = await startScalerOnRealNode("appmonitor-heap-error-");
  ({ core, apps } = running.stack);
  ({ image, scaler } = running);
}, { timeout: 20 * 60_000 });

after(async () => {
  await running?.stop();
});

/** The Deployment `web`: the program above as PID 1, 512Mi/256Mi, Node.js's default heap, the log's tail kept as the termination message. */
function deployment(): k8s.V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" }, annotations: { [MONITOR_ANNOTATION]: "true" } },
        spec: {
          ...REAL_NODE_PLACEMENT,
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "app",
            image,
            imagePullPolicy: "Never",
            command: ["node", "-e", PROGRAM],
            terminationMessagePolicy: "FallbackToLogsOnError",
            resources: { limits: { memory: "512Mi" }, requests: { memory: "256Mi" } },
          }],
        },
      },
    },
  };
}

const heapLimit = (log: string): number | undefined => {
  const m = /heap_size_limit ([0-9.]+) MiB/.exec(log);
  return m === null ? undefined : Number(m[1]);
};

test("Node.js's default heap at 512Mi dies of V8's heap error at about half the limit; the heap-error alert is answered once by a rollout with --max-old-space-size, and the new program runs past its old heap limit", { timeout: 600_000 }, async (t) => {
  // Deleted, and waited for, when the file stops (the run's shared node stays up for the next file).
  await running?.stack.namespace(NS);
  await createAppMonitor(NS, "m", { memThresholdPercent: 75, memMultiplier: 2 });
  await apps.createNamespacedDeployment({ namespace: NS, body: deployment() });

  // The first run's end, as the kubelet reports it.
  const crashed = await waitFor("the container's heap error and restart", async () => {
    const [pod] = (await core.listNamespacedPod({ namespace: NS, labelSelector: "app=web" })).items;
    const status = pod?.status?.containerStatuses?.[0];
    const terminated = status?.lastState?.terminated ?? status?.state?.terminated;
    return pod !== undefined && terminated !== undefined ? { pod, terminated } : undefined;
  }, 180_000, 200);
  const { pod, terminated } = crashed;
  const oldLimit = heapLimit(terminated.message ?? "");
  t.diagnostic(`first run: exit code ${terminated.exitCode}, reason ${terminated.reason}, ran ${((new Date(terminated.finishedAt ?? 0).getTime() - new Date(terminated.startedAt ?? 0).getTime()) / 1000).toFixed(0)} s; heap_size_limit ${oldLimit ?? "not in the tail"} MiB`);
  t.diagnostic(`termination message (tail): ${JSON.stringify((terminated.message ?? "").slice(-400))}`);
  assert.equal(terminated.reason, "Error", JSON.stringify(terminated));
  assert.match(terminated.message ?? "", /JavaScript heap out of memory/);

  const heapError = () => alertEvent({ namespace: NS, pod: pod.metadata?.name ?? "", container: "app", appmonitor: "m", alertname: "AppMonitorHeapError" });
  const answer = await deliver(scaler?.url ?? "", heapError());
  t.diagnostic(`AppMonitorHeapError: ${describeAnswer(answer)}`);
  assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));
  const scaledAt = Date.now();
  const web = await apps.readNamespacedDeployment({ namespace: NS, name: "web" });
  const app = web.spec?.template.spec?.containers[0];
  assert.equal(app?.resources?.limits?.memory, "1Gi");
  assert.deepEqual(JSON.parse(JSON.stringify(app?.env)), [{ name: "NODE_OPTIONS", value: "--max-old-space-size=768" }]);
  const scaled = (await eventsRegarding(NS, "Deployment", "web")).find((e) => e.reason === "Scaled");
  t.diagnostic(`Scaled: ${scaled?.note}`);

  // The new Pod's program, in its own words.
  const ran = await waitFor("the new program holding 400 MiB of heap", async () => {
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: "app=web" })).items.filter((p) => p.metadata?.name !== pod.metadata?.name && p.metadata?.deletionTimestamp === undefined);
    const next = pods[0];
    if (next?.metadata?.name === undefined || next.status?.phase !== "Running") return undefined;
    const log = await core.readNamespacedPodLog({ namespace: NS, name: next.metadata.name, container: "app" }).catch(() => "");
    return /holding [0-9]+ MiB of heap/.test(log) ? { next, log } : undefined;
  }, 300_000, 500);
  const newLimit = heapLimit(ran.log);
  const heldAt = Date.now();
  const firstError = new Date(terminated.finishedAt ?? 0).getTime();
  t.diagnostic(`new program: ${ran.log.trim().split("\n").join(" | ")}; heap_size_limit ${oldLimit ?? "?"} → ${newLimit ?? "?"} MiB`);
  t.diagnostic(`heap error (finishedAt, whole seconds) → scaled: ${((scaledAt - firstError) / 1000).toFixed(1)} s (the alert delivered by hand here); scaled → new program past its old heap: ${((heldAt - scaledAt) / 1000).toFixed(1)} s`);
  assert.ok(newLimit !== undefined && newLimit > 700, `the new heap limit: ${newLimit}`);
  assert.equal(ran.next.status?.containerStatuses?.[0]?.restartCount, 0, "not crashing again");
  if (oldLimit !== undefined) assert.ok(newLimit > oldLimit + 400, `${oldLimit} → ${newLimit}`);

  const again = await deliver(scaler?.url ?? "", heapError());
  assert.equal(again.outcome, "skipped", describeAnswer(again));
  assert.equal((await apps.readNamespacedDeployment({ namespace: NS, name: "web" })).metadata?.generation, 2, "one scale");
});
