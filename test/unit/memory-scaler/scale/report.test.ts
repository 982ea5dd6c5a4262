// The table of what each ending of the scale flow writes and answers (functions/memory-scaler/scale/report.ts):
// its Events (as reasons), its one status write, and the outcome, for every row.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AppMonitorSpecWithDefaults } from "../../../../functions/lib/appmonitor.ts";
import type { ContainerChange } from "../../../../functions/memory-scaler/model.ts";
import type { Scale } from "../../../../functions/memory-scaler/outcome.ts";
import type { ValidAppMonitor } from "../../../../functions/memory-scaler/scale/decide/governing.ts";
import { conflictReports, releaseReport, repairReport, type ReportContext, reportOf } from "../../../../functions/memory-scaler/scale/report.ts";
import type { WriteTarget } from "../../../../functions/memory-scaler/scale/targets/target.ts";

const NOW = new Date("2025-06-01T12:00:00Z");
const change: ContainerChange = { container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } };
const scale: Scale = { action: "scale", changes: [change], skipped: [], dryRun: false };
const raw = { metadata: { name: "m", namespace: "team-a", resourceVersion: "7" } };
const am = { metadata: { name: "m", namespace: "team-a", uid: "am-1" }, spec: { maxMemory: "1Gi", memMultiplier: 2, cooldownSeconds: 300 } as AppMonitorSpecWithDefaults, raw } as ValidAppMonitor;
/** The fields of a target the table reads: a workload's template and a bare Pod differ only there. */
const target = (kind: string, wouldDo: string, scaledReason: "Scaled" | "Resized") => ({ view: { workload: { kind, name: "web" } }, writer: { wouldDo, scaledReason } }) as unknown as WriteTarget;
const deployment = target("Deployment", "would scale", "Scaled");
const context: ReportContext = { target: deployment, appMonitor: am, eventId: "e1", now: NOW, statusLimit: 10, trigger: "threshold" };
const reasons = (reported: readonly { reason: string }[]) => reported.map((r) => r.reason);

describe("reportOf", () => {
  for (const reason of ["UnsupportedOwner", "UnknownController"] as const) {
    it(`unsupported, ${reason}: its Warning, no status, skipped; no target or AppMonitor needed`, () => {
      const report = reportOf({ step: "unsupported", reason, message: "a Job" }, { eventId: "e1", now: NOW, statusLimit: 10, trigger: "threshold" });
      assert.deepEqual([reasons(report.reported), report.status, report.outcome], [[reason], undefined, { outcome: "skipped", reason, message: "a Job" }]);
    });
  }

  it("decided AtCap: the skip's Events and the workload listed in status.capped, from the AppMonitor as listed", () => {
    const skipped = [{ container: "memhog", reason: "AtCap", message: "at 1Gi", cap: { maxMemory: "1Gi", source: "spec" } as const }];
    const report = reportOf({ step: "decided", skip: { action: "skip", reason: "AtCap", message: "at the cap", skipped } }, context);
    assert.deepEqual(reasons(report.reported), ["AtCap"]);
    assert.ok(report.status !== undefined && "change" in report.status);
    assert.equal(report.status.from, raw);
    assert.deepEqual((report.status.change(undefined) as { capped?: unknown } | undefined)?.capped, [{ workload: { kind: "Deployment", name: "web" }, containers: ["memhog"], maxMemory: "1Gi", source: "spec", since: "2025-06-01T12:00:00Z" }]);
    assert.deepEqual(report.outcome, { outcome: "skipped", reason: "AtCap", message: "at the cap", skipped });
  });

  it("decided otherwise, and unconfirmed: no status; the evidence's skip is reported for its Events (BelowThreshold has them)", () => {
    const skip = { action: "skip", reason: "Cooldown", message: "scaled 10s ago", skipped: [] } as const;
    assert.equal(reportOf({ step: "decided", skip }, context).status, undefined);
    const unconfirmed = reportOf({ step: "unconfirmed", skip: { action: "skip", reason: "BelowThreshold", message: "40%" } }, context);
    assert.deepEqual([unconfirmed.reported, unconfirmed.status, unconfirmed.outcome], [[{ reason: "BelowThreshold", message: "40%" }], undefined, { outcome: "skipped", reason: "BelowThreshold", message: "40%" }]);
  });

  it("held by GitOps: its Warnings and a held recentScales entry; held by a revert: the entry only, and revert Held", () => {
    const gitOps = reportOf({ step: "held", gate: { action: "skip", reason: "GitOpsManaged", message: "not scaled: Argo CD", held: "GitOpsManaged" }, scale }, context);
    assert.deepEqual(reasons(gitOps.reported), ["GitOpsManaged"]);
    assert.deepEqual(gitOps.status, { entry: { time: "2025-06-01T12:00:00Z", workload: { kind: "Deployment", name: "web" }, event: "e1", changes: [change], dryRun: false, held: "GitOpsManaged" }, from: raw });
    assert.equal(gitOps.outcome.revert, undefined);
    const reverted = reportOf({ step: "held", gate: { action: "skip", reason: "Reverted", message: "not scaled: budget used", held: "Reverted" }, scale }, context);
    assert.deepEqual([reverted.reported, reverted.outcome.revert], [[], "Held"]);
    const hpa = reportOf({ step: "held", gate: { action: "skip", reason: "HPAOnMemory", message: "not scaled: an HPA" }, scale }, context);
    assert.deepEqual([reasons(hpa.reported), hpa.status], [["HPAOnMemory"], undefined]);
  });

  it("dryRun: DryRun Events, a dryRun entry, and the target's own words", () => {
    const pod = reportOf({ step: "dryRun", scale }, { ...context, target: target("Pod", "would resize in place", "Resized") });
    assert.deepEqual(reasons(pod.reported), ["DryRun"]);
    assert.ok(pod.status !== undefined && "entry" in pod.status && pod.status.entry.dryRun);
    assert.deepEqual(pod.outcome, { outcome: "dry-run", reason: "DryRun", message: "would resize in place: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi", changes: [change], skipped: [] });
  });

  it("the bounds that held a raise end the outcome and the Scaled, Resized and DryRun notes; a bound of a container not changed is left out", () => {
    const bounds = [{ message: "the multiplier is the install's ceiling MAX_MEM_MULTIPLIER 3 over spec.memMultiplier 10" }, { container: "memhog", message: "memhog capped by spec.maxMemory 1Gi" }, { container: "sidecar", message: "sidecar capped by spec.maxMemory 1Gi" }];
    const bounded: Scale = { ...scale, bounds };
    const clause = "; the multiplier is the install's ceiling MAX_MEM_MULTIPLIER 3 over spec.memMultiplier 10; memhog capped by spec.maxMemory 1Gi";
    const written = { reported: [{ reason: "Scaled", changes: [change], multiplier: 3, trigger: "threshold" as const }, { reason: "PodsReplaced" }], message: "scaled Deployment web by 3: …", rollout: undefined };
    const report = reportOf({ step: "written", written, scale: bounded, reverted: false, statusFrom: raw }, context);
    assert.equal(report.outcome.message, `scaled Deployment web by 3: …${clause}`);
    assert.deepEqual(report.reported.map((r) => (r as { bounds?: string }).bounds), [clause, undefined]);
    const dry = reportOf({ step: "dryRun", scale: bounded }, context);
    assert.equal(dry.outcome.message, `would scale: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi${clause}`);
    assert.equal((dry.reported[0] as { bounds?: string }).bounds, clause);
    assert.equal(reportOf({ step: "dryRun", scale }, context).outcome.message, "would scale: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi", "none held: nothing added");
  });

  it("refused: the refusal's Events with the changes, no status", () => {
    const report = reportOf({ step: "refused", reason: "Unschedulable", message: "no Node", scale }, context);
    assert.deepEqual([report.reported, report.status, report.outcome.reason], [[{ reason: "Unschedulable", message: "no Node", changes: [change] }], undefined, "Unschedulable"]);
  });

  it("written: the target's Events, the scale's status change from the writer's start, and Repatched after a revert", () => {
    const rollout = { workload: { kind: "Deployment", name: "web" }, generation: 2, startedAt: "2025-06-01T12:00:00Z", event: "e1" };
    const written = { reported: [{ reason: "Scaled" }], message: "scaled Deployment web by 2", rollout };
    const report = reportOf({ step: "written", written, scale, reverted: true, statusFrom: undefined }, context);
    assert.deepEqual(reasons(report.reported), ["Scaled"]);
    assert.ok(report.status !== undefined && "change" in report.status);
    assert.equal(report.status.from, undefined);
    const after = report.status.change(undefined);
    assert.deepEqual([after?.scaleCount, after?.recentScales?.[0]?.reverted, ((after as { rollouts?: unknown[] } | undefined)?.rollouts)?.length], [1, true, 1]);
    assert.deepEqual(report.outcome, { outcome: "scaled", reason: "Scaled", message: "scaled Deployment web by 2", changes: [change], skipped: [], revert: "Repatched" });
    const resized = reportOf({ step: "written", written: { ...written, rollout: undefined }, scale, reverted: false, statusFrom: raw }, { ...context, target: target("Pod", "would resize in place", "Resized") });
    assert.deepEqual([resized.outcome.reason, resized.outcome.revert], ["Resized", undefined]);
  });

  it("an ending that reads the AppMonitor without one is a bug of the caller", () => {
    assert.throws(() => reportOf({ step: "dryRun", scale }, { ...context, appMonitor: undefined }), /AppMonitor/);
  });
});

describe("repairReport", () => {
  const budget = { budget: 3, scales: [], exhausted: false };
  it("nothing to repair, nothing reverted: nothing to write", () => {
    assert.equal(repairReport({ repair: undefined, revert: undefined, budget, marks: [] }, deployment, am), undefined);
  });
  it("the last scale's Events and status change, and the revert's Warnings keyed by the scale that was reverted", () => {
    const status = (s: unknown) => s as never;
    const repair = { reported: { reason: "Scaled" }, status, time: "2025-06-01T11:00:00Z" };
    const revert = { record: { time: "2025-06-01T11:00:00Z", appmonitor: "m", event: "e0", multiplier: 2, changes: [change] }, containers: [{ container: "memhog", set: change.to, now: change.from }] };
    const report = repairReport({ repair, revert, budget } as never, deployment, am);
    assert.deepEqual(reasons(report?.reported ?? []), ["Scaled", "Reverted"]);
    assert.equal((report?.reported[1] as { key?: string }).key, "e0");
    assert.deepEqual(report?.status, { change: status, from: raw });
  });
});

describe("the flow's other endings and writes, as rows", () => {
  const bare = { eventId: "e1", now: NOW, statusLimit: 10, trigger: "threshold" } as const;
  it("ended: a NoAppMonitor Warning only when the Pod was read; PodGone none; skipped, no status", () => {
    const read = reportOf({ step: "ended", reason: "NoAppMonitor", message: "none", podRead: true }, bare);
    assert.deepEqual([reasons(read.reported), read.status, read.outcome], [["NoAppMonitor"], undefined, { outcome: "skipped", reason: "NoAppMonitor", message: "none" }]);
    assert.deepEqual(reasons(reportOf({ step: "ended", reason: "NoAppMonitor", message: "none", podRead: false }, bare).reported), []);
    assert.deepEqual(reasons(reportOf({ step: "ended", reason: "PodGone", message: "gone", podRead: false }, bare).reported), []);
  });
  it("notGoverned: NotCovered has its Warnings, the others none; skipped", () => {
    assert.deepEqual(reasons(reportOf({ step: "notGoverned", reason: "NotCovered", message: "m" }, bare).reported), ["NotCovered"]);
    const other = reportOf({ step: "notGoverned", reason: "AppMonitorConflict", message: "m" }, bare);
    assert.deepEqual([reasons(other.reported), other.outcome], [[], { outcome: "skipped", reason: "AppMonitorConflict", message: "m" }]);
  });
  it("conflictReports: one status write per contender, else on the named AppMonitor alone, each from the AppMonitor as listed", () => {
    const alone = conflictReports(undefined, am, { kind: "Deployment", name: "web" }, NOW);
    assert.deepEqual(alone.map((a) => [a.amRef, a.report.reported, a.report.status?.from]), [[{ namespace: "team-a", name: "m", uid: "am-1" }, [], raw]]);
    const other = { ...am, metadata: { ...am.metadata, name: "n", uid: "am-2" } } as ValidAppMonitor;
    const conflict = { workload: { kind: "Deployment", name: "web" }, contenders: [{ appMonitor: am }, { appMonitor: other }] } as never;
    assert.deepEqual(conflictReports(conflict, am, { kind: "Deployment", name: "web" }, NOW).map((a) => a.amRef.name), ["m", "n"]);
  });
  it("releaseReport: the hold's entry written from the AppMonitor as listed, no Events", () => {
    const entry = { workload: { kind: "Deployment", name: "web" }, since: "2025-06-01T10:00:00Z", until: "2025-06-02T10:00:00Z", scales: [] } as never;
    const report = releaseReport({ entry, drop: true }, am, NOW);
    assert.deepEqual([report.reported, report.status?.from], [[], raw]);
  });
});
