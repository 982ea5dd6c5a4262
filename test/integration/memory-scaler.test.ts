/**
 * memory-scaler on the local stack, running with a token of exactly its ServiceAccount
 * (knative/rbac/memory-scaler.yaml): the original demo's objects scaled once, 50 concurrent
 * deliveries of one event, and the HTTP contract (types, malformed events, batches, probes,
 * metrics). The other workload cases are in memory-scaler-cases.test.ts, outages in
 * memory-scaler-outage.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import fc from "fast-check";
import { describeAnswer } from "../support/post-event.ts";
import { scrape } from "../support/prometheus-text.ts";
import {
  alertEvent,
  appMonitorStatus,
  deliver,
  eventsRegarding,
  originalDemo,
  scalerForSuite,
} from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";


async function readMemhog(ns: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "memhog", namespace: ns });
}

/** The first container's resources as plain JSON (the client returns class instances). */
function memoryOf(deployment: k8s.V1Deployment): unknown {
  return JSON.parse(JSON.stringify(deployment.spec?.template.spec?.containers[0]?.resources ?? null));
}

describe("memory-scaler with the original demo", () => {
  const scaler = scalerForSuite();

  it("is ready once the API server answers and the CRD exists", async () => {
    const response = await fetch(`${scaler().url}/health/readiness`);
    assert.equal(response.status, 200, await response.text());
  });

  it("one firing event scales memhog to 768Mi/512Mi: new Pod Running, old gone, Events, status", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await originalDemo(ns);
    const before = await readMemhog(ns);
    assert.deepEqual(memoryOf(before), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });

    const fired = alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "mymonitor" });
    const answer = await deliver(scaler().url, fired);
    assert.equal(answer.status, 204, describeAnswer(answer));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    assert.equal(answer.reason, "Scaled");
    assert.equal(answer.text, "", "no body: a Broker fails a reply body that is not a CloudEvent");

    const after = await readMemhog(ns);
    assert.deepEqual(memoryOf(after), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.equal(after.metadata?.generation, (before.metadata?.generation ?? 0) + 1, "exactly one change of the spec");
    assert.match(after.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"] ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const next = await waitFor("a new memhog Pod Running and the old one gone", async () => {
      const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
      const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: "name=memhog" })).items;
      const running = pods.filter((p) => p.status?.phase === "Running");
      return pods.length === 1 && running.length === 1 && running[0]?.metadata?.uid !== pod.metadata.uid ? running[0] : undefined;
    }, 60_000);
    assert.deepEqual(JSON.parse(JSON.stringify(next.spec?.containers[0]?.resources)), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });

    // memhog has one replica: the rollout replaced its only Pod, which a PodsReplaced Warning says.
    const onDeployment = await eventsRegarding(ns, "Deployment", "memhog");
    assert.deepEqual(onDeployment.map((e) => [e.type, e.reason]).sort(), [["Normal", "Scaled"], ["Warning", "PodsReplaced"]]);
    const scaledEvent = onDeployment.find((e) => e.reason === "Scaled");
    assert.match(scaledEvent?.note ?? "", /memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi/);
    assert.equal(scaledEvent?.related?.kind, "AppMonitor");
    const onMonitor = await eventsRegarding(ns, "AppMonitor", "mymonitor");
    assert.deepEqual(onMonitor.map((e) => e.reason).sort(), ["PodsReplaced", "Scaled"]);

    const status = await appMonitorStatus(ns, "mymonitor");
    assert.equal(status.scaleCount, 1);
    assert.equal(status.lastScaleTime, after.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"]);
    assert.deepEqual(status.recentScales, [
      { time: status.lastScaleTime, workload: { kind: "Deployment", name: "memhog" }, event: fired.id, container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } },
    ]);
  });

  it("50 concurrent deliveries of one event scale exactly once (768Mi, never 1536Mi): one handling, 49 copies given its answer; after the rollout, a copy gets it again and a new event changes nothing", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await originalDemo(ns);
    const scalesBefore = await scrape(`${scaler().url}/metrics`, "appmonitor_memory_scaler_scales_total");
    const event = alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "mymonitor" });

    const duplicates = () => scrape(`${scaler().url}/metrics`, "appmonitor_memory_scaler_events_total", { type: "firing", outcome: "duplicate", reason: "Scaled" });
    const duplicatesBefore = await duplicates();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => deliver(scaler().url, event, i % 2 === 0 ? "binary" : "structured")));
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [204], JSON.stringify(answers.filter((a) => a.status !== 204).map((a) => a.body)));
    // One delivery was handled; the copies (same source and id) waited for its answer or got it remembered, reading nothing.
    assert.deepEqual([...new Set(answers.map((a) => `${a.outcome}/${a.reason}`))], ["scaled/Scaled"], JSON.stringify(answers.map((a) => a.reason)));
    assert.equal(await duplicates() - duplicatesBefore, 49, "49 copies counted as duplicates, not as scales");

    const deployment = await readMemhog(ns);
    assert.deepEqual(memoryOf(deployment), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.equal(deployment.metadata?.generation, 2, "created at generation 1, one spec change");
    assert.equal(await scrape(`${scaler().url}/metrics`, "appmonitor_memory_scaler_scales_total") - scalesBefore, 1);
    assert.equal((await eventsRegarding(ns, "Deployment", "memhog")).length, 2, "one Event per reason (Scaled, PodsReplaced), not one per delivery");
    assert.equal((await appMonitorStatus(ns, "mymonitor")).scaleCount, 1);

    await waitFor("the rollout to finish", async () => {
      const d = await readMemhog(ns);
      return d.status?.updatedReplicas === 1 && d.status.replicas === 1 && d.status.availableReplicas === 1 && d.status.observedGeneration === 2;
    }, 120_000);
    const again = await deliver(scaler().url, event);
    assert.deepEqual([again.status, again.outcome, again.reason], [204, "scaled", "Scaled"], "a copy gets the event's answer");
    assert.equal(await duplicates() - duplicatesBefore, 50);
    // A new event (another id) for the scaled workload reads again and decides: nothing to do.
    const fresh = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "mymonitor" }));
    assert.equal(fresh.status, 204);
    assert.equal(fresh.outcome, "skipped", describeAnswer(fresh));
    const later = await readMemhog(ns);
    assert.equal(later.metadata?.generation, 2);
    assert.deepEqual(memoryOf(later), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
  });

  it("a resolved event is acknowledged and changes nothing", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await originalDemo(ns);
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", status: "resolved" }), "structured");
    assert.equal(answer.status, 204);
    assert.equal(answer.outcome, "ignored");
    assert.equal(answer.reason, "Resolved");
    assert.equal((await readMemhog(ns)).metadata?.generation, 1);
  });

  it("refuses other event types, malformed data and batches with 4xx and an error list", async () => {
    const good = alertEvent({ namespace: "default", pod: "p" });
    const otherType = await deliver(scaler().url, good.cloneWith({ type: "com.example.other" }));
    assert.equal(otherType.status, 400);
    assert.ok(Array.isArray(otherType.body.details));

    const badData = await deliver(scaler().url, good.cloneWith({ data: { namespace: "Not_A_Namespace" } }, false));
    assert.equal(badData.status, 400);
    assert.ok(Array.isArray(badData.body.details) && badData.body.details.length > 0);

    const notAnEvent = await fetch(`${scaler().url}/`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(notAnEvent.status, 400);

    const batch = await fetch(`${scaler().url}/`, {
      method: "POST",
      headers: { "content-type": "application/cloudevents-batch+json" },
      body: JSON.stringify([good.toJSON(), good.toJSON()]),
    });
    assert.equal(batch.status, 415);

    const tooLarge = await fetch(`${scaler().url}/`, { method: "POST", headers: { "content-type": "application/cloudevents+json" }, body: "x".repeat(1024 * 1024 + 1) });
    assert.equal(tooLarge.status, 413);

    // Still serving after all that.
    assert.equal((await fetch(`${scaler().url}/health/liveness`)).status, 200);
    const invalid = await scrape(`${scaler().url}/metrics`, "appmonitor_memory_scaler_events_total", { outcome: "invalid" });
    assert.ok(invalid >= 2, `invalid events counted: ${invalid}`);
  });

  it("hostile input never crashes it: any data, any headers → 4xx or a handled 204", async () => {
    const base = alertEvent({ namespace: "default", pod: "p" });
    const json = fc.oneof(fc.jsonValue(), fc.object(), fc.record({ namespace: fc.string(), pod: fc.string(), status: fc.constantFrom("firing", "resolved", "other") }));
    await fc.assert(
      fc.asyncProperty(json, fc.constantFrom("binary", "structured") as fc.Arbitrary<"binary" | "structured">, async (data, mode) => {
        const answer = await deliver(scaler().url, base.cloneWith({ data }, false), mode);
        assert.ok(answer.status === 400 || answer.status === 204, `${answer.status} ${JSON.stringify(answer.body)} for ${JSON.stringify(data)}`);
      }),
      { numRuns: 150 },
    );
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom("content-type", "ce-id", "ce-type", "ce-source", "ce-specversion", "ce-subject"), fc.stringMatching(/^[\x20-\x7e]*$/)), fc.string(), async (headers, body) => {
        const response = await fetch(`${scaler().url}/`, { method: "POST", headers, body });
        assert.ok(response.status >= 400 && response.status < 500, `${response.status} for ${JSON.stringify(headers)}`);
      }),
      { numRuns: 150 },
    );
    assert.equal((await fetch(`${scaler().url}/health/liveness`)).status, 200);
  });

  it("exports events by outcome, scales and a latency histogram", async () => {
    const metrics = `${scaler().url}/metrics`;
    assert.ok((await scrape(metrics, "appmonitor_memory_scaler_events_total", { type: "firing", outcome: "scaled", reason: "Scaled" })) >= 2);
    assert.ok((await scrape(metrics, "appmonitor_memory_scaler_events_total", { type: "resolved", outcome: "ignored" })) >= 1);
    assert.ok((await scrape(metrics, "appmonitor_memory_scaler_scales_total", { kind: "Deployment", function: "memory-scaler" })) >= 2);
    assert.ok((await scrape(metrics, "appmonitor_memory_scaler_event_duration_seconds_count", { outcome: "scaled" })) >= 2);
  });
});
