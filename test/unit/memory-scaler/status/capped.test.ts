// The workloads at spec.maxMemory in an AppMonitor's status (functions/memory-scaler/status/capped.ts),
// the status changes of an AtCap skip and of a scale (events.ts), from plain data, and the AtCap
// path through the flow and the follow-up tick on an in-memory cluster.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import type { AppMonitorStatus } from "../../../../functions/lib/appmonitor.ts";
import { CAPPED_CONDITION, type CappedWorkload, cappedWorkloads, MAX_CAPPED, withCapped, withCapsOf, withoutCapped } from "../../../../functions/memory-scaler/status/capped.ts";
import { followRollouts } from "../../../../functions/memory-scaler/follow-up/flow.ts";
import { cappedStatus, scaledStatus } from "../../../../functions/memory-scaler/status/changes.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, flowDeps, memhogCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const T0 = "2026-12-01T10:00:00Z";
const T1 = "2026-12-01T10:05:00Z";
const web: CappedWorkload = { workload: { kind: "Deployment", name: "web" }, containers: ["app"], maxMemory: "1Gi", since: T0 };
const db: CappedWorkload = { workload: { kind: "StatefulSet", name: "db" }, containers: ["db", "sidecar"], maxMemory: "1Gi", since: T1 };
const condition = (status: AppMonitorStatus | undefined) => status?.conditions?.find((c) => c.type === CAPPED_CONDITION);

describe("capped-status", () => {
  it("a first workload at the cap: listed, AtMaxMemory True naming it", () => {
    const status = withCapped({ scaleCount: 2 }, web, T0);
    assert.deepEqual(cappedWorkloads(status), [web]);
    assert.deepEqual(condition(status), {
      type: CAPPED_CONDITION,
      status: "True",
      reason: "AtCap",
      message: "at the memory cap, not scaled further: Deployment web (app at 1Gi)",
      lastTransitionTime: T0,
    });
    assert.equal(status?.scaleCount, 2, "the rest of the status is kept");
  });

  it("the same workload at the same cap again: the very same status, so nothing is written", () => {
    const status = withCapped(undefined, web, T0);
    assert.equal(withCapped(status, { ...web, since: T1 }, T1), status);
  });

  it("the same workload at a new cap or with other containers: replaced, transition time kept", () => {
    const status = withCapped(undefined, web, T0);
    for (const changed of [{ ...web, maxMemory: "2Gi", since: T1 }, { ...web, containers: ["app", "proxy"], since: T1 }]) {
      const next = withCapped(status, changed, T1);
      assert.deepEqual(cappedWorkloads(next), [changed]);
      assert.equal(condition(next)?.lastTransitionTime, T0);
    }
  });

  it("two workloads: both named; the one scaled leaves, the condition stays True for the other", () => {
    const both = withCapped(withCapped(undefined, web, T0), db, T1);
    assert.equal(condition(both)?.message, "at the memory cap, not scaled further: Deployment web (app at 1Gi); StatefulSet db (db, sidecar at 1Gi)");
    const after = withoutCapped(both, web.workload, T1);
    assert.deepEqual(cappedWorkloads(after), [db]);
    assert.equal(condition(after)?.status, "True");
  });

  it("the last one scaled: list gone, AtMaxMemory False BelowMaxMemory at that time", () => {
    const after = withoutCapped(withCapped(undefined, web, T0), web.workload, T1);
    assert.equal((after as { capped?: unknown }).capped, undefined);
    assert.deepEqual(condition(after), { type: CAPPED_CONDITION, status: "False", reason: "BelowMaxMemory", message: "no workload is at its memory cap", lastTransitionTime: T1 });
  });

  it("a workload not listed, or no status: unchanged (no condition is made up)", () => {
    const status = withCapped(undefined, db, T0);
    assert.equal(withoutCapped(status, web.workload, T1), status);
    assert.equal(withoutCapped(undefined, web.workload, T1), undefined);
    const plain: AppMonitorStatus = { scaleCount: 1 };
    assert.equal(withoutCapped(plain, web.workload, T1), plain);
  });

  it(`at most ${MAX_CAPPED} workloads, the oldest forgotten`, () => {
    let status: AppMonitorStatus | undefined;
    for (let i = 0; i <= MAX_CAPPED; i += 1) status = withCapped(status, { ...web, workload: { kind: "Deployment", name: `w${i}` } }, T0);
    const names = cappedWorkloads(status).map((c) => c.workload.name);
    assert.equal(names.length, MAX_CAPPED);
    assert.equal(names[0], "w1");
  });

  it("other conditions are kept", () => {
    const ruleReady = { type: "RuleReady", status: "True" as const, reason: "RuleApplied", message: "ok", lastTransitionTime: T0 };
    const status = withCapped({ conditions: [ruleReady] }, web, T1);
    assert.deepEqual(status?.conditions?.map((c) => c.type), ["RuleReady", CAPPED_CONDITION]);
  });
});

describe("report: status changes of AtCap and of a scale", () => {
  it("an AtCap skip lists the workload with the containers skipped at the cap, sorted, not the others", () => {
    const change = cappedStatus({ kind: "Deployment", name: "web" }, [
      { container: "z", reason: "AtCap", message: "", cap: { maxMemory: "1Gi", source: "spec" } },
      { container: "a", reason: "AtCap", message: "", cap: { maxMemory: "1Gi", source: "spec" } },
      { container: "m", reason: "ContainerNotSelected", message: "" },
    ], T0);
    assert.deepEqual(cappedWorkloads(change(undefined)), [{ workload: { kind: "Deployment", name: "web" }, containers: ["a", "z"], maxMemory: "1Gi", source: "spec", since: T0 }]);
  });

  it("a scale takes its workload out of the list", () => {
    const capped = withCapped(undefined, web, T0);
    const entry = { time: T1, workload: web.workload, event: "e2", changes: [{ container: "app", from: { limit: "1Gi" }, to: { limit: "2Gi" } }], dryRun: false };
    const after = scaledStatus(entry, undefined, 20)(capped);
    assert.deepEqual(cappedWorkloads(after), []);
    assert.equal(condition(after)?.status, "False");
    assert.equal(after.scaleCount, 1);
  });
});

describe("AtCap through the flow and the follow-up tick (in-memory cluster)", () => {
  const log = pino({ level: "silent" });

  it("alert after alert at the cap: one status write; raising maxMemory drops the entry on the next tick", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi", cooldownSeconds: 0 });
    const deps = flowDeps(cluster);
    const am = () => cluster.appMonitors.get(`${NS}/mymonitor`) as { metadata: { resourceVersion: string }; spec: Record<string, unknown>; status?: AppMonitorStatus };
    for (const id of ["e1", "e2", "e3"]) assert.equal((await handleFiring(deps, id, alertData(), log)).reason, "AtCap");
    assert.equal(cluster.writes.length, 0, "no patch");
    assert.deepEqual(cappedWorkloads(am().status).map((c) => [c.workload.name, c.containers, c.maxMemory]), [["memhog", ["memhog"], "384Mi"]]);
    assert.equal(am().metadata.resourceVersion, "2", "written once, the later alerts found it listed");

    const follow = { cluster, events: deps.events, status: deps.status, now: deps.now };
    assert.deepEqual(await followRollouts(follow, log), { checked: 0, ended: 0, pending: 0 });
    assert.equal(am().metadata.resourceVersion, "2", "the cap unchanged: the tick writes nothing");
    am().spec = { ...am().spec, maxMemory: "1Gi" };
    await followRollouts(follow, log);
    assert.deepEqual(cappedWorkloads(am().status), []);
    assert.deepEqual(am().status?.conditions?.map((c) => [c.type, c.status, c.reason]), [[CAPPED_CONDITION, "False", "BelowMaxMemory"]]);
  });
});

describe("withCapsOf", () => {
  it("keeps the workloads listed at today's cap, drops the others; none dropped: the same status", () => {
    const both = withCapped(withCapped(undefined, web, T0), { ...db, maxMemory: "2Gi" }, T0);
    assert.equal(withCapsOf(both, () => "1Gi", T1) === both, false);
    assert.deepEqual(cappedWorkloads(withCapsOf(both, () => "1Gi", T1)), [web]);
    assert.deepEqual(cappedWorkloads(withCapsOf(both, () => "8Gi", T1)), [], "the install's default cap now: neither is at it");
    const one = withCapped(undefined, web, T0);
    assert.equal(withCapsOf(one, () => "1Gi", T1), one);
  });
});
