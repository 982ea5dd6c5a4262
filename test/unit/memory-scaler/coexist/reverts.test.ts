// Reverts and the revert budget (functions/memory-scaler/coexist/reverts.ts), as tables.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ContainerMemory } from "../../../../functions/memory-scaler/model.ts";
import { budgetUse, describeRevert, detectRevert, detectRevertFromStatus } from "../../../../functions/memory-scaler/coexist/reverts.ts";
import { formatScaleRecord, parseScaleRecord, type RecordedScale, type ScaleRecordAnnotation } from "../../../../functions/memory-scaler/model.ts";

const T = "2025-06-01T11:50:00Z";
const NOW = new Date("2025-06-01T12:00:00Z");
const record = (over: Partial<ScaleRecordAnnotation> = {}): ScaleRecordAnnotation => ({
  time: T,
  appmonitor: "mymonitor",
  event: "e1",
  multiplier: 2,
  changes: [{ container: "app", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }],
  ...over,
});
const template = (limit: string | undefined, request: string | undefined, name = "app"): ContainerMemory[] => [{ name, ...(limit === undefined ? {} : { limit }), ...(request === undefined ? {} : { request }) }];

describe("detectRevert", () => {
  const cases: { name: string; lastScale?: string; record?: string; template: ContainerMemory[]; want: string | undefined }[] = [
    { name: "the template has what the scale set", lastScale: T, record: formatScaleRecord(record()), template: template("768Mi", "512Mi"), want: undefined },
    { name: "the same values written otherwise", lastScale: T, record: formatScaleRecord(record()), template: template("805306368", "0.5Gi"), want: undefined },
    { name: "raised further by someone", lastScale: T, record: formatScaleRecord(record()), template: template("1Gi", "512Mi"), want: undefined },
    { name: "limit and request put back", lastScale: T, record: formatScaleRecord(record()), template: template("384Mi", "256Mi"), want: "app: limit 768Mi → 384Mi, request 512Mi → 256Mi" },
    { name: "only the request lowered", lastScale: T, record: formatScaleRecord(record()), template: template("768Mi", "256Mi"), want: "app: limit 768Mi → 768Mi, request 512Mi → 256Mi" },
    { name: "the request removed", lastScale: T, record: formatScaleRecord(record()), template: template("768Mi", undefined), want: "app: limit 768Mi → 768Mi, request 512Mi → none" },
    { name: "the container removed: not a revert", lastScale: T, record: formatScaleRecord(record()), template: template("384Mi", "256Mi", "other"), want: undefined },
    { name: "no record", lastScale: T, template: template("384Mi", "256Mi"), want: undefined },
    { name: "an unreadable record", lastScale: T, record: "{", template: template("384Mi", "256Mi"), want: undefined },
    { name: "the record is not the last scale's (another time)", lastScale: "2025-06-01T11:55:00Z", record: formatScaleRecord(record()), template: template("384Mi", "256Mi"), want: undefined },
    { name: "no last-scale annotation", record: formatScaleRecord(record()), template: template("384Mi", "256Mi"), want: undefined },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.want === undefined ? "none" : "Reverted"}`, () => {
      const revert = detectRevert({ lastScale: c.lastScale, record: c.record, templateContainers: c.template });
      assert.equal(revert === undefined ? undefined : describeRevert(revert), c.want);
    });
  }
});

describe("detectRevertFromStatus", () => {
  const entry = (time: string, over: Partial<RecordedScale> = {}): RecordedScale => ({ time, workload: { kind: "Deployment", name: "web" }, event: `e-${time}`, container: "app", from: { limit: "1Gi" }, to: { limit: "2Gi" }, ...over });
  const template = [{ name: "app", kind: "container" as const, limit: "1Gi" }];
  const detect = (recent: RecordedScale[]) =>
    detectRevertFromStatus({ workload: { kind: "Deployment", name: "web" }, appmonitor: "m", multiplier: 2, recent, now: new Date("2025-06-01T12:00:00Z"), templateContainers: template });
  it("the newest applied entry of the workload within the hour stands for the record", () => {
    const revert = detect([entry("2025-06-01T11:50:00Z", { held: "Reverted", to: { limit: "4Gi" } }), entry("2025-06-01T11:40:00Z"), entry("2025-06-01T11:30:00Z", { to: { limit: "1Gi" } })]);
    assert.equal(revert === undefined ? undefined : `${revert.record.time} ${revert.record.event} ${describeRevert(revert)}`, "2025-06-01T11:40:00Z e-2025-06-01T11:40:00Z app: limit 2Gi → 1Gi");
  });
  it("none: an entry older than the hour, another workload's, a dry run, or memory the template still has", () => {
    assert.equal(detect([entry("2025-06-01T10:59:59Z")]), undefined);
    assert.equal(detect([entry("2025-06-01T11:40:00Z", { workload: { kind: "Deployment", name: "api" } })]), undefined);
    assert.equal(detect([entry("2025-06-01T11:40:00Z", { dryRun: true })]), undefined);
    assert.equal(detect([entry("2025-06-01T11:40:00Z", { to: { limit: "1Gi" } })]), undefined);
  });
  it("only a scale later than the one the workload's last-scale annotation names", () => {
    const at = (after: string) => detectRevertFromStatus({ workload: { kind: "Deployment", name: "web" }, appmonitor: "m", multiplier: 2, recent: [entry("2025-06-01T11:40:00Z")], now: new Date("2025-06-01T12:00:00Z"), templateContainers: template, after });
    assert.equal(at("2025-06-01T11:40:00Z"), undefined, "the annotations name that scale: the record says");
    assert.equal(at("2025-06-01T11:30:00Z")?.record.time, "2025-06-01T11:40:00Z", "they name an earlier one");
  });
});

describe("budgetUse", () => {
  const entry = (time: string, event: string | undefined, over: Partial<RecordedScale> = {}): RecordedScale => ({
    time,
    workload: { kind: "Deployment", name: "web" },
    ...(event === undefined ? {} : { event }),
    container: "app",
    from: { limit: "1" },
    to: { limit: "2" },
    ...over,
  });
  const workload = { kind: "Deployment", name: "web" };
  const cases: { name: string; record?: ScaleRecordAnnotation; recent?: RecordedScale[]; budget?: number; used: number; exhausted: boolean }[] = [
    { name: "nothing", used: 0, exhausted: false },
    { name: "the record alone", record: record(), used: 1, exhausted: false },
    { name: "the record and its status entry count once", record: record(), recent: [entry(T, "e1")], used: 1, exhausted: false },
    { name: "an entry of an older version (no event id) matches on time", record: record(), recent: [entry(T, undefined)], used: 1, exhausted: false },
    { name: "two scales in one second are two", record: record(), recent: [entry(T, "e0")], used: 2, exhausted: false },
    { name: "the record's earlier scales", record: record({ earlier: [{ time: "2025-06-01T11:40:00Z", event: "e0" }, { time: "2025-06-01T11:30:00Z", event: "e-1" }] }), used: 3, exhausted: true },
    { name: "earlier scales both in the record and the status", record: record({ earlier: [{ time: "2025-06-01T11:40:00Z", event: "e0" }] }), recent: [entry("2025-06-01T11:40:00Z", "e0"), entry(T, "e1")], used: 2, exhausted: false },
    { name: "a status entry the record lacks (annotations stripped)", recent: [entry("2025-06-01T11:40:00Z", "e0"), entry(T, "e1"), entry("2025-06-01T11:20:00Z", "e-1")], used: 3, exhausted: true },
    { name: "older than an hour: not counted", recent: [entry("2025-06-01T11:00:00Z", "e0"), entry("2025-06-01T10:30:00Z", "e-1")], record: record(), used: 1, exhausted: false },
    { name: "dry-run and held entries are not scales", recent: [entry("2025-06-01T11:40:00Z", "d", { dryRun: true }), entry("2025-06-01T11:41:00Z", "h", { held: "Reverted" }), entry("2025-06-01T11:42:00Z", "g", { held: "GitOpsManaged" })], used: 0, exhausted: false },
    { name: "another workload's entries", recent: [entry("2025-06-01T11:40:00Z", "x", { workload: { kind: "Deployment", name: "api" } }), entry("2025-06-01T11:41:00Z", "y", { workload: { kind: "StatefulSet", name: "web" } })], used: 0, exhausted: false },
    { name: "budget 1, one scale", record: record(), budget: 1, used: 1, exhausted: true },
    { name: "budget 0: a reverted workload is never patched again", budget: 0, used: 0, exhausted: true },
    { name: "budget 5, three scales", record: record({ earlier: [{ time: "2025-06-01T11:40:00Z", event: "e0" }, { time: "2025-06-01T11:30:00Z", event: "e-1" }] }), budget: 5, used: 3, exhausted: false },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.used} used${c.exhausted ? ", exhausted" : ""}`, () => {
      const use = budgetUse({ workload, record: c.record, recent: c.recent ?? [], now: NOW, budget: c.budget });
      assert.equal(use.scales.length, c.used);
      assert.equal(use.exhausted, c.exhausted);
      assert.equal(use.budget, c.budget ?? 3);
    });
  }

  it("lists the scales newest first, at most ten", () => {
    const earlier = Array.from({ length: 12 }, (_, i) => ({ time: new Date(NOW.getTime() - (i + 2) * 60_000).toISOString(), event: `e${i}` }));
    const use = budgetUse({ workload, record: record({ time: "2025-06-01T11:59:00Z", earlier }), recent: [], now: NOW, budget: 10 });
    assert.equal(use.scales.length, 10);
    assert.equal(use.scales[0]?.time, "2025-06-01T11:59:00Z");
    assert.ok(use.exhausted);
  });

  it("the record's earlier marks round-trip through the annotation; malformed marks are dropped", () => {
    const written = formatScaleRecord(record({ earlier: [{ time: "2025-06-01T11:40:00Z", event: "e0" }] }));
    assert.deepEqual(parseScaleRecord(written)?.earlier, [{ time: "2025-06-01T11:40:00Z", event: "e0" }]);
    assert.doesNotMatch(formatScaleRecord(record({ earlier: [] })), /earlier/);
    const odd = JSON.stringify({ ...record(), earlier: [{ time: "no" }, 3, { time: "2025-06-01T11:40:00Z" }] });
    assert.deepEqual(parseScaleRecord(odd)?.earlier, [{ time: "2025-06-01T11:40:00Z" }]);
  });
});
