/** RuleReady from what Prometheus lists (functions/rule-sync/rule-loaded.ts): loaded, not yet, another generation, failing, unknown. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PROMETHEUS_REASONS, REASONS, RULE_READY } from "../../../functions/rule-sync/conditions.ts";
import { isLoaded, ruleReadyFromPrometheus, ruleReadyUnknown, type AppliedRule, type LoadedGroup } from "../../../functions/rule-sync/rule-loaded.ts";

const URL_ = "http://prometheus-operated.monitoring.svc:9090";
const applied: AppliedRule = {
  namespace: "shop",
  name: "mymonitor",
  group: "appmonitor/shop/mymonitor",
  generation: 3,
  labels: { release: "prometheus", "app.kubernetes.io/managed-by": "appmonitor-rule-sync" },
};

function group(generations: (string | undefined)[], health: string[] = generations.map(() => "ok")): LoadedGroup {
  return {
    name: applied.group,
    file: "/etc/prometheus/rules/prometheus-x-rulefiles-0/shop-mymonitor-uid.yaml",
    rules: generations.map((generation, i) => ({ name: `Alert${i}`, generation, health: health[i] ?? "ok", lastError: health[i] === "err" ? "found duplicate series for the match group" : undefined })),
  };
}

describe("ruleReadyFromPrometheus", () => {
  const table: [string, LoadedGroup | undefined, "True" | "False", string, RegExp][] = [
    ["no such group: not loaded, naming the group, the URL and the selectors", undefined, "False", REASONS.notLoaded,
      /^PrometheusRule shop\/mymonitor \(generation 3\) is applied, but Prometheus at http:\/\/prometheus-operated\.monitoring\.svc:9090 has not loaded its rule group appmonitor\/shop\/mymonitor: .*ruleSelector matches the rule's labels \(release=prometheus, app\.kubernetes\.io\/managed-by=appmonitor-rule-sync\) and its ruleNamespaceSelector selects namespace shop.*checked again at the next resync$/],
    ["the group at an earlier generation: not loaded yet, naming it", group(["2", "2"]), "False", REASONS.notLoaded, /has generation 2 of rule group appmonitor\/shop\/mymonitor loaded, not this one yet/],
    ["rules of two generations (a reload under way)", group(["2", "3"]), "False", REASONS.notLoaded, /has rules of several generations of rule group/],
    ["the group at this generation", group(["3", "3"]), "True", REASONS.loaded, /^PrometheusRule shop\/mymonitor \(generation 3\) is loaded by Prometheus at http:\/\/prometheus-operated\.monitoring\.svc:9090 as rule group appmonitor\/shop\/mymonitor$/],
    ["rules not evaluated yet (health unknown) still count as loaded", group(["3", "3"], ["unknown", "unknown"]), "True", REASONS.loaded, /is loaded/],
    ["a group without generations (written before they were recorded) counts as loaded", group([undefined, undefined]), "True", REASONS.loaded, /is loaded/],
    ["loaded, and a rule fails to evaluate: its error", group(["3", "3"], ["ok", "err"]), "False", REASONS.evaluationFailed, /fails to evaluate Alert1: found duplicate series for the match group$/],
  ];
  for (const [what, loaded, status, reason, message] of table) {
    it(what, () => {
      const condition = ruleReadyFromPrometheus(applied, loaded, URL_);
      assert.deepEqual([condition.type, condition.status, condition.reason], [RULE_READY, status, reason]);
      assert.match(condition.message, message);
    });
  }

  it("without a known generation, any generation loaded counts, and the message names none", () => {
    const unknown = { ...applied, generation: undefined };
    assert.equal(isLoaded(unknown, group(["7", "7"])), true);
    assert.match(ruleReadyFromPrometheus(unknown, undefined, URL_).message, /^PrometheusRule shop\/mymonitor is applied/);
  });

  it("cuts a long evaluation error, so the condition stays readable", () => {
    const long: LoadedGroup = { ...group(["3"]), rules: [{ name: "A", generation: "3", health: "err", lastError: "x".repeat(5000) }] };
    assert.ok(ruleReadyFromPrometheus(applied, long, URL_).message.length < 700);
  });

  it("says the same for the same facts, so a resync that finds them writes nothing", () => {
    assert.deepEqual(ruleReadyFromPrometheus(applied, group(["2"]), URL_), ruleReadyFromPrometheus(applied, group(["2"]), URL_));
  });
});

describe("ruleReadyUnknown", () => {
  it("without PROMETHEUS_URL: Unknown PrometheusNotConfigured, never True", () => {
    const condition = ruleReadyUnknown(applied, { kind: "notConfigured" });
    assert.deepEqual([condition.status, condition.reason], ["Unknown", PROMETHEUS_REASONS.notConfigured]);
    assert.equal(condition.message, "PrometheusRule shop/mymonitor (generation 3) is applied; whether Prometheus loaded it is not known: PROMETHEUS_URL is not set on rule-sync");
  });

  it("no answer, or not the API's: Unknown with the URL, the error and what to check", () => {
    const unreachable = ruleReadyUnknown(applied, { kind: "unreachable", url: "http://127.0.0.1:9", error: "connect ECONNREFUSED 127.0.0.1:9" });
    assert.deepEqual([unreachable.status, unreachable.reason], ["Unknown", PROMETHEUS_REASONS.unreachable]);
    assert.match(unreachable.message, /Prometheus at http:\/\/127\.0\.0\.1:9 did not answer: connect ECONNREFUSED 127\.0\.0\.1:9; check rule-sync's PROMETHEUS_URL/);
    const wrong = ruleReadyUnknown(applied, { kind: "apiError", url: "http://grafana:3000", error: "HTTP 404 to GET /api/v1/rules" });
    assert.deepEqual([wrong.status, wrong.reason], ["Unknown", PROMETHEUS_REASONS.apiError]);
    assert.match(wrong.message, /Prometheus at http:\/\/grafana:3000 answered something other than its HTTP API's success: HTTP 404/);
  });
});
