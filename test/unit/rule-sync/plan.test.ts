/** rule-sync's pure decisions (plan.ts, status.ts): the reconcile table, orphans, and the status write of its conditions. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  controllerAppMonitorUid,
  findOrphans,
  isManaged,
  planSync,
  type ObservedAppMonitor,
  type ObservedRule,
  type Plan,
} from "../../../functions/rule-sync/plan.ts";
import { METRICS_READY, METRICS_REASONS, READY, READY_REASONS, readyOf, REASONS, RULE_READY, type DesiredCondition } from "../../../functions/rule-sync/conditions.ts";
import { GENERATION_ANNOTATION } from "../../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../../functions/rule-sync/rule-config.ts";
import { statusApply } from "../../../functions/rule-sync/status.ts";

const config = { ...DEFAULT_RULE_CONFIG, ruleLabels: { release: "prometheus" } };

function monitor(overrides: { uid?: string; spec?: unknown; deleting?: boolean; generation?: number; status?: ObservedAppMonitor["status"] } = {}): ObservedAppMonitor {
  return {
    metadata: {
      name: "mymonitor",
      namespace: "demo",
      uid: overrides.uid ?? "uid-1",
      generation: overrides.generation ?? 3,
      resourceVersion: "100",
      ...(overrides.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: "spec" in overrides ? overrides.spec : { memThresholdPercent: 75, memMultiplier: 2 },
    ...(overrides.status === undefined ? {} : { status: overrides.status }),
  };
}

function rule(overrides: { managed?: boolean; ownerUid?: string | null; ownerKind?: string } = {}): ObservedRule {
  const ownerUid = overrides.ownerUid === undefined ? "uid-1" : overrides.ownerUid;
  return {
    metadata: {
      name: "mymonitor",
      namespace: "demo",
      uid: "rule-uid",
      resourceVersion: "55",
      labels: overrides.managed === false ? { team: "x" } : { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      ownerReferences:
        ownerUid === null
          ? []
          : [{ apiVersion: "kubedemo.com/v1", kind: overrides.ownerKind ?? "AppMonitor", name: "mymonitor", uid: ownerUid, controller: true }],
    },
  };
}

const invalidSpec = { memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { "bad key!": "x" } } };
const ref = { namespace: "demo", name: "mymonitor", uid: "rule-uid", resourceVersion: "55" };

describe("planSync", () => {
  const table: [string, ObservedAppMonitor | undefined, ObservedRule | undefined, { rule: string; replace?: boolean; why?: string; condition?: string }][] = [
    ["no AppMonitor, our rule → delete it", undefined, rule(), { rule: "delete", why: "owner-gone" }],
    ["AppMonitor being deleted, our rule → delete it", monitor({ deleting: true }), rule(), { rule: "delete", why: "owner-gone" }],
    ["no AppMonitor, no rule → nothing", undefined, undefined, { rule: "keep" }],
    ["no AppMonitor, someone else's rule → leave it", undefined, rule({ managed: false }), { rule: "keep" }],
    ["valid, no rule → create", monitor(), undefined, { rule: "apply", replace: false }],
    ["valid, our rule → re-apply", monitor(), rule(), { rule: "apply", replace: false }],
    ["valid, our rule orphaned (no owner) → adopt by apply", monitor(), rule({ ownerUid: null }), { rule: "apply", replace: false }],
    ["valid, our rule of an earlier AppMonitor of this name → replace", monitor(), rule({ ownerUid: "uid-0" }), { rule: "apply", replace: true }],
    ["valid, our rule controlled by something else → replace", monitor(), rule({ ownerKind: "Deployment" }), { rule: "apply", replace: true }],
    ["valid, someone else's rule of that name → conflict, untouched", monitor(), rule({ managed: false }), { rule: "keep", condition: REASONS.conflict }],
    ["invalid, no rule → report", monitor({ spec: invalidSpec }), undefined, { rule: "keep", condition: REASONS.invalid }],
    ["invalid, our rule of this AppMonitor → keep the last good one", monitor({ spec: invalidSpec }), rule(), { rule: "keep", condition: REASONS.invalid }],
    ["invalid, our rule of an earlier AppMonitor → delete it", monitor({ spec: invalidSpec }), rule({ ownerUid: "uid-0" }), { rule: "delete", why: "owner-mismatch", condition: REASONS.invalid }],
    ["a spec the schema refuses → invalid", monitor({ spec: { memThresholdPercent: 175, memMultiplier: 2 } }), undefined, { rule: "keep", condition: REASONS.invalid }],
    ["no spec at all → invalid", monitor({ spec: null }), undefined, { rule: "keep", condition: REASONS.invalid }],
  ];
  for (const [what, am, existing, expected] of table) {
    it(what, () => {
      const plan: Plan = planSync(am, existing, config);
      assert.equal(plan.rule.kind, expected.rule);
      if (plan.rule.kind === "apply") assert.equal(plan.rule.replace !== undefined, expected.replace);
      if (plan.rule.kind === "apply" && plan.rule.replace !== undefined) assert.deepEqual(plan.rule.replace, ref);
      if (plan.rule.kind === "delete") {
        assert.equal(plan.rule.why, expected.why);
        assert.deepEqual(plan.rule.target, ref);
      }
      assert.equal(plan.condition?.reason, expected.condition);
      assert.equal(plan.condition?.status, expected.condition === undefined ? undefined : "False", "an apply's RuleReady is Prometheus's to decide");
      if (plan.condition !== undefined) assert.equal(plan.condition.type, RULE_READY);
    });
  }

  it("applies the rule built from the AppMonitor, with the input it was built from", () => {
    const plan = planSync(monitor({ spec: { memThresholdPercent: 80, memMultiplier: 2, forSeconds: 5 } }), undefined, config);
    assert.equal(plan.rule.kind, "apply");
    if (plan.rule.kind !== "apply") return;
    const applied = plan.rule.rule;
    assert.equal(applied.metadata?.name, "mymonitor");
    assert.equal(applied.metadata?.namespace, "demo");
    assert.deepEqual(applied.metadata?.labels, { release: "prometheus", [MANAGED_BY_LABEL]: MANAGED_BY_VALUE });
    assert.equal(applied.metadata?.annotations?.[GENERATION_ANNOTATION], "3");
    assert.deepEqual(applied.metadata?.ownerReferences, [{ apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "mymonitor", uid: "uid-1", controller: true, blockOwnerDeletion: true }]);
    assert.match(applied.spec.groups?.[0]?.rules?.[0]?.expr as string, />= 80$/);
    assert.equal(applied.spec.groups?.[0]?.rules?.[0]?.for, "5s");
    assert.deepEqual([plan.rule.input.namespace, plan.rule.input.name, plan.rule.input.generation, plan.rule.input.spec.memThresholdPercent], ["demo", "mymonitor", 3, 80]);
    assert.equal(plan.condition, undefined);
  });

  it("says why an AppMonitor is invalid and names the field", () => {
    const plan = planSync(monitor({ spec: invalidSpec }), undefined, config);
    assert.match(plan.condition?.message ?? "", /^cannot build PrometheusRule demo\/mymonitor: spec\.selector\.matchLabels\["bad key!"\]: not a valid Kubernetes label key$/);
  });
});

describe("ownership helpers", () => {
  it("recognise our label and the controlling AppMonitor", () => {
    assert.equal(isManaged(rule()), true);
    assert.equal(isManaged(rule({ managed: false })), false);
    assert.equal(controllerAppMonitorUid(rule()), "uid-1");
    assert.equal(controllerAppMonitorUid(rule({ ownerKind: "Deployment" })), undefined);
    assert.equal(controllerAppMonitorUid(rule({ ownerUid: null })), undefined);
  });
});

describe("findOrphans", () => {
  const named = (name: string, r: ObservedRule): ObservedRule => ({ metadata: { ...r.metadata, name, uid: `uid-of-${name}` } });
  const am = (name: string, deleting = false): ObservedAppMonitor => ({ metadata: { ...monitor({ deleting }).metadata, name } });

  it("returns our rules whose AppMonitor is not listed or is being deleted, nothing else", () => {
    const rules = [named("a", rule()), named("b", rule()), named("c", rule()), named("d", rule({ managed: false })), named("e", rule({ ownerUid: "other" }))];
    const orphans = findOrphans(rules, [am("a"), am("b", true), am("e")]);
    assert.deepEqual(orphans.map((o) => o.name), ["b", "c"]);
    assert.deepEqual(orphans[1], { namespace: "demo", name: "c", uid: "uid-of-c", resourceVersion: "55" });
  });

  it("matches by namespace too", () => {
    const elsewhere: ObservedAppMonitor = { metadata: { ...monitor().metadata, namespace: "other" } };
    assert.deepEqual(findOrphans([rule()], [elsewhere]).map((o) => o.name), ["mymonitor"]);
  });
});

describe("readyOf", () => {
  const rule = (status: DesiredCondition["status"], reason = "R"): DesiredCondition => ({ type: RULE_READY, status, reason, message: "rule" });
  const metrics = (status: DesiredCondition["status"], reason = "M"): DesiredCondition => ({ type: METRICS_READY, status, reason, message: "metrics" });
  const cases: [string, DesiredCondition[], Pick<DesiredCondition, "status" | "reason">][] = [
    ["both True", [rule("True"), metrics("True")], { status: "True", reason: READY_REASONS.reconciled }],
    ["RuleReady False", [rule("False", "RuleRejected"), metrics("Unknown", "RuleNotApplied")], { status: "False", reason: "RuleRejected" }],
    ["a False MetricsReady beats an Unknown RuleReady", [rule("Unknown", "PrometheusUnreachable"), metrics("False", "NoMatchingSeries")], { status: "False", reason: "NoMatchingSeries" }],
    ["Unknown only", [rule("True"), metrics("Unknown", "PrometheusUnreachable")], { status: "Unknown", reason: "PrometheusUnreachable" }],
  ];
  for (const [name, given, want] of cases) {
    it(name, () => {
      const ready = readyOf(given);
      assert.equal(ready.type, READY);
      assert.deepEqual({ status: ready.status, reason: ready.reason }, want);
    });
  }
});

describe("statusApply", () => {
  const now = new Date("2026-05-01T10:20:30.456Z");
  const ready: DesiredCondition = { type: RULE_READY, status: "True", reason: REASONS.loaded, message: "PrometheusRule demo/mymonitor (generation 3) is loaded" };
  const series: DesiredCondition = { type: METRICS_READY, status: "False", reason: METRICS_REASONS.limitNotScraped, message: "no memory limit series" };
  const both = [ready, series];
  const stored = (c: DesiredCondition, time = "2026-01-01T00:00:00Z") => ({ type: c.type, status: c.status, reason: c.reason, message: c.message, lastTransitionTime: time, observedGeneration: 3 });

  it("writes both conditions and observedGeneration, with the resourceVersion read as precondition", () => {
    assert.deepEqual(statusApply(monitor(), both, now), {
      apiVersion: "kubedemo.com/v1",
      kind: "AppMonitor",
      metadata: { name: "mymonitor", namespace: "demo", resourceVersion: "100" },
      status: {
        observedGeneration: 3,
        conditions: [
          { type: RULE_READY, status: "True", reason: REASONS.loaded, message: ready.message, lastTransitionTime: "2026-05-01T10:20:30Z", observedGeneration: 3 },
          { type: METRICS_READY, status: "False", reason: METRICS_REASONS.limitNotScraped, message: series.message, lastTransitionTime: "2026-05-01T10:20:30Z", observedGeneration: 3 },
          { type: READY, status: "False", reason: METRICS_REASONS.limitNotScraped, message: `MetricsReady: ${series.message}`, lastTransitionTime: "2026-05-01T10:20:30Z", observedGeneration: 3 },
        ],
      },
    });
  });

  it("writes nothing when the AppMonitor already says exactly that", () => {
    const current = { observedGeneration: 3, conditions: [stored(ready), stored(series), stored(readyOf(both))] };
    assert.equal(statusApply(monitor({ status: current }), both, now), undefined);
    // A new generation, another message of either condition, or another top-level observedGeneration is a change.
    assert.notEqual(statusApply(monitor({ status: current, generation: 4 }), both, now), undefined);
    assert.notEqual(statusApply(monitor({ status: current }), [{ ...ready, message: "other" }, series], now), undefined);
    assert.notEqual(statusApply(monitor({ status: current }), [ready, { ...series, reason: METRICS_REASONS.found }], now), undefined);
    assert.notEqual(statusApply(monitor({ status: { ...current, observedGeneration: 2 } }), both, now), undefined);
    assert.notEqual(statusApply(monitor({ status: { observedGeneration: 3, conditions: [stored(ready)] } }), both, now), undefined, "one of them missing");
  });

  it("keeps each condition's lastTransitionTime while its status stays, and moves it when its status changes", () => {
    const current = { conditions: [{ ...stored(ready), message: "old" }, stored(series)] };
    const written = statusApply(monitor({ status: current }), [ready, { ...series, status: "True", reason: METRICS_REASONS.found }], now)?.status.conditions;
    assert.deepEqual(written?.map((c) => c.lastTransitionTime), ["2026-01-01T00:00:00Z", "2026-05-01T10:20:30Z", "2026-05-01T10:20:30Z"]);
  });

  it("leaves other conditions out of the apply, so their owners keep them", () => {
    const current = { conditions: [{ type: "Scaled", status: "True" as const, reason: "Scaled", message: "x", lastTransitionTime: "2026-01-01T00:00:00Z" }] };
    assert.deepEqual(statusApply(monitor({ status: current }), both, now)?.status.conditions.map((c) => c.type), [RULE_READY, METRICS_READY, READY]);
  });
});
