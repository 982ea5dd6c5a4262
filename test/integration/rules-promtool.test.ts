// The generated rules against the real Prometheus rule checker and rule unit tester
// (`promtool check rules`, `promtool test rules`,
// https://prometheus.io/docs/prometheus/latest/configuration/unit_testing_rules/).
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { promqlString, regexQuote } from "../../functions/lib/promql.ts";
import { heapPercentQuery } from "../../functions/memory-scaler/kube/prometheus.ts";
import { ALERT_NAME, HEAP_ERROR_ALERT_NAME, HEAP_THRESHOLD_ALERT_NAME, buildPrometheusRule, buildRulesFile, OOM_ALERT_NAME, TREND_ALERT_NAME } from "../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG, type MetricSource, type RuleConfig } from "../../functions/rule-sync/rule-config.ts";
import { checkRuleInput, type AppMonitorForRule } from "../../functions/rule-sync/rule-input.ts";
import { runCommand, type CommandResult } from "../support/run-command.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const SOURCES: readonly MetricSource[] = ["cadvisor", "kube-state-metrics"];
const configFor = (metricSource: MetricSource): RuleConfig => ({ ...DEFAULT_RULE_CONFIG, metricSource });

let dir: TempDir;
before(async () => {
  dir = await tempDir("rules-promtool");
});
after(async () => {
  await dir.remove();
});

let fileCounter = 0;
async function writeTemp(name: string, text: string): Promise<string> {
  const file = path.join(dir.path, `${++fileCounter}-${name}`);
  await writeFile(file, text);
  return file;
}

function explain(result: CommandResult): string {
  return `exit ${result.code}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

/** `promtool check rules FILE…`; asserts success for every file. */
async function assertRulesCheck(files: readonly string[]): Promise<void> {
  const result = await runCommand("promtool", ["check", "rules", ...files]);
  assert.equal(result.code, 0, explain(result));
  const successes = (result.stdout + result.stderr).match(/SUCCESS: \d+ rules found/g) ?? [];
  assert.equal(successes.length, files.length, explain(result));
}

/** A `promtool test rules` test group, as written in its YAML. */
interface TestGroup {
  interval: string;
  input_series: { series: string; values: string }[];
  alert_rule_test: { eval_time: string; alertname: string; exp_alerts: { exp_labels: Record<string, string>; exp_annotations: Record<string, string> }[] }[];
  /** Expressions evaluated at a time, with the samples they must give. */
  promql_expr_test?: { expr: string; eval_time: string; exp_samples: { labels: string; value: number }[] }[];
}

/** Writes the rules and the test file and runs `promtool test rules`, the rules evaluated every `evaluationInterval`. */
async function promtoolTest(rules: string, tests: readonly TestGroup[], evaluationInterval = "1m"): Promise<CommandResult> {
  const rulesFile = await writeTemp("rules.yaml", rules);
  // JSON is YAML; with DEL and C1 controls escaped too (JSON.stringify leaves them raw, and
  // Go's YAML parser refuses raw control characters), any label value can be expected.
  const json = JSON.stringify({ rule_files: [path.basename(rulesFile)], evaluation_interval: evaluationInterval, tests }, null, 1).replace(
    /[\u007f-\u009f]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  const testFile = await writeTemp("test.yaml", json);
  return runCommand("promtool", ["test", "rules", testFile]);
}

async function assertPromtoolTest(rules: string, tests: readonly TestGroup[], evaluationInterval?: string): Promise<void> {
  const result = await promtoolTest(rules, tests, evaluationInterval);
  assert.equal(result.code, 0, `${explain(result)}\n--- rules ---\n${rules}`);
}

/** A series selector string for input_series. */
function seriesOf(metric: string, labels: Record<string, string>): string {
  return `${metric}{${Object.entries(labels)
    .map(([k, v]) => `${k}=${promqlString(v)}`)
    .join(",")}}`;
}

const LIMIT = 100 * 1024 * 1024; // 100Mi, bytes
const bytesAt = (percent: number): number => (LIMIT * percent) / 100;
const STEPS = 20; // one sample a minute for 20 minutes

/** One container in a scenario: its usage in percent of LIMIT, and whether it has a limit. */
interface Container {
  namespace: string;
  pod: string;
  /** `""` is the Pod-level cgroup, `POD` the pause container. */
  container: string;
  /** Percent of LIMIT, or a list of percents, one per sample (`undefined`: no sample; `null`: the series ended). */
  usage: number | (number | null | undefined)[];
  limited: boolean;
  /** Pod opts in with the annotation (kube-state-metrics join). */
  annotated: boolean;
  /** Pod labels (kube-state-metrics join). */
  podLabels?: Record<string, string>;
  /** cAdvisor's cgroup id label; two series of one container differ only in it. */
  id?: string;
}

/**
 * promtool's values of `usage`, `steps` + 1 samples (`axn` is n + 1 of them): a list shorter than
 * that has its last value held; an `undefined` percent is a missing sample (`_`), a `null` one the
 * staleness marker Prometheus writes when a scrape no longer has the series (`stale`).
 */
function values(usage: number | (number | null | undefined)[], steps = STEPS): string {
  if (typeof usage === "number") return `${bytesAt(usage)}x${steps}`;
  const listed = usage.map((p) => (p === undefined ? "_" : p === null ? "stale" : String(bytesAt(p))));
  if (usage.length > steps) return listed.join(" ");
  return [...listed, `${bytesAt(usage.at(-1) ?? 0)}x${steps - usage.length}`].join(" ");
}

/**
 * Input series as cAdvisor and kube-state-metrics would expose them, with their extra labels;
 * `steps` samples of each (a series that does not vary is held that long).
 */
function inputSeries(containers: readonly Container[], source: MetricSource, steps = STEPS): TestGroup["input_series"] {
  const out: TestGroup["input_series"] = [];
  const pods = new Map<string, Container>();
  for (const c of containers) {
    const id = c.id ?? `/kubepods/${c.pod}/${c.container || "pod"}`;
    // Pod-level cgroup series have no container label at all.
    const cadvisor: Record<string, string> = { namespace: c.namespace, pod: c.pod, ...(c.container === "" ? {} : { container: c.container }), id, image: "img", job: "kubelet", instance: "node-0", metrics_path: "/metrics/cadvisor" };
    out.push({ series: seriesOf("container_memory_working_set_bytes", cadvisor), values: values(c.usage, steps) });
    if (source === "cadvisor") {
      // cAdvisor reports an unlimited container's limit as 0.
      out.push({ series: seriesOf("container_spec_memory_limit_bytes", cadvisor), values: `${c.limited ? LIMIT : 0}x${steps}` });
    } else if (c.limited) {
      const ksm = { namespace: c.namespace, pod: c.pod, container: c.container, resource: "memory", unit: "byte", node: "node-0", uid: `uid-${c.pod}`, job: "kube-state-metrics", instance: "ksm:8080" };
      out.push({ series: seriesOf("kube_pod_container_resource_limits", ksm), values: `${LIMIT}x${steps}` });
    }
    pods.set(`${c.namespace}/${c.pod}`, c);
  }
  if (source === "kube-state-metrics") {
    for (const c of pods.values()) {
      const base = { namespace: c.namespace, pod: c.pod, uid: `uid-${c.pod}`, job: "kube-state-metrics", instance: "ksm:8080" };
      out.push({ series: seriesOf("kube_pod_annotations", { ...base, ...(c.annotated ? { annotation_app_monitor_kubedemo_com_monitor: "true" } : {}) }), values: `1x${steps}` });
      const labels = Object.fromEntries(Object.entries(c.podLabels ?? {}).map(([k, v]) => [`label_${k}`, v]));
      out.push({ series: seriesOf("kube_pod_labels", { ...base, ...labels }), values: `1x${steps}` });
    }
  }
  // Series that two entries of one container share (kube-state-metrics has one per container).
  const seen = new Set<string>();
  return out.filter((s) => !seen.has(s.series) && seen.add(s.series));
}

/**
 * The input series of `containers` as kube-prometheus-stack's defaults leave them: cAdvisor's
 * without its container_spec_* series (its cAdvisor relabeling drops them), the limit from
 * kube-state-metrics.
 */
function kubePrometheusStackSeries(containers: readonly Container[], steps = STEPS): TestGroup["input_series"] {
  const kept = inputSeries(containers, "cadvisor", steps).filter((s) => !s.series.startsWith("container_spec_memory_limit_bytes"));
  const scaled = containers.filter((c) => c.container !== "" && c.container !== "POD");
  const limits = inputSeries(scaled, "kube-state-metrics", steps).filter((s) => s.series.startsWith("kube_pod_container_resource_limits"));
  return [...kept, ...limits];
}

function expectedAlert(namespace: string, pod: string, container: string, percent: number, appmonitor: string, threshold: number) {
  return {
    exp_labels: { alertname: ALERT_NAME, namespace, pod, container, appmonitor, severity: "warning" },
    exp_annotations: {
      summary: `Container ${container} of Pod ${namespace}/${pod} uses ${percent.toFixed(1)}% of its memory limit (AppMonitor ${appmonitor}, threshold ${threshold}%).`,
      value: String(percent),
    },
  };
}

/** The rules file of `monitors`, each checked as rule-sync checks it. */
function rulesFile(monitors: readonly AppMonitorForRule[], config: RuleConfig): string {
  return buildRulesFile(monitors.map(checkRuleInput), config);
}

// The AppMonitor under test: threshold 75 %, for 2 minutes, also selecting Pods labelled name=memhog.
const MONITOR: AppMonitorForRule = {
  metadata: { name: "memhog-monitor", namespace: "shop", uid: "uid-am" },
  spec: { memThresholdPercent: 75, forSeconds: 120, selector: { matchLabels: { name: "memhog" } } },
};

const base = { namespace: "shop", container: "app", limited: true, annotated: true };
const SCENARIO: Container[] = [
  { ...base, pod: "hot", usage: 76 },
  { ...base, pod: "hot", usage: 40, id: "/kubepods/hot/app-old" }, // a restarted container's old series
  { ...base, pod: "edge", usage: 75 },
  { ...base, pod: "cool", usage: 74 },
  { ...base, pod: "blip", usage: [76, 76, 50] }, // above the threshold for less than `for`
  { ...base, pod: "nolimit", usage: 90, limited: false },
  { ...base, pod: "withpause", usage: 10 },
  { ...base, pod: "withpause", container: "POD", usage: 90 },
  { ...base, pod: "withpause", container: "", usage: 90 },
  { ...base, namespace: "other", pod: "hot", usage: 90 },
  { ...base, pod: "selected", usage: 80, annotated: false, podLabels: { name: "memhog" } },
  { ...base, pod: "unselected", usage: 90, annotated: false, podLabels: { name: "other" } },
];

describe("promtool check rules accepts every generated rule", () => {
  const monitors: AppMonitorForRule[] = [
    MONITOR,
    { metadata: { name: "mymonitor", namespace: "default", uid: "u1" }, spec: { memThresholdPercent: 75, forSeconds: 60 } },
    { metadata: { name: "trend", namespace: "default", uid: "u5" }, spec: { memThresholdPercent: 75, forSeconds: 60, trend: { horizonSeconds: 604_800, windowSeconds: 86_400, floorPercent: 0 } } },
    { metadata: { name: "a.b-c.d", namespace: "x", uid: "u2" }, spec: { memThresholdPercent: 0.5, forSeconds: 0, containers: ["app", "side-car"] } },
    { metadata: { name: "z".repeat(253), namespace: "y".repeat(63), uid: "u3" }, spec: { memThresholdPercent: 100, forSeconds: 86_400, selector: {} } },
    {
      metadata: { name: "selectors", namespace: "shop", uid: "u4" },
      spec: {
        memThresholdPercent: 87.5,
        forSeconds: 300,
        selector: {
          matchLabels: { "app.kubernetes.io/name": "memhog", tier: "a.b" },
          matchExpressions: [
            { key: "env", operator: "In", values: ["prod", "stage.1", "x_y"] },
            { key: "example.com/skip", operator: "NotIn", values: ["true"] },
            { key: "team", operator: "Exists" },
            { key: "legacy", operator: "DoesNotExist" },
          ],
        },
      },
    },
  ];
  for (const source of SOURCES) {
    test(`${source}: plain rules file and every PrometheusRule's groups`, async () => {
      const config = { ...configFor(source), ruleLabels: { release: "prometheus" }, severity: "critical" };
      const files = [await writeTemp(`all-${source}.yaml`, rulesFile(monitors, config))];
      for (const m of monitors) {
        // prometheus-operator writes spec.groups of each PrometheusRule into a rules file.
        files.push(await writeTemp(`prometheusrule-${source}.yaml`, stringify(buildPrometheusRule(checkRuleInput(m), config).spec, { lineWidth: 0 })));
      }
      await assertRulesCheck(files);
    });
  }

  test("the checker is not a rubber stamp: a broken expression fails", async () => {
    const broken = rulesFile([MONITOR], DEFAULT_RULE_CONFIG).replace("max by", "max by by");
    const result = await runCommand("promtool", ["check", "rules", await writeTemp("broken.yaml", broken)]);
    assert.notEqual(result.code, 0, explain(result));
  });
});

describe("promtool test rules: when the alert fires", () => {
  for (const source of SOURCES) {
    test(`${source}: 76 % and 75 % held longer than for fire with the right labels; 74 %, a short spike, no limit, the pause container, another namespace do not`, async () => {
      const firing = [expectedAlert("shop", "hot", "app", 76, "memhog-monitor", 75), expectedAlert("shop", "edge", "app", 75, "memhog-monitor", 75), expectedAlert("shop", "selected", "app", 80, "memhog-monitor", 75)];
      // cAdvisor series carry no Pod labels or annotations: the rule cannot leave out an
      // unselected Pod of the namespace (memory-scaler does, from the API server).
      if (source === "cadvisor") firing.push(expectedAlert("shop", "unselected", "app", 90, "memhog-monitor", 75));
      await assertPromtoolTest(rulesFile([MONITOR], configFor(source)), [
        {
          interval: "1m",
          input_series: inputSeries(SCENARIO, source),
          alert_rule_test: [
            // Above the threshold since 0m, for 2m: pending at 1m, firing from 2m on.
            { eval_time: "1m", alertname: ALERT_NAME, exp_alerts: [] },
            { eval_time: "3m", alertname: ALERT_NAME, exp_alerts: firing },
            { eval_time: "15m", alertname: ALERT_NAME, exp_alerts: firing },
          ],
        },
      ]);
    });

    if (source === "cadvisor") {
      test("cadvisor on kube-prometheus-stack's defaults: no container_spec_* series (its cAdvisor relabeling drops them), the limit from kube-state-metrics; the same alerts fire", async () => {
        const firing = ["hot", "edge", "selected", "unselected"].map((pod) => expectedAlert("shop", pod, "app", { hot: 76, edge: 75, selected: 80, unselected: 90 }[pod] ?? 0, "memhog-monitor", 75));
        await assertPromtoolTest(rulesFile([MONITOR], configFor("cadvisor")), [
          {
            interval: "1m",
            input_series: kubePrometheusStackSeries(SCENARIO),
            alert_rule_test: [
              { eval_time: "1m", alertname: ALERT_NAME, exp_alerts: [] },
              { eval_time: "3m", alertname: ALERT_NAME, exp_alerts: firing },
            ],
          },
        ]);
      });
    }

    test(`${source}: two AppMonitors in two namespaces each alert only for their own Pods`, async () => {
      const other: AppMonitorForRule = { metadata: { name: "other-monitor", namespace: "other", uid: "u" }, spec: { memThresholdPercent: 85, forSeconds: 60 } };
      const containers: Container[] = [
        { ...base, pod: "hot", usage: 76 },
        { ...base, namespace: "other", pod: "hot", usage: 90 },
        { ...base, namespace: "other", pod: "warm", usage: 80 },
      ];
      await assertPromtoolTest(rulesFile([MONITOR, other], configFor(source)), [
        {
          interval: "1m",
          input_series: inputSeries(containers, source),
          alert_rule_test: [
            {
              eval_time: "5m",
              alertname: ALERT_NAME,
              exp_alerts: [expectedAlert("shop", "hot", "app", 76, "memhog-monitor", 75), expectedAlert("other", "hot", "app", 90, "other-monitor", 85)],
            },
          ],
        },
      ]);
    });

    test(`${source}: with spec.containers only the listed containers fire; another container of the same Pod, or one whose name merely contains a listed one, does not`, async () => {
      const monitor: AppMonitorForRule = { ...MONITOR, spec: { ...MONITOR.spec, containers: ["app", "side-car"] } };
      const containers: Container[] = [
        { ...base, pod: "hot", usage: 90 },
        { ...base, pod: "hot", container: "side-car", usage: 80 },
        { ...base, pod: "hot", container: "logger", usage: 95 },
        { ...base, pod: "hot", container: "app-2", usage: 95 },
        { ...base, pod: "hot", container: "xapp", usage: 95 },
        { ...base, pod: "warm", container: "logger", usage: 99 },
      ];
      await assertPromtoolTest(rulesFile([monitor], configFor(source)), [
        {
          interval: "1m",
          input_series: inputSeries(containers, source),
          alert_rule_test: [
            {
              eval_time: "5m",
              alertname: ALERT_NAME,
              exp_alerts: [expectedAlert("shop", "hot", "app", 90, "memhog-monitor", 75), expectedAlert("shop", "hot", "side-car", 80, "memhog-monitor", 75)],
            },
          ],
        },
      ]);
    });

    test(`${source}: the harness notices a wrong expectation (74 % expected to fire)`, async () => {
      const result = await promtoolTest(rulesFile([MONITOR], configFor(source)), [
        {
          interval: "1m",
          input_series: inputSeries([{ ...base, pod: "cool", usage: 74 }], source),
          alert_rule_test: [{ eval_time: "5m", alertname: ALERT_NAME, exp_alerts: [expectedAlert("shop", "cool", "app", 74, "memhog-monitor", 75)] }],
        },
      ]);
      assert.notEqual(result.code, 0, explain(result));
      assert.match(result.stdout + result.stderr, /FAILED/);
    });
  }

  for (const source of SOURCES) {
    test(`${source}: a targetRef fires for its workload's Pods, annotated or not, and not for another workload's; a Narrow selector only for annotated, selected Pods`, async () => {
      const targeted: AppMonitorForRule = {
        metadata: { name: "exact", namespace: "shop", uid: "u" },
        spec: { memThresholdPercent: 75, forSeconds: 60, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } },
      };
      const narrow: AppMonitorForRule = {
        metadata: { name: "narrow", namespace: "stock", uid: "u" },
        spec: { memThresholdPercent: 75, forSeconds: 60, selector: { matchLabels: { tier: "web" } }, selectorMode: "Narrow" },
      };
      const containers: Container[] = [
        { ...base, pod: "web-5d8f9c7b4-x2kqz", usage: 80, annotated: false },
        { ...base, pod: "db-0", usage: 80 },
        // Not named after web: `web-` is the prefix, not `web`.
        { ...base, pod: "webshop-5d8f9c7b4-x2kqz", usage: 80 },
        { ...base, namespace: "stock", pod: "both", usage: 80, podLabels: { tier: "web" } },
        { ...base, namespace: "stock", pod: "selected-only", usage: 80, annotated: false, podLabels: { tier: "web" } },
        { ...base, namespace: "stock", pod: "annotated-only", usage: 80 },
      ];
      // cAdvisor series carry no Pod labels or annotations: there a Narrow selector narrows nothing (memory-scaler does).
      const stock = source === "cadvisor" ? ["annotated-only", "both", "selected-only"] : ["both"];
      await assertPromtoolTest(rulesFile([targeted, narrow], configFor(source)), [
        {
          interval: "1m",
          input_series: inputSeries(containers, source),
          alert_rule_test: [
            {
              eval_time: "5m",
              alertname: ALERT_NAME,
              exp_alerts: [expectedAlert("shop", "web-5d8f9c7b4-x2kqz", "app", 80, "exact", 75), ...stock.map((pod) => expectedAlert("stock", pod, "app", 80, "narrow", 75))],
            },
          ],
        },
      ]);
    });
  }

  test("kube-state-metrics: without the annotation or a matching label a Pod never fires; label keys are sanitized as kube-state-metrics does", async () => {
    const monitor: AppMonitorForRule = {
      metadata: { name: "m", namespace: "shop", uid: "u" },
      spec: { memThresholdPercent: 75, forSeconds: 60, selector: { matchExpressions: [{ key: "app.kubernetes.io/name", operator: "In", values: ["a.b", "c"] }] } },
    };
    const containers: Container[] = [
      { ...base, pod: "dotted", usage: 80, annotated: false, podLabels: { app_kubernetes_io_name: "a.b" } },
      { ...base, pod: "c", usage: 80, annotated: false, podLabels: { app_kubernetes_io_name: "c" } },
      // `.` must match only itself, not any character.
      { ...base, pod: "regex-lookalike", usage: 80, annotated: false, podLabels: { app_kubernetes_io_name: "aXb" } },
      { ...base, pod: "plain", usage: 80, annotated: false },
    ];
    await assertPromtoolTest(rulesFile([monitor], configFor("kube-state-metrics")), [
      {
        interval: "1m",
        input_series: inputSeries(containers, "kube-state-metrics"),
        alert_rule_test: [{ eval_time: "5m", alertname: ALERT_NAME, exp_alerts: [expectedAlert("shop", "dotted", "app", 80, "m", 75), expectedAlert("shop", "c", "app", 80, "m", 75)] }],
      },
    ]);
  });
});

describe("promtool test rules: the OOM-kill alert", () => {
  /** One container's OOM story, a sample a minute for STEPS minutes. */
  interface Killed {
    pod: string;
    container?: string;
    namespace?: string;
    annotated?: boolean;
    /** Minute of each restart (kube-state-metrics) or counted kill (cAdvisor). */
    restartsAt: number[];
    /** The last termination's reason from each restart on (kube-state-metrics); cAdvisor counts only OOMKilled ones. */
    reasons: string[];
    /** Restarts before the first sample (an old kill). */
    restartsBefore?: number;
    /** Last termination reason before the first sample. */
    reasonBefore?: string;
  }

  /** cAdvisor's OOM counter, or kube-state-metrics' restart counter and last-terminated reason. */
  function oomSeries(pods: readonly Killed[], source: MetricSource): TestGroup["input_series"] {
    const out: TestGroup["input_series"] = [];
    for (const p of pods) {
      const ns = p.namespace ?? "shop";
      const container = p.container ?? "app";
      const countAt = (minute: number, counted: (i: number) => boolean) => (p.restartsBefore ?? 0) + p.restartsAt.filter((m, i) => m <= minute && counted(i)).length;
      const minutes = Array.from({ length: STEPS }, (_, m) => m);
      if (source === "cadvisor") {
        const labels = { namespace: ns, pod: p.pod, container, id: `/kubepods/${p.pod}/${container}`, job: "kubelet", metrics_path: "/metrics/cadvisor" };
        out.push({ series: seriesOf("container_oom_events_total", labels), values: minutes.map((m) => countAt(m, (i) => p.reasons[i] === "OOMKilled")).join(" ") });
        continue;
      }
      const ksm = { namespace: ns, pod: p.pod, container, uid: `uid-${p.pod}`, job: "kube-state-metrics", instance: "ksm:8080" };
      out.push({ series: seriesOf("kube_pod_container_status_restarts_total", ksm), values: minutes.map((m) => countAt(m, () => true)).join(" ") });
      // kube-state-metrics exports one series, for the last reason only; none before a termination.
      // The series it stops exporting gets a staleness marker, as Prometheus writes on the next scrape.
      const reasonAt = (m: number) => {
        const i = p.restartsAt.findLastIndex((at) => at <= m);
        return i >= 0 ? p.reasons[i] : p.reasonBefore;
      };
      for (const reason of new Set(minutes.map(reasonAt))) {
        if (reason === undefined) continue;
        out.push({ series: seriesOf("kube_pod_container_status_last_terminated_reason", { ...ksm, reason }), values: minutes.map((m) => (reasonAt(m) === reason ? "1" : m > 0 && reasonAt(m - 1) === reason ? "stale" : "_")).join(" ") });
      }
      const base = { namespace: ns, pod: p.pod, uid: `uid-${p.pod}`, job: "kube-state-metrics", instance: "ksm:8080" };
      out.push({ series: seriesOf("kube_pod_annotations", { ...base, ...(p.annotated === false ? {} : { annotation_app_monitor_kubedemo_com_monitor: "true" }) }), values: `1x${STEPS}` });
      out.push({ series: seriesOf("kube_pod_labels", base), values: `1x${STEPS}` });
    }
    return out;
  }

  const killed = (pod: string, container = "app") => ({
    exp_labels: { alertname: OOM_ALERT_NAME, namespace: "shop", pod, container, appmonitor: "memhog-monitor", severity: "warning" },
    exp_annotations: { summary: `Container ${container} of Pod shop/${pod} was OOM-killed in the last 10 minutes (AppMonitor memhog-monitor).` },
  });

  for (const source of SOURCES) {
    test(`${source}: fires at the first evaluation after a kill, with no for; not on a plain restart, an old kill, the pause container or another namespace; resolves 10 minutes after the last kill`, async () => {
      const pods: Killed[] = [
        { pod: "oom", restartsAt: [3], reasons: ["OOMKilled"] },
        { pod: "crashloop", restartsAt: [3, 5, 8], reasons: ["OOMKilled", "OOMKilled", "OOMKilled"] },
        { pod: "plain", restartsAt: [3], reasons: ["Error"] },
        { pod: "oom-then-error", restartsAt: [3, 4], reasons: ["OOMKilled", "Error"] },
        { pod: "long-ago", restartsAt: [], reasons: [], restartsBefore: 1, reasonBefore: "OOMKilled" },
        { pod: "withpause", container: "POD", restartsAt: [3], reasons: ["OOMKilled"] },
        { pod: "oom", namespace: "other", restartsAt: [3], reasons: ["OOMKilled"] },
      ];
      // cAdvisor counts kills, not reasons: the container killed then restarted for an Error still
      // counted a kill; kube-state-metrics' last reason is Error from 4m on.
      const oomThenError = source === "cadvisor" ? [killed("oom-then-error")] : [];
      await assertPromtoolTest(rulesFile([MONITOR], configFor(source)), [
        {
          interval: "1m",
          input_series: oomSeries(pods, source),
          alert_rule_test: [
            { eval_time: "2m", alertname: OOM_ALERT_NAME, exp_alerts: [] },
            { eval_time: "3m", alertname: OOM_ALERT_NAME, exp_alerts: [killed("oom"), killed("crashloop"), killed("oom-then-error")] },
            { eval_time: "4m", alertname: OOM_ALERT_NAME, exp_alerts: [killed("oom"), killed("crashloop"), ...oomThenError] },
            // The single kill's window has passed; the crash loop's last kill (8m) has not.
            { eval_time: "14m", alertname: OOM_ALERT_NAME, exp_alerts: [killed("crashloop")] },
            { eval_time: "19m", alertname: OOM_ALERT_NAME, exp_alerts: [] },
            // The threshold alert is not raised by any of this.
            { eval_time: "5m", alertname: ALERT_NAME, exp_alerts: [] },
          ],
        },
      ]);
    });

    test(`${source}: spec.containers limits the OOM alert to the listed containers`, async () => {
      const monitor: AppMonitorForRule = { ...MONITOR, spec: { ...MONITOR.spec, containers: ["app"] } };
      const pods: Killed[] = [
        { pod: "two", restartsAt: [3], reasons: ["OOMKilled"] },
        { pod: "two", container: "logger", restartsAt: [3], reasons: ["OOMKilled"] },
        { pod: "two", container: "app-2", restartsAt: [3], reasons: ["OOMKilled"] },
      ];
      await assertPromtoolTest(rulesFile([monitor], configFor(source)), [
        { interval: "1m", input_series: oomSeries(pods, source), alert_rule_test: [{ eval_time: "5m", alertname: OOM_ALERT_NAME, exp_alerts: [killed("two")] }] },
      ]);
    });
  }

  test("cadvisor: a kill cAdvisor does not count (the container's PID 1) fires from kube-state-metrics' restart and last-terminated reason", async () => {
    // Only kube-state-metrics' series: cAdvisor's counter never moved for these kills.
    const pods: Killed[] = [
      { pod: "pid1", restartsAt: [3], reasons: ["OOMKilled"] },
      { pod: "plain", restartsAt: [3], reasons: ["Error"] },
    ];
    await assertPromtoolTest(rulesFile([MONITOR], configFor("cadvisor")), [
      { interval: "1m", input_series: oomSeries(pods, "kube-state-metrics"), alert_rule_test: [
        { eval_time: "2m", alertname: OOM_ALERT_NAME, exp_alerts: [] },
        { eval_time: "4m", alertname: OOM_ALERT_NAME, exp_alerts: [killed("pid1")] },
      ] },
    ]);
  });

  const crashed = (pod: string) => ({
    exp_labels: { alertname: HEAP_ERROR_ALERT_NAME, namespace: "shop", pod, container: "app", appmonitor: "memhog-monitor", severity: "warning" },
    exp_annotations: { summary: `Container app of Pod shop/${pod} restarted after an error exit in the last 10 minutes, possibly its runtime's heap error (AppMonitor memhog-monitor).` },
  });

  for (const source of SOURCES) {
    test(`${source}: the heap-error alert fires after a restart whose last reason is Error, from kube-state-metrics, with no for; not after an OOM kill or an old error; resolves 10 minutes after`, async () => {
      const pods: Killed[] = [
        { pod: "heap", restartsAt: [3], reasons: ["Error"] },
        { pod: "oom", restartsAt: [3], reasons: ["OOMKilled"] },
        { pod: "oom-then-error", restartsAt: [3, 4], reasons: ["OOMKilled", "Error"] },
        { pod: "long-ago", restartsAt: [], reasons: [], restartsBefore: 1, reasonBefore: "Error" },
      ];
      await assertPromtoolTest(rulesFile([MONITOR], configFor(source)), [
        {
          interval: "1m",
          input_series: oomSeries(pods, "kube-state-metrics"),
          alert_rule_test: [
            { eval_time: "2m", alertname: HEAP_ERROR_ALERT_NAME, exp_alerts: [] },
            { eval_time: "3m", alertname: HEAP_ERROR_ALERT_NAME, exp_alerts: [crashed("heap")] },
            { eval_time: "4m", alertname: HEAP_ERROR_ALERT_NAME, exp_alerts: [crashed("heap"), crashed("oom-then-error")] },
            { eval_time: "15m", alertname: HEAP_ERROR_ALERT_NAME, exp_alerts: [] },
          ],
        },
      ]);
    });
  }

  test("kube-state-metrics: a killed Pod neither annotated nor selected does not fire", async () => {
    const pods: Killed[] = [
      { pod: "annotated", restartsAt: [3], reasons: ["OOMKilled"] },
      { pod: "bystander", annotated: false, restartsAt: [3], reasons: ["OOMKilled"] },
    ];
    const monitor: AppMonitorForRule = { ...MONITOR, spec: { ...MONITOR.spec, selector: undefined } };
    await assertPromtoolTest(rulesFile([monitor], configFor("kube-state-metrics")), [
      { interval: "1m", input_series: oomSeries(pods, "kube-state-metrics"), alert_rule_test: [{ eval_time: "5m", alertname: OOM_ALERT_NAME, exp_alerts: [killed("annotated")] }] },
    ]);
  });
});

describe("promtool test rules: the trend alert", () => {
  // A sample and an evaluation every 15 s for 40 minutes; threshold 75 %, for 2 minutes; the
  // trend: the limit within 30 minutes, the window at or above 50 % of it.
  const SAMPLE_SECONDS = 15;
  const SAMPLES = 160;
  const HORIZON = 1800;
  const trendMonitor = (windowSeconds: number): AppMonitorForRule => ({
    ...MONITOR,
    spec: { ...MONITOR.spec, trend: { horizonSeconds: HORIZON, windowSeconds, floorPercent: 50 } },
  });
  const series = (percentAt: (k: number) => number | null | undefined) => Array.from({ length: SAMPLES + 1 }, (_, k) => percentAt(k));
  const trendAlert = (pod: string, percent: number, windowSeconds: number) => ({
    exp_labels: { alertname: TREND_ALERT_NAME, namespace: "shop", pod, container: "app", appmonitor: "memhog-monitor", severity: "warning" },
    exp_annotations: {
      summary: `Container app of Pod shop/${pod} uses ${percent.toFixed(1)}% of its memory limit and, at the rate of the last ${windowSeconds}s, reaches it within ${HORIZON}s (AppMonitor memhog-monitor, trend).`,
      value: String(percent),
    },
  });
  /** At every evaluation of the run, neither the trend alert nor the threshold alert fires. */
  const neverFires = Array.from({ length: SAMPLES + 1 }, (_, k) => [TREND_ALERT_NAME, ALERT_NAME].map((alertname) => ({ eval_time: `${k * SAMPLE_SECONDS}s`, alertname, exp_alerts: [] }))).flat();
  /** At `seconds`, the line through the window of `pod` alone reaches the limit within the horizon: what the guards are for. */
  const lineReachesLimit = (pod: string, windowSeconds: number, seconds: number) => ({
    expr: `count(predict_linear(container_memory_working_set_bytes{pod="${pod}"}[${windowSeconds}s], ${HORIZON}) >= ${LIMIT})`,
    eval_time: `${seconds}s`,
    exp_samples: [{ labels: "{}", value: 1 }],
  });
  const run = (monitor: AppMonitorForRule, source: MetricSource, group: Omit<TestGroup, "interval">) =>
    assertPromtoolTest(rulesFile([monitor], configFor(source)), [{ interval: `${SAMPLE_SECONDS}s`, ...group }], `${SAMPLE_SECONDS}s`);

  // 1 % of the limit a minute from 40 %: 70 % at 30 minutes, when the line reaches 100 % within
  // the 30-minute horizon; 75 % (the threshold) at 35 minutes.
  const steady = series((k) => 40 + 0.25 * k);
  const growing: Container[] = [
    { ...base, pod: "steady", usage: steady },
    { ...base, pod: "flat", usage: 70 },
    { ...base, pod: "bystander", usage: steady, annotated: false },
  ];
  type Expected = TestGroup["alert_rule_test"][number]["exp_alerts"];
  const growth = (firingAt33: Expected, firingAt38: Expected): TestGroup["alert_rule_test"] => [
    { eval_time: "1785s", alertname: TREND_ALERT_NAME, exp_alerts: [] },
    // Pending since 30 minutes, firing once held for 2: at 73 %, below the threshold.
    { eval_time: "33m", alertname: TREND_ALERT_NAME, exp_alerts: firingAt33 },
    { eval_time: "33m", alertname: ALERT_NAME, exp_alerts: [] },
    { eval_time: "38m", alertname: TREND_ALERT_NAME, exp_alerts: firingAt38 },
  ];

  for (const source of SOURCES) {
    test(`${source}: a steady growth fires 2 minutes after its line reaches the limit within the horizon, at 73 %, before the threshold alert (75 % at 35 minutes); a flat 70 % does not; a Pod neither annotated nor selected only with cadvisor`, async () => {
      const pods = source === "cadvisor" ? ["steady", "bystander"] : ["steady"];
      await run(trendMonitor(600), source, {
        input_series: inputSeries(growing, source, SAMPLES),
        alert_rule_test: [
          ...growth(pods.map((pod) => trendAlert(pod, 73, 600)), pods.map((pod) => trendAlert(pod, 78, 600))),
          { eval_time: "38m", alertname: ALERT_NAME, exp_alerts: pods.map((pod) => expectedAlert("shop", pod, "app", 78, "memhog-monitor", 75)) },
        ],
      });
    });
  }

  test("cadvisor on kube-prometheus-stack's defaults (the limit from kube-state-metrics): the steady growth fires the same", async () => {
    await run(trendMonitor(600), "cadvisor", {
      input_series: kubePrometheusStackSeries(growing, SAMPLES),
      alert_rule_test: growth(["steady", "bystander"].map((pod) => trendAlert(pod, 73, 600)), ["steady", "bystander"].map((pod) => trendAlert(pod, 78, 600))),
    });
  });

  test("without spec.trend the same growth raises no trend alert", async () => {
    await run(MONITOR, "cadvisor", { input_series: inputSeries(growing, "cadvisor", SAMPLES), alert_rule_test: growth([], []) });
  });

  for (const source of SOURCES) {
    test(`${source}: a container that starts (5 %, then 60 % within a minute, then flat) never fires, though the line through its start reaches the limit for minutes: its window is below the floor until the start has left it`, async () => {
      const start = series((k) => (k < 20 ? 5 : Math.min(60, 15 * (k - 19))));
      await run(trendMonitor(600), source, {
        input_series: inputSeries([{ ...base, pod: "start", usage: start }], source, SAMPLES),
        alert_rule_test: neverFires,
        promql_expr_test: [6, 8, 10, 12].map((m) => lineReachesLimit("start", 600, m * 60)),
      });
    });

    test(`${source}: a surge that subsided (52 % for 10 minutes, 72 % within 2 more, back to 64 % and flat) never fires, though the line through the window, rising from before the surge, reaches the limit for minutes: the working set stays more than 5 % below the window's high`, async () => {
      const surge = series((k) => (k < 40 ? 52 : k < 48 ? 52 + 2.5 * (k - 39) : 64));
      await run(trendMonitor(600), source, {
        input_series: inputSeries([{ ...base, pod: "surge", usage: surge }], source, SAMPLES),
        alert_rule_test: neverFires,
        promql_expr_test: [13, 14, 15, 16, 17].map((m) => lineReachesLimit("surge", 600, m * 60)),
      });
    });

    test(`${source}: a container restarted while its trend held (the old series grew to 71 % and ended, the new one runs at 55 %) does not fire, though the old series' line still reaches the limit: the guards read every series of the container`, async () => {
      // The old container's series ends at 31 minutes with a staleness marker, the new one starts beside it.
      const before = series((k) => (k < 124 ? 40 + 0.25 * k : k === 124 ? null : undefined));
      const after = series((k) => (k < 124 ? undefined : 55));
      await run(trendMonitor(600), source, {
        input_series: inputSeries([{ ...base, pod: "restarted", usage: before, id: "/kubepods/restarted/app-1" }, { ...base, pod: "restarted", usage: after, id: "/kubepods/restarted/app-2" }], source, SAMPLES),
        alert_rule_test: [31, 32, 33, 34, 36, 40].map((m) => ({ eval_time: `${m}m`, alertname: TREND_ALERT_NAME, exp_alerts: [] })),
        promql_expr_test: [32, 34, 36].map((m) => lineReachesLimit("restarted", 600, m * 60)),
      });
    });

    test(`${source}: a sawtooth that releases every 2 minutes, the for (55 % to 72.5 %, back to 55 %), never fires, though at each peak the line through its window reaches the limit`, async () => {
      const sawtooth = series((k) => 55 + 2.5 * (k % 8));
      await run(trendMonitor(120), source, {
        input_series: inputSeries([{ ...base, pod: "sawtooth", usage: sawtooth }], source, SAMPLES),
        alert_rule_test: neverFires,
        promql_expr_test: [39, 79, 119, 159].map((k) => lineReachesLimit("sawtooth", 120, k * SAMPLE_SECONDS)),
      });
    });
  }
});

describe("promtool test rules: the heap-threshold alert", () => {
  // One container per runtime, each watched by its own containerPolicies entry; JVM at the
  // AppMonitor's threshold (75), the others at heapThresholdPercent 80.
  const MI = 1024 * 1024;
  const monitor: AppMonitorForRule = {
    metadata: { name: "heap-monitor", namespace: "shop", uid: "uid-heap" },
    spec: {
      memThresholdPercent: 75,
      forSeconds: 120,
      containerPolicies: [
        { containerName: "jvm", runtime: "JVM", heapMetrics: "Watch" },
        { containerName: "node", runtime: "Node.js", heapMetrics: "Watch", heapThresholdPercent: 80 },
        { containerName: "go", runtime: "Go", heapMetrics: "Watch", heapThresholdPercent: 80 },
        { containerName: "dotnet", runtime: ".NET", heapMetrics: "Watch", heapThresholdPercent: 80 },
      ],
    },
  };
  /** A series of the program's own scrape (a PodMonitor's labels), its value in MiB (or as written), held. */
  const scraped = (metric: string, pod: string, container: string, value: number | string, extra: Record<string, string> = {}) => ({
    series: seriesOf(metric, { namespace: "shop", pod, container, job: "shop/app", instance: `${pod}:8080`, endpoint: "metrics", ...extra }),
    values: `${typeof value === "number" ? value * MI : value}x${STEPS}`,
  });
  /** Each heap's Pod and container, with the container's memory limit (100Mi) and, for kube-state-metrics, its opt-in annotation. */
  const podsOf = (source: MetricSource, pods: readonly [string, string][]) =>
    pods.flatMap(([pod, container]) => inputSeries([{ namespace: "shop", pod, container, usage: 10, limited: true, annotated: true }], source));
  const micrometer = (pod: string, eden: number, survivor: number, old: number) => [
    scraped("jvm_memory_used_bytes", pod, "jvm", eden, { area: "heap", id: "G1 Eden Space" }),
    scraped("jvm_memory_max_bytes", pod, "jvm", "-1", { area: "heap", id: "G1 Eden Space" }),
    scraped("jvm_memory_used_bytes", pod, "jvm", survivor, { area: "heap", id: "G1 Survivor Space" }),
    scraped("jvm_memory_max_bytes", pod, "jvm", "-1", { area: "heap", id: "G1 Survivor Space" }),
    scraped("jvm_memory_used_bytes", pod, "jvm", old, { area: "heap", id: "G1 Old Gen" }),
    scraped("jvm_memory_max_bytes", pod, "jvm", 100, { area: "heap", id: "G1 Old Gen" }),
    // Non-heap pools are not the heap.
    scraped("jvm_memory_used_bytes", pod, "jvm", 500, { area: "nonheap", id: "Metaspace" }),
  ];
  const series = [
    // JVM, Micrometer: 20 + 5 + 60 of G1's 100Mi (Eden and Survivor have no maximum: -1) = 85 %; 10 + 5 + 30 = 45 %.
    ...micrometer("hot-jvm", 20, 5, 60),
    ...micrometer("cool-jvm", 10, 5, 30),
    // JVM, client_java 0.x / the JMX exporter's agent: 80 of 100.
    scraped("jvm_memory_bytes_used", "hot-jmx", "jvm", 80, { area: "heap" }),
    scraped("jvm_memory_bytes_max", "hot-jmx", "jvm", 100, { area: "heap" }),
    // JVM, OpenTelemetry: no limit series for a pool without a maximum; 30 + 60 of 100.
    scraped("jvm_memory_used_bytes", "hot-otel", "jvm", 30, { jvm_memory_type: "heap", jvm_memory_pool_name: "G1 Eden Space" }),
    scraped("jvm_memory_used_bytes", "hot-otel", "jvm", 60, { jvm_memory_type: "heap", jvm_memory_pool_name: "G1 Old Gen" }),
    scraped("jvm_memory_limit_bytes", "hot-otel", "jvm", 100, { jvm_memory_type: "heap", jvm_memory_pool_name: "G1 Old Gen" }),
    // Node.js, prom-client with the heap-limit gauge: 90 and 50 of 100.
    scraped("nodejs_heap_size_used_bytes", "hot-node", "node", 90),
    scraped("nodejs_heap_old_space_limit_bytes", "hot-node", "node", 100),
    scraped("nodejs_heap_size_used_bytes", "cool-node", "node", 50),
    scraped("nodejs_heap_old_space_limit_bytes", "cool-node", "node", 100),
    // Go, client_golang: 95 mapped less 5 released of a GOMEMLIMIT of 100 = 90 %; without GOMEMLIMIT (math.MaxInt64), no limit.
    scraped("go_memstats_sys_bytes", "hot-go", "go", 95),
    scraped("go_memstats_heap_released_bytes", "hot-go", "go", 5),
    scraped("go_gc_gomemlimit_bytes", "hot-go", "go", 100),
    scraped("go_memstats_sys_bytes", "nolimit-go", "go", 95),
    scraped("go_memstats_heap_released_bytes", "nolimit-go", "go", 0),
    scraped("go_gc_gomemlimit_bytes", "nolimit-go", "go", "9223372036854775807"),
    // .NET 9, OpenTelemetry: 66Mi over the generations of a heap limited to 75 % of the 100Mi container = 88 %; 30Mi = 40 %.
    ...(["gen0", "gen1", "gen2", "loh"] as const).map((gen, i) => scraped("dotnet_gc_last_collection_heap_size_bytes", "hot-dotnet", "dotnet", [10, 6, 45, 5][i] ?? 0, { dotnet_gc_heap_generation: gen })),
    scraped("dotnet_gc_last_collection_heap_size_bytes", "cool-dotnet", "dotnet", 30, { dotnet_gc_heap_generation: "gen2" }),
    // A container no entry watches, its heap nearly full.
    scraped("nodejs_heap_size_used_bytes", "hot-node", "sidecar", 99),
    scraped("nodejs_heap_old_space_limit_bytes", "hot-node", "sidecar", 100),
  ];
  const pods: [string, string][] = [
    ["hot-jvm", "jvm"], ["cool-jvm", "jvm"], ["hot-jmx", "jvm"], ["hot-otel", "jvm"], ["hot-node", "node"], ["cool-node", "node"], ["hot-node", "sidecar"],
    ["hot-go", "go"], ["nolimit-go", "go"], ["hot-dotnet", "dotnet"], ["cool-dotnet", "dotnet"],
  ];
  const fired = (pod: string, container: string, percent: number) => ({
    exp_labels: { alertname: HEAP_THRESHOLD_ALERT_NAME, namespace: "shop", pod, container, appmonitor: "heap-monitor", severity: "warning" },
    exp_annotations: {
      summary: `Container ${container} of Pod shop/${pod} uses ${percent.toFixed(1)}% of its runtime's heap limit, at or above its heap threshold (AppMonitor heap-monitor).`,
      value: String(percent),
    },
  });

  for (const source of SOURCES) {
    test(`${source}: fires for each runtime's series at or above its heap threshold, held for forSeconds; not below it, not without GOMEMLIMIT, not for a container no entry watches`, async () => {
      const rules = rulesFile([monitor], configFor(source));
      await assertRulesCheck([await writeTemp("heap.yaml", rules)]);
      await assertPromtoolTest(rules, [
        {
          interval: "1m",
          input_series: [...series, ...podsOf(source, pods)],
          alert_rule_test: [
            { eval_time: "1m", alertname: HEAP_THRESHOLD_ALERT_NAME, exp_alerts: [] },
            {
              eval_time: "5m",
              alertname: HEAP_THRESHOLD_ALERT_NAME,
              exp_alerts: [
                fired("hot-jvm", "jvm", 85),
                fired("hot-jmx", "jvm", 80),
                fired("hot-otel", "jvm", 90),
                fired("hot-node", "node", 90),
                fired("hot-go", "go", 90),
                fired("hot-dotnet", "dotnet", 88),
              ],
            },
          ],
        },
      ]);
    });
  }

  test("memory-scaler's evidence query reads back the percent the rule alerted on, per runtime", async () => {
    const query = (pod: string, container: string, runtime: "JVM" | "Node.js" | "Go" | ".NET") => heapPercentQuery("shop", pod, [{ container, runtime }]);
    const at = (expr: string, value: number, container: string) => ({ expr, eval_time: "5m", exp_samples: [{ labels: `{container="${container}"}`, value }] });
    await assertPromtoolTest(rulesFile([monitor], configFor("cadvisor")), [
      {
        interval: "1m",
        input_series: [...series, ...podsOf("kube-state-metrics", pods)],
        alert_rule_test: [],
        promql_expr_test: [
          at(query("hot-jvm", "jvm", "JVM"), 85, "jvm"),
          at(query("hot-otel", "jvm", "JVM"), 90, "jvm"),
          at(query("hot-node", "node", "Node.js"), 90, "node"),
          at(query("hot-go", "go", "Go"), 90, "go"),
          // .NET's limit from kube-state-metrics here: kube-prometheus-stack drops cAdvisor's.
          at(query("hot-dotnet", "dotnet", ".NET"), 88, "dotnet"),
          { expr: query("nolimit-go", "go", "Go"), eval_time: "5m", exp_samples: [] },
        ],
      },
    ]);
  });

  test("kube-state-metrics: a Pod neither annotated nor selected does not fire, however full its heap", async () => {
    const input = [
      ...series.filter((s) => s.series.includes('pod="hot-node"')),
      ...inputSeries([{ namespace: "shop", pod: "hot-node", container: "node", usage: 10, limited: true, annotated: false }], "kube-state-metrics"),
    ];
    await assertPromtoolTest(rulesFile([monitor], configFor("kube-state-metrics")), [
      { interval: "1m", input_series: input, alert_rule_test: [{ eval_time: "5m", alertname: HEAP_THRESHOLD_ALERT_NAME, exp_alerts: [] }] },
    ]);
  });
});

describe("PromQL quoting holds against the real parser", () => {
  const hostile = ['a"b', "back\\slash", '"} or vector(1) #', "line\nbreak", "tab\there", "\x01ctl\x7f", "é😀", "\u0085c1", "`back`tick'"];

  test("every quoted string reaches Prometheus exactly as written", async () => {
    const rules = stringify(
      {
        groups: [
          {
            name: "quoting",
            rules: hostile.map((value, i) => ({ alert: `Quoted${i}`, expr: `label_replace(vector(1), "v", ${promqlString(value)}, "", "")` })),
          },
        ],
      },
      { lineWidth: 0 },
    );
    await assertPromtoolTest(
      rules,
      hostile.map((value, i) => ({
        interval: "1m",
        input_series: [],
        alert_rule_test: [{ eval_time: "1m", alertname: `Quoted${i}`, exp_alerts: [{ exp_labels: { alertname: `Quoted${i}`, v: value }, exp_annotations: {} }] }],
      })),
    );
  });

  test("a regex-quoted value matches only itself", async () => {
    const rules = stringify({ groups: [{ name: "regex", rules: [{ alert: "Matched", expr: `probe{v=~${promqlString(`${regexQuote("a.b(c)|*")}|${regexQuote("x")}`)}}` }] }] }, { lineWidth: 0 });
    const probes = ["a.b(c)|*", "x", "aXb(c)|*", "a.b", "xx", ""];
    await assertPromtoolTest(rules, [
      {
        interval: "1m",
        input_series: probes.map((v) => ({ series: seriesOf("probe", { v, n: String(probes.indexOf(v)) }), values: "1x5" })),
        alert_rule_test: [
          {
            eval_time: "1m",
            alertname: "Matched",
            exp_alerts: [
              { exp_labels: { alertname: "Matched", v: "a.b(c)|*", n: "0" }, exp_annotations: {} },
              { exp_labels: { alertname: "Matched", v: "x", n: "1" }, exp_annotations: {} },
            ],
          },
        ],
      },
    ]);
  });
});

describe("npm run rules -- knative/examples/appmonitor.yaml", () => {
  test("prints rules that pass promtool and fire for the demo's memhog Pod", async () => {
    const result = await runCommand("npm", ["run", "-s", "rules", "--", "knative/examples/appmonitor.yaml"], { cwd: repoRoot });
    assert.equal(result.code, 0, explain(result));
    assert.equal(result.stderr, "");
    const rulesFile = await writeTemp("example-rules.yaml", result.stdout);
    await assertRulesCheck([rulesFile]);

    // The demo: limit 384Mi, threshold 75 %, default for 60 s; the Pod uses 300Mi = 78.125 %.
    const limit = 384 * 1024 * 1024;
    const used = 300 * 1024 * 1024;
    const labels = { namespace: "default", pod: "memhog-5d4f8b7c9-x2x7q", container: "memhog" };
    await assertPromtoolTest(result.stdout, [
      {
        interval: "30s",
        input_series: [
          { series: seriesOf("container_memory_working_set_bytes", labels), values: `${used}x20` },
          { series: seriesOf("container_spec_memory_limit_bytes", labels), values: `${limit}x20` },
        ],
        alert_rule_test: [
          { eval_time: "30s", alertname: ALERT_NAME, exp_alerts: [] },
          {
            eval_time: "2m",
            alertname: ALERT_NAME,
            exp_alerts: [
              {
                exp_labels: { alertname: ALERT_NAME, ...labels, appmonitor: "mymonitor", severity: "warning" },
                exp_annotations: { summary: "Container memhog of Pod default/memhog-5d4f8b7c9-x2x7q uses 78.1% of its memory limit (AppMonitor mymonitor, threshold 75%).", value: "78.125" },
              },
            ],
          },
        ],
      },
    ]);
  });
});
