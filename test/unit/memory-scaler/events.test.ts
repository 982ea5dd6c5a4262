// memory-scaler's report (functions/memory-scaler/events.ts): each outcome's Kubernetes Events as
// one table, the AtCap window, the status changes of a scale and of a repair; and the plan's last
// word after the evidence check (scale/decide/plan.ts afterCheck).
import { describe, test, it } from "node:test";
import assert from "node:assert/strict";
import type { AlertTrigger } from "../../../functions/lib/alert-event.ts";
import type { ContainerChange } from "../../../functions/memory-scaler/model.ts";
import { afterCheck } from "../../../functions/memory-scaler/scale/decide/evidence.ts";
import type { Scale } from "../../../functions/memory-scaler/outcome.ts";
import { pendingRollouts } from "../../../functions/memory-scaler/status/rollouts.ts";
import { eventsOf, type Reported, type Subjects, windowedKey } from "../../../functions/memory-scaler/events.ts";
import { repairedStatus, scaledStatus } from "../../../functions/memory-scaler/status/changes.ts";

const changes: ContainerChange[] = [{ container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }];
const pod = { apiVersion: "v1", kind: "Pod", name: "memhog-1", namespace: "team-a", uid: "p1" };
const appMonitor = { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "mymonitor", namespace: "team-a", uid: "a1" };
const workload = { apiVersion: "apps/v1", kind: "Deployment", name: "memhog", namespace: "team-a", uid: "w1" };
const subjects: Subjects = { pod, appMonitor, cooldownSeconds: 300, workload };
const now = new Date("2026-05-01T00:00:00Z");
const summary = "memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi";
const replacedNote =
  "the rollout of this scale replaces (restarts) its Pods, and what they hold in memory and in emptyDir volumes is lost: Deployment memhog has a single replica, so no other Pod holds what its Pod holds; " +
  "its Pod template has emptyDir volume cache. spec.updateMode: InPlace (or InPlaceOrRollout) on the AppMonitor resizes the running Pods instead, without replacing them";

type Row = [type: string, reason: string, regarding: string, related: string, note: string, key: string];

describe("eventsOf: the Events of each outcome, one table", () => {
  const cases: { reported: Reported; events: Row[] }[] = [
    { reported: { reason: "UnsupportedOwner", message: "owned by Job j" }, events: [["Warning", "UnsupportedOwner", "Pod", "AppMonitor", "not scaled: owned by Job j", "e1"]] },
    {
      reported: { reason: "UnknownController", message: "Revision r controls it" },
      events: [
        ["Warning", "UnknownController", "Deployment", "AppMonitor", "not scaled: Revision r controls it", "UnknownController/Deployment/memhog/w1@5925312"],
        ["Warning", "UnknownController", "AppMonitor", "Deployment", "Deployment memhog: not scaled: Revision r controls it", "UnknownController/Deployment/memhog/w1@5925312"],
      ],
    },
    {
      reported: { reason: "LimitNotInTemplate", message: "no limit" },
      events: [["Warning", "LimitNotInTemplate", "Deployment", "AppMonitor", "not scaled: no limit", "e1"], ["Warning", "LimitNotInTemplate", "AppMonitor", "Deployment", "Deployment memhog: not scaled: no limit", "e1"]],
    },
    {
      reported: { reason: "AdmissionRefused", message: "denied by policy", changes },
      events: [
        ["Warning", "AdmissionRefused", "Deployment", "AppMonitor", `not scaled (${summary}): the API server refused it: denied by policy`, "e1"],
        ["Warning", "AdmissionRefused", "AppMonitor", "Deployment", `Deployment memhog: not scaled (${summary}): the API server refused it: denied by policy`, "e1"],
      ],
    },
    {
      reported: { reason: "RolloutExceedsQuota", message: "over quota q", changes },
      events: [["Warning", "RolloutExceedsQuota", "Deployment", "AppMonitor", `not scaled (${summary}): over quota q`, "e1"], ["Warning", "RolloutExceedsQuota", "AppMonitor", "Deployment", `Deployment memhog: not scaled (${summary}): over quota q`, "e1"]],
    },
    {
      reported: { reason: "Unschedulable", message: "fits no Node", changes },
      events: [["Warning", "Unschedulable", "Deployment", "AppMonitor", `not scaled (${summary}): fits no Node`, "e1"], ["Warning", "Unschedulable", "AppMonitor", "Deployment", `Deployment memhog: not scaled (${summary}): fits no Node`, "e1"]],
    },
    {
      reported: { reason: "DryRun", changes, trigger: "oomKilled" },
      events: [["Normal", "DryRun", "Deployment", "AppMonitor", `DryRun: would scale Deployment memhog after an OOM kill: ${summary}`, "e1"], ["Normal", "DryRun", "AppMonitor", "Deployment", `DryRun: would scale Deployment memhog after an OOM kill: ${summary}`, "e1"]],
    },
    {
      reported: { reason: "DryRun", changes, trigger: "trend" },
      events: [
        ["Normal", "DryRun", "Deployment", "AppMonitor", `DryRun: would scale Deployment memhog on its trend toward the limit: ${summary}`, "e1"],
        ["Normal", "DryRun", "AppMonitor", "Deployment", `DryRun: would scale Deployment memhog on its trend toward the limit: ${summary}`, "e1"],
      ],
    },
    {
      reported: { reason: "Scaled", changes, multiplier: 2, trigger: "trend" },
      events: [
        ["Normal", "Scaled", "Deployment", "AppMonitor", `scaled Deployment memhog by 2 on its trend toward the limit: ${summary}`, "e1"],
        ["Normal", "Scaled", "AppMonitor", "Deployment", `scaled Deployment memhog by 2 on its trend toward the limit: ${summary}`, "e1"],
      ],
    },
    {
      reported: { reason: "Scaled", changes, multiplier: 3, trigger: "threshold", bounds: "; memhog capped by the install's ceiling MAX_MEMORY 4Gi (over spec.maxMemory 16Gi)" },
      events: [
        ["Normal", "Scaled", "Deployment", "AppMonitor", `scaled Deployment memhog by 3: ${summary}; memhog capped by the install's ceiling MAX_MEMORY 4Gi (over spec.maxMemory 16Gi)`, "e1"],
        ["Normal", "Scaled", "AppMonitor", "Deployment", `scaled Deployment memhog by 3: ${summary}; memhog capped by the install's ceiling MAX_MEMORY 4Gi (over spec.maxMemory 16Gi)`, "e1"],
      ],
    },
    {
      reported: { reason: "Resized", changes, multiplier: 2, trigger: "trend" },
      events: [
        ["Normal", "Resized", "Deployment", "AppMonitor", `resized Deployment memhog in place by 2 on its trend toward the limit: ${summary}`, "e1"],
        ["Normal", "Resized", "AppMonitor", "Deployment", `resized Deployment memhog in place by 2 on its trend toward the limit: ${summary}`, "e1"],
      ],
    },
    {
      reported: { reason: "Scaled", changes, multiplier: 2, trigger: "threshold" },
      events: [["Normal", "Scaled", "Deployment", "AppMonitor", `scaled Deployment memhog by 2: ${summary}`, "e1"], ["Normal", "Scaled", "AppMonitor", "Deployment", `scaled Deployment memhog by 2: ${summary}`, "e1"]],
    },
    {
      reported: { reason: "Scaled", changes, multiplier: 2, trigger: "oomKilled", onDelete: "delete Pod memhog-1", key: "earlier" },
      events: [
        ["Normal", "Scaled", "Deployment", "AppMonitor", `scaled Deployment memhog by 2 after an OOM kill: ${summary}`, "earlier"],
        ["Normal", "Scaled", "AppMonitor", "Deployment", `scaled Deployment memhog by 2 after an OOM kill: ${summary}`, "earlier"],
        ["Warning", "RolloutWaitsForDelete", "Deployment", "AppMonitor", "delete Pod memhog-1", "earlier"],
        ["Warning", "RolloutWaitsForDelete", "AppMonitor", "Deployment", "delete Pod memhog-1", "earlier"],
      ],
    },
    {
      // A single-replica Deployment with an emptyDir: the note says its Pods are replaced, and a PodsReplaced pair says what that loses.
      reported: { reason: "Scaled", changes, multiplier: 2, trigger: "threshold", replacement: { how: "rollout", atRisk: ["SingleReplica", "EmptyDir"], emptyDirs: ["cache"] } },
      events: [
        ["Normal", "Scaled", "Deployment", "AppMonitor", `scaled Deployment memhog by 2: ${summary}; the rollout replaces (restarts) its Pods`, "e1"],
        ["Normal", "Scaled", "AppMonitor", "Deployment", `scaled Deployment memhog by 2: ${summary}; the rollout replaces (restarts) its Pods`, "e1"],
        ["Warning", "PodsReplaced", "Deployment", "AppMonitor", replacedNote, "e1"],
        ["Warning", "PodsReplaced", "AppMonitor", "Deployment", `Deployment memhog: ${replacedNote}`, "e1"],
      ],
    },
    {
      // Three replicas, no emptyDir: replaced, nothing at risk, no Warning.
      reported: { reason: "Scaled", changes, multiplier: 2, trigger: "threshold", replacement: { how: "rollout", atRisk: [], emptyDirs: [] } },
      events: [
        ["Normal", "Scaled", "Deployment", "AppMonitor", `scaled Deployment memhog by 2: ${summary}; the rollout replaces (restarts) its Pods`, "e1"],
        ["Normal", "Scaled", "AppMonitor", "Deployment", `scaled Deployment memhog by 2: ${summary}; the rollout replaces (restarts) its Pods`, "e1"],
      ],
    },
    {
      // A bare Pod resized in place is not replaced: no PodsReplaced.
      reported: { reason: "Resized", changes, multiplier: 2, trigger: "threshold" },
      events: [["Normal", "Resized", "Deployment", "AppMonitor", `resized Deployment memhog in place by 2: ${summary}`, "e1"], ["Normal", "Resized", "AppMonitor", "Deployment", `resized Deployment memhog in place by 2: ${summary}`, "e1"]],
    },
    // The common skips: one pair per workload per window (the key names the window).
    ...(["Cooldown", "BelowThreshold"] as const).map((reason) => ({
      reported: { reason, message: "m" },
      events: [
        ["Normal", reason, "Deployment", "AppMonitor", "not scaled: m", `${reason}/Deployment/memhog/w1@5925312`],
        ["Normal", reason, "AppMonitor", "Deployment", "not scaled: m", `${reason}/Deployment/memhog/w1@5925312`],
      ] as Row[],
    })),
    {
      reported: { reason: "NotCovered", message: "m" },
      events: [
        ["Warning", "NotCovered", "Deployment", "AppMonitor", "not scaled: m", "NotCovered/Deployment/memhog/w1@5925312"],
        ["Warning", "NotCovered", "AppMonitor", "Deployment", "Deployment memhog: not scaled: m", "NotCovered/Deployment/memhog/w1@5925312"],
      ],
    },
    {
      reported: { reason: "RolloutExceedsQuota", message: "over", changes, dryRun: true },
      events: [
        ["Warning", "RolloutExceedsQuota", "Deployment", "AppMonitor", `DryRun: would not be scaled (${summary}): over`, "e1"],
        ["Warning", "RolloutExceedsQuota", "AppMonitor", "Deployment", `Deployment memhog: DryRun: would not be scaled (${summary}): over`, "e1"],
      ],
    },
    ...["RolloutUnderWay", "RolloutWaitsForDelete", "NotMeasured", "NotOOMKilled", "NotTrending", "AppMonitorNotGoverning"].map((reason) => ({ reported: { reason, message: "m" }, events: [] })),
  ];
  for (const { reported, events } of cases) {
    const variant = "onDelete" in reported ? " (OnDelete, repaired)" : "replacement" in reported ? ` (Pods replaced, ${reported.replacement?.atRisk.length === 0 ? "nothing at risk" : "state at risk"})` : "";
    test(`${reported.reason}${variant}`, () => {
      const got = eventsOf(reported, subjects, "e1", now).map((e): Row => [e.type, e.reason, e.regarding.kind ?? "", e.related?.kind ?? "", e.note, e.key]);
      assert.deepEqual(got, events);
    });
  }

  test("AtCap: one Warning pair per workload per window (the cooldown, at least an hour), the same key for every event in the window, a new one in the next", () => {
    const at = (iso: string, id: string) => eventsOf({ reason: "AtCap", message: "at maxMemory" }, subjects, id, new Date(iso));
    const [first] = at("2026-05-01T00:00:10Z", "e1");
    const [second] = at("2026-05-01T00:59:50Z", "e2");
    const [next] = at("2026-05-01T01:00:10Z", "e3");
    assert.equal(first?.key, second?.key);
    assert.notEqual(first?.key, next?.key);
    assert.notEqual(first?.key, "e1");
    assert.equal(first?.note, "not scaled: at maxMemory (this Warning is written at most once every 3600s)");
    assert.deepEqual(at("2026-05-01T00:00:10Z", "e1").map((e) => [e.type, e.regarding.kind, e.related?.kind]), [["Warning", "Deployment", "AppMonitor"], ["Warning", "AppMonitor", "Deployment"]]);
  });

  test("a reason reported on a workload without one is a caller's bug, named", () => {
    assert.throws(() => eventsOf({ reason: "LimitNotInTemplate", message: "m" }, { pod, appMonitor, cooldownSeconds: 300 }, "e1", now), /LimitNotInTemplate is reported on a workload/);
  });

  test("UnknownController without the workload it regards is a caller's bug, named", () => {
    assert.throws(() => eventsOf({ reason: "UnknownController", message: "m" }, { pod, appMonitor, cooldownSeconds: 300 }, "e1", now), /UnknownController is reported on a workload/);
  });

  test("UnsupportedOwner without the Pod it regards is a caller's bug, named", () => {
    assert.throws(() => eventsOf({ reason: "UnsupportedOwner", message: "m" }, { appMonitor, cooldownSeconds: 300, workload }, "e1", now), /UnsupportedOwner is reported on a Pod/);
  });
});

describe("the status changes of a scale and of a repair", () => {
  const entry = { time: "2026-05-01T00:00:00Z", workload: { kind: "Deployment", name: "memhog" }, event: "e1", changes, dryRun: false };
  const rollout = { workload: { kind: "Deployment", name: "memhog" }, generation: 7, startedAt: entry.time, event: "e1" };

  test("a scale: counted, and its rollout pending with a RolledOut condition naming the generation", () => {
    const status = scaledStatus(entry, rollout, 10)(undefined);
    assert.equal(status.scaleCount, 1);
    assert.equal(status.lastScaleTime, entry.time);
    assert.deepEqual(pendingRollouts(status).map((r) => r.generation), [7]);
    const condition = (status.conditions as { type: string; status: string; message: string }[] | undefined)?.find((c) => c.type === "RolledOut");
    assert.equal(condition?.message, `Deployment memhog: rolling out generation 7 (${summary})`);
  });

  test("a scale of a bare ReplicaSet: counted, no rollout", () => {
    const status = scaledStatus(entry, undefined, 10)(undefined);
    assert.equal(status.scaleCount, 1);
    assert.deepEqual(pendingRollouts(status), []);
  });

  test("a repair that counts the scale follows its rollout from the workload's generation; one already counted adds nothing", () => {
    const repaired = repairedStatus({ ...entry, repair: true }, { kind: "Deployment", generation: 9 }, "e1", 10);
    const once = repaired(undefined);
    assert.equal(once.scaleCount, 1);
    assert.deepEqual(pendingRollouts(once).map((r) => r.generation), [9]);
    const twice = repaired(once);
    assert.equal(twice.scaleCount, 1, "not counted twice");
    assert.deepEqual(pendingRollouts(repairedStatus({ ...entry, repair: true }, { kind: "ReplicaSet", generation: 9 }, "e1", 10)(undefined)), []);
    assert.deepEqual(pendingRollouts(repairedStatus({ ...entry, repair: true }, { kind: "Deployment", generation: undefined }, "e1", 10)(undefined)), []);
  });
});

describe("afterCheck: the plan after the alert's evidence is checked", () => {
  const scale: Scale = { action: "scale", changes, skipped: [{ container: "init", reason: "InitContainer", message: "an init container" }], dryRun: false };
  const sidecar: ContainerChange = { container: "sidecar", from: { limit: "64Mi" }, to: { limit: "128Mi" } };
  const drop = (container: string, reason: string) => ({ container, reason, message: `${container}: ${reason}` });
  const cases: { name: string; trigger: AlertTrigger; keep: ContainerChange[]; dropped: ReturnType<typeof drop>[]; expected: { action: string; reason?: string; changes?: string[]; skipped: string[] } }[] = [
    { name: "kept: the scale with the kept containers, the dropped ones listed after the plan's", trigger: "threshold", keep: changes, dropped: [drop("sidecar", "BelowThreshold")], expected: { action: "scale", changes: ["memhog"], skipped: ["init", "sidecar"] } },
    { name: "none kept, one below the threshold: BelowThreshold wins over a first NotMeasured", trigger: "threshold", keep: [], dropped: [drop("memhog", "NotMeasured"), drop("sidecar", "BelowThreshold")], expected: { action: "skip", reason: "BelowThreshold", skipped: ["init", "memhog", "sidecar"] } },
    { name: "none kept, none measured: NotMeasured", trigger: "threshold", keep: [], dropped: [drop("memhog", "NotMeasured"), drop("sidecar", "NotMeasured")], expected: { action: "skip", reason: "NotMeasured", skipped: ["init", "memhog", "sidecar"] } },
    { name: "none kept of an OOM-kill alert: NotOOMKilled", trigger: "oomKilled", keep: [], dropped: [drop("memhog", "NotOOMKilled")], expected: { action: "skip", reason: "NotOOMKilled", skipped: ["init", "memhog"] } },
    { name: "an OOM-kill alert keeping one of two", trigger: "oomKilled", keep: [sidecar], dropped: [drop("memhog", "NotOOMKilled")], expected: { action: "scale", changes: ["sidecar"], skipped: ["init", "memhog"] } },
    { name: "none kept of a trend alert, one not trending: NotTrending wins over a first NotMeasured", trigger: "trend", keep: [], dropped: [drop("memhog", "NotMeasured"), drop("sidecar", "NotTrending")], expected: { action: "skip", reason: "NotTrending", skipped: ["init", "memhog", "sidecar"] } },
    { name: "none kept of a trend alert, none measured: NotMeasured", trigger: "trend", keep: [], dropped: [drop("memhog", "NotMeasured")], expected: { action: "skip", reason: "NotMeasured", skipped: ["init", "memhog"] } },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const result = afterCheck(scale, c.trigger, { keep: c.keep, skipped: c.dropped });
      const got = result.action === "scale"
        ? { action: "scale", changes: result.changes.map((x) => x.container), skipped: result.skipped.map((s) => s.container) }
        : { action: "skip", reason: result.reason, skipped: (result.skipped ?? []).map((s) => s.container) };
      assert.deepEqual(got, c.expected);
      if (result.action === "skip") assert.equal(result.message, c.dropped.map((d) => d.message).join("; "));
    });
  }
});

describe("windowedKey", () => {
  const at = (iso: string) => new Date(iso);
  const cases: { name: string; a: [string, string, number, string]; b: [string, string, number, string]; same: boolean }[] = [
    { name: "two alerts in one window, different event ids", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 300, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:04:59Z", 300, "e2"], same: true },
    { name: "the next window", a: ["Deployment/web/u1", "2025-06-01T12:04:59Z", 300, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:05:00Z", 300, "e1"], same: false },
    { name: "another workload in the same window", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 300, "e1"], b: ["Deployment/api/u2", "2025-06-01T12:00:01Z", 300, "e1"], same: false },
    { name: "a namesake created since (another uid)", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 300, "e1"], b: ["Deployment/web/u3", "2025-06-01T12:00:01Z", 300, "e1"], same: false },
    { name: "no cooldown: one per event id", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 0, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 0, "e2"], same: false },
    { name: "no cooldown, the same event re-delivered", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 0, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:09:00Z", 0, "e1"], same: true },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.same ? "one key" : "two keys"}`, () => {
      const key = ([subject, time, window, event]: [string, string, number, string]) => windowedKey(subject, at(time), window, event);
      assert.equal(key(c.a) === key(c.b), c.same, `${key(c.a)} vs ${key(c.b)}`);
    });
  }
});
