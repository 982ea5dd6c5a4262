/**
 * An honest DryRun and the install-wide pause (`scale/flow.ts`, step 4): a dry run makes every
 * check of the write — the API server's dry runs, the quota, the Node fit — and writes nothing;
 * what would refuse the write is recorded (outcome, Events, `status.lastOutcome`).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { handleFiring, PAUSED_NOTE } from "../../../../functions/memory-scaler/scale/flow.ts";
import type { LastOutcome } from "../../../../functions/memory-scaler/status/last-outcome.ts";
import { alertData as data, apiError, flowDeps as deps, type FakeCluster, memhogCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });
const lastOutcome = (cluster: FakeCluster) => (cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { lastOutcome?: LastOutcome } | undefined)?.lastOutcome;
const templateLimit = (cluster: FakeCluster) => cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template?.spec?.containers[0]?.resources?.limits?.memory;
const DRY_RUN = { memThresholdPercent: 75, memMultiplier: 2, mode: "DryRun" } as const;

describe("DryRun runs every check of the write", () => {
  const refusals: { name: string; setup: (c: FakeCluster) => void; reason: string; says: RegExp }[] = [
    {
      name: "a ResourceQuota the rollout would pass",
      setup: (c) => c.quotas.push({ metadata: { name: "mem", namespace: NS }, spec: { hard: { "limits.memory": "512Mi" } }, status: { hard: { "limits.memory": "512Mi" }, used: { "limits.memory": "384Mi" } } }),
      reason: "RolloutExceedsQuota",
      says: /would be refused: .*limits\.memory/,
    },
    { name: "admission refusing the scaled Pod", setup: (c) => (c.podRefusal = apiError(403, "exceeded quota: mem")), reason: "AdmissionRefused", says: /would be refused: exceeded quota: mem/ },
    { name: "no Node that could hold the scaled Pod", setup: (c) => (c.nodeMemory = ["300Mi"]), reason: "Unschedulable", says: /would be refused: .*more than any Node can allocate/ },
  ];
  for (const r of refusals) {
    it(`${r.name}: dry-run ${r.reason}, recorded in the outcome, Warnings and status.lastOutcome; nothing written`, async () => {
      const cluster = memhogCluster(DRY_RUN);
      r.setup(cluster);
      const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
      assert.deepEqual([outcome.outcome, outcome.reason], ["dry-run", r.reason]);
      assert.match(outcome.message, r.says);
      assert.equal(cluster.writes.length, 0);
      assert.equal(templateLimit(cluster), "384Mi");
      assert.deepEqual(cluster.events.map((e) => [e.type, e.reason]), [["Warning", r.reason], ["Warning", r.reason]]);
      for (const e of cluster.events) assert.match(e.note ?? "", /DryRun: would not be scaled \(memhog: limit 384Mi → 768Mi/);
      assert.deepEqual([lastOutcome(cluster)?.outcome, lastOutcome(cluster)?.reason], ["dry-run", r.reason]);
    });
  }

  it("every check passing: DryRun would scale, after the dry runs; nothing written", async () => {
    const cluster = memhogCluster(DRY_RUN);
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["dry-run", "DryRun"]);
    assert.match(outcome.message, /^would scale: memhog: limit 384Mi → 768Mi/);
    assert.ok(cluster.dryRuns > 0, "the write's dry runs ran");
    assert.equal(cluster.writes.length, 0);
    assert.equal(lastOutcome(cluster)?.reason, "DryRun");
  });
});

describe("PAUSE_SCALING: every AppMonitor behaves as DryRun", () => {
  it("a Scale AppMonitor's alert: a dry run saying the install is paused, nothing written", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2 });
    const outcome = await handleFiring(deps(cluster, { paused: true }), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["dry-run", "DryRun"]);
    assert.equal(outcome.message, `${PAUSED_NOTE}: would scale: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi`);
    assert.equal(cluster.writes.length, 0);
    assert.equal(templateLimit(cluster), "384Mi");
    assert.ok(cluster.events.every((e) => e.reason === "DryRun" && (e.note ?? "").startsWith(`DryRun (${PAUSED_NOTE}): would scale`)), JSON.stringify(cluster.events.map((e) => e.note)));
    assert.equal(lastOutcome(cluster)?.message, outcome.message);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount?: number; recentScales?: { dryRun?: boolean }[] };
    assert.equal(status.recentScales?.[0]?.dryRun, true);
    assert.equal(status.scaleCount ?? 0, 0);
  });

  it("not paused, the same alert scales", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2 });
    const outcome = await handleFiring(deps(cluster, { paused: false }), "e1", data(), silent);
    assert.equal(outcome.outcome, "scaled");
    assert.equal(templateLimit(cluster), "768Mi");
    assert.deepEqual([lastOutcome(cluster)?.outcome, lastOutcome(cluster)?.reason, lastOutcome(cluster)?.workload], ["scaled", "Scaled", { kind: "Deployment", name: "memhog" }]);
  });
});

describe("DryRun of a resize in place runs the resizes' and the claim's dry runs", () => {
  /** memhog's cluster under `updateMode: InPlace` and DryRun, its Pod on a node. */
  function inPlaceDryRun(): FakeCluster {
    const cluster = memhogCluster({ ...DRY_RUN, updateMode: "InPlace" });
    const workload = cluster.workloads.get(`Deployment/${NS}/memhog`);
    if (workload?.spec === undefined) throw new Error("no memhog Deployment");
    workload.spec.selector = { matchLabels: { name: "memhog" } };
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    if (pod?.spec === undefined) throw new Error("no memhog Pod");
    pod.spec = { ...pod.spec, nodeName: "node-1" };
    return cluster;
  }

  it("every dry run passing: would resize in place; no Pod resized, no claim written", async () => {
    const cluster = inPlaceDryRun();
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["dry-run", "DryRun"], outcome.message);
    assert.match(outcome.message, /^would resize in place: memhog: limit 384Mi → 768Mi/);
    assert.deepEqual([cluster.resizeDryRuns, cluster.dryRuns], [1, 1], "the resize and the claim dry-run");
    assert.equal(cluster.writes.length, 0);
    assert.equal(cluster.resizes.length, 0);
  });

  it("a resize the API server refuses: dry-run AdmissionRefused naming the Pod, nothing written", async () => {
    const cluster = inPlaceDryRun();
    cluster.resizeRefusal = apiError(422, "Pod running on node without support for resize");
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["dry-run", "AdmissionRefused"]);
    assert.match(outcome.message, /^would be refused: .*Pod memhog-5d8f-x2: Pod running on node without support for resize/);
    assert.equal(cluster.writes.length, 0);
  });
});
