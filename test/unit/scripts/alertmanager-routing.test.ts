// appmonitor's Alertmanager routing has one source (scripts/alertmanager-routing.ts): the committed
// alertmanager.yml and docs/install.md's kube-prometheus-stack values are what it makes, the
// values keep the chart's default alertmanager.config whole, and the route names every alert the
// rule generator can raise. (amtool and the chart's NOTES: test/integration/alertmanager-routing.test.ts.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { GENERATED_ALERT_NAMES } from "../../../functions/rule-sync/rule.ts";
import {
  alertmanagerYaml,
  alertmanagerYamlPath,
  APPMONITOR_RECEIVER,
  appmonitorRoute,
  KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG,
  kubePrometheusStackValues,
  kubePrometheusStackValuesYaml,
  plainAlertmanagerConfig,
  type AlertmanagerConfig,
} from "../../../scripts/alertmanager-routing.ts";
import { ALERTMANAGER_VALUES_TEMPLATE, alertmanagerValuesTemplate, NAMESPACE_SENTINEL } from "../../../scripts/release/chart-templates.ts";
import { CHART_SOURCE } from "../../../scripts/release/build-chart.ts";
import { coalesceValues, type Value } from "../../harness/lib/helm-values.ts";
import { documentedKubePrometheusStackValues } from "../../harness/lib/install-doc.ts";

test("knative/alertmanager/alertmanager.yml is up to date (node scripts/alertmanager-routing.ts)", () => {
  assert.equal(readFileSync(alertmanagerYamlPath, "utf8"), alertmanagerYaml());
});

test("docs/install.md gives the kube-prometheus-stack values this module makes, character for character", async () => {
  const { text } = await documentedKubePrometheusStackValues();
  assert.equal(text, kubePrometheusStackValuesYaml("appmonitor"));
});

test("the route matches exactly the alerts the rule generator can raise", () => {
  const [matcher, ...more] = appmonitorRoute().matchers ?? [];
  assert.equal(more.length, 0);
  const regex = /^alertname=~"(.*)"$/.exec(matcher ?? "")?.[1];
  assert.ok(regex !== undefined, matcher);
  // Alertmanager anchors a regex matcher.
  const matches = (name: string) => new RegExp(`^(?:${regex})$`).test(name);
  for (const name of GENERATED_ALERT_NAMES) assert.ok(matches(name), name);
  for (const name of ["Watchdog", "InfoInhibitor", `${GENERATED_ALERT_NAMES[0]}2`, "AppMonitor"]) assert.ok(!matches(name), name);
});

test("the kube-prometheus-stack values are the chart's default alertmanager.config whole, with appmonitor's route first and its receiver added", () => {
  const { config } = kubePrometheusStackValues("appmonitor").alertmanager;
  const withoutOurs: AlertmanagerConfig = {
    ...config,
    route: { ...config.route, routes: (config.route.routes ?? []).filter((r) => r.receiver !== APPMONITOR_RECEIVER) },
    receivers: config.receivers.filter((r) => r.name !== APPMONITOR_RECEIVER),
  };
  assert.deepEqual(withoutOurs, KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG);
  assert.equal(config.route.routes?.[0]?.receiver, APPMONITOR_RECEIVER, "first");
  assert.deepEqual(config.receivers.find((r) => r.name === APPMONITOR_RECEIVER), plainAlertmanagerConfig().receivers.find((r) => r.name === APPMONITOR_RECEIVER));
});

test("Helm's coalescing of the documented values over the chart's defaults gives the documented values unchanged; values with only our route and receiver lose the chart's null receiver", async () => {
  const chart = { config: KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG } as unknown as Value;
  const { values } = await documentedKubePrometheusStackValues();
  assert.deepEqual(coalesceValues(chart, { config: values.alertmanager.config }), { config: values.alertmanager.config });
  const partial = { config: { route: { routes: [appmonitorRoute()] }, receivers: plainAlertmanagerConfig().receivers.filter((r) => r.name === APPMONITOR_RECEIVER) } } as unknown as Value;
  const merged = coalesceValues(chart, partial) as unknown as { config: AlertmanagerConfig };
  assert.equal(merged.config.route.receiver, "null", "the chart's root route still names null");
  assert.deepEqual(merged.config.receivers.map((r) => r.name), [APPMONITOR_RECEIVER], "but its null receiver is gone");
});

test("the chart's named template holds the same values, alert-receiver's address in the release's namespace", () => {
  const template = alertmanagerValuesTemplate();
  const body = template.split("\n").slice(2, -2).join("\n");
  assert.equal(body, kubePrometheusStackValuesYaml(NAMESPACE_SENTINEL).replaceAll(NAMESPACE_SENTINEL, "{{ .Release.Namespace }}").trimEnd());
  assert.match(body, /url: http:\/\/alert-receiver\.\{\{ \.Release\.Namespace \}\}\.svc\.cluster\.local\//);
});

test("NOTES.txt prints that named template, whose route names every alert the rule generator can raise", () => {
  const notes = readFileSync(path.join(CHART_SOURCE, "templates", "NOTES.txt"), "utf8");
  assert.match(notes, new RegExp(`\\{\\{ include "${ALERTMANAGER_VALUES_TEMPLATE.replaceAll(".", "\\.")}" \\. `));
  const matcher = /matchers: \[alertname=~"([^"]*)"\]/.exec(alertmanagerValuesTemplate())?.[1] ?? "";
  assert.deepEqual(matcher.split("|"), [...GENERATED_ALERT_NAMES]);
  assert.ok(GENERATED_ALERT_NAMES.includes("AppMonitorMemoryTrend"), "the trend alert is one of them");
});
