// The alerting rule for one AppMonitor, as a prometheus-operator PrometheusRule and as a plain
// Prometheus rules file. Pure: no I/O, so the cluster side only reads AppMonitors and applies
// what this module returns.
//
// Metric sources (RuleConfig.metricSource):
//
// - "cadvisor" (the default): working set `container_memory_working_set_bytes` and limit
//   `container_spec_memory_limit_bytes`, both from the kubelet's cAdvisor endpoint, which every
//   Kubernetes Prometheus setup scrapes. cAdvisor series carry only namespace, pod, container
//   (and runtime ids, image), never Pod labels or annotations, so the rule can be limited to the
//   AppMonitor's namespace and spec.containers but not to its annotated or selected Pods: it may fire for other Pods
//   with a memory limit in that namespace. That is safe because memory-scaler reads the Pod and
//   the AppMonitor from the API server and skips Pods the AppMonitor does not cover, but it is
//   noisier. cAdvisor reports the limit of an unlimited container (any limit above 2^62 bytes)
//   as 0 (google/cadvisor metrics/prometheus.go, specMemoryValue), which the rule filters out.
//
// - "kube-state-metrics": working set from cAdvisor as above, limit from kube-state-metrics'
//   `kube_pod_container_resource_limits{resource="memory"}`, and the Pods narrowed to those the
//   AppMonitor covers by joining `kube_pod_annotations` (the opt-in annotation) or
//   `kube_pod_labels` (spec.selector) on namespace and pod. Requirements:
//   kube-state-metrics ≥ 2 started with
//   `--metric-annotations-allowlist=pods=[app-monitor.kubedemo.com/monitor]` and
//   `--metric-labels-allowlist=pods=[<every key spec.selector uses>]` (or `pods=[*]`), and
//   scraped with `honor_labels: true` so its namespace/pod labels name the Pod, not the
//   exporter (kube-prometheus-stack does both of the latter by default). Without the allowlists
//   the join finds nothing and the rule never fires. kube-state-metrics turns a key into a label
//   name by prefixing `label_`/`annotation_` and replacing every character outside
//   `[a-zA-Z0-9_]` with `_`, so two keys differing only there (`a.b`, `a-b`) are
//   indistinguishable; a label whose value is empty looks absent, so `Exists` does not match it.
//   A label missing from the allowlist makes `In` match nothing and `NotIn`/`DoesNotExist`
//   match every Pod.
//
// The local test stack's kwok emulates the kubelet's cAdvisor endpoint with
// `container_memory_working_set_bytes`, `container_spec_memory_limit_bytes` and
// `container_oom_events_total` per namespace, pod and container, so the default "cadvisor" rules
// (threshold and OOM kill) are evaluated there by a real Prometheus. The stack's real node has a
// real kube-state-metrics beside it, where the "kube-state-metrics" OOM-kill rule sees real kernel
// kills; promtool tests supply those series otherwise.

import { stringify } from "yaml";
import type { IPrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import type { IRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/Rule";
import type { IRuleGroup } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/RuleGroup";
import {
  APPMONITOR_ALERT_LABEL,
  APPMONITOR_ALERT_NAME,
  APPMONITOR_API_VERSION,
  APPMONITOR_OOM_ALERT_NAME,
  APPMONITOR_KIND,
  MONITOR_ANNOTATION,
  type AppMonitorSpecWithDefaults,
  type LabelSelector,
  type ObjectMetaLike,
} from "../lib/appmonitor.ts";
import { isDnsLabel, isDnsSubdomain, isLabelKey, isLabelValue } from "./names.ts";
import { promDuration, promqlNumber, promqlString, regexQuote } from "./promql.ts";

/**
 * The alert name every generated rule uses; Alertmanager's route (knative/alertmanager) and
 * memory-scaler match on it, and memory-scaler also requires the {@link APPMONITOR_ALERT_LABEL}
 * label the rule sets.
 */
export const ALERT_NAME = APPMONITOR_ALERT_NAME;

/**
 * The alert name of every generated rule's OOM-kill alert ({@link buildOOMAlertingRule}); the
 * Alertmanager route and memory-scaler match on it as on {@link ALERT_NAME}.
 */
export const OOM_ALERT_NAME = APPMONITOR_OOM_ALERT_NAME;

/**
 * The window of the OOM-kill alert, in seconds: the alert fires at the first evaluation after a
 * kill is scraped and stays firing for this long after the last one, then resolves. 10 minutes
 * covers a crash loop's restart back-off (at most 5 minutes between restarts,
 * https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-restarts), so a
 * crash-looping container keeps one alert firing rather than raising a new one per kill, and it
 * is the bound memory-scaler uses for a kill to count as recent (its `OOM_KILL_RECENT_SECONDS`).
 */
export const OOM_WINDOW_SECONDS = 600;

/** The value the opt-in annotation {@link MONITOR_ANNOTATION} must have. */
export const MONITOR_ANNOTATION_VALUE = "true";

/**
 * Label set on every PrometheusRule this module builds, so a resync can list the rules it owns
 * with the label selector `app.kubernetes.io/managed-by=appmonitor-rule-sync` and remove orphans.
 */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** The value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY_VALUE = "appmonitor-rule-sync";

/** PrometheusRule annotation recording the AppMonitor `metadata.generation` the rule was built from. */
export const GENERATION_ANNOTATION = "app-monitor.kubedemo.com/appmonitor-generation";

/** The metric sources a rule can be built from; see the module comment for what each needs. */
export const METRIC_SOURCES = ["cadvisor", "kube-state-metrics"] as const;

/** Where the memory limit (and, for kube-state-metrics, the Pod selection) comes from. */
export type MetricSource = (typeof METRIC_SOURCES)[number];

/** Default metric source: cAdvisor, because every Kubernetes Prometheus setup scrapes it. */
export const DEFAULT_METRIC_SOURCE: MetricSource = "cadvisor";

/** Default `severity` label of the alert. */
export const DEFAULT_SEVERITY = "warning";

/**
 * Largest `for` accepted, in seconds: Prometheus holds durations as int64 nanoseconds
 * (https://pkg.go.dev/github.com/prometheus/common/model#Duration).
 */
export const MAX_FOR_SECONDS = 9_223_372_036;

// Series of the pause container (Docker-era `POD`) and of the Pod-level cgroup (`""`) are not
// containers anyone can scale.
const CONTAINER_MATCHERS = 'container!="", container!="POD"';
const BY = "(namespace, pod, container)";

/** How rules are built, shared by every AppMonitor. */
export interface RuleConfig {
  /** Metric source; default {@link DEFAULT_METRIC_SOURCE}. */
  readonly metricSource: MetricSource;
  /**
   * Extra labels on the PrometheusRule object (not on the alert), e.g. `{ release: "prometheus" }`:
   * prometheus-operator loads only rules matching the Prometheus `ruleSelector`
   * (https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusSpec),
   * and silently ignores the rest. Keys and values must be valid Kubernetes labels.
   */
  readonly ruleLabels: Readonly<Record<string, string>>;
  /** The alert's `severity` label; default {@link DEFAULT_SEVERITY}. */
  readonly severity: string;
}

/** The defaults: cAdvisor, no extra rule labels, severity `warning`. */
export const DEFAULT_RULE_CONFIG: RuleConfig = Object.freeze({
  metricSource: DEFAULT_METRIC_SOURCE,
  ruleLabels: Object.freeze({}),
  severity: DEFAULT_SEVERITY,
});

/**
 * The parts of an AppMonitor (kubedemo.com/v1) a rule is built from, with spec defaults
 * applied (as `validateAppMonitorSpec` of functions/lib/appmonitor.ts returns them); an
 * AppMonitor whose spec went through that function satisfies it. metadata.name (a DNS
 * subdomain) names the PrometheusRule,
 * metadata.namespace (a DNS label) limits the Pods, metadata.uid is needed for the
 * ownerReference only; spec.memThresholdPercent is in percent (0 < x ≤ 100), spec.forSeconds in
 * seconds, spec.selector is honoured by the kube-state-metrics source only, spec.containers
 * (container names, DNS labels) by both.
 */
export interface AppMonitorForRule {
  readonly metadata: Pick<ObjectMetaLike, "name" | "namespace" | "uid" | "generation">;
  readonly spec: Pick<AppMonitorSpecWithDefaults, "memThresholdPercent" | "forSeconds" | "selector" | "containers">;
}

/**
 * An AppMonitor or RuleConfig value that cannot be turned into a rule. Permanent: the same
 * input fails the same way, so a caller answering an event treats it as a 4xx.
 */
export class RuleInputError extends Error {
  /** Path of the offending field, e.g. `metadata.name` or `spec.selector.matchLabels["app"]`. */
  readonly field: string;

  /**
   * @param field path of the offending field.
   * @param message what is wrong with it.
   */
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "RuleInputError";
    this.field = field;
  }
}

/**
 * Checks a RuleConfig.
 *
 * @param config the configuration to check.
 * @throws {RuleInputError} for an unknown metric source, a severity that is not 1–63 characters
 *   of `[A-Za-z0-9_.-]` (alert labels are expanded as Go templates, so `{{` must not get in), or a
 *   rule label that is not a valid Kubernetes label or that sets {@link MANAGED_BY_LABEL}.
 */
export function validateRuleConfig(config: RuleConfig): void {
  checkSource(config.metricSource);
  if (!/^[A-Za-z0-9_.-]{1,63}$/.test(config.severity)) {
    throw new RuleInputError("severity", `must be 1-63 characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(config.severity)}`);
  }
  for (const [key, value] of Object.entries(config.ruleLabels)) {
    const field = `ruleLabels[${JSON.stringify(key)}]`;
    if (!isLabelKey(key)) throw new RuleInputError(field, "not a valid Kubernetes label key");
    if (typeof value !== "string" || !isLabelValue(value)) throw new RuleInputError(field, "not a valid Kubernetes label value");
    if (key === MANAGED_BY_LABEL) throw new RuleInputError(field, "is set by rule-sync itself");
  }
}

/** Name and namespace of a monitor, validated. */
function identity(monitor: AppMonitorForRule): { name: string; namespace: string } {
  const { name, namespace } = monitor.metadata;
  if (typeof name !== "string" || !isDnsSubdomain(name)) {
    throw new RuleInputError("metadata.name", `must be a DNS subdomain (RFC 1123), got ${JSON.stringify(name)}`);
  }
  if (typeof namespace !== "string" || !isDnsLabel(namespace)) {
    throw new RuleInputError("metadata.namespace", `must be a DNS label (RFC 1123), got ${JSON.stringify(namespace)}`);
  }
  return { name, namespace };
}

function threshold(monitor: AppMonitorForRule): number {
  const value = monitor.spec.memThresholdPercent;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > 100) {
    throw new RuleInputError("spec.memThresholdPercent", `must be a number with 0 < x <= 100, got ${String(value)}`);
  }
  return value;
}

function forSeconds(monitor: AppMonitorForRule): number {
  const value = monitor.spec.forSeconds;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > MAX_FOR_SECONDS) {
    throw new RuleInputError("spec.forSeconds", `must be a whole number of seconds from 0 to ${MAX_FOR_SECONDS}, got ${String(value)}`);
  }
  return value;
}

/** kube-state-metrics' Prometheus label name for a Kubernetes label or annotation key. */
function ksmLabelName(prefix: "label_" | "annotation_", key: string): string {
  return prefix + key.replace(/[^a-zA-Z0-9_]/g, "_");
}

/**
 * The container matchers of every series selector: without spec.containers, any container but
 * the pause container and the Pod-level cgroup; with it, exactly the listed names
 * (`container=~"a|b"`, each name regex-quoted; PromQL anchors the regex), which are DNS labels
 * and so never empty nor `POD`.
 */
function containerMatchers(monitor: AppMonitorForRule): string {
  const names = monitor.spec.containers;
  if (names === undefined) return CONTAINER_MATCHERS;
  if (!Array.isArray(names) || names.length === 0) throw new RuleInputError("spec.containers", "must list at least one container name when set");
  names.forEach((name, i) => {
    if (typeof name !== "string" || !isDnsLabel(name)) {
      throw new RuleInputError(`spec.containers[${i}]`, `must be a container name (RFC 1123 DNS label), got ${JSON.stringify(name)}`);
    }
  });
  return `container=~${promqlString([...new Set(names)].map(regexQuote).join("|"))}`;
}

/** Throws {@link RuleInputError} unless `source` is one of {@link METRIC_SOURCES}. */
function checkSource(source: string): void {
  if (!(METRIC_SOURCES as readonly string[]).includes(source)) {
    throw new RuleInputError("metricSource", `must be one of ${METRIC_SOURCES.join(", ")}, got ${JSON.stringify(source)}`);
  }
}

/** The kube_pod_labels selector of spec.selector's Pods (none without a selector), validated. */
function selectedPods(monitor: AppMonitorForRule, ns: string): string[] {
  return monitor.spec.selector === undefined ? [] : [`kube_pod_labels{${[ns, ...selectorMatchers(monitor.spec.selector)].join(", ")}}`];
}

/** PromQL matchers on kube_pod_labels equivalent to a label selector. */
function selectorMatchers(selector: LabelSelector): string[] {
  const matchers: string[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const field = `spec.selector.matchLabels[${JSON.stringify(key)}]`;
    if (!isLabelKey(key)) throw new RuleInputError(field, "not a valid Kubernetes label key");
    if (typeof value !== "string" || !isLabelValue(value)) throw new RuleInputError(field, "not a valid Kubernetes label value");
    matchers.push(`${ksmLabelName("label_", key)}=${promqlString(value)}`);
  }
  (selector.matchExpressions ?? []).forEach((req, i) => {
    const field = `spec.selector.matchExpressions[${i}]`;
    if (typeof req.key !== "string" || !isLabelKey(req.key)) throw new RuleInputError(`${field}.key`, "not a valid Kubernetes label key");
    const name = ksmLabelName("label_", req.key);
    const values = req.values ?? [];
    values.forEach((v, j) => {
      if (typeof v !== "string" || !isLabelValue(v)) throw new RuleInputError(`${field}.values[${j}]`, "not a valid Kubernetes label value");
    });
    // Regex matchers are fully anchored in PromQL, so `a|b` means exactly a or exactly b.
    const alternatives = () => promqlString(values.map(regexQuote).join("|"));
    switch (req.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) throw new RuleInputError(`${field}.values`, `must be non-empty for operator ${req.operator}`);
        matchers.push(`${name}${req.operator === "In" ? "=~" : "!~"}${alternatives()}`);
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length !== 0) throw new RuleInputError(`${field}.values`, `must be empty for operator ${req.operator}`);
        // An absent label and an empty one are the same thing to PromQL.
        matchers.push(`${name}${req.operator === "Exists" ? '!=""' : '=""'}`);
        break;
      default:
        throw new RuleInputError(`${field}.operator`, `must be In, NotIn, Exists or DoesNotExist, got ${JSON.stringify(req.operator)}`);
    }
  });
  return matchers;
}

/**
 * The PromQL expression of a monitor's alert: per namespace, pod and container,
 * 100 × working set bytes / memory limit bytes ≥ memThresholdPercent, limited to the monitor's
 * namespace, without containers lacking a limit (absent or 0) and without the pause container
 * (`container=""` / `container="POD"`), and to spec.containers when it is set (so the alert
 * never fires for a container the AppMonitor does not scale); with the kube-state-metrics source also limited to Pods
 * annotated {@link MONITOR_ANNOTATION}`="true"` or matching spec.selector. The value of each
 * resulting series is the percent used, and its labels are exactly namespace, pod, container.
 * Series are reduced with `max by (namespace, pod, container)` first, because a restarted
 * container briefly has two cAdvisor series and a one-to-one division would fail on them.
 *
 * Every interpolated value is validated and quoted with PromQL string escaping
 * (https://prometheus.io/docs/prometheus/latest/querying/basics/#string-literals).
 *
 * @param monitor the AppMonitor, spec defaults applied.
 * @param source the metric source.
 * @returns the expression, over several lines.
 * @throws {RuleInputError} for an unknown source, an invalid namespace, threshold, container
 *   name, or selector (checked for every source): a key or value that is not Kubernetes label syntax, an unknown operator, or values
 *   that do not fit the operator.
 */
export function alertExpression(monitor: AppMonitorForRule, source: MetricSource): string {
  checkSource(source);
  const { namespace } = identity(monitor);
  const ns = `namespace=${promqlString(namespace)}`;
  const containers = containerMatchers(monitor);
  const workingSet = `max by ${BY} (container_memory_working_set_bytes{${ns}, ${containers}})`;
  const limitSeries =
    source === "cadvisor"
      ? `container_spec_memory_limit_bytes{${ns}, ${containers}}`
      : `kube_pod_container_resource_limits{${ns}, resource="memory", ${containers}}`;
  // Checked whatever the source, so an AppMonitor is valid or not independently of the config.
  const selected = selectedPods(monitor, ns);
  // 100 × used / limit rather than used / limit × 100: exact whenever the percentage is a whole
  // number, so an alert at 76 % reports 76, not 76.00000000000001.
  const ratio = [
    `100 * ${workingSet}`,
    `  / on ${BY}`,
    `max by ${BY} (${limitSeries} > 0)`,
    `  >= ${promqlNumber(threshold(monitor))}`,
  ];
  if (source === "cadvisor") return ratio.join("\n");
  return coveredPodsOnly(ratio, ns, selected);
}

/**
 * `lines` (an expression whose series carry namespace and pod) kept only for the Pods
 * kube-state-metrics shows annotated {@link MONITOR_ANNOTATION}`="true"` or matched by one of
 * `selected` (kube_pod_labels selectors), joined on namespace and pod.
 */
function coveredPodsOnly(lines: readonly string[], ns: string, selected: readonly string[]): string {
  const annotated = `kube_pod_annotations{${ns}, ${ksmLabelName("annotation_", MONITOR_ANNOTATION)}=${promqlString(MONITOR_ANNOTATION_VALUE)}}`;
  return [
    "(",
    ...lines.map((line) => `  ${line}`),
    ")",
    "and on (namespace, pod)",
    "(",
    ...[annotated, ...selected].map((line) => `  ${line}`).join("\n  or\n").split("\n"),
    ")",
  ].join("\n");
}

/**
 * The PromQL expression of a monitor's OOM-kill alert: per namespace, pod and container, a
 * container the kernel OOM-killed within the last {@link OOM_WINDOW_SECONDS}, limited as
 * {@link alertExpression} is (the monitor's namespace, spec.containers or every container but
 * the pause container and the Pod-level cgroup, and with kube-state-metrics the covered Pods).
 * Its labels are exactly namespace, pod, container; its value counts the kills (cadvisor) or
 * restarts (kube-state-metrics) in the window, extrapolated as `increase` does, so not always whole.
 *
 * - "cadvisor": `increase(container_oom_events_total[10m]) > 0` (cAdvisor's per-container OOM
 *   event counter, https://github.com/google/cadvisor/blob/master/docs/storage/prometheus.md).
 *   cAdvisor counts a kill from the kernel log and attributes it to a container it still
 *   tracks; when the container's PID 1 is the process killed, the container is gone and the
 *   counter does not move (google/cadvisor#3015; seen on this project's real node). So this
 *   source catches kills of other processes in the container, which memory-scaler then only
 *   acts on if the container did terminate OOMKilled; the kube-state-metrics source catches the
 *   PID 1 kills that make a crash loop.
 * - "kube-state-metrics": the container restarted within the window
 *   (`increase(kube_pod_container_status_restarts_total[10m]) > 0`) and its last termination's
 *   reason is OOMKilled (`kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}`,
 *   https://github.com/kubernetes/kube-state-metrics/blob/main/docs/metrics/workload/pod-metrics.md),
 *   as the kubelet reports it in `status.containerStatuses[].lastState.terminated.reason`. A
 *   restart for another reason replaces the last reason, so it does not fire. A kill before the
 *   Pod's first scrape has no earlier sample to increase from and is not seen.
 *
 * @param monitor the AppMonitor, spec defaults applied.
 * @param source the metric source.
 * @returns the expression, over several lines.
 * @throws {RuleInputError} as {@link alertExpression} does (the threshold excepted: not used).
 */
export function oomAlertExpression(monitor: AppMonitorForRule, source: MetricSource): string {
  checkSource(source);
  const { namespace } = identity(monitor);
  const ns = `namespace=${promqlString(namespace)}`;
  const containers = containerMatchers(monitor);
  const selected = selectedPods(monitor, ns);
  const window = promDuration(OOM_WINDOW_SECONDS);
  if (source === "cadvisor") return `max by ${BY} (increase(container_oom_events_total{${ns}, ${containers}}[${window}])) > 0`;
  return coveredPodsOnly(
    [
      `max by ${BY} (increase(kube_pod_container_status_restarts_total{${ns}, ${containers}}[${window}])) > 0`,
      `  and on ${BY}`,
      `max by ${BY} (kube_pod_container_status_last_terminated_reason{${ns}, reason="OOMKilled", ${containers}}) == 1`,
    ],
    ns,
    selected,
  );
}

/**
 * The alerting rule of a monitor
 * (https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/): alert
 * {@link ALERT_NAME}, expression {@link alertExpression}, `for` = spec.forSeconds (as `<n>s`),
 * labels `appmonitor` (the monitor's name) and `severity`, annotations `summary` and `value`
 * (`{{ $value }}`, the percent of the limit in use). The alert's namespace, pod and container
 * labels come from the expression.
 *
 * @param monitor the AppMonitor, spec defaults applied.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file).
 * @throws {RuleInputError} for an invalid monitor or config.
 */
export function buildAlertingRule(monitor: AppMonitorForRule, config: RuleConfig): IRule {
  validateRuleConfig(config);
  const { name } = identity(monitor);
  const percent = promqlNumber(threshold(monitor));
  return {
    alert: ALERT_NAME,
    expr: alertExpression(monitor, config.metricSource),
    for: promDuration(forSeconds(monitor)),
    // Label and annotation values are Go templates; the name is a DNS subdomain and the
    // severity is validated, so neither can contain template syntax. ($labels holds only the
    // expression's labels, not these, so the name is written into the summary directly.)
    labels: { [APPMONITOR_ALERT_LABEL]: name, severity: config.severity },
    annotations: {
      summary:
        "Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} uses " +
        `{{ $value | printf "%.1f" }}% of its memory limit (AppMonitor ${name}, threshold ${percent}%).`,
      value: "{{ $value }}",
    },
  };
}

/**
 * The OOM-kill alerting rule of a monitor: alert {@link OOM_ALERT_NAME}, expression
 * {@link oomAlertExpression}, no `for` (a kill is a fact, not a level to hold, and a container
 * killed again before a `for` elapsed would keep the alert pending), the same labels as
 * {@link buildAlertingRule} (`appmonitor`, `severity`; namespace, pod, container from the
 * expression), annotation `summary`. No `value` annotation: the event's `value` is the percent
 * of the limit in use, which an OOM kill does not measure.
 *
 * @param monitor the AppMonitor, spec defaults applied.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file).
 * @throws {RuleInputError} for an invalid monitor or config.
 */
export function buildOOMAlertingRule(monitor: AppMonitorForRule, config: RuleConfig): IRule {
  validateRuleConfig(config);
  const { name } = identity(monitor);
  return {
    alert: OOM_ALERT_NAME,
    expr: oomAlertExpression(monitor, config.metricSource),
    labels: { [APPMONITOR_ALERT_LABEL]: name, severity: config.severity },
    annotations: {
      summary:
        "Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} was OOM-killed " +
        `in the last ${OOM_WINDOW_SECONDS / 60} minutes (AppMonitor ${name}).`,
    },
  };
}

/**
 * The rule group name of a monitor, `appmonitor/<namespace>/<name>`: unique per AppMonitor, as
 * Prometheus requires group names to be unique within a rules file.
 *
 * @param monitor the AppMonitor.
 * @returns the group name.
 * @throws {RuleInputError} for an invalid name or namespace.
 */
export function ruleGroupName(monitor: AppMonitorForRule): string {
  const { name, namespace } = identity(monitor);
  return `appmonitor/${namespace}/${name}`;
}

/**
 * The rule group of a monitor: {@link ruleGroupName} with the threshold rule of
 * {@link buildAlertingRule} and the OOM-kill rule of {@link buildOOMAlertingRule}, in that order
 * (https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/#rule_group).
 *
 * @param monitor the AppMonitor, spec defaults applied.
 * @param config how to build it.
 * @returns the group.
 * @throws {RuleInputError} for an invalid monitor or config.
 */
export function buildRuleGroup(monitor: AppMonitorForRule, config: RuleConfig): IRuleGroup {
  return { name: ruleGroupName(monitor), rules: [buildAlertingRule(monitor, config), buildOOMAlertingRule(monitor, config)] };
}

/**
 * The PrometheusRule (monitoring.coreos.com/v1,
 * https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusRule)
 * for a monitor, ready for server-side apply: named after the AppMonitor in its namespace;
 * labels = config.ruleLabels plus {@link MANAGED_BY_LABEL}; annotation
 * {@link GENERATION_ANNOTATION} when metadata.generation is known; a controller ownerReference
 * to the AppMonitor (blockOwnerDeletion, so the writer needs `update` on
 * `appmonitors/finalizers` under the OwnerReferencesPermissionEnforcement admission plugin);
 * spec.groups = [{@link buildRuleGroup}].
 *
 * @param monitor the AppMonitor as read from the API server, spec defaults applied.
 * @param config how to build it.
 * @returns the object; no status, resourceVersion or other server-owned fields.
 * @throws {RuleInputError} for an invalid monitor or config, or a missing metadata.uid.
 */
export function buildPrometheusRule(monitor: AppMonitorForRule, config: RuleConfig): IPrometheusRule {
  const group = buildRuleGroup(monitor, config);
  const { name, namespace } = identity(monitor);
  const { uid, generation } = monitor.metadata;
  if (typeof uid !== "string" || uid === "") {
    throw new RuleInputError("metadata.uid", "is required for the ownerReference");
  }
  const annotations: Record<string, string> = {};
  if (typeof generation === "number" && Number.isSafeInteger(generation)) {
    annotations[GENERATION_ANNOTATION] = String(generation);
  }
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: {
      name,
      namespace,
      labels: { ...config.ruleLabels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations,
      ownerReferences: [
        { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name, uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: { groups: [group] },
  };
}

/**
 * A plain Prometheus rules file (`groups:` YAML,
 * https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/#configuring-rules)
 * with one {@link buildRuleGroup} per monitor, in the given order, for Prometheus without
 * prometheus-operator (`rule_files:`).
 *
 * @param monitors AppMonitors with a namespace and spec defaults applied.
 * @param config how to build the rules; ruleLabels are not used (there is no object to label).
 * @returns the YAML text, ending in a newline.
 * @throws {RuleInputError} for an invalid monitor or config, or the same namespace/name twice
 *   (group names must be unique in a file).
 */
export function buildRulesFile(monitors: readonly AppMonitorForRule[], config: RuleConfig): string {
  const groups: IRuleGroup[] = [];
  const seen = new Set<string>();
  for (const monitor of monitors) {
    const group = buildRuleGroup(monitor, config);
    if (seen.has(group.name)) throw new RuleInputError("metadata.name", `AppMonitor ${group.name.slice("appmonitor/".length)} appears twice`);
    seen.add(group.name);
    groups.push(group);
  }
  // lineWidth 0: never fold long strings; expressions stay readable block literals.
  return stringify({ groups }, { lineWidth: 0 });
}
