// Heap errors on the real node, for real, answered by a rollout that reaches the heap: Node.js 24
// (memory-scaler's image) and OpenJDK 17 (Debian's, `npm run image openjdk`), each with its
// runtime's default heap settings and `terminationMessagePolicy: FallbackToLogsOnError`, each
// running a program that prints its own heap limit (V8's `heap_size_limit`, the JVM's
// `maxMemory()`) and keeps live objects until it holds more than that default heap.
//
// Each case: the program dies of its runtime's heap error well under the container's limit (no OOM
// kill, no threshold crossing); the heap-error alert (delivered as Alertmanager's would be) is
// answered once by a rollout, in `Rollout`, `InPlaceOrRollout` and `InPlace` alike (a resize cannot
// reach a heap sized at start: the in-place modes say so in `InPlaceFallback` Warnings): the limit
// doubled and the runtime's heap setting in the same patch (none for a JVM whose own
// `-XX:MaxRAMPercentage=75` follows the limit); the new Pod's program reports a larger heap limit
// and runs past its old one; a second delivery scales nothing more. And Node.js at 256Mi, whose
// default heap is larger than the limit: OOM-killed, and answered in one raise that reaches the
// heap because the AppMonitor declares the runtime (`spec.containerPolicies` `runtime`), under
// `InPlaceOrRollout` and `InPlace`. And Go (memhog, our Go program, its live data in the Go heap)
// with the user's own `GOMEMLIMIT=96MiB` under 128Mi, holding 160Mi: the soft limit cannot stop live
// data, so the kernel kills it; under `heapFlags: Scale` the raise doubles the limit and the flag
// in one patch, and the new memhog reports 192 MiB. Each case logs the time from the first run's end to the new
// program running past its old heap, and the heap limit before and after. The cases run side by
// side, each in its own namespace.
//
// The run's shared real node beside the run's other such files (real-node-alongside.ts; alone, the
// file's own), memory-scaler in this process as its ServiceAccount serving the cases' namespaces alone.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { buildImages, MEMHOG_IMAGES } from "../../scripts/images/build.ts";
import { MONITOR_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { archiveReference, importImages } from "../harness/stack/node-images.ts";
import { REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { alertEvent, createAppMonitor, deliver, eventsRegarding } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { type ScalerOnRealNode } from "../support/real-node-file.ts";
import { startScalerOnRealNodeAlongside } from "../support/real-node-alongside.ts";
import { waitFor } from "../support/stack.ts";
import { heapLimit, heldMiB, JAVA_HEAP_PROGRAM, NODE_HEAP_PROGRAM } from "../support/heap-programs.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

/** One case: a runtime with its default heap, its container's limit, the mode, and what the program holds. */
interface HeapCase {
  readonly namespace: string;
  readonly runtime: "Node.js" | "JVM" | "Go";
  readonly limitMiB: number;
  readonly updateMode: "Rollout" | "InPlaceOrRollout" | "InPlace";
  /** MiB of live objects the program keeps: past the default heap, within the raised one. */
  readonly holdMiB: number;
  /** How the first run ends: the runtime's own line in the termination message, or an OOM kill. */
  readonly error: RegExp | "OOMKilled";
  /** The runtime declared in the AppMonitor's `spec.containerPolicies` (else known only from the heap error). */
  readonly declared?: boolean;
  /** The heap setting the patch adds (env var, value); for `own`, the value the user's flag keeps. */
  readonly setting: readonly [string, string];
  /** The user's own heap flag in the manifest (env var, value). */
  readonly own?: readonly [string, string];
  /** The AppMonitor's `spec.heapFlags` (else the default, `Hold`). */
  readonly heapFlags?: "Scale";
}

const CASES: readonly HeapCase[] = [
  { namespace: "heap-node-1gi", runtime: "Node.js", limitMiB: 1024, updateMode: "Rollout", holdMiB: 700, error: /JavaScript heap out of memory/, setting: ["NODE_OPTIONS", "--max-old-space-size=1536"] },
  { namespace: "heap-node-512mi", runtime: "Node.js", limitMiB: 512, updateMode: "InPlaceOrRollout", holdMiB: 300, error: /JavaScript heap out of memory/, setting: ["NODE_OPTIONS", "--max-old-space-size=768"] },
  { namespace: "heap-jvm-1gi", runtime: "JVM", limitMiB: 1024, updateMode: "Rollout", holdMiB: 400, error: /java\.lang\.OutOfMemoryError: Java heap space/, setting: ["JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=75"] },
  // V8's default heap (259 MiB) is larger than this limit: the kernel kills first. The declared runtime makes the OOM kill's raise reach the heap.
  { namespace: "heap-node-256mi", runtime: "Node.js", limitMiB: 256, updateMode: "InPlaceOrRollout", holdMiB: 300, error: "OOMKilled", declared: true, setting: ["NODE_OPTIONS", "--max-old-space-size=384"] },
  { namespace: "heap-jvm-512mi", runtime: "JVM", limitMiB: 512, updateMode: "InPlaceOrRollout", holdMiB: 200, error: /java\.lang\.OutOfMemoryError: Java heap space/, setting: ["JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=75"] },
  // InPlace: a resize would leave the running program its heap, so these roll out too.
  { namespace: "heap-node-256mi-inplace", runtime: "Node.js", limitMiB: 256, updateMode: "InPlace", holdMiB: 300, error: "OOMKilled", declared: true, setting: ["NODE_OPTIONS", "--max-old-space-size=384"] },
  // The user's own share (384 MiB of heap at 512Mi), which follows the limit: nothing to set, the rollout alone gives it 768 MiB.
  { namespace: "heap-jvm-512mi-inplace", runtime: "JVM", limitMiB: 512, updateMode: "InPlace", holdMiB: 450, error: /java\.lang\.OutOfMemoryError: Java heap space/, own: ["JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=75"], setting: ["JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=75"] },
  // The user's GOMEMLIMIT, a soft limit under the container's: raised with it under heapFlags Scale.
  { namespace: "heap-go-128mi", runtime: "Go", limitMiB: 128, updateMode: "Rollout", holdMiB: 160, error: "OOMKilled", own: ["GOMEMLIMIT", "96MiB"], heapFlags: "Scale", setting: ["GOMEMLIMIT", "192MiB"] },
];

let running: ScalerOnRealNode | undefined;
let core: k8s.CoreV1Api;
let apps: k8s.AppsV1Api;
let jvmImage = "";

before(async () => {
  const [openjdk] = await buildImages(["openjdk"]);
  if (openjdk === undefined) throw new Error("OpenJDK's image was not built");
  running = await startScalerOnRealNodeAlongside("appmonitor-heap-error-", CASES.map((c) => c.namespace));
  ({ core, apps } = running.stack);
  if (running.stack.state.realNode === undefined) throw new Error("the stack has no real node");
  await importImages(running.stack.state.realNode, [openjdk.archive]);
  jvmImage = await archiveReference(openjdk.archive);
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  await running?.stop();
});

/** The Deployment `web` of a case: the program as PID 1, its limit (request half of it), the runtime's default heap, the log's tail kept as the termination message. */
function deployment(c: HeapCase): k8s.V1Deployment {
  const app: k8s.V1Container = {
    name: "app",
    imagePullPolicy: "Never",
    env: [
      ...(c.runtime === "Go" ? [{ name: "MEMHOG_TARGET", value: `${c.holdMiB}Mi` }] : [{ name: "HOLD_MIB", value: String(c.holdMiB) }]),
      ...(c.own === undefined ? [] : [{ name: c.own[0], value: c.own[1] }]),
    ],
    terminationMessagePolicy: "FallbackToLogsOnError",
    resources: { limits: { memory: `${c.limitMiB}Mi` }, requests: { memory: `${c.limitMiB / 2}Mi` } },
    ...(c.runtime === "Node.js"
      ? { image: running?.image ?? "", command: ["node", "-e", NODE_HEAP_PROGRAM] }
      : c.runtime === "Go"
        // The stack's registry serves memhog's image; the real node pulls it through its mirror.
        ? { image: MEMHOG_IMAGES[1], imagePullPolicy: "IfNotPresent" }
        : { image: jvmImage, args: ["/program/Grow.java"], volumeMounts: [{ name: "program", mountPath: "/program", readOnly: true }] }),
  };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: c.namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" }, annotations: { [MONITOR_ANNOTATION]: "true" } },
        spec: {
          ...REAL_NODE_PLACEMENT,
          terminationGracePeriodSeconds: 1,
          containers: [app],
          ...(c.runtime === "JVM" ? { volumes: [{ name: "program", configMap: { name: "program" } }] } : {}),
        },
      },
    },
  };
}

describe("a runtime's heap runs out (or, larger than the limit, is OOM-killed first); the alert is answered once by a rollout with the runtime's heap setting, in every updateMode, and the new program runs past its old heap limit", { concurrency: true }, () => {
  for (const c of CASES) {
    test(`${c.runtime}, ${c.limitMiB}Mi, ${c.updateMode}`, { timeout: 600_000 }, async (t) => {
      const ns = c.namespace;
      // Deleted, and waited for, when the file stops (the run's shared node stays up for the next file).
      await running?.stack.namespace(ns);
      if (c.runtime === "JVM") await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "program" }, data: { "Grow.java": JAVA_HEAP_PROGRAM } } });
      const declared = c.declared === true ? { containerPolicies: [{ containerName: "app", runtime: c.runtime }] } : {};
      await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, updateMode: c.updateMode, ...declared, ...(c.heapFlags === undefined ? {} : { heapFlags: c.heapFlags }) });
      await apps.createNamespacedDeployment({ namespace: ns, body: deployment(c) });

      // The first run's end, as the kubelet reports it.
      const { pod, terminated } = await waitFor("the container's heap error and restart", async () => {
        const [p] = (await core.listNamespacedPod({ namespace: ns, labelSelector: "app=web" })).items;
        const status = p?.status?.containerStatuses?.[0];
        const end = status?.lastState?.terminated ?? status?.state?.terminated;
        return p !== undefined && end !== undefined ? { pod: p, terminated: end } : undefined;
      }, 240_000, 200);
      const oldLimit = heapLimit(terminated.message ?? "");
      t.diagnostic(`first run: exit code ${terminated.exitCode}, reason ${terminated.reason}, ran ${((new Date(terminated.finishedAt ?? 0).getTime() - new Date(terminated.startedAt ?? 0).getTime()) / 1000).toFixed(0)} s; heap limit ${oldLimit ?? "not in the tail"} MiB of a ${c.limitMiB} MiB container`);
      t.diagnostic(`termination message (tail): ${JSON.stringify((terminated.message ?? "").slice(-300))}`);
      if (c.error === "OOMKilled") {
        assert.equal(terminated.reason, "OOMKilled", JSON.stringify(terminated));
      } else {
        assert.equal(terminated.reason, "Error", JSON.stringify(terminated));
        assert.match(terminated.message ?? "", c.error);
      }

      const alertname = c.error === "OOMKilled" ? "AppMonitorOOMKilled" : "AppMonitorHeapError";
      const heapError = () => alertEvent({ namespace: ns, pod: pod.metadata?.name ?? "", container: "app", appmonitor: "m", alertname });
      const answer = await deliver(running?.scaler.url ?? "", heapError());
      t.diagnostic(`${alertname}: ${describeAnswer(answer)}`);
      assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));
      const scaledAt = Date.now();
      const web = await apps.readNamespacedDeployment({ namespace: ns, name: "web" });
      const app = web.spec?.template.spec?.containers[0];
      assert.equal(app?.resources?.limits?.memory, `${(c.limitMiB * 2) % 1024 === 0 ? `${(c.limitMiB * 2) / 1024}Gi` : `${c.limitMiB * 2}Mi`}`);
      assert.deepEqual(app?.env?.find((e) => e.name === c.setting[0])?.value, c.setting[1]);
      const events = await eventsRegarding(ns, "Deployment", "web");
      t.diagnostic(`Scaled: ${events.find((e) => e.reason === "Scaled")?.note}`);
      assert.ok(!events.some((e) => e.reason === "Resized"), "never Resized");
      if (c.updateMode !== "Rollout") {
        // The in-place modes say why they rolled out: the runtime, and that its heap is sized at start.
        const fallback = events.find((e) => e.reason === "InPlaceFallback");
        t.diagnostic(`InPlaceFallback: ${fallback?.note}`);
        assert.match(fallback?.note ?? "", new RegExp(`resizing in place cannot reach ${c.runtime.replace(".", "\\.")}'s heap, sized when it starts`));
      }

      // The new Pod's program, in its own words.
      const ran = await waitFor("the new program holding its live objects", async () => {
        const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: "app=web" })).items.filter((p) => p.metadata?.name !== pod.metadata?.name && p.metadata?.deletionTimestamp === undefined);
        const next = pods[0];
        if (next?.metadata?.name === undefined || next.status?.phase !== "Running") return undefined;
        const log = await core.readNamespacedPodLog({ namespace: ns, name: next.metadata.name, container: "app" }).catch(() => "");
        return (heldMiB(log) ?? 0) >= c.holdMiB ? { next, log } : undefined;
      }, 300_000, 500);
      const newLimit = heapLimit(ran.log);
      const heldAt = Date.now();
      const firstError = new Date(terminated.finishedAt ?? 0).getTime();
      t.diagnostic(`new program: ${ran.log.trim().split("\n").join(" | ")}; heap limit ${oldLimit ?? "?"} → ${newLimit ?? "?"} MiB`);
      t.diagnostic(`${c.error === "OOMKilled" ? "OOM kill" : "heap error"} (finishedAt, whole seconds) → scaled: ${((scaledAt - firstError) / 1000).toFixed(1)} s (the alert delivered by hand here); scaled → new program past its old heap: ${((heldAt - scaledAt) / 1000).toFixed(1)} s`);
      t.diagnostic(`relief: ${c.updateMode}, ${c.runtime} ${c.limitMiB}Mi: ${c.error === "OOMKilled" ? "OOM kill" : "heap error"} → the program running past its old heap with the larger one: ${((heldAt - firstError) / 1000).toFixed(1)} s; heap limit ${oldLimit ?? "?"} → ${newLimit ?? "?"} MiB`);
      assert.ok(newLimit !== undefined && newLimit > c.holdMiB, `the new heap limit ${newLimit} MiB holds the program's ${c.holdMiB} MiB`);
      assert.ok(oldLimit === undefined || oldLimit < c.holdMiB, `the old heap limit ${oldLimit} MiB did not`);
      assert.equal(ran.next.status?.containerStatuses?.[0]?.restartCount, 0, "not crashing again");
      assert.ok((heldMiB(ran.log) ?? 0) >= c.holdMiB, ran.log);

      const again = await deliver(running?.scaler.url ?? "", heapError());
      assert.equal(again.outcome, "skipped", describeAnswer(again));
      assert.equal((await apps.readNamespacedDeployment({ namespace: ns, name: "web" })).metadata?.generation, 2, "one scale");
    });
  }
});
