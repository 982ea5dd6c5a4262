// The leak guard through the flow (functions/memory-scaler/scale/flow.ts) on an in-memory cluster:
// the alert after maxScales scales is held, one Warning pair, the alert posted each time, a spec change releases it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import type { LeakAlerter } from "../../../../functions/memory-scaler/kube/alertmanager.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import type { ProbableLeak } from "../../../../functions/memory-scaler/status/leaks.ts";
import { alertData, type FakeCluster, flowDeps, memhogCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });

/** The live Pod runs what the Deployment's template now says (its rollout done). */
function rolledOut(cluster: FakeCluster): void {
  const spec = cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template?.spec;
  const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
  if (spec === undefined || pod === undefined) throw new Error("no memhog");
  cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, spec: structuredClone(spec) });
}

describe("the leak guard in the flow", () => {
  it("two scales, then ProbableLeak: held with one Warning pair and an alert per held alert; a spec change releases it and resolves the alert", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0, leakGuard: { maxScales: 2, windowSeconds: 3600 } });
    const posted: { entry: ProbableLeak; endsAt: string; description: string }[] = [];
    const leakAlerts: LeakAlerter = { post: async (entry, input) => void posted.push({ entry, endsAt: input.endsAt, description: input.description }) };
    let clock = Date.parse("2025-06-01T12:00:00Z");
    const alert = async (id: string) => {
      clock += 60_000;
      const outcome = await handleFiring(flowDeps(cluster, { now: () => new Date(clock), leakAlerts }), id, alertData(), silent);
      rolledOut(cluster);
      return outcome;
    };
    assert.deepEqual([(await alert("e1")).reason, (await alert("e2")).reason], ["Scaled", "Scaled"]);
    const writes = cluster.writes.length;
    const held = await alert("e3");
    assert.equal(held.reason, "ProbableLeak");
    assert.match(held.message, /scaled 2 times within 3600s .*memhog 384Mi → 768Mi; .* memhog 768Mi → 1536Mi/);
    assert.equal((await alert("e4")).reason, "ProbableLeak");
    assert.equal(cluster.writes.length, writes, "no patch while held");
    const warnings = cluster.events.filter((e) => e.reason === "ProbableLeak").map((e) => e.regarding?.kind).sort();
    assert.deepEqual(warnings, ["AppMonitor", "Deployment"], "one Warning pair for the hold");
    assert.deepEqual(posted.map((p) => [p.entry.since, p.endsAt]), [["2025-06-01T12:03:00Z", "2025-06-01T13:03:00Z"], ["2025-06-01T12:03:00Z", "2025-06-01T13:03:00Z"]]);
    const status = () => cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { probableLeaks?: ProbableLeak[]; conditions?: { type: string; status: string }[] };
    assert.equal(status().conditions?.find((c) => c.type === "ProbableLeak")?.status, "True");

    // The AppMonitor's spec changes (its generation moves): released, scaled, the alert resolved.
    const am = cluster.appMonitors.get(`${NS}/mymonitor`) as { metadata: { generation?: number } };
    am.metadata.generation = (am.metadata.generation ?? 1) + 1;
    assert.equal((await alert("e5")).reason, "Scaled");
    assert.equal(status().probableLeaks?.[0]?.cleared, "the AppMonitor's spec changed");
    assert.equal(status().conditions?.find((c) => c.type === "ProbableLeak")?.status, "False");
    assert.deepEqual(posted.at(-1)?.endsAt, "2025-06-01T12:05:00Z", "posted again, ending now: resolved");
  });
});
