// appmonitor's alerts on itself (knative/monitoring/appmonitor-alerts.yaml) under promtool's own
// unit tests (`promtool test rules`): each alert fires on the series it is about, and not without them.
// The functions' own health (a Pod not Ready, a function not scraped) is read from the PodMonitor's
// `up` (job: the Pod's app.kubernetes.io/name) and kube-state-metrics' series, as kube-prometheus-stack has them.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { runCommand } from "../support/run-command.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const NS = "appmonitor";

let dir: TempDir;
before(async () => {
  dir = await tempDir("self-alerts-promtool");
});
after(async () => {
  await dir.remove();
});

interface AlertRule {
  readonly alert: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
}
let alertRules: AlertRule[] = [];

/** An alert expected firing at `evalTime`: its rule's labels and annotations (static: no `$value` in them), for the install's namespace, with the `by` labels its expression keeps. */
const firing = (alertname: string, evalTime: string, kept: Record<string, string> = {}) => {
  const rule = alertRules.find((r) => r.alert === alertname);
  if (rule === undefined) throw new Error(`no alert ${alertname} in appmonitor-alerts.yaml`);
  return { eval_time: evalTime, alertname, exp_alerts: [{ exp_labels: { namespace: NS, ...kept, ...rule.labels }, exp_annotations: rule.annotations }] };
};
const silent = (alertname: string, evalTime: string) => ({ eval_time: evalTime, alertname, exp_alerts: [] });
/** An alert expected firing at `evalTime` once for each label set given (the rule's labels and annotations added). */
const firingEach = (alertname: string, evalTime: string, labelSets: Record<string, string>[]) => {
  const rule = alertRules.find((r) => r.alert === alertname);
  if (rule === undefined) throw new Error(`no alert ${alertname} in appmonitor-alerts.yaml`);
  return { eval_time: evalTime, alertname, exp_alerts: labelSets.map((labels) => ({ exp_labels: { ...labels, ...rule.labels }, exp_annotations: rule.annotations })) };
};
const FUNCTIONS = ["alert-receiver", "memory-scaler", "rule-sync", "appmonitor-dead-letter"];
/** A function's Pod as the PodMonitor scrapes it (`up`) and kube-state-metrics reports it Ready or not. */
const functionPod = (job: string, up: string, ready: string) => [
  { series: `up{namespace="${NS}",job="${job}",pod="${job}-1",container="${job}",endpoint="8080"}`, values: up },
  { series: `kube_pod_status_ready{namespace="${NS}",pod="${job}-1",condition="true",job="kube-state-metrics"}`, values: ready },
];

test("each alert on appmonitor fires on its series, and stays silent without them (promtool test rules)", async () => {
  const rule = parse(await readFile(path.join(repoRoot, "knative/monitoring/appmonitor-alerts.yaml"), "utf8")) as { spec: { groups: { rules: AlertRule[] }[] } };
  alertRules = rule.spec.groups.flatMap((g) => g.rules);
  assert.deepEqual(alertRules.map((r) => r.alert).sort(), ["AppMonitorDeadLetters", "AppMonitorFunctionNotReady", "AppMonitorFunctionNotScraped", "AppMonitorPermissionDenied", "AppMonitorProbableLeak", "AppMonitorPrometheusUnreachable", "AppMonitorRolloutFailed", "AppMonitorRuleSyncStale", "AppMonitorScaleFailed"]);
  const rules = path.join(dir.path, "alerts.yaml");
  await writeFile(rules, stringify({ groups: rule.spec.groups }));
  const series = (name: string, labels: string, values: string) => ({ series: `${name}{namespace="${NS}",${labels}}`, values });
  const tests = {
    rule_files: [rules],
    evaluation_interval: "1m",
    tests: [
      {
        interval: "1m",
        input_series: [
          series("appmonitor_memory_scaler_events_total", 'type="firing",outcome="failed",reason="503"', "0 0 0 1 1 1 1 1 1 1"),
          series("appmonitor_memory_scaler_rollouts_total", 'kind="Deployment",result="RolloutFailed",reason="ProgressDeadlineExceeded"', "0 0 0 0 1 1 1 1 1 1"),
          series("appmonitor_kubernetes_permission_denied_total", 'pod="memory-scaler-1",verb="list",group="",resource="resourcequotas"', "0 0 0 2 2 2 2 2 2 2"),
          series("appmonitor_memory_scaler_events_total", 'type="firing",outcome="skipped",reason="ProbableLeak"', "0 0 0 0 0 2 2 2 2 2"),
          series("appmonitor_rule_sync_prometheus_requests_total", 'endpoint="rules",result="unreachable"', "0+1x40"),
          series("appmonitor_rule_sync_last_resync_timestamp_seconds", 'pod="rule-sync-1"', "0x60"),
          series("appmonitor_dead_letters_total", 'function="dead-letter",type="com.kubedemo.appmonitor.alert.firing",code="400"', "0 0 0 0 0 0 0 1 1 1"),
        ],
        alert_rule_test: [
          silent("AppMonitorScaleFailed", "2m"),
          silent("AppMonitorDeadLetters", "6m"),
          firing("AppMonitorDeadLetters", "8m"),
          silent("AppMonitorPermissionDenied", "2m"),
          silent("AppMonitorRolloutFailed", "3m"),
          firing("AppMonitorRolloutFailed", "6m", { kind: "Deployment" }),
          firing("AppMonitorScaleFailed", "5m"),
          firing("AppMonitorPermissionDenied", "5m"),
          silent("AppMonitorProbableLeak", "4m"),
          firing("AppMonitorProbableLeak", "7m"),
          silent("AppMonitorPrometheusUnreachable", "5m"),
          firing("AppMonitorPrometheusUnreachable", "20m"),
          silent("AppMonitorRuleSyncStale", "30m"),
          firing("AppMonitorRuleSyncStale", "40m"),
        ],
      },
      {
        // A healthy install: no failure, Prometheus answering, resyncs every 5 minutes.
        interval: "5m",
        input_series: [
          series("appmonitor_memory_scaler_events_total", 'type="firing",outcome="scaled",reason="Scaled"', "0+1x12"),
          series("appmonitor_rule_sync_prometheus_requests_total", 'endpoint="rules",result="ok"', "0+1x12"),
          series("appmonitor_memory_scaler_rollouts_total", 'kind="Deployment",result="RolledOut",reason="RolledOut"', "0+1x12"),
          series("appmonitor_rule_sync_last_resync_timestamp_seconds", 'pod="rule-sync-1"', "0+300x12"),
          series("appmonitor_http_requests_total", 'function="dead-letter",route="function",method="POST",code="204"', "0+1x12"),
          ...FUNCTIONS.flatMap((job) => functionPod(job, "1x12", "1x12")),
          series("kube_deployment_spec_replicas", 'deployment="memory-scaler",job="kube-state-metrics"', "1x12"),
        ],
        alert_rule_test: alertRules.map((r) => silent(r.alert, "60m")),
      },
      {
        // memory-scaler stops being Ready at 3m, the dead-letter sink stops answering scrapes at 5m;
        // a Deployment named memory-scaler in another namespace, not appmonitor's, is no concern.
        interval: "1m",
        input_series: [
          ...functionPod("alert-receiver", "1x30", "1x30"),
          ...functionPod("rule-sync", "1x30", "1x30"),
          ...functionPod("memory-scaler", "1x30", "1 1 1 0x27"),
          ...functionPod("appmonitor-dead-letter", "1 1 1 1 1 0x25", "1x30"),
          series("kube_deployment_spec_replicas", 'deployment="memory-scaler",job="kube-state-metrics"', "1x30"),
          { series: 'kube_deployment_spec_replicas{namespace="shop",deployment="memory-scaler",job="kube-state-metrics"}', values: "1x30" },
        ],
        alert_rule_test: [
          silent("AppMonitorFunctionNotReady", "7m"),
          firingEach("AppMonitorFunctionNotReady", "9m", [{ namespace: NS, job: "memory-scaler" }]),
          silent("AppMonitorFunctionNotScraped", "14m"),
          firingEach("AppMonitorFunctionNotScraped", "16m", [{ job: "appmonitor-dead-letter" }]),
        ],
      },
      {
        // Knative Serving: memory-scaler at zero has no Pod (its Revision's Deployment wants none),
        // until an event wakes it at 3m and its Pod is never scraped.
        interval: "1m",
        input_series: [
          ...["alert-receiver", "rule-sync", "appmonitor-dead-letter"].flatMap((job) => functionPod(job, "1x30", "1x30")),
          series("kube_deployment_spec_replicas", 'deployment="memory-scaler-00001-deployment",job="kube-state-metrics"', "0 0 0 1x27"),
        ],
        alert_rule_test: [
          silent("AppMonitorFunctionNotScraped", "12m"),
          firingEach("AppMonitorFunctionNotScraped", "14m", [{ namespace: NS, job: "memory-scaler" }]),
          silent("AppMonitorFunctionNotReady", "20m"),
        ],
      },
      {
        // Nothing of appmonitor scraped (the PodMonitor not applied, or not selected).
        interval: "1m",
        input_series: [{ series: 'up{job="kubelet",namespace="kube-system"}', values: "1x20" }],
        alert_rule_test: [
          silent("AppMonitorFunctionNotScraped", "9m"),
          firingEach("AppMonitorFunctionNotScraped", "11m", ["alert-receiver", "rule-sync", "appmonitor-dead-letter"].map((job) => ({ job }))),
          silent("AppMonitorFunctionNotReady", "11m"),
        ],
      },
      {
        // A dead letter the sink could not record (the API server away: 503, Knative retries it).
        interval: "1m",
        input_series: [series("appmonitor_http_requests_total", 'function="dead-letter",route="function",method="POST",code="503"', "0 0 0 1 1 1 1 1")],
        alert_rule_test: [silent("AppMonitorDeadLetters", "2m"), firing("AppMonitorDeadLetters", "5m")],
      },
    ],
  };
  const file = path.join(dir.path, "alerts.test.yaml");
  await writeFile(file, stringify(tests));
  const check = await runCommand("promtool", ["check", "rules", rules]);
  assert.equal(check.code, 0, check.stdout + check.stderr);
  const result = await runCommand("promtool", ["test", "rules", file]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout + result.stderr, /SUCCESS/);
});
