// status.recentScales and scaleCount (functions/memory-scaler/status/recent-scales.ts), as tables.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { RecordedScale } from "../../../../functions/memory-scaler/model.ts";
import { recordState, type ScaleEntry, withScales } from "../../../../functions/memory-scaler/status/recent-scales.ts";

describe("withScales", () => {
  const change = { container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } };
  const entry = (time: string, name: string, dryRun = false): ScaleEntry => ({ time, workload: { kind: "Deployment", name }, changes: [change], dryRun });

  it("counts real scales, keeps the latest time and lists newest first", () => {
    const status = withScales({ conditions: [{ type: "RuleReady", status: "True", reason: "Synced", message: "", lastTransitionTime: "2025-01-01T00:00:00Z" }] }, [
      entry("2025-06-01T12:00:00Z", "a"),
      entry("2025-06-01T12:00:05Z", "b"),
    ], 10);
    assert.equal(status.scaleCount, 2);
    assert.equal(status.lastScaleTime, "2025-06-01T12:00:05Z");
    assert.deepEqual(status.recentScales?.map((r) => r.workload.name), ["b", "a"]);
    assert.equal(status.conditions?.[0]?.type, "RuleReady", "rule-sync's conditions are kept");
  });

  it("bounds recentScales", () => {
    const entries = Array.from({ length: 15 }, (_, i) => entry(new Date(Date.UTC(2025, 5, 1, 12, 0, i)).toISOString(), `w${i}`));
    const status = withScales({ scaleCount: 7 }, entries, 10);
    assert.equal(status.recentScales?.length, 10);
    assert.equal(status.recentScales?.[0]?.workload.name, "w14");
    assert.equal(status.scaleCount, 22);
  });

  it("counts one scale once, however often it is written; a repair goes where its time puts it", () => {
    const b = entry("2025-06-01T12:00:05Z", "b");
    const once = withScales(undefined, [entry("2025-06-01T12:00:00Z", "a"), entry("2025-06-01T12:00:09Z", "c")], 10);
    const repaired = withScales(once, [{ ...b, repair: true }], 10);
    const twice = withScales(repaired, [b, { ...b, repair: true }], 10);
    assert.equal(repaired.scaleCount, 3);
    assert.deepEqual(twice, repaired);
    assert.deepEqual(repaired.recentScales?.map((r) => r.workload.name), ["c", "b", "a"]);
    assert.equal(repaired.lastScaleTime, "2025-06-01T12:00:09Z");
  });

  it("a repair of a scale the bounded list may have dropped is not counted; a new scale always is", () => {
    const full = withScales(undefined, Array.from({ length: 3 }, (_, i) => entry(`2025-06-01T12:00:0${i + 5}Z`, `w${i}`)), 3);
    const old = entry("2025-06-01T12:00:01Z", "z");
    assert.deepEqual(withScales(full, [{ ...old, repair: true }], 3), full);
    const sameSecond = withScales(full, [entry("2025-06-01T12:00:05Z", "y")], 3);
    assert.equal(sameSecond.scaleCount, 4);
  });

  it("two scales of one workload in one second, by two events, count twice; each event's scale once", () => {
    const first: ScaleEntry = { ...entry("2025-06-01T12:00:05Z", "a"), event: "e1" };
    const second: ScaleEntry = { ...entry("2025-06-01T12:00:05Z", "a"), event: "e2" };
    const both = withScales(withScales(undefined, [first], 10), [second], 10);
    assert.equal(both.scaleCount, 2);
    assert.deepEqual(both.recentScales?.map((r) => r.event), ["e2", "e1"]);
    assert.deepEqual(withScales(both, [{ ...first, repair: true }, second], 10), both);
  });

  it("lists a dry run without counting it, and once", () => {
    const once = withScales(undefined, [entry("2025-06-01T12:00:00Z", "a", true)], 10);
    const twice = withScales(once, [entry("2025-06-01T12:01:00Z", "a", true)], 10);
    assert.equal(twice.scaleCount, 0);
    assert.equal(twice.lastScaleTime, undefined);
    assert.equal(twice.recentScales?.length, 1);
    assert.equal((twice.recentScales?.[0] as { dryRun?: boolean }).dryRun, true);
  });
});

describe("recordState", () => {
  const rec = (time: string, name: string, dryRun = false): RecordedScale => ({
    time,
    workload: { kind: "Deployment", name },
    container: "c",
    from: { limit: "1Gi" },
    to: { limit: "2Gi" },
    ...(dryRun ? { dryRun: true } : {}),
  });
  const scale = { time: "2025-06-01T12:00:05Z", workload: { kind: "Deployment", name: "a" } };
  const table: [string, RecordedScale[], string][] = [
    ["an empty list", [], "missing"],
    ["a list not full: nothing dropped", [rec("2025-06-01T12:00:09Z", "b")], "missing"],
    ["listed", [rec("2025-06-01T12:00:09Z", "b"), rec("2025-06-01T12:00:05Z", "a")], "recorded"],
    ["listed with another spelling of the time", [rec("2025-06-01T12:00:05.000Z", "a")], "recorded"],
    ["another workload at that time", [rec("2025-06-01T12:00:05Z", "b"), rec("2025-06-01T12:00:00Z", "c")], "missing"],
    ["only a dry run of it", [rec("2025-06-01T12:00:05Z", "a", true), rec("2025-06-01T12:00:00Z", "c")], "missing"],
    ["older entries listed: it cannot have been dropped", [rec("2025-06-01T12:00:09Z", "b"), rec("2025-06-01T12:00:01Z", "c")], "missing"],
    ["full, every entry as new or newer: it may have been dropped", [rec("2025-06-01T12:00:09Z", "b"), rec("2025-06-01T12:00:05Z", "c")], "unknown"],
  ];
  for (const [name, recent, want] of table) {
    it(`${name}: ${want}`, () => assert.equal(recordState(recent, scale, 2), want));
  }
  const byEvent: [string, RecordedScale[], string][] = [
    ["listed with its event id", [{ ...rec("2025-06-01T12:00:05Z", "a"), event: "e1" }], "recorded"],
    ["listed without an event id (an older version's entry)", [rec("2025-06-01T12:00:05Z", "a")], "recorded"],
    ["the same workload and second by another event", [{ ...rec("2025-06-01T12:00:05Z", "a"), event: "e0" }], "missing"],
  ];
  for (const [name, recent, want] of byEvent) {
    it(`event e1: ${name}: ${want}`, () => assert.equal(recordState(recent, { ...scale, event: "e1" }, 2), want));
  }
});
