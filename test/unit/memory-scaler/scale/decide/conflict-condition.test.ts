// The Conflict condition on each AppMonitor that covers a contested workload
// (functions/memory-scaler/scale/decide/conflict-condition.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AppMonitorStatus } from "../../../../../functions/lib/appmonitor.ts";
import { CONFLICT_CONDITION, withConflict } from "../../../../../functions/memory-scaler/scale/decide/conflict-condition.ts";
import { type CoverageConflict, validAppMonitors } from "../../../../../functions/memory-scaler/scale/decide/governing.ts";

const NOW = "2026-12-02T05:00:00Z";
const LATER = "2026-12-02T05:10:00Z";
const web = { kind: "Deployment", name: "web" };
const [exact, wide] = validAppMonitors("ns", [
  { metadata: { name: "exact" }, spec: { memThresholdPercent: 75, memMultiplier: 2, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } } },
  { metadata: { name: "wide" }, spec: { memThresholdPercent: 75, memMultiplier: 2 } },
]).valid;
assert.ok(exact !== undefined && wide !== undefined);
const conflict: CoverageConflict = { workload: web, contenders: [{ appMonitor: exact, coverage: "targetRef" }, { appMonitor: wide, coverage: "annotation" }] };
const conditionOf = (status: AppMonitorStatus | undefined) => status?.conditions?.find((c) => c.type === CONFLICT_CONDITION);

describe("withConflict", () => {
  it("the winner: True TakesPrecedence, naming the other", () => {
    const c = conditionOf(withConflict(undefined, "exact", web, conflict, NOW));
    assert.deepEqual([c?.status, c?.reason, c?.lastTransitionTime], ["True", "TakesPrecedence", NOW]);
    assert.match(c?.message ?? "", /^Deployment web is covered by this AppMonitor \(targetRef\) and by AppMonitor wide \(annotation\): this AppMonitor acts on it/);
  });

  it("the loser: True Outranked, naming the winner", () => {
    const c = conditionOf(withConflict({ scaleCount: 2 }, "wide", web, conflict, NOW));
    assert.deepEqual([c?.status, c?.reason], ["True", "Outranked"]);
    assert.match(c?.message ?? "", /by AppMonitor exact \(targetRef\): AppMonitor exact acts on it, this one's alerts for it are skipped \(AppMonitorConflict\)/);
  });

  it("the same conflict again: the status unchanged, so nothing is written", () => {
    const once = withConflict(undefined, "wide", web, conflict, NOW);
    assert.equal(withConflict(once, "wide", web, conflict, LATER), once);
  });

  it("no conflict over the same workload any more: False NoConflict, a new transition time", () => {
    const once = withConflict(undefined, "wide", web, conflict, NOW);
    const c = conditionOf(withConflict(once, "wide", web, undefined, LATER));
    assert.deepEqual([c?.status, c?.reason, c?.lastTransitionTime], ["False", "NoConflict", LATER]);
  });

  it("no conflict over another workload: a conflict over web stands", () => {
    const once = withConflict(undefined, "wide", web, conflict, NOW);
    assert.equal(withConflict(once, "wide", { kind: "Deployment", name: "db" }, undefined, LATER), once);
  });

  it("no conflict and no condition: nothing to write", () => {
    const status = { scaleCount: 1 };
    assert.equal(withConflict(status, "wide", web, undefined, NOW), status);
    assert.equal(withConflict(undefined, "wide", web, undefined, NOW), undefined);
  });
});
