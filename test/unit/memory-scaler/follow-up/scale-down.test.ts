// The down-step end to end in memory: the original demo raised by an alert, its rollout done, and
// the follow-up's tick (the shipped path: followRollouts → the scale flow's handleScaleDown) a day
// later lowering it back to 384Mi/256Mi, refusing a peak near the threshold, recording a DryRun,
// holding a GitOps-managed workload with the manifest value, and costing nothing without scaleDown.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { LAST_SCALE_RECORD_ANNOTATION } from "../../../../functions/lib/appmonitor.ts";
import { createEventRecorder } from "../../../../functions/memory-scaler/kube/event-recorder.ts";
import { createStatusWriter } from "../../../../functions/memory-scaler/kube/status-writer.ts";
import { followRollouts } from "../../../../functions/memory-scaler/follow-up/flow.ts";
import { dueWorkloads } from "../../../../functions/memory-scaler/follow-up/scale-down.ts";
import type { FollowDeps } from "../../../../functions/memory-scaler/follow-up/deps.ts";
import { handleFiring, handleScaleDown } from "../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, FakeCluster, fakeVerifier, flowDeps, memhogCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });
const MI = 1024 * 1024;
const DAY_LATER = new Date("2025-06-02T12:01:00Z");

/** The original demo with `spec`, raised by one alert, its Pod then running the raised template (the rollout done). */
async function raisedDemo(spec: Record<string, unknown>): Promise<FakeCluster> {
  const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, ...spec });
  const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
  if (deployment?.spec === undefined) throw new Error("no Deployment");
  deployment.spec.selector = { matchLabels: { name: "memhog" } };
  const raised = await handleFiring(flowDeps(cluster, { verifier: fakeVerifier({ workingSets: new Map([["memhog", 320 * MI]]) }) }), "e1", alertData(), silent);
  assert.equal(raised.reason, "Scaled");
  // The rollout: the Pod runs the new template; the follow-up ended it.
  const template = cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template;
  const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
  if (pod === undefined || template?.spec === undefined) throw new Error("no Pod");
  cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, spec: structuredClone(template.spec), status: { phase: "Running" } });
  const am = cluster.appMonitors.get(`${NS}/mymonitor`);
  if (am !== undefined) cluster.appMonitors.set(`${NS}/mymonitor`, { ...am, status: { ...(am.status as object), rollouts: [] } });
  return cluster;
}

/** The follow-up at `now`, its down-steps through the one scale flow, Prometheus answering `peak` bytes. */
function tickDeps(cluster: FakeCluster, now: Date, peak: number | undefined): FollowDeps {
  const flow = flowDeps(cluster, { now: () => now, verifier: fakeVerifier({ peaks: new Map(peak === undefined ? [] : [["memhog", peak]]) }) });
  return {
    cluster,
    events: createEventRecorder(cluster, "test"),
    status: createStatusWriter(cluster, 10, silent, { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 2 }),
    now: () => now,
    scaleDown: (request, log) => handleScaleDown(flow, request, log),
  };
}

const resources = (cluster: FakeCluster) => cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template?.spec?.containers[0]?.resources;
const status = (cluster: FakeCluster) => cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { recentScales?: Record<string, unknown>[]; lastOutcome?: { reason: string; message: string } };

describe("the follow-up's down-step (spec.scaleDown)", () => {
  it("lowers the raised demo back to 384Mi/256Mi a day later, with ScaledDown Events, a down entry and a record that says so", async () => {
    const cluster = await raisedDemo({ scaleDown: { quietPeriodSeconds: 86400, marginPercent: 10 } });
    assert.deepEqual(resources(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    // Within the quiet period: nothing.
    const early = await followRollouts(tickDeps(cluster, new Date("2025-06-01T18:00:00Z"), 120 * MI), silent);
    assert.equal(early.scaleDowns, undefined);
    const summary = await followRollouts(tickDeps(cluster, DAY_LATER, 120 * MI), silent);
    assert.deepEqual(summary.scaleDowns, { asked: 1, stepped: 1 });
    assert.deepEqual(resources(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
    const [entry] = status(cluster).recentScales ?? [];
    assert.equal(entry?.direction, "down");
    assert.equal(entry?.floored, true);
    assert.equal(status(cluster).lastOutcome?.reason, "ScaledDown");
    const record = JSON.parse(cluster.workloads.get(`Deployment/${NS}/memhog`)?.metadata?.annotations?.[LAST_SCALE_RECORD_ANNOTATION] ?? "{}") as Record<string, unknown>;
    assert.equal(record.direction, "down");
    assert.deepEqual(record.original, { memhog: { limit: "384Mi", request: "256Mi" } });
    const notes = cluster.events.filter((e) => e.reason === "ScaledDown").map((e) => `${e.regarding?.kind}: ${e.note}`);
    assert.equal(notes.length, 2, JSON.stringify(notes));
    assert.match(notes[0] ?? "", /scaled down Deployment memhog: memhog: limit 768Mi → 384Mi, request 512Mi → 256Mi/);
    // Floored: the next tick asks for nothing.
    const next = await followRollouts(tickDeps(cluster, new Date("2025-06-04T12:00:00Z"), 120 * MI), silent);
    assert.equal(next.scaleDowns, undefined);
  });

  it("does not step down a workload whose peak over the period would be near the threshold at the lower limit: PeakNearThreshold in lastOutcome, no Event", async () => {
    const cluster = await raisedDemo({ scaleDown: {} });
    const before = cluster.events.length;
    const summary = await followRollouts(tickDeps(cluster, DAY_LATER, 320 * MI), silent);
    assert.deepEqual(summary.scaleDowns, { asked: 1, stepped: 0 });
    assert.deepEqual(resources(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.equal(status(cluster).lastOutcome?.reason, "PeakNearThreshold");
    assert.match(status(cluster).lastOutcome?.message ?? "", /83\.3% of the lower limit 384Mi, above 65%/);
    assert.equal(cluster.events.length, before, "no Event");
    // Asked again only after another quiet period.
    const again = await followRollouts(tickDeps(cluster, new Date("2025-06-02T13:00:00Z"), 320 * MI), silent);
    assert.equal(again.scaleDowns, undefined);
  });

  it("DryRun records the step and changes nothing", async () => {
    const cluster = await raisedDemo({ scaleDown: {} });
    // The raise was made under Scale; the AppMonitor is now DryRun.
    const am = cluster.appMonitors.get(`${NS}/mymonitor`);
    if (am !== undefined) cluster.appMonitors.set(`${NS}/mymonitor`, { ...am, spec: { ...(am.spec as object), mode: "DryRun" } });
    const summary = await followRollouts(tickDeps(cluster, DAY_LATER, 120 * MI), silent);
    assert.deepEqual(summary.scaleDowns, { asked: 1, stepped: 1 });
    assert.deepEqual(resources(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    const [entry] = status(cluster).recentScales ?? [];
    assert.deepEqual([entry?.direction, entry?.dryRun, (entry?.to as { limit?: string } | undefined)?.limit], ["down", true, "384Mi"]);
    assert.match(cluster.events.find((e) => e.reason === "DryRun")?.note ?? "", /would scale down Deployment memhog/);
  });

  it("a raise after the down-step counts a flap: the next down-step waits twice the quiet period", async () => {
    const cluster = await raisedDemo({ scaleDown: {}, cooldownSeconds: 0 });
    await followRollouts(tickDeps(cluster, DAY_LATER, 120 * MI), silent);
    // The Pod runs the lowered template and crosses the threshold again.
    const template = cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template;
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    if (pod === undefined || template?.spec === undefined) throw new Error("no Pod");
    cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, spec: structuredClone(template.spec) });
    const again = await handleFiring(flowDeps(cluster, { now: () => new Date("2025-06-02T13:00:00Z"), verifier: fakeVerifier({ workingSets: new Map([["memhog", 320 * MI]]) }) }), "e2", alertData(), silent);
    assert.equal(again.reason, "Scaled");
    assert.deepEqual(resources(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    const record = JSON.parse(cluster.workloads.get(`Deployment/${NS}/memhog`)?.metadata?.annotations?.[LAST_SCALE_RECORD_ANNOTATION] ?? "{}") as Record<string, unknown>;
    assert.equal(record.flaps, 1);
    assert.deepEqual(record.original, { memhog: { limit: "384Mi", request: "256Mi" } });
  });

  it("costs no read beyond the list without spec.scaleDown", async () => {
    const cluster = await raisedDemo({});
    let reads = 0;
    const readWorkload = cluster.readWorkload.bind(cluster);
    cluster.readWorkload = async (...args) => {
      reads += 1;
      return readWorkload(...args);
    };
    const summary = await followRollouts(tickDeps(cluster, DAY_LATER, 120 * MI), silent);
    assert.equal(summary.scaleDowns, undefined);
    assert.equal(reads, 0);
  });
});

describe("dueWorkloads under the install's ceiling MIN_COOLDOWN_SECONDS", () => {
  it("a cooldown shorter than the ceiling does not make a workload due before the ceiling's", () => {
    const raisedAt = new Date(DAY_LATER.getTime() - 7200_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const item = {
      metadata: { name: "mymonitor", namespace: NS },
      spec: { cooldownSeconds: 0, scaleDown: { quietPeriodSeconds: 3600 } },
      status: { recentScales: [{ time: raisedAt, workload: { kind: "Deployment", name: "memhog" }, container: "memhog", from: { limit: "384Mi" }, to: { limit: "768Mi" } }] },
    };
    assert.deepEqual(dueWorkloads([item], DAY_LATER), [{ namespace: NS, appmonitor: "mymonitor", workload: { kind: "Deployment", name: "memhog" } }]);
    assert.deepEqual(dueWorkloads([item], DAY_LATER, 3 * 3600), [], "the ceiling's 3 h have not passed since the raise 2 h ago");
  });
});
