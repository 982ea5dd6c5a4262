// The evidence of each alert (functions/memory-scaler/scale/decide/evidence.ts): on an OOM-kill event
// (trigger oomKilled) the pure check of the Pod's container statuses as a table, and the flow
// around it against the in-memory cluster (the same flow against a real API server with kwok:
// test/integration/memory-scaler-oom.test.ts); Prometheus' working set against the threshold;
// on a trend event (trigger trend) Prometheus' prediction against the limit, and the flow around it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { type ContainerChange, formatScaleRecord, parseScaleRecord } from "../../../../../functions/memory-scaler/model.ts";
import { checkOOMKilled, checkThreshold, checkTrend, type ContainerStatusLike, OOM_KILL_RECENT_SECONDS } from "../../../../../functions/memory-scaler/scale/decide/evidence.ts";
import { handleFiring } from "../../../../../functions/memory-scaler/scale/flow.ts";
import { type Verifier, workingSetQuery } from "../../../../../functions/memory-scaler/kube/prometheus.ts";
import { alertData, fakeVerifier, FakeCluster, flowDeps as deps, memhogCluster, NS } from "../../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });
const NOW = new Date("2025-06-01T12:00:00Z");
const ago = (seconds: number): string => new Date(NOW.getTime() - seconds * 1000).toISOString();
const change = (container: string): ContainerChange => ({ container, from: { limit: "384Mi" }, to: { limit: "768Mi" } });
const killedAt = (finishedAt: string | Date | undefined, reason = "OOMKilled") => ({ terminated: { reason, ...(finishedAt === undefined ? {} : { finishedAt }) } });

describe("checkOOMKilled", () => {
  const cases: { name: string; statuses: ContainerStatusLike[]; keep: boolean; message?: RegExp }[] = [
    { name: "lastState OOMKilled a minute ago", statuses: [{ name: "app", lastState: killedAt(ago(60)) }], keep: true },
    { name: "lastState OOMKilled, finishedAt a Date (as the client deserializes it)", statuses: [{ name: "app", lastState: killedAt(new Date(NOW.getTime() - 60_000)) }], keep: true },
    { name: "state OOMKilled: killed, not restarted yet", statuses: [{ name: "app", state: killedAt(ago(5)), lastState: killedAt(ago(900), "Error") }], keep: true },
    { name: "exactly at the bound", statuses: [{ name: "app", lastState: killedAt(ago(OOM_KILL_RECENT_SECONDS)) }], keep: true },
    { name: "the node's clock ahead of ours", statuses: [{ name: "app", lastState: killedAt(ago(-30)) }], keep: true },
    { name: "a second past the bound", statuses: [{ name: "app", lastState: killedAt(ago(OOM_KILL_RECENT_SECONDS + 1)) }], keep: false, message: /last OOM kill ended at 2025-06-01T11:49:59\.000Z, more than 600s ago/ },
    { name: "last termination Error", statuses: [{ name: "app", lastState: killedAt(ago(60), "Error") }], keep: false, message: /last termination was Error, not OOMKilled/ },
    { name: "last termination without a reason", statuses: [{ name: "app", lastState: { terminated: { finishedAt: ago(60) } } }], keep: false, message: /without a reason/ },
    { name: "never terminated", statuses: [{ name: "app", state: {}, lastState: {} }], keep: false, message: /it has not terminated/ },
    { name: "OOMKilled without finishedAt", statuses: [{ name: "app", lastState: killedAt(undefined) }], keep: false, message: /an unknown time/ },
    { name: "OOMKilled with an unparseable finishedAt", statuses: [{ name: "app", lastState: killedAt("yesterday") }], keep: false, message: /an unknown time/ },
    { name: "another container was killed", statuses: [{ name: "app" }, { name: "side", lastState: killedAt(ago(60)) }], keep: false, message: /it has not terminated/ },
    { name: "no status for the container", statuses: [{ name: "side", lastState: killedAt(ago(60)) }], keep: false, message: /the Pod reports no status for it/ },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.keep ? "kept" : "NotOOMKilled"}`, () => {
      const { keep, skipped } = checkOOMKilled([change("app")], c.statuses, NOW);
      assert.deepEqual(keep.map((k) => k.container), c.keep ? ["app"] : []);
      assert.deepEqual(skipped.map((s) => [s.container, s.reason]), c.keep ? [] : [["app", "NotOOMKilled"]]);
      if (c.message !== undefined) assert.match(skipped[0]?.message ?? "", c.message);
    });
  }

  it("keeps only the killed containers, in the order of the changes", () => {
    const statuses: ContainerStatusLike[] = [{ name: "a", lastState: killedAt(ago(1)) }, { name: "b" }, { name: "c", lastState: killedAt(ago(2)) }];
    const { keep, skipped } = checkOOMKilled([change("c"), change("b"), change("a")], statuses, NOW);
    assert.deepEqual(keep.map((k) => k.container), ["c", "a"]);
    assert.deepEqual(skipped.map((s) => s.container), ["b"]);
  });

  it("the bound is a parameter", () => {
    const statuses = [{ name: "app", lastState: killedAt(ago(120)) }];
    assert.equal(checkOOMKilled([change("app")], statuses, NOW, 60).keep.length, 0);
    assert.equal(checkOOMKilled([change("app")], statuses, NOW, 180).keep.length, 1);
  });
});

/** Sets the memhog container's status as the kubelet reports it after an OOM kill `secondsAgo` before the flow's clock. */
function oomKilled(cluster: FakeCluster, secondsAgo: number, reason = "OOMKilled"): void {
  const key = `${NS}/memhog-5d8f-x2`;
  const pod = cluster.pods.get(key);
  if (pod === undefined) throw new Error("no memhog Pod");
  const finishedAt = new Date(NOW.getTime() - secondsAgo * 1000);
  const status: k8s.V1ContainerStatus = {
    name: "memhog",
    image: "quay.io/metral/memhog:v0.0.1",
    imageID: "",
    ready: true,
    restartCount: 1,
    state: { running: { startedAt: finishedAt } },
    lastState: { terminated: { reason, exitCode: 137, startedAt: new Date(finishedAt.getTime() - 60_000), finishedAt } },
  };
  cluster.pods.set(key, { ...pod, status: { ...pod.status, containerStatuses: [status] } });
}

const oomEvent = (over: Parameters<typeof alertData>[0] = {}) =>
  alertData({ alertname: "AppMonitorOOMKilled", trigger: "oomKilled", labels: { alertname: "AppMonitorOOMKilled", namespace: NS, pod: "memhog-5d8f-x2", container: "memhog", appmonitor: "mymonitor" }, ...over });

/** A verifier that must not be asked: an OOM-kill event is not checked against Prometheus. */
const refusingVerifier: Verifier = fakeVerifier({});

describe("handleFiring on an OOM-kill event", () => {
  it("scales once with the AppMonitor's multiplier, without asking Prometheus; the Scaled Event says it was an OOM kill", async () => {
    const cluster = memhogCluster();
    oomKilled(cluster, 60);
    const outcome = await handleFiring(deps(cluster, { verifier: refusingVerifier }), "oom-1", oomEvent(), silent);
    assert.equal(outcome.outcome, "scaled", outcome.message);
    assert.deepEqual(outcome.changes, [{ container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }]);
    assert.equal(cluster.writes.length, 1);
    const notes = cluster.events.filter((e) => e.reason === "Scaled").map((e) => e.note);
    assert.equal(notes.length, 2);
    for (const note of notes) assert.match(note ?? "", /^scaled Deployment memhog by 2 after an OOM kill: memhog: limit 384Mi → 768Mi/);
  });

  it("the same event again, and a later one within the cooldown, scale nothing more", async () => {
    const cluster = memhogCluster();
    oomKilled(cluster, 60);
    assert.equal((await handleFiring(deps(cluster), "oom-1", oomEvent(), silent)).outcome, "scaled");
    const again = await handleFiring(deps(cluster), "oom-1", oomEvent(), silent);
    assert.equal(again.outcome, "skipped");
    assert.equal(again.reason, "Cooldown");
    const later = await handleFiring(deps(cluster, { now: () => new Date("2025-06-01T12:01:00Z") }), "oom-2", oomEvent(), silent);
    assert.equal(later.reason, "Cooldown");
    assert.equal(cluster.writes.length, 1);
  });

  const skips: { name: string; prepare: (cluster: FakeCluster) => void; message: RegExp }[] = [
    { name: "a Pod never OOM-killed", prepare: () => undefined, message: /container memhog was not OOM-killed in the last 600s: the Pod reports no status for it/ },
    { name: "a Pod whose last termination was an Error", prepare: (c) => oomKilled(c, 60, "Error"), message: /last termination was Error, not OOMKilled/ },
    { name: "a Pod OOM-killed 11 minutes ago", prepare: (c) => oomKilled(c, 660), message: /more than 600s ago/ },
  ];
  for (const { name, prepare, message } of skips) {
    it(`${name} → skipped NotOOMKilled, nothing written`, async () => {
      const cluster = memhogCluster();
      prepare(cluster);
      const outcome = await handleFiring(deps(cluster, { verifier: refusingVerifier }), "oom-1", oomEvent(), silent);
      assert.equal(outcome.outcome, "skipped");
      assert.equal(outcome.reason, "NotOOMKilled");
      assert.match(outcome.message, message);
      assert.equal(cluster.writes.length, 0);
      assert.deepEqual(cluster.events, []);
    });
  }

  it("a threshold event for an OOM-killed Pod still goes through Prometheus", async () => {
    const cluster = memhogCluster();
    oomKilled(cluster, 60);
    const low = fakeVerifier({ workingSets: new Map([["memhog", 10 * 1024 * 1024]]) });
    const outcome = await handleFiring(deps(cluster, { verifier: low }), "e1", alertData(), silent);
    assert.equal(outcome.reason, "BelowThreshold");
  });

  it("an OOM-kill event whose trigger contradicts its alertname is not an AppMonitor alert", async () => {
    const cluster = memhogCluster();
    oomKilled(cluster, 60);
    const outcome = await handleFiring(deps(cluster), "oom-1", oomEvent({ trigger: "threshold" }), silent);
    assert.equal(outcome.reason, "NotAppMonitorAlert");
    assert.equal(outcome.attempts, 0);
  });

  it("the last-scale record keeps the trigger, so Scaled Events written again later still say OOM kill", async () => {
    const cluster = memhogCluster();
    oomKilled(cluster, 60);
    assert.equal((await handleFiring(deps(cluster), "oom-1", oomEvent(), silent)).outcome, "scaled");
    const record = parseScaleRecord(cluster.workloads.get(`Deployment/${NS}/memhog`)?.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale-record"]);
    assert.equal(record?.trigger, "oomKilled");
    // As if the Events' first write had failed: the next event for the workload writes them again.
    cluster.events = [];
    assert.equal((await handleFiring(deps(cluster), "oom-2", oomEvent(), silent)).reason, "Cooldown");
    const notes = cluster.events.filter((e) => e.reason === "Scaled").map((e) => e.note);
    assert.equal(notes.length, 2);
    for (const note of notes) assert.match(note ?? "", / after an OOM kill: /);
  });

  it("a threshold scale's record is what it was before OOM kills were a trigger; a trigger other than oomKilled is not read", () => {
    const base = { time: "2025-06-01T12:00:00Z", appmonitor: "m", event: "e1", multiplier: 2, changes: [change("app")] };
    assert.equal(formatScaleRecord(base), JSON.stringify(base));
    assert.deepEqual(parseScaleRecord(formatScaleRecord({ ...base, trigger: "oomKilled" })), { ...base, trigger: "oomKilled" });
    assert.deepEqual(parseScaleRecord(JSON.stringify({ ...base, trigger: "other" })), base);
  });

  it("DryRun: would scale, and says it was an OOM kill", async () => {
    const cluster = memhogCluster();
    oomKilled(cluster, 60);
    const monitor = cluster.appMonitors.get(`${NS}/mymonitor`);
    if (monitor === undefined) throw new Error("no mymonitor");
    cluster.appMonitors.set(`${NS}/mymonitor`, { ...monitor, spec: { ...(monitor.spec as object), mode: "DryRun" } });
    const outcome = await handleFiring(deps(cluster), "oom-1", oomEvent(), silent);
    assert.equal(outcome.outcome, "dry-run");
    assert.match(cluster.events[0]?.note ?? "", /^DryRun: would scale Deployment memhog after an OOM kill: /);
    assert.equal(cluster.writes.length, 0);
  });
});

describe("Prometheus check", () => {
  it("quotes names into the query", () => {
    assert.equal(
      workingSetQuery("ns", "p-1", ["a", "b.c"]),
      'max by (container) (container_memory_working_set_bytes{namespace="ns",pod="p-1",container=~"a|b\\\\.c"})',
    );
  });

  const change = (container: string) => ({ container, from: { limit: "384Mi" }, to: { limit: "768Mi" } });
  const pod = [{ name: "hot", limit: "384Mi" }, { name: "cold", limit: "384Mi" }, { name: "unseen", limit: "384Mi" }];
  it("keeps containers at or above the threshold, skips the others with a reason", () => {
    const mi = 1024 * 1024;
    const { keep, skipped } = checkThreshold([change("hot"), change("cold"), change("unseen")], pod, new Map([["hot", 288 * mi], ["cold", 100 * mi]]), 75);
    assert.deepEqual(keep.map((c) => c.container), ["hot"], "288Mi of 384Mi is exactly 75%");
    assert.deepEqual(skipped.map((s) => [s.container, s.reason]), [["cold", "BelowThreshold"], ["unseen", "NotMeasured"]]);
    assert.equal(skipped[0]?.percent, 26.04);
  });
});

describe("checkTrend", () => {
  const mi = 1024 * 1024;
  const trend = { horizonSeconds: 1800, windowSeconds: 600, floorPercent: 50 };
  const pod = [{ name: "rising", limit: "384Mi" }, { name: "level", limit: "384Mi" }, { name: "new", limit: "384Mi" }];
  const predictions = new Map([["rising", 384 * mi], ["level", 250 * mi]]);

  it("keeps the containers predicted at or above the limit of the Pod read, skips the others with a reason", () => {
    const { keep, skipped } = checkTrend([change("rising"), change("level"), change("new")], pod, predictions, trend);
    assert.deepEqual(keep.map((c) => c.container), ["rising"], "384Mi predicted of a 384Mi limit reaches it");
    assert.deepEqual(skipped.map((s) => [s.container, s.reason]), [["level", "NotTrending"], ["new", "NotMeasured"]]);
    assert.equal(skipped[0]?.message, "container level is not predicted to reach its 384Mi limit within 1800s at the rate of the last 600s (predicted 65.1% of it)");
    assert.match(skipped[1]?.message ?? "", /Prometheus has no prediction for container new at the rate of the last 600s/);
  });

  it("an AppMonitor that no longer sets spec.trend: NotTrending, whatever Prometheus predicts", () => {
    const { keep, skipped } = checkTrend([change("rising")], pod, predictions, undefined);
    assert.deepEqual(keep, []);
    assert.deepEqual(skipped.map((s) => [s.container, s.reason]), [["rising", "NotTrending"]]);
    assert.match(skipped[0]?.message ?? "", /no longer sets spec\.trend/);
  });
});

describe("handleFiring on a trend event", () => {
  const mi = 1024 * 1024;
  const trend = { horizonSeconds: 1800, windowSeconds: 600 };
  const trendEvent = () =>
    alertData({ alertname: "AppMonitorMemoryTrend", trigger: "trend", value: 60, labels: { alertname: "AppMonitorMemoryTrend", namespace: NS, pod: "memhog-5d8f-x2", container: "memhog", appmonitor: "mymonitor" } });
  const trending = (spec: Record<string, unknown> = { memThresholdPercent: 75, memMultiplier: 2, trend }) => memhogCluster(spec);
  /** Answers predictions only, and records what it was asked with. */
  const predicting = (bytes: number, asked: unknown[] = []): Verifier => ({
    ...fakeVerifier({}),
    predictions: async (...args) => {
      asked.push(args);
      return new Map([["memhog", bytes]]);
    },
  });

  it("scales once Prometheus predicts the limit within the AppMonitor's horizon, asked with its window; the Events, the status and the outcome say trend", async () => {
    const cluster = trending();
    const asked: unknown[] = [];
    const outcome = await handleFiring(deps(cluster, { verifier: predicting(400 * mi, asked) }), "t-1", trendEvent(), silent);
    assert.equal(outcome.outcome, "scaled", outcome.message);
    assert.equal(outcome.trigger, "trend");
    assert.deepEqual(asked, [[NS, "memhog-5d8f-x2", ["memhog"], { horizonSeconds: 1800, windowSeconds: 600, floorPercent: 50 }]]);
    assert.deepEqual(outcome.changes, [{ container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }]);
    const notes = cluster.events.filter((e) => e.reason === "Scaled").map((e) => e.note);
    assert.equal(notes.length, 2);
    for (const note of notes) assert.match(note ?? "", /^scaled Deployment memhog by 2 on its trend toward the limit: memhog: limit 384Mi → 768Mi/);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { recentScales?: { trigger?: string }[]; scaleCount?: number } | undefined;
    assert.equal(status?.scaleCount, 1);
    assert.deepEqual(status?.recentScales?.map((r) => r.trigger), ["trend"]);
  });

  it("a prediction below the limit: NotTrending, nothing written", async () => {
    const cluster = trending();
    const outcome = await handleFiring(deps(cluster, { verifier: predicting(300 * mi) }), "t-1", trendEvent(), silent);
    assert.equal(outcome.outcome, "skipped");
    assert.equal(outcome.reason, "NotTrending");
    assert.match(outcome.message, /not predicted to reach its 384Mi limit within 1800s at the rate of the last 600s \(predicted 78\.13% of it\)/);
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(cluster.events, []);
  });

  it("an AppMonitor without spec.trend: NotTrending, Prometheus not asked", async () => {
    const cluster = trending({ memThresholdPercent: 75, memMultiplier: 2 });
    const outcome = await handleFiring(deps(cluster, { verifier: fakeVerifier({}) }), "t-1", trendEvent(), silent);
    assert.equal(outcome.reason, "NotTrending");
    assert.equal(cluster.writes.length, 0);
  });

  it("without PROMETHEUS_URL the trend alert is taken as it is, as a threshold alert would be", async () => {
    assert.equal((await handleFiring(deps(trending()), "t-1", trendEvent(), silent)).outcome, "scaled");
  });

  it("the threshold alert of the same Pod after the trend's scale: no second scale", async () => {
    const cluster = trending();
    assert.equal((await handleFiring(deps(cluster, { verifier: predicting(400 * mi) }), "t-1", trendEvent(), silent)).outcome, "scaled");
    const threshold = await handleFiring(deps(cluster, { verifier: fakeVerifier({ workingSets: new Map([["memhog", 300 * mi]]) }) }), "e-1", alertData(), silent);
    assert.equal(threshold.outcome, "skipped");
    assert.equal(cluster.writes.length, 1);
  });
});
