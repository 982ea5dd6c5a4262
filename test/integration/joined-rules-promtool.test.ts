// The rule-sync-scale bench's joined rule form (test/support/joined-rules.ts) against the real
// rule unit tester (`promtool test rules`): that it is the comparison it claims to be (it fires
// with the AppMonitor's name where a per-AppMonitor rule would), and what it cannot express.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, test } from "node:test";
import { APPMONITOR_ALERT_NAME, APPMONITOR_OOM_ALERT_NAME } from "../../functions/lib/appmonitor.ts";
import { joinedRulesFiles, type JoinedMonitor } from "../support/joined-rules.ts";
import { runCommand } from "../support/run-command.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

let dir: TempDir;
before(async () => {
  dir = await tempDir("joined-rules-promtool");
});
after(async () => {
  await dir.remove();
});

const MI = 1024 * 1024;
const container = (namespace: string, pod: string): string => `namespace="${namespace}",pod="${pod}",container="app"`;

/** Runs `promtool test rules` on the joined rules of `monitors`; the series are 90Mi used of 100Mi in a/p and b/q, and an OOM kill in b/q. */
async function promtool(monitors: readonly JoinedMonitor[], expected: { alertname: string; exp_alerts: { exp_labels: Record<string, string>; exp_annotations: Record<string, string> }[] }[]): Promise<{ code: number | null; output: string }> {
  const files = joinedRulesFiles(monitors, "joined");
  await writeFile(path.join(dir.path, "thresholds.yml"), files.thresholds);
  await writeFile(path.join(dir.path, "alerts.yml"), files.alerts);
  const series = ["a/p", "b/q"].flatMap((where) => {
    const [namespace = "", pod = ""] = where.split("/");
    return [
      { series: `container_memory_working_set_bytes{${container(namespace, pod)}}`, values: `${90 * MI}x10` },
      { series: `container_spec_memory_limit_bytes{${container(namespace, pod)}}`, values: `${100 * MI}x10` },
      { series: `container_oom_events_total{${container(namespace, pod)}}`, values: namespace === "b" ? "0 1x9" : "0x10" },
    ];
  });
  const tests = [{ interval: "1m", input_series: series, alert_rule_test: expected.map((e) => ({ eval_time: "5m", ...e })) }];
  await writeFile(path.join(dir.path, "test.yml"), JSON.stringify({ rule_files: ["thresholds.yml", "alerts.yml"], evaluation_interval: "1m", tests }));
  const result = await runCommand("promtool", ["test", "rules", path.join(dir.path, "test.yml")]);
  return { code: result.code, output: result.stdout + result.stderr };
}

const monitor = (namespace: string, name: string, memThresholdPercent: number): JoinedMonitor => ({ namespace, name, memThresholdPercent, forSeconds: 60 });
const labels = (namespace: string, pod: string, appmonitor: string): Record<string, string> => ({ namespace, pod, container: "app", appmonitor });
const high = (namespace: string, pod: string, appmonitor: string) => ({
  exp_labels: labels(namespace, pod, appmonitor),
  exp_annotations: { summary: `Container app of Pod ${namespace}/${pod} uses 90.0% of its memory limit (AppMonitor ${appmonitor}).`, value: "90" },
});
const oom = (namespace: string, pod: string, appmonitor: string) => ({
  exp_labels: labels(namespace, pod, appmonitor),
  exp_annotations: { summary: `Container app of Pod ${namespace}/${pod} was OOM-killed (AppMonitor ${appmonitor}).` },
});

test("the joined alert fires per container at or above its namespace's threshold, named after that namespace's AppMonitor", async () => {
  const result = await promtool([monitor("a", "ma", 80), monitor("b", "mb", 95)], [
    { alertname: APPMONITOR_ALERT_NAME, exp_alerts: [high("a", "p", "ma")] },
    { alertname: APPMONITOR_OOM_ALERT_NAME, exp_alerts: [oom("b", "q", "mb")] },
  ]);
  assert.equal(result.code, 0, result.output);
});

test("a namespace without an AppMonitor raises nothing", async () => {
  const result = await promtool([monitor("a", "ma", 80)], [
    { alertname: APPMONITOR_ALERT_NAME, exp_alerts: [high("a", "p", "ma")] },
    { alertname: APPMONITOR_OOM_ALERT_NAME, exp_alerts: [] },
  ]);
  assert.equal(result.code, 0, result.output);
});

test("two AppMonitors in one namespace break the joined alert for every namespace (what one rule per AppMonitor does not)", async () => {
  const result = await promtool([monitor("a", "ma", 80), monitor("a", "ma2", 85), monitor("b", "mb", 80)], [
    { alertname: APPMONITOR_ALERT_NAME, exp_alerts: [high("b", "q", "mb")] },
  ]);
  assert.notEqual(result.code, 0, result.output);
  assert.match(result.output, /many-to-many matching not allowed|duplicate series/);
});
