// The alerting rule for one AppMonitor, as a prometheus-operator PrometheusRule and as a plain
// Prometheus rules file. Pure: no I/O, so the cluster side only reads AppMonitors and applies
// what this module returns.
//
// It takes a RuleInput (`rule-input.ts`: the AppMonitor, checked once) and a RuleConfig
// (`rule-config.ts`: checked where it is read) and checks neither again.
//
// Metric sources (RuleConfig.metricSource):
//
// - "cadvisor" (the default): working set `container_memory_working_set_bytes` from the
//   kubelet's cAdvisor endpoint, and limit `container_spec_memory_limit_bytes` from there too, or
//   where that series is not kept, kube-state-metrics' `kube_pod_container_resource_limits
//   {resource="memory"}` (the larger of the two where both are). kube-prometheus-stack drops
//   `container_spec_*` by default ("Drop container spec metrics that overlap with
//   kube-state-metrics", its values' kubelet.serviceMonitor.cAdvisorMetricRelabelings) and runs
//   kube-state-metrics, so on its defaults the limit comes from kube-state-metrics and the rule
//   fires with nothing configured; a Prometheus that keeps the cAdvisor series needs no
//   kube-state-metrics. cAdvisor series carry only namespace, pod, container
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
//   match every Pod. With `selectorMode: Narrow` the annotated and the selected Pods are joined
//   with `and`, and with spec.targetRef the join is on every Pod (`kube_pod_labels`).
//
// With spec.targetRef, either source, every series selector is also limited to the Pods named
// after the workload (`podScope`).
//
// The local test stack's kwok emulates the kubelet's cAdvisor endpoint with
// `container_memory_working_set_bytes`, `container_spec_memory_limit_bytes` and
// `container_oom_events_total` per namespace, pod and container, so the default "cadvisor" rules
// (threshold, OOM kill and trend) are evaluated there by a real Prometheus. The stack's real node has a
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
  APPMONITOR_KIND,
  APPMONITOR_HEAP_ERROR_ALERT_NAME,
  APPMONITOR_HEAP_THRESHOLD_ALERT_NAME,
  APPMONITOR_OOM_ALERT_NAME,
  APPMONITOR_TREND_ALERT_NAME,
  type AppMonitorTrend,
  MONITOR_ANNOTATION,
} from "../lib/appmonitor.ts";
import { heapPercentLines, type HeapMetricsRuntime } from "../lib/heap-metrics.ts";
import type { LabelSelector } from "../lib/label-selector.ts";
import { promDuration, promqlNumber, promqlString, regexQuote } from "../lib/promql.ts";
import { containerMatchers as sharedContainerMatchers, memoryLimitSeries, workingSetSeries, workloadPodMatcher } from "../lib/working-set.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type MetricSource, type RuleConfig } from "./rule-config.ts";
import { RuleInputError, type RuleInput } from "./rule-input.ts";

/**
 * The alert name of every generated rule group's threshold alert ({@link buildAlertingRule}).
 * The Alertmanager routes (knative/alertmanager) match on it and on {@link OOM_ALERT_NAME};
 * memory-scaler acts on no other two names, and also requires the {@link APPMONITOR_ALERT_LABEL}
 * label both rules set.
 */
export const ALERT_NAME = APPMONITOR_ALERT_NAME;

/**
 * The alert name of every generated rule group's OOM-kill alert ({@link buildOOMAlertingRule});
 * the Alertmanager routes and memory-scaler match on it as on {@link ALERT_NAME}.
 */
export const OOM_ALERT_NAME = APPMONITOR_OOM_ALERT_NAME;

/**
 * The alert name of the early-warning alert ({@link buildTrendAlertingRule}), in the rule group of
 * an AppMonitor with spec.trend only; routed and acted on as {@link ALERT_NAME} is.
 */
export const TREND_ALERT_NAME = APPMONITOR_TREND_ALERT_NAME;

/**
 * The alert name of the heap-error alert ({@link buildHeapErrorAlertingRule}), in every rule
 * group; routed as {@link ALERT_NAME} is. memory-scaler acts on it only when the container's own
 * termination message shows its runtime's heap error.
 */
export const HEAP_ERROR_ALERT_NAME = APPMONITOR_HEAP_ERROR_ALERT_NAME;

/**
 * The alert name of the heap-threshold alert ({@link buildHeapThresholdAlertingRule}), in the rule
 * group of an AppMonitor with a `spec.containerPolicies` entry `heapMetrics: Watch`; routed as
 * {@link ALERT_NAME} is.
 */
export const HEAP_THRESHOLD_ALERT_NAME = APPMONITOR_HEAP_THRESHOLD_ALERT_NAME;

/**
 * How far, in percent of the limit, the working set may be below the highest value of its window
 * for the trend alert to hold ({@link trendAlertExpression}): a release larger than this (a
 * garbage collector's, a cache's) breaks the alert's `for`. Above the noise of a working set that
 * grows (cAdvisor's samples move in steps of its housekeeping), below the release of a sawtooth
 * worth the name.
 */
export const TREND_DROP_PERCENT = 5;

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

/** `apiVersion` of a PrometheusRule (prometheus-operator's monitoring.coreos.com/v1). */
export const PROMETHEUS_RULE_API_VERSION = "monitoring.coreos.com/v1";
/** `kind` of a PrometheusRule. */
export const PROMETHEUS_RULE_KIND = "PrometheusRule";

/** PrometheusRule annotation recording the AppMonitor `metadata.generation` the rule was built from. */
export const GENERATION_ANNOTATION = "app-monitor.kubedemo.com/appmonitor-generation";

/**
 * The same generation as an annotation of each alerting rule of a PrometheusRule's group, where
 * Prometheus's `/api/v1/rules` shows it, so rule-sync can tell which generation Prometheus loaded
 * (`rule-loaded.ts`). An annotation, not a label: a rule's labels are part of its alerts'
 * identity, and a reload keeps a pending alert only when they stay the same.
 */
export const RULE_GENERATION_ANNOTATION = "appmonitor_generation";

const BY = "(namespace, pod, container)";

/** kube-state-metrics' Prometheus label name for a Kubernetes label or annotation key. */
function ksmLabelName(prefix: "label_" | "annotation_", key: string): string {
  return prefix + key.replace(/[^a-zA-Z0-9_]/g, "_");
}

/**
 * The container matchers of every series selector: spec.containers' names, or any container
 * (`functions/lib/working-set.ts` `containerMatchers`).
 */
export function containerMatchers(monitor: RuleInput): string {
  return sharedContainerMatchers(monitor.spec.containers);
}

/**
 * The matchers that place a series among the Pods a monitor may cover: its namespace, and with
 * spec.targetRef the Pods named after that workload (`<name>-…`: a Deployment's
 * `<name>-<hash>-<suffix>`, a StatefulSet's `<name>-<ordinal>`, a DaemonSet's or ReplicaSet's
 * `<name>-<suffix>`, a Knative Service's Revision Pods `<name>-<00001>-deployment-<hash>-<suffix>`). Neither cAdvisor nor kube-state-metrics' Pod series name the workload
 * above a ReplicaSet, so the name is a filter, not proof: a workload whose name extends the
 * target's (`web-api` beside `web`) passes it too, and memory-scaler, which reads the Pod's
 * owner, skips its alerts (`AppMonitorNotGoverning`).
 */
export function podScope(monitor: RuleInput): string {
  const ns = `namespace=${promqlString(monitor.namespace)}`;
  const ref = monitor.spec.targetRef;
  if (ref === undefined) return ns;
  return `${ns}, ${workloadPodMatcher(ref.name)}`;
}

/** The kube_pod_labels selector of spec.selector's Pods (none without a selector). */
function selectedPods(monitor: RuleInput, ns: string): string[] {
  return monitor.spec.selector === undefined ? [] : [`kube_pod_labels{${[ns, ...selectorMatchers(monitor.spec.selector)].join(", ")}}`];
}

/** The kube_pod_annotations selector of the Pods of `ns` (a namespace matcher) annotated {@link MONITOR_ANNOTATION}`="true"`. */
function annotatedPods(ns: string): string {
  return `kube_pod_annotations{${ns}, ${ksmLabelName("annotation_", MONITOR_ANNOTATION)}=${promqlString(MONITOR_ANNOTATION_VALUE)}}`;
}

/**
 * The kube-state-metrics selectors of the Pods a monitor covers, as its kube-state-metrics rules
 * join them (`or`): with spec.targetRef the Pods named after the workload ({@link podScope}, every
 * Pod has `kube_pod_labels`), annotated or not; with `selectorMode: Narrow` the annotated Pods that
 * spec.selector matches (one `and`); else the annotated Pods of its namespace, then spec.selector's
 * (`kube_pod_labels`) when set.
 *
 * @param monitor the checked AppMonitor.
 * @returns one series selector per way of being covered.
 */
export function coveredPodSelectors(monitor: RuleInput): string[] {
  const ns = podScope(monitor);
  if (monitor.spec.targetRef !== undefined) return [`kube_pod_labels{${ns}}`];
  const selected = selectedPods(monitor, ns);
  if (monitor.spec.selectorMode === "Narrow") return selected.map((s) => `${annotatedPods(ns)} and on (namespace, pod) ${s}`);
  return [annotatedPods(ns), ...selected];
}

/**
 * PromQL matchers on kube_pod_labels equivalent to a label selector whose keys and values are
 * label syntax and whose operators have the values they need (as `checkRuleInput` and
 * `validateAppMonitorSpec` leave it).
 */
function selectorMatchers(selector: LabelSelector): string[] {
  const matchers = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${ksmLabelName("label_", key)}=${promqlString(value)}`);
  for (const req of selector.matchExpressions ?? []) {
    const name = ksmLabelName("label_", req.key);
    // Regex matchers are fully anchored in PromQL, so `a|b` means exactly a or exactly b.
    const alternatives = promqlString((req.values ?? []).map(regexQuote).join("|"));
    switch (req.operator) {
      case "In":
        matchers.push(`${name}=~${alternatives}`);
        break;
      case "NotIn":
        matchers.push(`${name}!~${alternatives}`);
        break;
      // An absent label and an empty one are the same thing to PromQL.
      case "Exists":
        matchers.push(`${name}!=""`);
        break;
      case "DoesNotExist":
        matchers.push(`${name}=""`);
        break;
    }
  }
  return matchers;
}

/**
 * The selectors the working-set alerts share, within {@link podScope}: the working set series of the
 * monitored containers, and their memory limit (module comment, "Metric sources"), neither reduced.
 */
function seriesOf(monitor: RuleInput, source: MetricSource): { workingSet: string; limit: string } {
  const ns = podScope(monitor);
  const containers = containerMatchers(monitor);
  // cAdvisor's limit, or kube-state-metrics' where a relabeling dropped cAdvisor's (module comment).
  return { workingSet: workingSetSeries(ns, containers), limit: memoryLimitSeries(ns, containers, source === "cadvisor") };
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
 * Every interpolated value is quoted with PromQL string escaping
 * (https://prometheus.io/docs/prometheus/latest/querying/basics/#string-literals).
 *
 * @param monitor the checked AppMonitor.
 * @param source the metric source.
 * @returns the expression, over several lines.
 */
export function alertExpression(monitor: RuleInput, source: MetricSource): string {
  const ratio = [...percentOfLimitLines(monitor, source), `  >= ${promqlNumber(monitor.spec.memThresholdPercent)}`];
  if (source === "cadvisor") return ratio.join("\n");
  return coveredPodsOnly(ratio, monitor);
}

/** The working set in percent of the memory limit, per namespace, pod and container: {@link alertExpression} without its threshold. */
function percentOfLimitLines(monitor: RuleInput, source: MetricSource): string[] {
  const { workingSet, limit } = seriesOf(monitor, source);
  // 100 × used / limit rather than used / limit × 100: exact whenever the percentage is a whole
  // number, so an alert at 76 % reports 76, not 76.00000000000001.
  return [`100 * max by ${BY} (${workingSet})`, `  / on ${BY}`, `max by ${BY} (${limit})`];
}

/**
 * The series {@link alertExpression} compares with `spec.memThresholdPercent`: each covered
 * container's working set in percent of its memory limit (labels namespace, pod, container),
 * whatever its value — what `explain` reports as the distance to the threshold.
 *
 * @param monitor the checked AppMonitor.
 * @param source the metric source.
 * @returns the expression, over several lines.
 */
export function percentOfLimitExpression(monitor: RuleInput, source: MetricSource): string {
  const ratio = percentOfLimitLines(monitor, source);
  if (source === "cadvisor") return ratio.join("\n");
  return coveredPodsOnly(ratio, monitor);
}

/**
 * `lines` (an expression whose series carry namespace and pod) kept only for the Pods
 * kube-state-metrics shows covered ({@link coveredPodSelectors}), joined on namespace and pod.
 */
function coveredPodsOnly(lines: readonly string[], monitor: RuleInput): string {
  return [
    "(",
    ...lines.map((line) => `  ${line}`),
    ")",
    "and on (namespace, pod)",
    "(",
    ...coveredPodSelectors(monitor).map((line) => `  ${line}`).join("\n  or\n").split("\n"),
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
 *   event counter, https://github.com/google/cadvisor/blob/master/docs/storage/prometheus.md),
 *   `or` the kube-state-metrics expression below without its narrowing to covered Pods.
 *   cAdvisor counts a kill from the kernel log and attributes it to a container it still
 *   tracks; when the container's PID 1 is the process killed, the container is gone and the
 *   counter does not move (google/cadvisor#3015; seen on this project's real node): that is
 *   the kill that makes a crash loop, and kube-state-metrics (which kube-prometheus-stack
 *   installs) sees it. Where kube-state-metrics is not scraped, that side selects nothing and
 *   the counter alone remains. memory-scaler acts on either only if the container did
 *   terminate OOMKilled and the AppMonitor covers it.
 * - "kube-state-metrics": the container restarted within the window
 *   (`increase(kube_pod_container_status_restarts_total[10m]) > 0`) and its last termination's
 *   reason is OOMKilled (`kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}`,
 *   https://github.com/kubernetes/kube-state-metrics/blob/main/docs/metrics/workload/pod-metrics.md),
 *   as the kubelet reports it in `status.containerStatuses[].lastState.terminated.reason`. A
 *   restart for another reason replaces the last reason, so it does not fire. A kill before the
 *   Pod's first scrape has no earlier sample to increase from and is not seen.
 *
 * @param monitor the checked AppMonitor.
 * @param source the metric source.
 * @returns the expression, over several lines.
 */
export function oomAlertExpression(monitor: RuleInput, source: MetricSource): string {
  const ns = podScope(monitor);
  const containers = containerMatchers(monitor);
  const window = promDuration(OOM_WINDOW_SECONDS);
  const restartedOOMKilled = restartedAfter(monitor, "OOMKilled");
  if (source === "cadvisor") {
    return [
      "(",
      `  max by ${BY} (increase(container_oom_events_total{${ns}, ${containers}}[${window}])) > 0`,
      ")",
      "or",
      "(",
      ...restartedOOMKilled.map((line) => `  ${line}`),
      ")",
    ].join("\n");
  }
  return coveredPodsOnly(restartedOOMKilled, monitor);
}

/**
 * The PromQL expression of a monitor's heap-error alert: per namespace, pod and container, a
 * container that restarted within the last {@link OOM_WINDOW_SECONDS} (the OOM-kill alert's
 * window, for the same reason: a crash loop's back-off fits in it) and whose last termination's
 * reason is `Error` (`kube_pod_container_status_last_terminated_reason{reason="Error"}`), limited
 * as the OOM-kill alert's kube-state-metrics side is. The kubelet says `Error` for any non-zero
 * exit that is not an OOM kill: a runtime's heap error (Node.js's `FATAL ERROR: … JavaScript heap
 * out of memory`, exit code 134, or 139 as PID 1; the JVM's `java.lang.OutOfMemoryError`, exit
 * code 1) among every other crash. The expression does not narrow by exit code
 * (`kube_pod_container_status_last_terminated_exitcode`, experimental in kube-state-metrics 2.18):
 * 1 is any error and 139 any segfault, so a code proves nothing, and memory-scaler confirms each
 * alert from the container's termination message, never from a code. Either metric source: the
 * series are kube-state-metrics'; with "cadvisor" the Pods are not narrowed to the covered ones
 * (as the OOM-kill alert's kube-state-metrics side is not), and memory-scaler checks coverage.
 *
 * @param monitor the checked AppMonitor.
 * @param source the metric source.
 * @returns the expression, over several lines.
 */
export function heapErrorAlertExpression(monitor: RuleInput, source: MetricSource): string {
  const restartedError = restartedAfter(monitor, "Error");
  if (source === "cadvisor") return restartedError.join("\n");
  return coveredPodsOnly(restartedError, monitor);
}

/**
 * kube-state-metrics' lines for a container that restarted within {@link OOM_WINDOW_SECONDS} and
 * whose last termination's reason is `reason`, limited to the monitor's Pods and containers.
 */
function restartedAfter(monitor: RuleInput, reason: "OOMKilled" | "Error"): string[] {
  const ns = podScope(monitor);
  const containers = containerMatchers(monitor);
  const window = promDuration(OOM_WINDOW_SECONDS);
  return [
    `max by ${BY} (increase(kube_pod_container_status_restarts_total{${ns}, ${containers}}[${window}])) > 0`,
    `  and on ${BY}`,
    `max by ${BY} (kube_pod_container_status_last_terminated_reason{${ns}, reason="${reason}", ${containers}}) == 1`,
  ];
}

/**
 * The PromQL expression of a monitor's early-warning alert: per namespace, pod and container, the
 * percent of the memory limit in use (as {@link alertExpression} computes it, and limited as it
 * is), kept only where all of these hold (docs/early-warning.md, "How the rule works"):
 *
 * 1. `predict_linear` over the last `trend.windowSeconds` of the working set, `trend.horizonSeconds`
 *    ahead, is at or above the limit: the least-squares line through the window reaches the limit
 *    within the horizon (https://prometheus.io/docs/prometheus/latest/querying/functions/#predict_linear;
 *    the form of kubernetes-mixin's `KubePersistentVolumeFillingUp`);
 * 2. the lowest working set of the window (`min_over_time`) is at least `trend.floorPercent` of the
 *    limit: a container that starts (idle, then working) is no trend until its start has left the
 *    window;
 * 3. the working set is at most {@link TREND_DROP_PERCENT} percent of the limit below the highest
 *    value of the window (`max_over_time`): held through the rule's `for`, this means no release of
 *    more than that anywhere in the `for`, so a sawtooth that releases at least once per `for`
 *    never fires, whatever the slope of its teeth.
 *
 * Each side reduces every series of the container (`max`/`min by (namespace, pod, container)`): a
 * restarted container's new series, starting low beside the old one's high, fails 2 and 3.
 *
 * @param monitor the checked AppMonitor.
 * @param trend its spec.trend, defaults applied.
 * @param source the metric source.
 * @returns the expression, over several lines.
 */
export function trendAlertExpression(monitor: RuleInput, trend: Required<AppMonitorTrend>, source: MetricSource): string {
  const { workingSet, limit } = seriesOf(monitor, source);
  const window = promDuration(trend.windowSeconds);
  const ranged = `${workingSet}[${window}]`;
  const maxLimit = `max by ${BY} (${limit})`;
  const lines = [
    "(",
    `  100 * max by ${BY} (${workingSet})`,
    `    / on ${BY}`,
    `  ${maxLimit}`,
    ")",
    `and on ${BY}`,
    "(",
    `  max by ${BY} (predict_linear(${ranged}, ${promqlNumber(trend.horizonSeconds)}))`,
    `    >= on ${BY}`,
    `  ${maxLimit}`,
    ")",
    `and on ${BY}`,
    "(",
    `  100 * min by ${BY} (min_over_time(${ranged}))`,
    `    / on ${BY}`,
    `  ${maxLimit}`,
    `    >= ${promqlNumber(trend.floorPercent)}`,
    ")",
    `and on ${BY}`,
    "(",
    `  100 * (max by ${BY} (max_over_time(${ranged})) - on ${BY} max by ${BY} (${workingSet}))`,
    `    / on ${BY}`,
    `  ${maxLimit}`,
    `    <= ${promqlNumber(TREND_DROP_PERCENT)}`,
    ")",
  ];
  if (source === "cadvisor") return lines.join("\n");
  return coveredPodsOnly(lines, monitor);
}

/**
 * A container a monitor watches the heap of: a `spec.containerPolicies` entry with
 * `heapMetrics: Watch`, its runtime, its threshold (`heapThresholdPercent`, else
 * `memThresholdPercent`) and the container matchers of what it applies to.
 */
export interface HeapWatch {
  /** The entry's `containerName`: a container, or `*`. */
  readonly containerName: string;
  readonly runtime: HeapMetricsRuntime;
  readonly thresholdPercent: number;
  /** The containers it covers: the one named (when the monitor scales it), or for `*` every container the monitor scales that no other entry names. */
  readonly containers: string;
}

/**
 * The heap watches of a monitor, in `spec.containerPolicies`' order; none for a named entry whose
 * container spec.containers leaves out (the monitor does not scale it).
 */
export function heapWatches(monitor: RuleInput): HeapWatch[] {
  const policies = monitor.spec.containerPolicies ?? [];
  const named = policies.map((p) => p.containerName).filter((name) => name !== "*");
  return policies.flatMap((policy) => {
    if (policy.heapMetrics !== "Watch" || policy.runtime === undefined) return [];
    const { containerName, runtime } = policy;
    const thresholdPercent = policy.heapThresholdPercent ?? monitor.spec.memThresholdPercent;
    if (containerName !== "*") {
      if (monitor.spec.containers !== undefined && !monitor.spec.containers.includes(containerName)) return [];
      return [{ containerName, runtime, thresholdPercent, containers: sharedContainerMatchers([containerName]) }];
    }
    const others = named.length === 0 ? "" : `, container!~${promqlString(named.map(regexQuote).join("|"))}`;
    return [{ containerName, runtime, thresholdPercent, containers: `${containerMatchers(monitor)}${others}` }];
  });
}

/**
 * The PromQL expression of a monitor's heap-threshold alert: per namespace, pod and container, the
 * used heap in percent of the heap limit, as the runtime's own metrics say them
 * (`functions/lib/heap-metrics.ts` `heapPercentLines`: each library's names tried in turn; .NET's
 * limit a share of the container's limit, from the monitor's metric source), at or above the
 * threshold of the watch that covers the container, one block per {@link heapWatches} entry joined
 * by `or` (their containers never overlap); limited to the monitor's Pods ({@link podScope}), and
 * with kube-state-metrics to the covered Pods. Its labels are exactly namespace, pod, container;
 * its value the percent. One rule for every watch, not one each: two rules of one group with the
 * same alert name and labels are duplicates to Prometheus (`promtool check rules`).
 *
 * @param monitor the checked AppMonitor.
 * @param watches its {@link heapWatches}, at least one.
 * @param source the metric source.
 * @returns the expression, over several lines.
 */
export function heapThresholdAlertExpression(monitor: RuleInput, watches: readonly HeapWatch[], source: MetricSource): string {
  const scope = podScope(monitor);
  const blocks = watches.flatMap((watch, index) => [
    ...(index === 0 ? [] : ["or"]),
    "(",
    ...heapPercentLines(watch.runtime, `${scope}, ${watch.containers}`, memoryLimitSeries(scope, watch.containers, source === "cadvisor")).map((l) => `  ${l}`),
    `) >= ${promqlNumber(watch.thresholdPercent)}`,
  ]);
  const lines = watches.length === 1 ? blocks : ["(", ...blocks.map((l) => `  ${l}`), ")"];
  if (source === "cadvisor") return lines.join("\n");
  return coveredPodsOnly(lines, monitor);
}

/**
 * The heap-threshold alerting rule of a monitor with {@link heapWatches}: alert
 * {@link HEAP_THRESHOLD_ALERT_NAME}, expression {@link heapThresholdAlertExpression}, `for` =
 * spec.forSeconds (a level to hold, as the working-set threshold's), the labels of
 * {@link buildAlertingRule}, annotations `summary` and `value` (the percent of the heap limit in use).
 *
 * @param monitor the checked AppMonitor.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file); undefined without a watch.
 */
export function buildHeapThresholdAlertingRule(monitor: RuleInput, config: RuleConfig): IRule | undefined {
  const watches = heapWatches(monitor);
  if (watches.length === 0) return undefined;
  const { name } = monitor;
  return {
    alert: HEAP_THRESHOLD_ALERT_NAME,
    expr: heapThresholdAlertExpression(monitor, watches, config.metricSource),
    for: promDuration(monitor.spec.forSeconds),
    labels: { [APPMONITOR_ALERT_LABEL]: name, severity: config.severity },
    annotations: {
      summary:
        "Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} uses " +
        `{{ $value | printf "%.1f" }}% of its runtime's heap limit, at or above its heap threshold (AppMonitor ${name}).`,
      value: "{{ $value }}",
    },
  };
}

/**
 * The alerting rule of a monitor
 * (https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/): alert
 * {@link ALERT_NAME}, expression {@link alertExpression}, `for` = spec.forSeconds (as `<n>s`),
 * labels `appmonitor` (the monitor's name) and `severity`, annotations `summary` and `value`
 * (`{{ $value }}`, the percent of the limit in use). The alert's namespace, pod and container
 * labels come from the expression.
 *
 * @param monitor the checked AppMonitor.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file).
 */
export function buildAlertingRule(monitor: RuleInput, config: RuleConfig): IRule {
  const { name } = monitor;
  const percent = promqlNumber(monitor.spec.memThresholdPercent);
  return {
    alert: ALERT_NAME,
    expr: alertExpression(monitor, config.metricSource),
    for: promDuration(monitor.spec.forSeconds),
    // Label and annotation values are Go templates; the name is a DNS subdomain and the
    // severity was validated with the config, so neither can contain template syntax. ($labels holds only the
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
 * @param monitor the checked AppMonitor.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file).
 */
export function buildOOMAlertingRule(monitor: RuleInput, config: RuleConfig): IRule {
  const { name } = monitor;
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
 * The heap-error alerting rule of a monitor: alert {@link HEAP_ERROR_ALERT_NAME}, expression
 * {@link heapErrorAlertExpression}, no `for` (a crash is a fact, as an OOM kill is), the labels
 * of {@link buildOOMAlertingRule}, annotation `summary`.
 *
 * @param monitor the checked AppMonitor.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file).
 */
export function buildHeapErrorAlertingRule(monitor: RuleInput, config: RuleConfig): IRule {
  const { name } = monitor;
  return {
    alert: HEAP_ERROR_ALERT_NAME,
    expr: heapErrorAlertExpression(monitor, config.metricSource),
    labels: { [APPMONITOR_ALERT_LABEL]: name, severity: config.severity },
    annotations: {
      summary:
        "Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} restarted after an error exit " +
        `in the last ${OOM_WINDOW_SECONDS / 60} minutes, possibly its runtime's heap error (AppMonitor ${name}).`,
    },
  };
}

/**
 * The early-warning alerting rule of a monitor with spec.trend: alert {@link TREND_ALERT_NAME},
 * expression {@link trendAlertExpression}, `for` = spec.forSeconds (the hold that makes a release
 * within it break the alert), the same labels as {@link buildAlertingRule}, annotations `summary`
 * and `value` (the percent of the limit in use when it fired, as the threshold alert's).
 *
 * @param monitor the checked AppMonitor.
 * @param trend its spec.trend, defaults applied.
 * @param config how to build it.
 * @returns the rule, in the prometheus-operator Rule shape (also valid in a rules file).
 */
export function buildTrendAlertingRule(monitor: RuleInput, trend: Required<AppMonitorTrend>, config: RuleConfig): IRule {
  const { name } = monitor;
  return {
    alert: TREND_ALERT_NAME,
    expr: trendAlertExpression(monitor, trend, config.metricSource),
    for: promDuration(monitor.spec.forSeconds),
    labels: { [APPMONITOR_ALERT_LABEL]: name, severity: config.severity },
    annotations: {
      summary:
        "Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} uses " +
        `{{ $value | printf "%.1f" }}% of its memory limit and, at the rate of the last ${trend.windowSeconds}s, ` +
        `reaches it within ${trend.horizonSeconds}s (AppMonitor ${name}, trend).`,
      value: "{{ $value }}",
    },
  };
}

/**
 * The rule group name of a monitor, `appmonitor/<namespace>/<name>`: unique per AppMonitor, as
 * Prometheus requires group names to be unique within a rules file.
 *
 * @param monitor the checked AppMonitor.
 * @returns the group name.
 */
export function ruleGroupName(monitor: RuleInput): string {
  return `appmonitor/${monitor.namespace}/${monitor.name}`;
}

/**
 * Every rule a group can hold, in the group's order: the alert's name and the rule a monitor gets
 * (undefined: none for it). {@link buildRuleGroup} builds from this table and
 * {@link GENERATED_ALERT_NAMES} is read from it, so an alert added here is routed too.
 */
const GROUP_RULES: readonly { readonly alert: string; readonly rule: (monitor: RuleInput, config: RuleConfig) => IRule | undefined }[] = [
  { alert: ALERT_NAME, rule: buildAlertingRule },
  { alert: OOM_ALERT_NAME, rule: buildOOMAlertingRule },
  { alert: TREND_ALERT_NAME, rule: (monitor, config) => (monitor.spec.trend === undefined ? undefined : buildTrendAlertingRule(monitor, monitor.spec.trend, config)) },
  { alert: HEAP_ERROR_ALERT_NAME, rule: buildHeapErrorAlertingRule },
  { alert: HEAP_THRESHOLD_ALERT_NAME, rule: buildHeapThresholdAlertingRule },
];

/**
 * The name of every alert a generated rule group can raise, in the group's order: what an
 * Alertmanager route to alert-receiver must match (scripts/alertmanager-routing.ts).
 */
export const GENERATED_ALERT_NAMES: readonly string[] = GROUP_RULES.map((r) => r.alert);

/**
 * The rule group of a monitor: {@link ruleGroupName} with the threshold rule of
 * {@link buildAlertingRule}, the OOM-kill rule of {@link buildOOMAlertingRule}, with
 * spec.trend the early-warning rule of {@link buildTrendAlertingRule}, the heap-error rule of
 * {@link buildHeapErrorAlertingRule}, and with heap watches the heap-threshold rule of
 * {@link buildHeapThresholdAlertingRule}, in that order
 * (https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/#rule_group).
 *
 * @param monitor the checked AppMonitor.
 * @param config how to build it.
 * @returns the group.
 */
export function buildRuleGroup(monitor: RuleInput, config: RuleConfig): IRuleGroup {
  const rules = GROUP_RULES.flatMap((r) => r.rule(monitor, config) ?? []);
  return { name: ruleGroupName(monitor), rules };
}

/**
 * The PrometheusRule (monitoring.coreos.com/v1,
 * https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusRule)
 * for a monitor, ready for server-side apply: named after the AppMonitor in its namespace;
 * labels = config.ruleLabels plus {@link MANAGED_BY_LABEL}; annotation
 * {@link GENERATION_ANNOTATION} when metadata.generation is known; a controller ownerReference
 * to the AppMonitor (blockOwnerDeletion, so the writer needs `update` on
 * `appmonitors/finalizers` under the OwnerReferencesPermissionEnforcement admission plugin);
 * spec.groups = [{@link buildRuleGroup}], each rule annotated {@link RULE_GENERATION_ANNOTATION}
 * with the generation when it is known.
 *
 * @param monitor the checked AppMonitor as read from the API server.
 * @param config how to build it.
 * @returns the object; no status, resourceVersion or other server-owned fields.
 * @throws {RuleInputError} for a missing metadata.uid.
 */
export function buildPrometheusRule(monitor: RuleInput, config: RuleConfig): IPrometheusRule {
  const { name, namespace, uid, generation } = monitor;
  if (uid === undefined || uid === "") {
    throw new RuleInputError("metadata.uid", "is required for the ownerReference");
  }
  const annotations: Record<string, string> = {};
  if (generation !== undefined && Number.isSafeInteger(generation)) {
    annotations[GENERATION_ANNOTATION] = String(generation);
  }
  return {
    apiVersion: PROMETHEUS_RULE_API_VERSION,
    kind: PROMETHEUS_RULE_KIND,
    metadata: {
      name,
      namespace,
      labels: { ...config.ruleLabels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations,
      ownerReferences: [
        { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name, uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: { groups: [withGeneration(buildRuleGroup(monitor, config), annotations[GENERATION_ANNOTATION])] },
  };
}

/** `group` with every rule annotated {@link RULE_GENERATION_ANNOTATION}` = generation`; unchanged without one. */
function withGeneration(group: IRuleGroup, generation: string | undefined): IRuleGroup {
  if (generation === undefined) return group;
  return { ...group, rules: group.rules?.map((rule) => ({ ...rule, annotations: { ...rule.annotations, [RULE_GENERATION_ANNOTATION]: generation } })) };
}

/**
 * A plain Prometheus rules file (`groups:` YAML,
 * https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/#configuring-rules)
 * with one {@link buildRuleGroup} per monitor, in the given order, for Prometheus without
 * prometheus-operator (`rule_files:`).
 *
 * @param monitors the checked AppMonitors.
 * @param config how to build the rules; ruleLabels are not used (there is no object to label).
 * @returns the YAML text, ending in a newline.
 * @throws {RuleInputError} for the same namespace/name twice (group names must be unique in a file).
 */
export function buildRulesFile(monitors: readonly RuleInput[], config: RuleConfig): string {
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
