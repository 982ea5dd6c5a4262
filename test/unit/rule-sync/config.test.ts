/** rule-sync's start-up configuration (functions/rule-sync/config.ts): defaults, overrides, errors naming the variable. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_ALERTMANAGER_TIMEOUT_MS, DEFAULT_FIELD_MANAGER, DEFAULT_PROMETHEUS_TIMEOUT_MS, DEFAULT_RULE_LOAD_WAIT_MS, inScope, readConfig } from "../../../functions/rule-sync/config.ts";
import { DEFAULT_KUBE_API_TIMEOUT_MS } from "../../../functions/lib/kubeconfig.ts";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";
import { DEFAULT_METRIC_SOURCE, DEFAULT_SEVERITY } from "../../../functions/rule-sync/rule-config.ts";

describe("readConfig", () => {
  it("applies the defaults", () => {
    const config = readConfig({});
    assert.deepEqual(config.rule, { metricSource: DEFAULT_METRIC_SOURCE, ruleLabels: {}, severity: DEFAULT_SEVERITY });
    assert.equal(config.rule.metricSource, "cadvisor");
    assert.equal(config.fieldManager, DEFAULT_FIELD_MANAGER);
    assert.deepEqual(config.scope, { all: true });
    assert.equal(config.resyncOnStart, true);
    assert.equal(config.kubeconfig, undefined);
    assert.equal(config.kubeApiTimeoutMs, DEFAULT_KUBE_API_TIMEOUT_MS);
    assert.equal(config.prometheus, undefined, "no PROMETHEUS_URL: nothing to ask");
    assert.equal(config.alertmanager, undefined, "no ALERTMANAGER_URL: no delivery check");
  });

  it("reads PROMETHEUS_URL with its timeout and load wait, defaulted", () => {
    const config = readConfig({ PROMETHEUS_URL: "http://prometheus-operated.monitoring.svc:9090" });
    assert.deepEqual(config.prometheus, { url: new URL("http://prometheus-operated.monitoring.svc:9090"), timeoutMs: DEFAULT_PROMETHEUS_TIMEOUT_MS, loadWaitMs: DEFAULT_RULE_LOAD_WAIT_MS });
    assert.equal(DEFAULT_RULE_LOAD_WAIT_MS, 10_000);
  });

  it("reads ALERTMANAGER_URL with its timeout, defaulted; empty is unset", () => {
    assert.deepEqual(readConfig({ ALERTMANAGER_URL: "http://alertmanager-operated.monitoring.svc.cluster.local:9093" }).alertmanager, {
      url: new URL("http://alertmanager-operated.monitoring.svc.cluster.local:9093"), timeoutMs: DEFAULT_ALERTMANAGER_TIMEOUT_MS,
    });
    assert.deepEqual(readConfig({ ALERTMANAGER_URL: "https://am.example/sub/", ALERTMANAGER_TIMEOUT_MS: "700" }).alertmanager, { url: new URL("https://am.example/sub/"), timeoutMs: 700 });
    assert.equal(readConfig({ ALERTMANAGER_URL: "" }).alertmanager, undefined);
  });

  it("reads every override", () => {
    const config = readConfig({
      METRIC_SOURCE: "kube-state-metrics",
      RULE_LABELS: " release=prometheus , team=platform,empty= ",
      ALERT_SEVERITY: "critical",
      FIELD_MANAGER: "my-manager",
      WATCH_NAMESPACES: "a, b,,a",
      RESYNC_ON_START: "false",
      KUBECONFIG: "/tmp/kc",
      KUBE_API_TIMEOUT_MS: "4000",
      PROMETHEUS_URL: "https://prom.example:9091/sub/",
      PROMETHEUS_TIMEOUT_MS: "500",
      RULE_LOAD_WAIT_MS: "0",
    });
    assert.deepEqual(config.rule, { metricSource: "kube-state-metrics", ruleLabels: { release: "prometheus", team: "platform", empty: "" }, severity: "critical" });
    assert.equal(config.fieldManager, "my-manager");
    assert.deepEqual(config.scope, { all: false, namespaces: ["a", "b"] });
    assert.equal(config.resyncOnStart, false);
    assert.equal(config.kubeconfig, "/tmp/kc");
    assert.equal(config.kubeApiTimeoutMs, 4000);
    assert.deepEqual(config.prometheus, { url: new URL("https://prom.example:9091/sub/"), timeoutMs: 500, loadWaitMs: 0 });
  });

  it("treats empty values as unset", () => {
    const config = readConfig({ METRIC_SOURCE: "", RULE_LABELS: "", WATCH_NAMESPACES: " , ", ALERT_SEVERITY: "" });
    assert.deepEqual(config.scope, { all: true });
    assert.equal(config.rule.severity, DEFAULT_SEVERITY);
  });

  const refused: [Record<string, string>, string, RegExp][] = [
    [{ METRIC_SOURCE: "prometheus" }, "METRIC_SOURCE", /must be one of cadvisor, kube-state-metrics/],
    [{ KUBE_API_TIMEOUT_MS: "60001" }, "KUBE_API_TIMEOUT_MS", /between 100 and 60000/],
    [{ RULE_LABELS: "release" }, "RULE_LABELS", /key=value/],
    [{ RULE_LABELS: "=x" }, "RULE_LABELS", /key=value/],
    [{ RULE_LABELS: "a=1,a=2" }, "RULE_LABELS", /given twice/],
    [{ RULE_LABELS: "bad key=x" }, "RULE_LABELS", /not a valid Kubernetes label key/],
    [{ RULE_LABELS: "release=not valid" }, "RULE_LABELS", /not a valid Kubernetes label value/],
    [{ RULE_LABELS: "app.kubernetes.io/managed-by=me" }, "RULE_LABELS", /set by rule-sync itself/],
    [{ ALERT_SEVERITY: "{{ $value }}" }, "ALERT_SEVERITY", /1-63 characters/],
    [{ ALERT_SEVERITY: "info" }, "ALERT_SEVERITY", /must not be info: .*InfoInhibitor/],
    [{ FIELD_MANAGER: "x".repeat(129) }, "FIELD_MANAGER", /1-128 printable/],
    [{ FIELD_MANAGER: "tab\there" }, "FIELD_MANAGER", /1-128 printable/],
    [{ WATCH_NAMESPACES: "ok,Not_A_Namespace" }, "WATCH_NAMESPACES", /not a namespace name/],
    [{ RESYNC_ON_START: "yes" }, "RESYNC_ON_START", /true or false/],
    [{ PROMETHEUS_URL: "prometheus:9090" }, "PROMETHEUS_URL", /http or https URL/],
    [{ PROMETHEUS_URL: "not a url" }, "PROMETHEUS_URL", /absolute http\(s\) URL/],
    [{ PROMETHEUS_TIMEOUT_MS: "0" }, "PROMETHEUS_TIMEOUT_MS", /between 1 and 60000/],
    [{ RULE_LOAD_WAIT_MS: "60001" }, "RULE_LOAD_WAIT_MS", /between 0 and 60000/],
    [{ ALERTMANAGER_URL: "alertmanager:9093" }, "ALERTMANAGER_URL", /http or https URL/],
    [{ ALERTMANAGER_TIMEOUT_MS: "60001" }, "ALERTMANAGER_TIMEOUT_MS", /between 1 and 60000/],
    [{ RULE_LOAD_WAIT_MS: "10s" }, "RULE_LOAD_WAIT_MS", /must be an integer/],
  ];
  for (const [env, variable, message] of refused) {
    it(`refuses ${JSON.stringify(env)} naming ${variable}`, () => {
      assert.throws(
        () => readConfig(env),
        (error: unknown) => error instanceof ConfigError && error.variable === variable && error.message.startsWith(`${variable}: `) && message.test(error.message),
      );
    });
  }
});

describe("inScope", () => {
  it("admits every namespace, or only the listed ones", () => {
    assert.equal(inScope({ all: true }, "anything"), true);
    assert.equal(inScope({ all: false, namespaces: ["a", "b"] }, "b"), true);
    assert.equal(inScope({ all: false, namespaces: ["a", "b"] }, "c"), false);
  });
});
