// appmonitor's alerts on itself (knative/monitoring/appmonitor-alerts.yaml) under promtool's own
// unit tests (`promtool test rules`): each alert fires on the series it is about, and not without them.
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

test("each alert on appmonitor fires on its series, and stays silent without them (promtool test rules)", async () => {
  const rule = parse(await readFile(path.join(repoRoot, "knative/monitoring/appmonitor-alerts.yaml"), "utf8")) as { spec: { groups: { rules: AlertRule[] }[] } };
  alertRules = rule.spec.groups.flatMap((g) => g.rules);
  assert.deepEqual(alertRules.map((r) => r.alert).sort(), ["AppMonitorDeadLetters", "AppMonitorPermissionDenied", "AppMonitorProbableLeak", "AppMonitorPrometheusUnreachable", "AppMonitorRolloutFailed", "AppMonitorRuleSyncStale", "AppMonitorScaleFailed"]);
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
        ],
        alert_rule_test: ["AppMonitorDeadLetters", "AppMonitorScaleFailed", "AppMonitorRolloutFailed", "AppMonitorPermissionDenied", "AppMonitorPrometheusUnreachable", "AppMonitorRuleSyncStale", "AppMonitorProbableLeak"].map((name) => silent(name, "60m")),
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
