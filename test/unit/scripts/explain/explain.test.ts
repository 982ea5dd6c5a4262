import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { explainLines, governing, type ChainFacts, type ExplainedWorkload } from "../../../../scripts/explain/explain.ts";

const NOW = new Date("2026-12-02T06:00:00Z");
const SETTINGS = { defaultMaxMemory: "8Gi" };

function workload(annotated = true, annotations: Record<string, string> = {}): ExplainedWorkload {
  return {
    kind: "Deployment",
    name: "web",
    namespace: "shop",
    annotations,
    template: {
      metadata: { labels: { app: "web" }, ...(annotated ? { annotations: { "app-monitor.kubedemo.com/monitor": "true" } } : {}) },
      spec: { containers: [{ name: "memhog", resources: { limits: { memory: "384Mi" } } }] },
    },
  };
}

function appMonitor(name: string, spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}, created = "2026-12-01T00:00:00Z"): Record<string, unknown> {
  return { metadata: { name, namespace: "shop", uid: `uid-${name}`, generation: 1, creationTimestamp: created }, spec: { memThresholdPercent: 75, memMultiplier: 2, ...spec }, status };
}

const USAGE_QUERY = "100 * max by (namespace, pod, container) (x)\n  / on (namespace, pod, container)\nmax by (namespace, pod, container) (y)";

function chain(over: Partial<ChainFacts> = {}): ChainFacts {
  return {
    prometheusRule: { ok: true, value: { generation: "1" } },
    ruleGroup: { name: "appmonitor-shop-m", loaded: { ok: true, value: { name: "appmonitor-shop-m", file: "f", rules: [{ name: "AppMonitorMemoryHigh", generation: "1", health: "ok", lastError: undefined }] } } },
    usage: { query: USAGE_QUERY, samples: { ok: true, value: [{ metric: { namespace: "shop", pod: "web-1", container: "memhog" }, value: 40 }] } },
    alerts: { query: 'ALERTS{namespace="shop", appmonitor="m"}', samples: { ok: true, value: [] } },
    pods: ["web-1"],
    ...over,
  };
}

/** The line that starts with `what: `. */
function lineOf(lines: readonly string[], what: string): string {
  const found = lines.find((l) => l.startsWith(`${what}: `));
  assert.ok(found !== undefined, `no "${what}" line in:\n${lines.join("\n")}`);
  return found;
}

function explain(w: ExplainedWorkload, items: unknown[], facts: ChainFacts | undefined = chain()): string[] {
  return explainLines(w, governing(w, items), facts, SETTINGS, NOW);
}

describe("explain: not covered", () => {
  it("says no AppMonitor covers an unannotated template, and stops there", () => {
    const lines = explain(workload(false), [appMonitor("m")]);
    assert.equal(lines.length, 1);
    assert.match(lineOf(lines, "coverage"), /^coverage: not covered: no AppMonitor in namespace shop covers Deployment shop\/web \(its Pod template lacks the annotation/);
    assert.match(lines[0] ?? "", /\(AppMonitor list shop; Deployment shop\/web spec\.template\.metadata\)$/);
  });

  it("says so for an annotated template in a namespace without AppMonitors", () => {
    const lines = explain(workload(true), []);
    assert.match(lineOf(lines, "coverage"), /not covered: .*its Pod template carries the annotation/);
  });

  it("names an invalid AppMonitor it left out", () => {
    const lines = explain(workload(true), [appMonitor("bad", { memThresholdPercent: 500 })]);
    assert.match(lineOf(lines, "invalid AppMonitor"), /^invalid AppMonitor: bad is left out: .*memThresholdPercent/);
    assert.match(lineOf(lines, "coverage"), /not covered/);
  });

  it("a targetRef naming another workload does not cover this one", () => {
    const lines = explain(workload(false), [appMonitor("m", { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "api" } })]);
    assert.match(lineOf(lines, "coverage"), /not covered/);
  });
});

describe("explain: the workload's controller", () => {
  const owned = (kind: string, controller: { apiVersion: string; kind: string; name: string }): ExplainedWorkload => ({ ...workload(true), kind, controller });

  it("a controller the owner walk does not know: named, with the object to change instead, covered or not", () => {
    const operator = { apiVersion: "operators.example.com/v1", kind: "WebApp", name: "shop" };
    for (const items of [[], [appMonitor("m")]]) {
      const lines = explain(owned("Deployment", operator), items);
      assert.match(
        lines[0] ?? "",
        /^controller: WebApp shop \(operators\.example\.com\/v1\): memory-scaler does not know that controller, .*so Deployment web is not patched; change the memory in WebApp shop \(or in what controls it\) instead; its Pods' alerts are skipped UnknownController {2}\(Deployment shop\/web metadata\.ownerReferences\)$/,
      );
      lineOf(lines, "coverage");
    }
  });

  it("a Knative Revision's Deployment: the Knative Service scaled instead, named by Serving's label", () => {
    const revision = { apiVersion: "serving.knative.dev/v1", kind: "Revision", name: "web-00001" };
    assert.match(lineOf(explain({ ...owned("Deployment", revision), knativeService: "web" }, []), "controller"), /^controller: Revision web-00001: memory-scaler scales Knative Service web \(explain ksvc\/web\), whose spec\.template makes this Revision, not this Deployment/);
    assert.match(lineOf(explain(owned("Deployment", revision), []), "controller"), /memory-scaler scales the Knative Service its Configuration belongs to/);
  });

  it("a Knative Service: covered by the annotation of its spec.template, no controller line", () => {
    const lines = explain({ ...workload(true), kind: "Service" }, [appMonitor("m", { targetRef: { apiVersion: "serving.knative.dev/v1", kind: "Service", name: "web" } })]);
    assert.equal(lines.some((l) => l.startsWith("controller: ")), false);
    assert.match(lineOf(lines, "coverage"), /targetRef/);
  });

  it("a ReplicaSet's Deployment: the workload scaled instead", () => {
    const lines = explain(owned("ReplicaSet", { apiVersion: "apps/v1", kind: "Deployment", name: "web" }), []);
    assert.match(lineOf(lines, "controller"), /^controller: Deployment web: memory-scaler scales Deployment web \(explain that one\), not this ReplicaSet/);
  });

  it("no controller: no line", () => {
    assert.equal(explain(workload(true), [appMonitor("m")]).some((l) => l.startsWith("controller: ")), false);
  });
});

describe("explain: coverage and precedence", () => {
  it("names how the AppMonitor covers the workload", () => {
    assert.match(lineOf(explain(workload(true), [appMonitor("m")]), "coverage"), /^coverage: covered by AppMonitor m \(annotation\) {2}\(/);
    assert.match(lineOf(explain(workload(false), [appMonitor("m", { selector: { matchLabels: { app: "web" } } })]), "coverage"), /covered by AppMonitor m \(selector\)/);
  });

  it("names the one that acts and the others that answer AppMonitorConflict", () => {
    const lines = explain(workload(true), [appMonitor("a"), appMonitor("t", { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } }, {}, "2026-12-01T05:00:00Z")]);
    assert.match(lineOf(lines, "coverage"), /covered by AppMonitor t \(targetRef\); also covered by a \(annotation\), which answer AppMonitorConflict/);
  });
});

describe("explain: rule not loaded", () => {
  it("says the PrometheusRule is absent and the group not loaded, with the conditions", () => {
    const status = { conditions: [{ type: "RuleReady", status: "False", reason: "RuleNotLoaded", message: "Prometheus lists no group" }] };
    const lines = explain(workload(), [appMonitor("m", {}, status)], chain({ prometheusRule: { ok: true, value: undefined }, ruleGroup: { name: "appmonitor-shop-m", loaded: { ok: true, value: undefined } } }));
    assert.match(lineOf(lines, "rule object"), /^rule object: absent: .*\(PrometheusRule shop\/m\)$/);
    assert.match(lineOf(lines, "rule loaded"), /^rule loaded: not loaded: Prometheus lists no rule group appmonitor-shop-m, so no alert can fire {2}\(Prometheus \/api\/v1\/rules rule_group\[\]=appmonitor-shop-m\)$/);
    assert.match(lineOf(lines, "conditions"), /^conditions: RuleReady=False \(RuleNotLoaded: Prometheus lists no group\) {2}\(AppMonitor shop\/m status\.conditions\)$/);
  });

  it("says when no conditions are set yet", () => {
    assert.match(lineOf(explain(workload(), [appMonitor("m")]), "conditions"), /none set yet/);
  });

  it("says a Prometheus read failed rather than guessing", () => {
    const failed = { ok: false as const, error: "no Prometheus URL (--prometheus-url or PROMETHEUS_URL)" };
    const lines = explain(workload(), [appMonitor("m")], chain({ ruleGroup: { name: "g", loaded: failed }, usage: { query: USAGE_QUERY, samples: failed }, alerts: { query: "ALERTS", samples: failed } }));
    assert.match(lineOf(lines, "rule loaded"), /^rule loaded: unknown: no Prometheus URL/);
    assert.match(lineOf(lines, "series"), /^series: read failed: no Prometheus URL/);
    assert.match(lineOf(lines, "alert"), /^alert: read failed/);
  });

  it("reports a rule Prometheus cannot evaluate", () => {
    const loaded = { ok: true as const, value: { name: "g", file: "f", rules: [{ name: "AppMonitorMemoryHigh", generation: "1", health: "err", lastError: "boom" }] } };
    assert.match(lineOf(explain(workload(), [appMonitor("m")], chain({ ruleGroup: { name: "g", loaded } })), "rule loaded"), /loaded: group g with AppMonitorMemoryHigh \(err: boom\)/);
  });
});

describe("explain: series and threshold", () => {
  it("below the threshold: each container's percent against it, the query as source on one line", () => {
    const lines = explain(workload(), [appMonitor("m")]);
    assert.match(lineOf(lines, "series"), /^series: 1 container series {2}\(100 \* max by \(namespace, pod, container\) \(x\) \/ on/);
    assert.match(lineOf(lines, "usage web-1/memhog"), /^usage web-1\/memhog: 40% of its memory limit, below the threshold 75% {2}\(100 \* max/);
    assert.match(lineOf(lines, "alert"), /^alert: none pending or firing for its Pods {2}\(ALERTS\{namespace="shop", appmonitor="m"\}\)$/);
  });

  it("at the threshold counts as above (the rule's >=)", () => {
    const usage = { query: USAGE_QUERY, samples: { ok: true as const, value: [{ metric: { pod: "web-1", container: "memhog" }, value: 75 }] } };
    assert.match(lineOf(explain(workload(), [appMonitor("m")], chain({ usage })), "usage web-1/memhog"), /75% of its memory limit, at or above the threshold 75%/);
  });

  it("keeps only the workload's Pods, and says when none has a series", () => {
    const usage = { query: USAGE_QUERY, samples: { ok: true as const, value: [{ metric: { pod: "other-1", container: "memhog" }, value: 99 }] } };
    const lines = explain(workload(), [appMonitor("m")], chain({ usage }));
    assert.match(lineOf(lines, "series"), /^series: none for the 1 Pod\(s\) of Deployment shop\/web/);
    assert.equal(lines.some((l) => l.startsWith("usage ")), false);
  });

  it("names an alert pending or firing for its Pods", () => {
    const alerts = { query: "ALERTS", samples: { ok: true as const, value: [{ metric: { alertname: "AppMonitorMemoryHigh", alertstate: "pending", pod: "web-1", container: "memhog" }, value: 1 }] } };
    assert.match(lineOf(explain(workload(), [appMonitor("m")], chain({ alerts })), "alert"), /^alert: AppMonitorMemoryHigh pending for web-1\/memhog/);
  });
});

describe("explain: scaled", () => {
  const record = JSON.stringify({
    time: "2026-12-02T05:58:00Z",
    appmonitor: "m",
    event: "e1",
    multiplier: 2,
    changes: [{ container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }],
  });
  const annotations = { "app-monitor.kubedemo.com/last-scale": "2026-12-02T05:58:00Z", "app-monitor.kubedemo.com/last-scale-record": record };
  const status = {
    lastOutcome: { time: "2026-12-02T05:58:00Z", pod: "web-1", workload: { kind: "Deployment", name: "web" }, outcome: "scaled", reason: "Scaled", message: "memhog: limit 384Mi → 768Mi" },
    recentScales: [{ time: "2026-12-02T05:58:00Z", workload: { kind: "Deployment", name: "web" }, container: "memhog", from: { limit: "384Mi" }, to: { limit: "768Mi" } }],
  };

  it("shows the last outcome, the record, the recent scales and the cooldown left", () => {
    const lines = explain(workload(true, annotations), [appMonitor("m", {}, status)]);
    assert.match(lineOf(lines, "last outcome"), /^last outcome: scaled at 2026-12-02T05:58:00Z for Pod web-1: Scaled: memhog: limit 384Mi → 768Mi {2}\(AppMonitor shop\/m status\.lastOutcome\)$/);
    assert.match(lineOf(lines, "last scale"), /^last scale: at 2026-12-02T05:58:00Z by AppMonitor m: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi {2}\(Deployment shop\/web metadata\.annotations app-monitor\.kubedemo\.com\/last-scale-record\)$/);
    assert.match(lineOf(lines, "recent scales"), /^recent scales: 1, newest at 2026-12-02T05:58:00Z: memhog limit 384Mi → 768Mi/);
    // 300 s default cooldown, 120 s passed.
    assert.match(lineOf(lines, "cooldown"), /^cooldown: 180s left of 300s since 2026-12-02T05:58:00Z: an alert that began before it is skipped \(Cooldown\); a threshold or trend alert that begins after it is a new crossing, answered {2}\(/);
  });

  it("the cooldown is over once spec.cooldownSeconds have passed", () => {
    assert.match(lineOf(explain(workload(true, annotations), [appMonitor("m", { cooldownSeconds: 60 }, status)]), "cooldown"), /^cooldown: over \(60s since/);
  });

  it("an outcome of another workload is not this one's", () => {
    const other = { ...status, lastOutcome: { ...status.lastOutcome, workload: { kind: "Deployment", name: "api" } } };
    assert.match(lineOf(explain(workload(), [appMonitor("m", {}, other)]), "last outcome"), /^last outcome: none recorded for Deployment web/);
  });

  it("a workload never scaled has no record and no cooldown running", () => {
    const lines = explain(workload(), [appMonitor("m")]);
    assert.match(lineOf(lines, "last scale"), /^last scale: never scaled by memory-scaler/);
    assert.match(lineOf(lines, "cooldown"), /^cooldown: none running \(spec\.cooldownSeconds 300\)/);
    assert.match(lineOf(lines, "recent scales"), /none of this workload/);
  });

  it("an unreadable record still shows the last-scale time", () => {
    const lines = explain(workload(true, { "app-monitor.kubedemo.com/last-scale": "2026-12-02T05:59:00Z", "app-monitor.kubedemo.com/last-scale-record": "{" }), [appMonitor("m")]);
    assert.match(lineOf(lines, "last scale"), /at 2026-12-02T05:59:00Z \(no readable record\)/);
  });
});

describe("explain: caps and gates", () => {
  it("names each container's cap and where it comes from", () => {
    assert.match(lineOf(explain(workload(), [appMonitor("m")]), "caps"), /^caps: memhog: limit 384Mi, cap the install's DEFAULT_MAX_MEMORY 8Gi \(no spec\.maxMemory\)/);
    assert.match(lineOf(explain(workload(), [appMonitor("m", { maxMemory: "1Gi" })]), "caps"), /cap spec\.maxMemory 1Gi/);
    assert.match(lineOf(explain(workload(), [appMonitor("m", { containerPolicies: [{ containerName: "*", mode: "Off" }] })]), "caps"), /memhog: containerPolicies mode Off, never scaled/);
    assert.match(lineOf(explain(workload(), [appMonitor("m", { containers: ["other"] })]), "caps"), /memhog: not in spec\.containers/);
  });

  it("under the install's ceilings (its shell's MAX_MEMORY, MIN_COOLDOWN_SECONDS, …): the caps and the cooldown memory-scaler applies", () => {
    const ceilings = { maxMemory: "4Gi", minCooldownSeconds: 600 };
    const items = [appMonitor("m", { maxMemory: "16Gi", cooldownSeconds: 0 })];
    const lines = explainLines(workload(), governing(workload(), items, ceilings), chain(), { ...SETTINGS, ceilings }, NOW);
    assert.match(lineOf(lines, "caps"), /cap the install's ceiling MAX_MEMORY 4Gi \(over spec\.maxMemory 16Gi\)/);
    assert.match(lineOf(lines, "cooldown"), /^cooldown: none running \(spec\.cooldownSeconds 600\) \(the install's ceiling MIN_COOLDOWN_SECONDS 600 over spec\.cooldownSeconds 0\)/);
    assert.match(lineOf(explain(workload(), items), "caps"), /cap spec\.maxMemory 16Gi/, "without them, the AppMonitor's");
  });

  it("names the gates: DryRun, at the cap, a probable leak", () => {
    const status = {
      capped: [{ workload: { kind: "Deployment", name: "web" }, containers: ["memhog"], maxMemory: "384Mi", since: "2026-12-02T05:00:00Z" }],
      probableLeaks: [{ workload: { kind: "Deployment", name: "web" }, since: "2026-12-02T05:10:00Z", until: "2026-12-02T06:10:00Z", template: "h", scales: [] }],
    };
    const gates = lineOf(explain(workload(), [appMonitor("m", { mode: "DryRun" }, status)]), "gates");
    assert.match(gates, /mode DryRun \(nothing is patched\)/);
    assert.match(gates, /at its cap since 2026-12-02T05:00:00Z: memhog at 384Mi/);
    assert.match(gates, /probable leak since 2026-12-02T05:10:00Z, scaling held until 2026-12-02T06:10:00Z/);
    assert.match(gates, /\(AppMonitor shop\/m spec, status\.capped, status\.probableLeaks\)$/);
  });

  it("says when no gate holds", () => {
    const gates = lineOf(explain(workload(), [appMonitor("m")]), "gates");
    assert.match(gates, /^gates: mode Scale; updateMode Rollout; not at its cap; no probable leak/);
  });
});

describe("explain: every line names its source", () => {
  it("ends each line in a parenthesised source", () => {
    for (const l of explain(workload(), [appMonitor("m")])) assert.match(l, /^[a-z][^:]*: .+ {2}\(.+\)$/s);
  });
});
