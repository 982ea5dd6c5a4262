// The down-step of spec.scaleDown: the step, its floors, the peak's margin, the backoff after a flap, DryRun; and the record's fields.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { validateAppMonitorSpec } from "../../../../../functions/lib/appmonitor-spec.ts";
import type { AppMonitorSpecWithDefaults, AppMonitorStatus } from "../../../../../functions/lib/appmonitor.ts";
import { type ContainerMemory, formatScaleRecord, parseScaleRecord, type RecordedScale, type ScaleRecordAnnotation } from "../../../../../functions/memory-scaler/model.ts";
import type { Scale } from "../../../../../functions/memory-scaler/outcome.ts";
import { checkPeak, planScaleDown, type ScaleDownInput } from "../../../../../functions/memory-scaler/scale/decide/scale-down.ts";
import { recordFields } from "../../../../../functions/memory-scaler/scale/targets/scale-record.ts";
import { flapsInStatus, quietPeriodMs, scaleDownDue, workloadsDue } from "../../../../../functions/memory-scaler/status/scale-down.ts";

const NOW = new Date("2025-06-02T12:00:00Z");
const DAY = 86400;
const ago = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
const MI = 1024 * 1024;

function spec(over: Record<string, unknown> = {}): AppMonitorSpecWithDefaults {
  return validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2, scaleDown: {}, ...over });
}

const workload = { kind: "Deployment", name: "memhog" };
const raised: ContainerMemory = { name: "memhog", limit: "768Mi", request: "512Mi" };

/** The record of the original demo's first raise, `time` seconds ago. */
function raise(time = ago(DAY + 60), over: Partial<ScaleRecordAnnotation> = {}): ScaleRecordAnnotation {
  return { time, appmonitor: "mymonitor", event: "e1", multiplier: 2, changes: [{ container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }], original: { memhog: { limit: "384Mi", request: "256Mi" } }, ...over };
}

/** The status after that raise. */
function statusOf(record: ScaleRecordAnnotation, more: RecordedScale[] = []): AppMonitorStatus {
  const entries: RecordedScale[] = record.changes.map((c) => ({ time: record.time, workload, event: record.event, container: c.container, from: c.from, to: c.to, ...(record.direction === "down" ? { direction: "down" as const } : {}) }));
  return { recentScales: [...more, ...entries] };
}

function input(over: Partial<ScaleDownInput> = {}): ScaleDownInput {
  const record = over.record ?? raise();
  return { spec: spec(), appmonitor: "mymonitor", status: statusOf(record), workload, record, lastScaleTime: record.time, desired: [raised], running: [raised], now: NOW, ...over };
}

describe("planScaleDown", () => {
  it("steps the original demo back to the memory before its raise, the request keeping its ratio", () => {
    const plan = planScaleDown(input());
    assert.equal(plan.action, "scale");
    assert.deepEqual(plan.action === "scale" && plan.changes, [{ container: "memhog", from: { limit: "768Mi", request: "512Mi" }, to: { limit: "384Mi", request: "256Mi" } }]);
    assert.equal(plan.action === "scale" && plan.direction, "down");
    assert.equal(plan.action === "scale" && plan.floored, true, "384Mi is where it started");
    assert.equal(plan.action === "scale" && plan.dryRun, false);
  });

  it("keeps the request's ratio where it is not the raise's own", () => {
    const record = raise(undefined, { changes: [{ container: "memhog", from: { limit: "300Mi", request: "100Mi" }, to: { limit: "600Mi", request: "200Mi" } }], original: { memhog: { limit: "300Mi", request: "100Mi" } } });
    const now: ContainerMemory = { name: "memhog", limit: "600Mi", request: "200Mi" };
    const plan = planScaleDown(input({ record, desired: [now], running: [now] }));
    assert.deepEqual(plan.action === "scale" && plan.changes[0]?.to, { limit: "300Mi", request: "100Mi" });
  });

  it("goes one raise back at a time, after a down-step by the record's multiplier, and never below the memory before the first scale", () => {
    // 384Mi → 768Mi → 1536Mi, then down to 768Mi: the next step is 384Mi, the floor.
    const down = raise(ago(DAY + 60), { direction: "down", changes: [{ container: "memhog", from: { limit: "1536Mi", request: "1Gi" }, to: { limit: "768Mi", request: "512Mi" } }] });
    const plan = planScaleDown(input({ record: down }));
    assert.deepEqual(plan.action === "scale" && plan.changes[0]?.to, { limit: "384Mi", request: "256Mi" });
    // A floor above the raise's value: 500Mi before the first scale of a workload raised 500Mi → 1000Mi → 2000Mi and lowered to 1000Mi.
    const high = raise(ago(DAY + 60), { direction: "down", changes: [{ container: "memhog", from: { limit: "2000Mi" }, to: { limit: "1000Mi" } }], original: { memhog: { limit: "700Mi" } } });
    const at = { name: "memhog", limit: "1000Mi" };
    const floored = planScaleDown(input({ record: high, desired: [at], running: [at] }));
    assert.deepEqual(floored.action === "scale" && floored.changes[0]?.to, { limit: "700Mi" });
  });

  it("never goes below a containerPolicies minMemory", () => {
    const plan = planScaleDown(input({ spec: spec({ containerPolicies: [{ containerName: "memhog", minMemory: "512Mi" }] }) }));
    assert.deepEqual(plan.action === "scale" && plan.changes[0]?.to, { limit: "512Mi", request: "357913942" });
    assert.equal(plan.action === "scale" && plan.floored, true);
    const atMin = planScaleDown(input({ spec: spec({ containerPolicies: [{ containerName: "memhog", minMemory: "768Mi" }] }) }));
    assert.equal(atMin.action === "skip" && atMin.reason, "AtFloor");
  });

  it("reads a record of an older version (no original): its from is the floor", () => {
    const old = parseScaleRecord(JSON.stringify({ time: ago(DAY + 60), appmonitor: "mymonitor", event: "e1", multiplier: 2, changes: raise().changes }));
    assert.equal(old?.original, undefined);
    const plan = planScaleDown(input({ record: old }));
    assert.deepEqual(plan.action === "scale" && plan.changes[0]?.to, { limit: "384Mi", request: "256Mi" });
  });

  it("is a dry run under spec.mode DryRun", () => {
    const plan = planScaleDown(input({ spec: spec({ mode: "DryRun" }) }));
    assert.equal(plan.action === "scale" && plan.dryRun, true);
  });

  for (const [name, over, reason] of [
    ["no spec.scaleDown", { spec: validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2 }) }, "ScaleDownOff"],
    ["no record", { record: undefined, lastScaleTime: undefined, status: {} }, "NotRaised"],
    ["another AppMonitor's record", { record: raise(undefined, { appmonitor: "other" }) }, "NotRaised"],
    ["the quiet period not over", { record: raise(ago(DAY - 60)) }, "QuietPeriod"],
    ["an alert of it within the period", { status: { ...statusOf(raise()), lastOutcome: { time: ago(3600), pod: "ns/memhog-1", workload, outcome: "skipped", reason: "BelowThreshold", message: "" } } as AppMonitorStatus }, "QuietPeriod"],
    ["its Pod behind the template", { running: [{ name: "memhog", limit: "384Mi", request: "256Mi" }] }, "RolloutUnderWay"],
    ["the template changed since", { desired: [{ name: "memhog", limit: "1Gi", request: "512Mi" }] }, "TemplateDiffers"],
    ["mode Off", { spec: spec({ containerPolicies: [{ containerName: "memhog", mode: "Off" }] }) }, "PolicyOff"],
  ] as const) {
    it(`refuses with ${name}: ${reason}`, () => {
      const plan = planScaleDown(input(over as Partial<ScaleDownInput>));
      assert.equal(plan.action, "skip");
      assert.equal(plan.action === "skip" && plan.reason, reason);
    });
  }

  it("waits within the cooldown when it is longer than the quiet period", () => {
    const record = raise(ago(120));
    const plan = planScaleDown(input({ spec: spec({ scaleDown: { quietPeriodSeconds: 60 }, cooldownSeconds: 300 }), record, lastScaleTime: record.time, status: statusOf(record) }));
    assert.equal(plan.action === "skip" && plan.reason, "QuietPeriod");
  });

  it("doubles the quiet period after a raise that followed a down-step (record's flaps)", () => {
    const record = raise(ago(DAY + 60), { flaps: 1 });
    const plan = planScaleDown(input({ record }));
    assert.equal(plan.action === "skip" && plan.reason, "QuietPeriod");
    assert.match(plan.action === "skip" ? plan.message : "", /172800s/);
    const later = raise(ago(2 * DAY + 60), { flaps: 1 });
    assert.equal(planScaleDown(input({ record: later })).action, "scale");
  });
});

describe("checkPeak", () => {
  const step = planScaleDown(input()) as Scale;

  it("keeps the step when the peak stays the margin below the threshold at the lower limit", () => {
    // 120Mi of 384Mi is 31%: well below 75 − 10.
    const checked = checkPeak(step, new Map([["memhog", 120 * MI]]), 75, 10);
    assert.equal(checked.action, "scale");
  });

  it("refuses PeakNearThreshold when it does not (a step that would land at 65% or more)", () => {
    // 320Mi of 384Mi is 83%: the lower limit would alert at once.
    const near = checkPeak(step, new Map([["memhog", 320 * MI]]), 75, 10);
    assert.equal(near.action === "skip" && near.reason, "PeakNearThreshold");
    assert.equal(near.action === "skip" && near.skipped?.[0]?.percent, 83.3);
    // Just above the ceiling: 65.1% of 384Mi.
    const edge = checkPeak(step, new Map([["memhog", 0.651 * 384 * MI]]), 75, 10);
    assert.equal(edge.action === "skip" && edge.reason, "PeakNearThreshold");
    assert.equal(checkPeak(step, new Map([["memhog", 0.649 * 384 * MI]]), 75, 10).action, "scale");
  });

  it("refuses NotMeasured without a sample", () => {
    const none = checkPeak(step, new Map(), 75, 10);
    assert.equal(none.action === "skip" && none.reason, "NotMeasured");
  });
});

describe("recordFields", () => {
  const first = { container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } };

  it("records the memory before the first scale and carries it along the chain", () => {
    assert.deepEqual(recordFields(undefined, [first], "up"), { original: { memhog: { limit: "384Mi", request: "256Mi" } } });
    const second = { container: "memhog", from: { limit: "768Mi", request: "512Mi" }, to: { limit: "1536Mi", request: "1Gi" } };
    assert.deepEqual(recordFields(raise(), [second], "up").original, { memhog: { limit: "384Mi", request: "256Mi" } });
    // An older record without original: its from.
    const { original: _o, ...old } = raise();
    assert.deepEqual(recordFields(old, [second], "up").original, { memhog: { limit: "384Mi", request: "256Mi" } });
    // A template changed since (not what the last scale set): a new declaration.
    const redeclared = { container: "memhog", from: { limit: "1Gi" }, to: { limit: "2Gi" } };
    assert.deepEqual(recordFields(raise(), [redeclared], "up").original, { memhog: { limit: "1Gi" } });
  });

  it("counts a raise after a down-step as a flap, and says down for a down-step", () => {
    const down = recordFields(raise(), [{ container: "memhog", from: first.to, to: first.from }], "down");
    assert.equal(down.direction, "down");
    assert.equal(down.flaps, undefined);
    assert.equal(recordFields(raise(undefined, { direction: "down" }), [first], "up").flaps, 1);
    assert.equal(recordFields(raise(undefined, { direction: "down", flaps: 2 }), [first], "up").flaps, 3);
    assert.equal(recordFields(raise(undefined, { flaps: 2 }), [first], "up").flaps, 2);
  });

  it("round-trips through the annotation", () => {
    const record: ScaleRecordAnnotation = { ...raise(), direction: "down", flaps: 2 };
    assert.deepEqual(parseScaleRecord(formatScaleRecord(record)), record);
  });
});

describe("status: due for a down-step", () => {
  const scaleDown = { quietPeriodSeconds: DAY, marginPercent: 10 };

  it("quiet period doubles per flap, at most 8 times", () => {
    assert.deepEqual([0, 1, 2, 3, 4, 9].map((f) => quietPeriodMs(scaleDown, f) / 1000 / DAY), [1, 2, 4, 8, 8, 8]);
  });

  it("counts flaps from recentScales: a raise after a down-step", () => {
    const at = (s: number, direction?: "down"): RecordedScale => ({ time: ago(s), workload, container: "memhog", from: { limit: "1" }, to: { limit: "2" }, ...(direction === undefined ? {} : { direction }) });
    assert.equal(flapsInStatus([at(10), at(20, "down"), at(30), at(40, "down"), at(50)], workload), 2);
    assert.equal(flapsInStatus([at(10, "down"), at(50)], workload), 0);
  });

  it("lists the raised workloads whose quiet period passed, and not a floored one or one with a rollout pending", () => {
    const record = raise();
    assert.deepEqual(workloadsDue(statusOf(record), scaleDown, NOW), [workload]);
    assert.deepEqual(workloadsDue(statusOf(raise(ago(60))), scaleDown, NOW), []);
    const floored: AppMonitorStatus = { recentScales: [{ time: ago(DAY + 60), workload, container: "memhog", from: { limit: "768Mi" }, to: { limit: "384Mi" }, direction: "down", floored: true }] };
    assert.equal(scaleDownDue(floored, workload, scaleDown, 0, NOW).due, false);
    const pending = { ...statusOf(record), rollouts: [{ workload, generation: 3, startedAt: ago(10), event: "e" }] } as AppMonitorStatus;
    assert.deepEqual(workloadsDue(pending, scaleDown, NOW), []);
    // A dry run of a down-step is activity: the next is asked a quiet period later.
    const dry: AppMonitorStatus = statusOf(record, [{ time: ago(60), workload, container: "memhog", from: { limit: "768Mi" }, to: { limit: "384Mi" }, direction: "down", dryRun: true }]);
    assert.deepEqual(workloadsDue(dry, scaleDown, NOW), []);
  });
});
