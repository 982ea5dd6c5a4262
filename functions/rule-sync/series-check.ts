/**
 * MetricsReady: whether each side of an AppMonitor's alert expression has series in Prometheus
 * for its namespace and containers, and when one has none, which, why, and what to change. Pure:
 * the PromQL to ask and the answer's counts in, the condition out; `prometheus-check.ts` asks.
 *
 * The sides, as `rule.ts` builds the threshold expression (its module comment, "Metric sources"):
 *
 * | side | series | metric source |
 * | --- | --- | --- |
 * | working set | `container_memory_working_set_bytes` (the kubelet's cAdvisor) | both |
 * | limit | `container_spec_memory_limit_bytes > 0` (cAdvisor) or `kube_pod_container_resource_limits{resource="memory"} > 0` (kube-state-metrics) | `cadvisor` |
 * | limit | `kube_pod_container_resource_limits{resource="memory"} > 0` | `kube-state-metrics` |
 * | covered Pods | `kube_pod_annotations` with the opt-in annotation, or `kube_pod_labels` matching spec.selector | `kube-state-metrics` |
 * | heap, per `heapMetrics: Watch` entry | its runtime's used heap and heap limit (`functions/lib/heap-metrics.ts`), both, for one of its libraries | both |
 *
 * A heap side without series is `HeapSeriesNotFound`, its message naming each library's metrics
 * and the labels the program's scrape must give them; not told apart by a question over the
 * whole of Prometheus (the metric names are each program's own).
 *
 * A side without series in the namespace is told apart by asking the same metrics over the
 * whole of Prometheus: absent everywhere, it is a scrape or a relabeling to change
 * (kube-prometheus-stack's kubelet job drops `container_spec_*`: its values'
 * `kubelet.serviceMonitor.cAdvisorMetricRelabelings`); present elsewhere, the namespace has no
 * such container yet, or none with a memory limit.
 *
 * Each question is one instant query: one `count(…)` per side, tagged with a `side` label by
 * `label_replace` and joined by `or`, so an absent side is an absent sample.
 */
import { MONITOR_ANNOTATION } from "../lib/appmonitor.ts";
import { HEAP_SOURCES, heapPercentLines } from "../lib/heap-metrics.ts";
import { promqlString } from "../lib/promql.ts";
import { METRICS_READY, METRICS_REASONS, type DesiredCondition } from "./conditions.ts";
import { containerMatchers, coveredPodSelectors, heapWatches, type HeapWatch } from "./rule.ts";
import type { MetricSource } from "./rule-config.ts";
import type { RuleInput } from "./rule-input.ts";
import { unavailableReason, unavailableText, type PrometheusUnavailable } from "./rule-loaded.ts";
import { memoryLimitSeries } from "../lib/working-set.ts";

/** The metrics the expression reads. */
export const SERIES = {
  workingSet: "container_memory_working_set_bytes",
  cadvisorLimit: "container_spec_memory_limit_bytes",
  ksmLimit: "kube_pod_container_resource_limits",
  podAnnotations: "kube_pod_annotations",
  podLabels: "kube_pod_labels",
} as const;

/** kube-state-metrics' label for the opt-in annotation on `kube_pod_annotations`. */
export const MONITOR_ANNOTATION_LABEL = `annotation_${MONITOR_ANNOTATION.replace(/[^a-zA-Z0-9_]/g, "_")}`;

/** The label that names the side of each sample of a tagged count query. */
export const SIDE_LABEL = "side";

/** Series counts by side, as a tagged count query answers (an absent side: no series). */
export type SeriesCounts = ReadonlyMap<string, number>;

/** `label_replace(count(expr), "side", side, "", "")`: the count of `expr`, tagged with its side. */
function tagged(side: string, expr: string): string {
  return `label_replace(count(${expr}), ${promqlString(SIDE_LABEL)}, ${promqlString(side)}, "", "")`;
}

/**
 * The instant query of a monitor's sides in its namespace: `workingSet`, `ksmLimit`, and with
 * the `cadvisor` source `cadvisorLimit`, with `kube-state-metrics` `coveredPods`, and
 * `heap:<containerName>` per heap watch ({@link heapSide}); each counts the series the
 * expression's side selects (the limit above 0, as the expression keeps it; a heap's percent).
 *
 * @param monitor the checked AppMonitor.
 * @param source the metric source its rule was built for.
 * @returns the PromQL.
 */
export function namespaceSeriesQuery(monitor: RuleInput, source: MetricSource): string {
  const ns = `namespace=${promqlString(monitor.namespace)}`;
  const containers = containerMatchers(monitor);
  const parts = [
    tagged("workingSet", `${SERIES.workingSet}{${ns}, ${containers}}`),
    ...(source === "cadvisor" ? [tagged("cadvisorLimit", `${SERIES.cadvisorLimit}{${ns}, ${containers}} > 0`)] : []),
    tagged("ksmLimit", `${SERIES.ksmLimit}{${ns}, resource="memory", ${containers}} > 0`),
    ...(source === "kube-state-metrics" ? [tagged("coveredPods", coveredPodSelectors(monitor).join(" or "))] : []),
    ...heapWatches(monitor).map((watch) => {
      const matchers = `${ns}, ${watch.containers}`;
      return tagged(heapSide(watch), heapPercentLines(watch.runtime, matchers, memoryLimitSeries(ns, watch.containers, source === "cadvisor")).join(" "));
    }),
  ];
  return parts.join("\n  or ");
}

/**
 * The instant query of the same metrics over the whole of Prometheus, the same for every
 * AppMonitor (so one answer serves a resync): `workingSet`, `cadvisorLimit`, `ksmLimit`,
 * `podAnnotations` (any `kube_pod_annotations`: kube-state-metrics is scraped) and
 * `monitorAnnotation` (one carrying the opt-in annotation's label: its allowlist has it).
 */
export function clusterSeriesQuery(): string {
  return [
    tagged("workingSet", SERIES.workingSet),
    tagged("cadvisorLimit", SERIES.cadvisorLimit),
    tagged("ksmLimit", `${SERIES.ksmLimit}{resource="memory"}`),
    tagged("podAnnotations", SERIES.podAnnotations),
    tagged("monitorAnnotation", `${SERIES.podAnnotations}{${MONITOR_ANNOTATION_LABEL}!=""}`),
  ].join("\n  or ");
}

/**
 * The counts of a tagged count query's samples, by their {@link SIDE_LABEL}; samples without it
 * or with a value that is not a number are left out.
 */
export function readCounts(samples: readonly { readonly metric: Readonly<Record<string, string>>; readonly value: number }[]): SeriesCounts {
  const counts = new Map<string, number>();
  for (const sample of samples) {
    const side = sample.metric[SIDE_LABEL];
    if (side !== undefined && Number.isFinite(sample.value)) counts.set(side, sample.value);
  }
  return counts;
}

const has = (counts: SeriesCounts, side: string): boolean => (counts.get(side) ?? 0) > 0;

/** The side of a heap watch in a tagged count query: `heap:<containerName>` (`heap:*` for every other container). */
export function heapSide(watch: Pick<HeapWatch, "containerName">): string {
  return `heap:${watch.containerName}`;
}

/** `, the heap of container api (JVM)…` for the watches of a monitor whose sides all have series; empty without one. */
function heapsFound(monitor: RuleInput): string {
  const watches = heapWatches(monitor);
  if (watches.length === 0) return "";
  return `, the heap of ${watches.map((w) => `${w.containerName === "*" ? "the other containers" : `container ${w.containerName}`} (${w.runtime})`).join(", ")}`;
}

/** A heap watch without series: which container, which runtime, each library's metrics and the labels they need. */
function heapFinding(watch: HeapWatch, monitor: RuleInput): Finding {
  const which = watch.containerName === "*" ? "the containers its * entry covers" : `container ${watch.containerName}`;
  const names = HEAP_SOURCES[watch.runtime]
    .map((s) => `${s.usedMetric} with ${s.limitMetric ?? "the container's memory limit"} (${s.library})`)
    .join(", or ");
  return {
    reason: METRICS_REASONS.heapSeriesNotFound,
    misconfigured: false,
    text:
      `no ${watch.runtime} heap series for ${which} in namespace ${monitor.namespace}, so heapMetrics: Watch never alerts: the program must export ${names}, ` +
      "scraped with the namespace, pod and container labels of its Pod (a PodMonitor or ServiceMonitor sets them), or no such container runs there yet (docs/fixed-heaps.md)",
  };
}

/** Which sides of `monitor`'s expression have no series in its namespace, in the expression's order. */
function missingSides(source: MetricSource, inNamespace: SeriesCounts): ("workingSet" | "limit" | "coveredPods")[] {
  const missing: ("workingSet" | "limit" | "coveredPods")[] = [];
  if (!has(inNamespace, "workingSet")) missing.push("workingSet");
  const limit = source === "cadvisor" ? has(inNamespace, "cadvisorLimit") || has(inNamespace, "ksmLimit") : has(inNamespace, "ksmLimit");
  if (!limit) missing.push("limit");
  if (source === "kube-state-metrics" && !has(inNamespace, "coveredPods")) missing.push("coveredPods");
  return missing;
}

/** Whether {@link metricsReady} needs the counts of {@link clusterSeriesQuery} to explain a missing side. */
export function needsClusterCounts(source: MetricSource, inNamespace: SeriesCounts): boolean {
  return missingSides(source, inNamespace).length > 0;
}

/** Where the fixes are written out. */
const FIXES = 'docs/install.md, "MetricsReady"';

/** One missing side: the reason it gives and the sentence that explains it. */
interface Finding {
  readonly reason: string;
  /** Whether it is a scrape or relabeling to change (absent everywhere), rather than a namespace without such Pods yet. */
  readonly misconfigured: boolean;
  readonly text: string;
}

function explain(side: "workingSet" | "limit" | "coveredPods", monitor: RuleInput, source: MetricSource, inCluster: SeriesCounts, url: string): Finding {
  const where = `namespace ${monitor.namespace}${monitor.spec.containers === undefined ? "" : ` (containers ${[...new Set(monitor.spec.containers)].join(", ")})`}`;
  const none = METRICS_REASONS.noMatchingSeries;
  switch (side) {
    case "workingSet":
      return has(inCluster, "workingSet")
        ? { reason: none, misconfigured: false, text: `no ${SERIES.workingSet} series for ${where}: no such container runs there yet, or Prometheus has not scraped it yet` }
        : {
          reason: METRICS_REASONS.workingSetNotScraped,
          misconfigured: true,
          text:
            `no ${SERIES.workingSet} series in Prometheus at ${url}: it does not scrape the kubelets' cAdvisor endpoint (/metrics/cadvisor), the working set's source; ` +
            `add that scrape (kube-prometheus-stack: kubelet.serviceMonitor.cAdvisor, true by default) (${FIXES})`,
        };
    case "limit": {
      const anywhere = source === "cadvisor" ? has(inCluster, "cadvisorLimit") || has(inCluster, "ksmLimit") : has(inCluster, "ksmLimit");
      if (anywhere) {
        const metrics = source === "cadvisor" ? `${SERIES.cadvisorLimit} or ${SERIES.ksmLimit}` : SERIES.ksmLimit;
        return { reason: none, misconfigured: false, text: `no container of ${where} has a memory limit in ${metrics}: set one in its Pod template (a container without a limit is never scaled), or no such container runs there yet` };
      }
      const text = source === "cadvisor"
        ? `no memory limit series in Prometheus at ${url}: neither ${SERIES.cadvisorLimit} (kube-prometheus-stack drops it: its kubelet.serviceMonitor.cAdvisorMetricRelabelings drop container_spec_.*) ` +
          `nor kube-state-metrics' ${SERIES.ksmLimit} (kube-state-metrics is not scraped); scrape kube-state-metrics (kube-prometheus-stack: kubeStateMetrics.enabled, true by default) ` +
          `or keep ${SERIES.cadvisorLimit} (${FIXES})`
        : `no ${SERIES.ksmLimit} series in Prometheus at ${url}: kube-state-metrics is not scraped, and METRIC_SOURCE=kube-state-metrics reads the limit from it; ` +
          `scrape kube-state-metrics (kube-prometheus-stack: kubeStateMetrics.enabled, true by default), or set METRIC_SOURCE=cadvisor where ${SERIES.cadvisorLimit} is kept (${FIXES})`;
      return { reason: METRICS_REASONS.limitNotScraped, misconfigured: true, text };
    }
    case "coveredPods": {
      const selector = monitor.spec.selector !== undefined;
      if (!has(inCluster, "podAnnotations")) {
        return {
          reason: METRICS_REASONS.coveredPodsNotExported,
          misconfigured: true,
          text: `no ${SERIES.podAnnotations} series in Prometheus at ${url}: kube-state-metrics is not scraped, and METRIC_SOURCE=kube-state-metrics selects the covered Pods from it (${FIXES})`,
        };
      }
      if (!has(inCluster, "monitorAnnotation") && !selector) {
        return {
          reason: METRICS_REASONS.coveredPodsNotExported,
          misconfigured: true,
          text:
            `no ${SERIES.podAnnotations} series in Prometheus at ${url} carries the label ${MONITOR_ANNOTATION_LABEL}: kube-state-metrics exports the annotation only when started with ` +
            `--metric-annotations-allowlist=pods=[${MONITOR_ANNOTATION}] (kube-prometheus-stack: kube-state-metrics.metricAnnotationsAllowList), so the rule selects no Pod (${FIXES})`,
        };
      }
      return {
        reason: none,
        misconfigured: false,
        text:
          `no Pod of namespace ${monitor.namespace} is annotated ${MONITOR_ANNOTATION}: "true"${selector ? " or matches spec.selector" : ""} in ${SERIES.podAnnotations}${selector ? ` / ${SERIES.podLabels}` : ""}: ` +
          `no such Pod runs there yet${selector ? `, or kube-state-metrics lacks --metric-labels-allowlist=pods=[<the selector's keys>]` : ""}`,
      };
    }
  }
}

/**
 * MetricsReady from the counts of {@link namespaceSeriesQuery} (and, when a side is missing, of
 * {@link clusterSeriesQuery}).
 *
 * | sides in the namespace | status | reason |
 * | --- | --- | --- |
 * | all have series | True | `SeriesFound`, naming the limit metrics that have them |
 * | one's metric is absent from Prometheus | False | `WorkingSetNotScraped`, `LimitNotScraped`, `CoveredPodsNotExported` (the first, in the expression's order) |
 * | the metrics exist, not for this namespace or its containers | False | `NoMatchingSeries` |
 * | a heap watch's runtime has no heap series there | False | `HeapSeriesNotFound` (after the above) |
 *
 * The message names every missing side, its likely cause and the fix; it holds no counts, so it
 * stays the same while the facts do.
 *
 * @param monitor the checked AppMonitor.
 * @param source the metric source its rule was built for.
 * @param inNamespace counts of {@link namespaceSeriesQuery}.
 * @param inCluster counts of {@link clusterSeriesQuery}; needed when {@link needsClusterCounts}, else ignored.
 * @param prometheusUrl the URL asked, for the message.
 * @returns the condition.
 */
export function metricsReady(monitor: RuleInput, source: MetricSource, inNamespace: SeriesCounts, inCluster: SeriesCounts, prometheusUrl: string): DesiredCondition {
  const missing = missingSides(source, inNamespace);
  const heapless = heapWatches(monitor).filter((watch) => !has(inNamespace, heapSide(watch)));
  if (missing.length === 0 && heapless.length === 0) {
    const limits = [...(has(inNamespace, "cadvisorLimit") ? [SERIES.cadvisorLimit] : []), ...(has(inNamespace, "ksmLimit") ? [SERIES.ksmLimit] : [])];
    const covered = source === "kube-state-metrics" ? `, the covered Pods (${SERIES.podAnnotations}${monitor.spec.selector === undefined ? "" : ` / ${SERIES.podLabels}`})` : "";
    return {
      type: METRICS_READY,
      status: "True",
      reason: METRICS_REASONS.found,
      message: `Prometheus at ${prometheusUrl} has series for every side of the rule in namespace ${monitor.namespace}: the working set (${SERIES.workingSet}), the limit (${limits.join(", ")})${covered}${heapsFound(monitor)}`,
    };
  }
  const findings = [...missing.map((side) => explain(side, monitor, source, inCluster, prometheusUrl)), ...heapless.map((watch) => heapFinding(watch, monitor))];
  const first = findings.find((f) => f.misconfigured) ?? findings[0];
  return { type: METRICS_READY, status: "False", reason: first?.reason ?? METRICS_REASONS.noMatchingSeries, message: findings.map((f) => f.text).join("; and ") };
}

/**
 * MetricsReady when Prometheus cannot be asked: `Unknown`, with the reason of `why`.
 *
 * @param monitor the AppMonitor's namespace and name.
 * @param why what stopped the question.
 */
export function metricsReadyUnknown(monitor: { readonly namespace: string }, why: PrometheusUnavailable): DesiredCondition {
  return {
    type: METRICS_READY,
    status: "Unknown",
    reason: unavailableReason(why),
    message: `whether the series of the rule's expression exist for namespace ${monitor.namespace} is not known: ${unavailableText(why)}`,
  };
}

/** MetricsReady while no rule of the AppMonitor's generation is in place (RuleReady says why). */
export function metricsReadyWithoutRule(): DesiredCondition {
  return { type: METRICS_READY, status: "Unknown", reason: METRICS_REASONS.ruleNotApplied, message: "no rule of this generation is in place to check; RuleReady says why" };
}
