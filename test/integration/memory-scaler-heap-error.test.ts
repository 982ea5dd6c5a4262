/**
 * memory-scaler on a heap-error event (alertname AppMonitorHeapError, trigger heapError) on the
 * local stack, with a token of exactly its ServiceAccount: a Deployment's kwok Pod whose status is
 * patched as the kubelet reports a runtime's heap error (reason Error, the exit code, the log's
 * tail as the termination message). A Node.js heap error scales once, the heap set in the same
 * patch (`NODE_OPTIONS` appended, recorded as memory-scaler's own); the JVM's gets
 * `-XX:MaxRAMPercentage=75` appended to the `JAVA_TOOL_OPTIONS` it had; a segfault, an ordinary
 * error exit and an empty message scale nothing; under `InPlace` and `InPlaceOrRollout` the heap
 * error is rolled out too, never resized, with `InPlaceFallback` Warnings naming the runtime. A
 * runtime declared in `spec.containerPolicies` gets its heap setting with any raise (an OOM kill
 * here), rolled out under `InPlace` and `InPlaceOrRollout`.
 * Prometheus is never asked (nothing listens at its URL: asking would answer 503).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, deliver, eventsRegarding, monitoredDeployment, scalerForSuite } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

const NODE_TAIL = `[1:0x6a1c000]    61471 ms: Mark-Compact (reduce) 256.0 (259.5) -> 255.9 (259.5) MB, pooled: 0 MB, 257.19 / 0.00 ms  (average mu = 0.091, current mu = 0.003) allocation failure; GC in old space requested

<--- JS stacktrace --->

FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
----- Native stack trace -----`;
const JVM_TAIL = 'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n\tat Hog.main(Hog.java:12)';

/** Writes, as the admin, the memhog container's status as the kubelet reports it after an error exit 30 s ago with `message` (`OOMKilled`, 137: an OOM kill). */
async function reportErrorExit(ns: string, name: string, exitCode: number, message: string | undefined, reason = "Error"): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  const pod = await core.readNamespacedPod({ name, namespace: ns });
  const finishedAt = new Date(Date.now() - 30_000);
  pod.status = {
    ...pod.status,
    containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({
      ...s,
      restartCount: s.restartCount + 1,
      state: { running: { startedAt: finishedAt } },
      lastState: { terminated: { reason, exitCode, startedAt: new Date(finishedAt.getTime() - 60_000), finishedAt, ...(message === undefined ? {} : { message }) } },
    })),
  };
  await core.replaceNamespacedPodStatus({ name, namespace: ns, body: pod });
}

async function readWeb(ns: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "web", namespace: ns });
}

const heapEvent = (ns: string, pod: string) => alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m", alertname: "AppMonitorHeapError" });

describe("memory-scaler on a heap-error event", { concurrency: 4 }, () => {
  // Nothing listens on port 1: a heap-error event that asked Prometheus would be answered 503.
  const running = scalerForSuite({ PROMETHEUS_URL: "http://127.0.0.1:1" });

  it("Node.js's heap error (139, its message): one scale, NODE_OPTIONS appended in the same patch and named in the Event", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, {}, { env: [{ name: "NODE_OPTIONS", value: "--enable-source-maps" }] });
    await reportErrorExit(ns, pod, 139, NODE_TAIL);
    const event = heapEvent(ns, pod);
    assert.equal(event.data?.trigger, "heapError");
    const answer = await deliver(running().url, event);
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));

    const web = await readWeb(ns);
    const memhog = web.spec?.template.spec?.containers[0];
    assert.deepEqual(JSON.parse(JSON.stringify(memhog?.resources)), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    // 75 % of 768Mi: 576 MiB.
    assert.deepEqual(JSON.parse(JSON.stringify(memhog?.env)), [{ name: "NODE_OPTIONS", value: "--enable-source-maps --max-old-space-size=576" }]);
    assert.equal(web.metadata?.annotations?.["app-monitor.kubedemo.com/heap-settings"], '{"memhog":"--max-old-space-size=576"}');
    assert.equal(web.metadata?.generation, 2, "one patch");
    const scaled = (await eventsRegarding(ns, "Deployment", "web")).find((e) => e.reason === "Scaled");
    assert.match(scaled?.note ?? "", /^scaled Deployment web by 2 after a heap error: memhog: limit 384Mi → 768Mi.*; the heap set with the limits, as the runtime sizes it only when it starts: container memhog: NODE_OPTIONS \+= --max-old-space-size=576$/);

    const again = await deliver(running().url, heapEvent(ns, pod));
    assert.equal(again.outcome, "skipped", describeAnswer(again));
    assert.equal((await readWeb(ns)).metadata?.generation, 2, "answered once");
  });

  it("the JVM's OutOfMemoryError (1): -XX:MaxRAMPercentage=75 appended to its JAVA_TOOL_OPTIONS", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, {}, { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Dfile.encoding=UTF-8" }] });
    await reportErrorExit(ns, pod, 1, JVM_TAIL);
    const answer = await deliver(running().url, heapEvent(ns, pod));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const web = await readWeb(ns);
    assert.equal(web.spec?.template.spec?.containers[0]?.env?.[0]?.value, "-Dfile.encoding=UTF-8 -XX:MaxRAMPercentage=75");
    assert.equal(web.metadata?.annotations?.["app-monitor.kubedemo.com/heap-settings"], undefined, "a share follows the limit: nothing to own");
  });

  it("a segfault (139), an ordinary error (1): NotHeapError; no message: NoTerminationMessage Warnings naming the policy; nothing patched", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    await reportErrorExit(ns, pod, 139, "Segmentation fault (core dumped)");
    const segfault = await deliver(running().url, heapEvent(ns, pod));
    assert.deepEqual([segfault.outcome, segfault.reason], ["skipped", "NotHeapError"], describeAnswer(segfault));
    await reportErrorExit(ns, pod, 1, "Error: config file /etc/app.yaml missing");
    const ordinary = await deliver(running().url, heapEvent(ns, pod));
    assert.deepEqual([ordinary.outcome, ordinary.reason], ["skipped", "NotHeapError"], describeAnswer(ordinary));
    await reportErrorExit(ns, pod, 139, undefined);
    const silent = await deliver(running().url, heapEvent(ns, pod));
    assert.deepEqual([silent.outcome, silent.reason], ["skipped", "NoTerminationMessage"], describeAnswer(silent));
    const warnings = await waitFor("the NoTerminationMessage Warnings", async () => {
      const both = [...(await eventsRegarding(ns, "Deployment", "web")), ...(await eventsRegarding(ns, "AppMonitor", "m"))].filter((e) => e.reason === "NoTerminationMessage");
      return both.length === 2 ? both : undefined;
    }, 10_000);
    for (const w of warnings) assert.match(w.note ?? "", /terminationMessagePolicy: FallbackToLogsOnError/);
    assert.equal((await readWeb(ns)).metadata?.generation, 1);
  });

  it("InPlace and InPlaceOrRollout: rolled out with the heap, never resized, InPlaceFallback Warnings naming the runtime and why", async (t) => {
    for (const updateMode of ["InPlace", "InPlaceOrRollout"]) {
      const ns = await freshNamespace(t);
      const pod = await monitoredDeployment(ns, { updateMode });
      await reportErrorExit(ns, pod, 139, NODE_TAIL);
      const rolled = await deliver(running().url, heapEvent(ns, pod));
      assert.deepEqual([rolled.outcome, rolled.reason], ["scaled", "Scaled"], `${updateMode}: ${describeAnswer(rolled)}`);
      const web = await readWeb(ns);
      const memhog = web.spec?.template.spec?.containers[0];
      assert.equal(memhog?.resources?.limits?.memory, "768Mi");
      assert.deepEqual(JSON.parse(JSON.stringify(memhog?.env)), [{ name: "NODE_OPTIONS", value: "--max-old-space-size=576" }]);
      assert.equal(web.metadata?.annotations?.["app-monitor.kubedemo.com/in-place-memory"], undefined, "no in-place record: the template carries the raise");
      const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
      // The rollout may already have replaced it (gone: not resized either).
      const current = await core.readNamespacedPod({ name: pod, namespace: ns }).catch((error: { code?: number }) => (error.code === 404 ? undefined : Promise.reject(error)));
      assert.ok(current === undefined || current.spec?.containers[0]?.resources?.limits?.memory === "384Mi", "the running Pod not resized");
      const fallbacks = await waitFor("the InPlaceFallback Warnings", async () => {
        const both = [...(await eventsRegarding(ns, "Deployment", "web")), ...(await eventsRegarding(ns, "AppMonitor", "m"))].filter((e) => e.reason === "InPlaceFallback");
        return both.length === 2 ? both : undefined;
      }, 10_000);
      for (const w of fallbacks) {
        assert.equal(w.type, "Warning");
        assert.match(w.note ?? "", /resizing in place cannot reach Node\.js's heap, sized when it starts \(container memhog\); wrote the template instead, so the Pods are replaced/);
      }
      const events = [...(await eventsRegarding(ns, "Deployment", "web")), ...(await eventsRegarding(ns, "AppMonitor", "m"))];
      assert.ok(!events.some((e) => e.reason === "Resized"), "never reported Resized");
      const again = await deliver(running().url, heapEvent(ns, pod));
      assert.equal(again.outcome, "skipped", describeAnswer(again));
      assert.equal((await readWeb(ns)).metadata?.generation, 2, "answered once");
    }
  });

  const declared = [
    { updateMode: "InPlaceOrRollout", runtime: "Node.js", env: ["NODE_OPTIONS", "--max-old-space-size=576"] },
    { updateMode: "InPlace", runtime: "JVM", env: ["JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=75"] },
  ] as const;
  for (const c of declared) {
    it(`${c.runtime} declared in spec.containerPolicies, OOM-killed under ${c.updateMode}: rolled out with its heap setting, not resized, InPlaceFallback naming it`, async (t) => {
      const ns = await freshNamespace(t);
      const pod = await monitoredDeployment(ns, { updateMode: c.updateMode, containerPolicies: [{ containerName: "memhog", runtime: c.runtime }] });
      await reportErrorExit(ns, pod, 137, undefined, "OOMKilled");
      const answer = await deliver(running().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m", alertname: "AppMonitorOOMKilled" }));
      assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));
      const memhog = (await readWeb(ns)).spec?.template.spec?.containers[0];
      assert.equal(memhog?.resources?.limits?.memory, "768Mi");
      assert.deepEqual(JSON.parse(JSON.stringify(memhog?.env)), [{ name: c.env[0], value: c.env[1] }]);
      const events = await waitFor("the Scaled and InPlaceFallback Events", async () => {
        const all = await eventsRegarding(ns, "Deployment", "web");
        const scaled = all.find((e) => e.reason === "Scaled");
        const fallback = all.find((e) => e.reason === "InPlaceFallback");
        return scaled !== undefined && fallback !== undefined ? { scaled, fallback } : undefined;
      }, 10_000);
      assert.match(events.scaled.note ?? "", new RegExp(`after an OOM kill: .*container memhog: ${c.env[0]} \\+= ${c.env[1]}`));
      assert.match(events.fallback.note ?? "", new RegExp(`resizing in place cannot reach ${c.runtime.replace(".", "\\.")}'s heap, sized when it starts \\(container memhog\\)`));
    });
  }
});
