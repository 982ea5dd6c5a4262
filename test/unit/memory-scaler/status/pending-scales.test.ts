// The scales memory-scaler is writing (functions/memory-scaler/status/pending-scales.ts): the listing in
// status.pendingScales, what a tick decides for an entry, as a table; and through the flows on an
// in-memory cluster (scale/flow.ts, follow-up/flow.ts): a scale whose status write failed after its
// patch is recorded by one follow-up tick, once, from the workload's last-scale record.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../../../../functions/lib/appmonitor.ts";
import { followRollouts } from "../../../../functions/memory-scaler/follow-up/flow.ts";
import { decidePendingScale } from "../../../../functions/memory-scaler/follow-up/pending-scales.ts";
import { MAX_PENDING_SCALES, PENDING_SCALE_GRACE_SECONDS, type PendingScale, pendingScales, withoutPendingScale, withPendingScale } from "../../../../functions/memory-scaler/status/pending-scales.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { formatScaleRecord } from "../../../../functions/memory-scaler/model.ts";
import { alertData, apiError, flowDeps, memhogCluster, NS, type FakeCluster } from "../../../support/memory-scaler-fakes.ts";

const log = pino({ level: "silent" });
const TIME = "2025-06-01T12:00:00Z";
const scale: PendingScale = { workload: { kind: "Deployment", name: "web" }, time: TIME, event: "e1" };
const changes = [{ container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }];
const record = (event: string, over: { appmonitor?: string; time?: string; earlier?: { time: string; event: string }[] } = {}): string =>
  formatScaleRecord({ time: over.time ?? TIME, appmonitor: over.appmonitor ?? "m", event, multiplier: 2, changes, ...(over.earlier === undefined ? {} : { earlier: over.earlier }) });

describe("status.pendingScales: listed, replaced, taken off", () => {
  it("lists a scale once per workload and event, keeps the rest of the status, and is bounded", () => {
    const once = withPendingScale({ scaleCount: 3 }, scale);
    assert.deepEqual(once, { scaleCount: 3, pendingScales: [scale] });
    const again = withPendingScale(once, { ...scale, time: "2025-06-01T12:00:01Z" });
    assert.deepEqual(pendingScales(again), [{ ...scale, time: "2025-06-01T12:00:01Z" }], "a later round of the same event replaces its entry");
    let many = withPendingScale(undefined, scale);
    for (let i = 0; i < MAX_PENDING_SCALES + 5; i += 1) many = withPendingScale(many, { ...scale, event: `x${i}` });
    assert.equal(pendingScales(many).length, MAX_PENDING_SCALES);
    assert.equal(pendingScales(many).some((p) => p.event === "e1"), false, "the oldest is forgotten first");
  });

  it("takes off only the same workload's and event's entry; an empty list leaves no field, an empty status no status; nothing listed: the same object", () => {
    const other = { ...scale, event: "e2" };
    const two = withPendingScale(withPendingScale({ scaleCount: 1 }, scale), other);
    assert.deepEqual(withoutPendingScale(two, scale), { scaleCount: 1, pendingScales: [other] });
    assert.deepEqual(withoutPendingScale(withoutPendingScale(two, scale), other), { scaleCount: 1 });
    assert.equal(withoutPendingScale(withPendingScale(undefined, scale), scale), undefined, "as before the listing");
    const unlisted = { scaleCount: 1 };
    assert.equal(withoutPendingScale(unlisted, scale), unlisted);
    assert.equal(withoutPendingScale(two, { workload: { kind: "StatefulSet", name: "web" }, event: "e1" }), two);
  });
});

describe("decidePendingScale: what a tick does with an entry", () => {
  const at = (seconds: number) => new Date(Date.parse(TIME) + seconds * 1000);
  const annotated = (value: string | undefined, lastScale = TIME) => ({ annotations: { [LAST_SCALE_ANNOTATION]: lastScale, ...(value === undefined ? {} : { [LAST_SCALE_RECORD_ANNOTATION]: value }) } });
  const cases: { name: string; workload: Parameters<typeof decidePendingScale>[0]["workload"]; now: Date; action: string }[] = [
    { name: "the workload's record is this scale's", workload: annotated(record("e1")), now: at(5), action: "record" },
    { name: "this scale's record, long after (the status write failed an hour ago)", workload: annotated(record("e1")), now: at(3600), action: "record" },
    { name: "the workload is gone", workload: undefined, now: at(5), action: "drop" },
    { name: "the record is another AppMonitor's", workload: annotated(record("e1", { appmonitor: "other" })), now: at(5), action: "wait" },
    { name: "the record is not the last scale's (another writer set the last-scale time)", workload: annotated(record("e1"), "2025-06-01T13:00:00Z"), now: at(5), action: "wait" },
    { name: "a later scale's record lists this one in earlier", workload: annotated(record("e9", { time: "2025-06-01T12:30:00Z", earlier: [{ time: TIME, event: "e1" }] }), "2025-06-01T12:30:00Z"), now: at(5), action: "drop" },
    { name: "an older record, within the grace (the patch may be in flight)", workload: annotated(record("e0", { time: "2025-06-01T11:00:00Z" }), "2025-06-01T11:00:00Z"), now: at(PENDING_SCALE_GRACE_SECONDS), action: "wait" },
    { name: "an older record, past the grace (the patch never landed)", workload: annotated(record("e0", { time: "2025-06-01T11:00:00Z" }), "2025-06-01T11:00:00Z"), now: at(PENDING_SCALE_GRACE_SECONDS + 1), action: "drop" },
    { name: "no record at all, past the grace", workload: { annotations: undefined }, now: at(PENDING_SCALE_GRACE_SECONDS + 1), action: "drop" },
    { name: "an unreadable record, within the grace", workload: annotated("{not json"), now: at(1), action: "wait" },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.action}`, () => {
      const decision = decidePendingScale({ scale, appmonitor: "m", workload: c.workload, now: c.now });
      assert.equal(decision.action, c.action, JSON.stringify(decision));
      if (decision.action === "record") assert.equal(decision.record.event, "e1");
    });
  }
});

describe("a scale whose status write failed after its patch is recorded by the next follow-up tick", () => {
  const statusOf = (cluster: FakeCluster) =>
    cluster.appMonitors.get(`${NS}/mymonitor`)?.status as
      | { scaleCount?: number; lastScaleTime?: string; recentScales?: unknown[]; rollouts?: { workload: unknown; generation: number; event?: string }[]; pendingScales?: unknown[] }
      | undefined;

  /** A cluster whose AppMonitor status and Event writes fail after the first status write (the listing): the API server cut between the patch and the records. */
  function cutAfterListing(cluster: FakeCluster): () => void {
    const replace = cluster.replaceAppMonitorStatus.bind(cluster);
    const create = cluster.createEvent.bind(cluster);
    let writes = 0;
    const down = apiError(503, "the API server is unavailable");
    cluster.replaceAppMonitorStatus = async (...args) => ((writes += 1) === 1 ? replace(...args) : Promise.reject(down));
    cluster.createEvent = () => Promise.reject(down);
    return () => {
      cluster.replaceAppMonitorStatus = replace;
      cluster.createEvent = create;
    };
  }

  it("the scale is listed before the patch and taken off by the status write that records it", async () => {
    const cluster = memhogCluster();
    const deps = flowDeps(cluster);
    let listedAtPatch: unknown;
    const patch = cluster.patchWorkload.bind(cluster);
    cluster.patchWorkload = async (...args) => {
      if (args[4] === false) listedAtPatch = structuredClone(statusOf(cluster)?.pendingScales);
      return patch(...args);
    };
    assert.equal((await handleFiring(deps, "e1", alertData(), log)).outcome, "scaled");
    assert.deepEqual(listedAtPatch, [{ workload: { kind: "Deployment", name: "memhog" }, time: TIME, event: "e1" }]);
    assert.equal(statusOf(cluster)?.pendingScales, undefined);
    assert.equal(statusOf(cluster)?.scaleCount, 1);
  });

  it("one tick records it: scaleCount, recentScales and the rollout right, the Events written, the listing gone; a second tick counts nothing again", async () => {
    const cluster = memhogCluster();
    const deps = flowDeps(cluster);
    const restore = cutAfterListing(cluster);
    const first = await handleFiring(deps, "e1", alertData(), log);
    assert.equal(first.outcome, "scaled");
    assert.equal(cluster.writes.length, 1);
    assert.equal(statusOf(cluster)?.scaleCount, undefined, "the status write after the patch failed");
    assert.equal(pendingScales(statusOf(cluster)).length, 1, "the listing stayed");
    restore();

    const follow = { cluster, events: deps.events, status: deps.status, now: () => new Date("2025-06-01T12:10:00Z") };
    assert.deepEqual(await followRollouts(follow, log), { checked: 0, ended: 0, pending: 0, scales: 1, recorded: 1 });
    const status = statusOf(cluster);
    assert.equal(status?.scaleCount, 1);
    assert.equal(status?.lastScaleTime, TIME);
    assert.deepEqual(status?.recentScales, [{ time: TIME, workload: { kind: "Deployment", name: "memhog" }, event: "e1", container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }]);
    assert.deepEqual(status?.rollouts?.map((r) => [r.workload, r.generation, r.event]), [[{ kind: "Deployment", name: "memhog" }, 2, "e1"]], "its rollout is followed from now on");
    assert.equal(status?.pendingScales, undefined);
    assert.deepEqual(cluster.events.map((e) => [e.reason, e.regarding?.kind]).sort(), [["PodsReplaced", "AppMonitor"], ["PodsReplaced", "Deployment"], ["Scaled", "AppMonitor"], ["Scaled", "Deployment"]]);
    assert.match(cluster.events.find((e) => e.reason === "Scaled")?.note ?? "", /^scaled Deployment memhog by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; the rollout replaces \(restarts\) its Pods$/);

    const again = await followRollouts(follow, log);
    assert.equal(again.scales, undefined, "nothing listed any more");
    assert.equal(statusOf(cluster)?.scaleCount, 1);
    // A later alert repairs nothing more either.
    const later = await handleFiring(flowDeps(cluster, { now: () => new Date("2025-06-01T12:01:00Z") }), "e2", alertData(), log);
    assert.equal(later.reason, "Cooldown");
    assert.equal(statusOf(cluster)?.scaleCount, 1);
    assert.deepEqual(cluster.events.slice(4).map((e) => e.reason), ["Cooldown", "Cooldown"], "nothing but the skip's own pair");
  });

  it("a listing left by a delivery that lost the race to a copy of the same event: the tick counts the scale once and takes the listing off", async () => {
    const cluster = memhogCluster();
    const deps = flowDeps(cluster);
    assert.equal((await handleFiring(deps, "e1", alertData(), log)).outcome, "scaled");
    // The loser listed the scale after the winner's records took it off.
    const am = cluster.appMonitors.get(`${NS}/mymonitor`);
    if (am === undefined) throw new Error("no AppMonitor");
    am.status = withPendingScale(am.status as never, { workload: { kind: "Deployment", name: "memhog" }, time: TIME, event: "e1" });
    const summary = await followRollouts({ cluster, events: deps.events, status: deps.status, now: deps.now }, log);
    assert.equal(summary.recorded, 0, "listed already: not recorded again");
    assert.equal(statusOf(cluster)?.scaleCount, 1);
    assert.equal(statusOf(cluster)?.pendingScales, undefined);
  });

  it("a refused scale takes its listing off; a listing whose patch never landed is kept within the grace, then dropped", async () => {
    const refused = memhogCluster();
    refused.podRefusal = apiError(403, "exceeded quota: mem");
    assert.equal((await handleFiring(flowDeps(refused), "e1", alertData(), log)).reason, "AdmissionRefused");
    assert.deepEqual(Object.keys(refused.appMonitors.get(`${NS}/mymonitor`)?.status ?? {}), ["lastOutcome"], "no listing left, only the outcome");

    const cluster = memhogCluster();
    const am = cluster.appMonitors.get(`${NS}/mymonitor`);
    if (am === undefined) throw new Error("no AppMonitor");
    am.status = withPendingScale(undefined, { workload: { kind: "Deployment", name: "memhog" }, time: TIME, event: "lost" });
    const deps = flowDeps(cluster);
    const tick = (iso: string) => followRollouts({ cluster, events: deps.events, status: deps.status, now: () => new Date(iso) }, log);
    assert.deepEqual(await tick("2025-06-01T12:01:00Z"), { checked: 0, ended: 0, pending: 0, scales: 1, recorded: 0 });
    assert.equal(pendingScales(statusOf(cluster)).length, 1, "kept: its patch may still be in flight");
    assert.deepEqual(await tick("2025-06-01T12:10:00Z"), { checked: 0, ended: 0, pending: 0, scales: 1, recorded: 0 });
    assert.equal(statusOf(cluster), undefined, "dropped, and nothing else was in the status");
    assert.equal(cluster.events.length, 0);
  });
});
