// A new crossing of a raised limit within the cooldown (scale/decide/decide.ts rule 1): the
// alerts whose trigger crosses the limit (threshold, trend) and began after the last scale are
// answered, confirmed by Prometheus against the Pod's limit now; a re-delivery of the crossing the
// last scale answered, and any OOM kill, are still held.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { APPMONITOR_OOM_ALERT_NAME } from "../../../../functions/lib/appmonitor.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, fakeVerifier, flowDeps, memhogCluster, NS, type FakeCluster } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });
const Mi = 2 ** 20;
/** The last scale, a minute before the fakes' clock (12:00:00Z), within the default 300 s cooldown. */
const LAST_SCALE = "2025-06-01T11:59:00Z";

/** memhog at 384Mi, its Pod running the template (the last scale's rollout done), scaled at {@link LAST_SCALE}. */
function scaledAMinuteAgo(): FakeCluster {
  const cluster = memhogCluster();
  const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
  if (deployment?.metadata === undefined) throw new Error("no memhog Deployment");
  deployment.metadata.annotations = { "app-monitor.kubedemo.com/last-scale": LAST_SCALE };
  return cluster;
}

describe("a new crossing within the cooldown", () => {
  test("a threshold alert that began after the last scale, confirmed by Prometheus: scaled, and the Event and the outcome say why the cooldown did not hold it", async () => {
    const cluster = scaledAMinuteAgo();
    const deps = flowDeps(cluster, { verifier: fakeVerifier({ workingSets: new Map([["memhog", 300 * Mi]]) }) });
    const outcome = await handleFiring(deps, "e1", alertData({ startsAt: "2025-06-01T11:59:30Z" }), silent);
    const said = "a new crossing: its alert began at 2025-06-01T11:59:30Z, after the last scale at 2025-06-01T11:59:00Z, so the cooldown of 300s (240s left) does not hold it";
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"]);
    assert.ok(outcome.message?.endsWith(`; ${said}`), outcome.message);
    const scaled = cluster.events.filter((e) => e.reason === "Scaled").map((e) => e.note ?? "");
    assert.equal(scaled.length, 2, "one on the Deployment, one on the AppMonitor");
    for (const note of scaled) assert.ok(note.endsWith(`; ${said}`), note);
  });

  test("a trend alert that began after the last scale, Prometheus predicting the limit: scaled", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, trend: { horizonSeconds: 600 } });
    const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
    if (deployment?.metadata === undefined) throw new Error("no memhog Deployment");
    deployment.metadata.annotations = { "app-monitor.kubedemo.com/last-scale": LAST_SCALE };
    const deps = flowDeps(cluster, { verifier: fakeVerifier({ predictions: new Map([["memhog", 400 * Mi]]) }) });
    const outcome = await handleFiring(deps, "e1", alertData({ alertname: "AppMonitorMemoryTrend", trigger: "trend", startsAt: "2025-06-01T11:59:30Z" }), silent);
    assert.equal(outcome.outcome, "scaled", outcome.message);
    assert.match(outcome.message ?? "", /a new crossing: its alert began at 2025-06-01T11:59:30Z/);
  });

  test("the crossing the last scale answered, delivered again (it began before the scale): Cooldown", async () => {
    const deps = flowDeps(scaledAMinuteAgo(), { verifier: fakeVerifier({ workingSets: new Map([["memhog", 300 * Mi]]) }) });
    const outcome = await handleFiring(deps, "e1", alertData({ startsAt: "2025-06-01T11:58:30Z" }), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "Cooldown"]);
  });

  test("a new alert Prometheus does not confirm against the Pod's limit now: BelowThreshold", async () => {
    const deps = flowDeps(scaledAMinuteAgo(), { verifier: fakeVerifier({ workingSets: new Map([["memhog", 100 * Mi]]) }) });
    const outcome = await handleFiring(deps, "e1", alertData({ startsAt: "2025-06-01T11:59:30Z" }), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "BelowThreshold"]);
  });

  test("an OOM kill after the last scale is no crossing Prometheus confirms: Cooldown", async () => {
    const deps = flowDeps(scaledAMinuteAgo());
    const outcome = await handleFiring(deps, "e1", alertData({ alertname: APPMONITOR_OOM_ALERT_NAME, trigger: "oomKilled", startsAt: "2025-06-01T11:59:30Z" }), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "Cooldown"]);
  });
});
