// The repair of a workload's last scale from its last-scale record (functions/memory-scaler/status/repair.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatScaleRecord } from "../../../../functions/memory-scaler/model.ts";
import { repairOf } from "../../../../functions/memory-scaler/status/repair.ts";

describe("repairOf", () => {
  const from = { request: "256Mi", limit: "384Mi" };
  const to = { request: "512Mi", limit: "768Mi" };
  const changes = [{ container: "memhog", from, to }];
  const time = "2025-06-01T12:00:00Z";
  const record = formatScaleRecord({ time, appmonitor: "m", event: "e1", multiplier: 2, changes });
  const workload = { kind: "Deployment", name: "web" };
  const listed = { time, workload, container: "memhog", from, to };
  type Case = [string, { lastScale?: string; record?: string; appmonitor?: string; status?: Record<string, unknown> }, "none" | "events" | "events+status"];
  const table: Case[] = [
    ["never scaled", {}, "none"],
    ["scaled before records were written", { lastScale: time }, "none"],
    ["an unreadable record", { lastScale: time, record: "{not json" }, "none"],
    ["a record without its changes", { lastScale: time, record: JSON.stringify({ time, appmonitor: "m", event: "e1", multiplier: 2, changes: [] }) }, "none"],
    ["a record of an older scale than the last-scale annotation", { lastScale: "2025-06-01T12:10:00Z", record }, "none"],
    ["another AppMonitor's scale", { lastScale: time, record, appmonitor: "other" }, "none"],
    ["status never written", { lastScale: time, record }, "events+status"],
    ["status without it, older entries listed", { lastScale: time, record, status: { scaleCount: 4, recentScales: [{ ...listed, time: "2025-06-01T11:00:00Z" }] } }, "events+status"],
    ["status records it", { lastScale: time, record, status: { scaleCount: 1, recentScales: [listed] } }, "events"],
    ["status records it with its event id", { lastScale: time, record, status: { scaleCount: 1, recentScales: [{ ...listed, event: "e1" }] } }, "events"],
    ["status records another event's scale of that second", { lastScale: time, record, status: { scaleCount: 1, recentScales: [{ ...listed, event: "e0" }] } }, "events+status"],
    ["status without it, only newer entries, not full", { lastScale: time, record, status: { scaleCount: 2, recentScales: [{ ...listed, workload: { kind: "Deployment", name: "x" }, time: "2025-06-01T12:05:00Z" }] } }, "events+status"],
    ["status may have dropped it: full, only newer entries", { lastScale: time, record, status: { scaleCount: 30, recentScales: [{ ...listed, workload: { kind: "Deployment", name: "x" }, time: "2025-06-01T12:05:00Z" }, { ...listed, workload: { kind: "Deployment", name: "y" }, time: "2025-06-01T12:04:00Z" }] } }, "events"],
  ];
  for (const [name, input, want] of table) {
    it(`${name}: ${want}`, () => {
      const repair = repairOf({ lastScale: input.lastScale, record: input.record, workload, appmonitor: input.appmonitor ?? "m", status: input.status, limit: 2 });
      const got = repair.action === "none" ? "none" : repair.entry === undefined ? "events" : "events+status";
      assert.equal(got, want);
      if (repair.action === "repair") {
        assert.deepEqual(repair.record, { time, appmonitor: "m", event: "e1", multiplier: 2, changes });
        if (repair.entry !== undefined) assert.deepEqual(repair.entry, { time, workload, event: "e1", changes, dryRun: false, repair: true });
      }
    });
  }
});
