/**
 * The conditions rule-sync owns on an AppMonitor, their reasons, and the shape in which the
 * deciding modules hand them to the status write (metav1.Condition without its times and
 * observed generation, which `status.ts` adds).
 *
 * - {@link RULE_READY}: whether the AppMonitor's rule is in effect, i.e. its PrometheusRule is
 *   applied and Prometheus has loaded its group at the AppMonitor's generation (`plan.ts` for
 *   what stops the rule being written, `rule-loaded.ts` for what Prometheus says).
 * - {@link METRICS_READY}: whether each side of the rule's expression has series for the
 *   AppMonitor's namespace (`series-check.ts`).
 * - {@link READY}: the summary kstatus, Flux and Argo CD health checks read ({@link readyOf}),
 *   written by rule-sync with the two above, at the same `observedGeneration`.
 */

/** The condition that says whether the AppMonitor's rule is in effect. */
export const RULE_READY = "RuleReady";
/** The condition that says whether the series the rule reads exist. */
export const METRICS_READY = "MetricsReady";

/** The summary condition: True only when the AppMonitor is reconciled (its rule in effect over series that exist). */
export const READY = "Ready";

/** A condition type rule-sync writes. */
export type ConditionType = typeof RULE_READY | typeof METRICS_READY | typeof READY;

/** Reasons of {@link RULE_READY}. */
export const REASONS = {
  /** True: Prometheus lists the rule group, at the AppMonitor's generation, and evaluates it. */
  loaded: "RuleLoaded",
  /** False: the rule is applied; Prometheus has not loaded its group (or not this generation of it) yet. */
  notLoaded: "RuleNotLoaded",
  /** False: Prometheus loaded the group and fails to evaluate one of its rules. */
  evaluationFailed: "RuleEvaluationFailed",
  /** False: the spec cannot be turned into a rule (a selector key PromQL cannot hold, …). */
  invalid: "InvalidSpec",
  /** False: a PrometheusRule of that name exists and is not rule-sync's. */
  conflict: "RuleConflict",
  /** False: the API server refused the rule (schema validation, admission). */
  rejected: "RuleRejected",
} as const;

/** Reasons of {@link METRICS_READY}. */
export const METRICS_REASONS = {
  /** True: every side of the expression has series in the AppMonitor's namespace. */
  found: "SeriesFound",
  /** False: Prometheus has no working set series at all (cAdvisor not scraped). */
  workingSetNotScraped: "WorkingSetNotScraped",
  /** False: Prometheus has no memory limit series at all (dropped, or kube-state-metrics not scraped). */
  limitNotScraped: "LimitNotScraped",
  /** False (kube-state-metrics source): no Pod anywhere carries the opt-in annotation in kube_pod_annotations (its allowlist). */
  coveredPodsNotExported: "CoveredPodsNotExported",
  /** False: a container whose heap a `heapMetrics: Watch` entry watches has no heap series of its runtime in the namespace (not exported, not scraped with its Pod's labels, or not running yet). */
  heapSeriesNotFound: "HeapSeriesNotFound",
  /** False: the metrics exist, but not for the AppMonitor's namespace and containers (none runs there yet, or none has a limit). */
  noMatchingSeries: "NoMatchingSeries",
  /** Unknown: no rule of this generation is in place to check (RuleReady says why). */
  ruleNotApplied: "RuleNotApplied",
} as const;

/** Reasons of either condition when Prometheus cannot be asked; the status is `Unknown`. */
export const PROMETHEUS_REASONS = {
  /** rule-sync has no `PROMETHEUS_URL`. */
  notConfigured: "PrometheusNotConfigured",
  /** No answer: connection refused, a name that does not resolve, a timeout. */
  unreachable: "PrometheusUnreachable",
  /** An answer that is not the Prometheus HTTP API's success (an HTTP error, not JSON, `status: "error"`). */
  apiError: "PrometheusAPIError",
} as const;

/** The Prometheus reasons that mean a wrong or unreachable `PROMETHEUS_URL`: a Warning Event when RuleReady turns to one. */
export const PROMETHEUS_FAILURE_REASONS: readonly string[] = [PROMETHEUS_REASONS.unreachable, PROMETHEUS_REASONS.apiError];

/** A condition to report, without times. */
export interface DesiredCondition {
  readonly type: ConditionType;
  readonly status: "True" | "False" | "Unknown";
  readonly reason: string;
  readonly message: string;
}

/** Reasons of {@link READY}; when not True it carries the reason of the condition that is not. */
export const READY_REASONS = {
  /** True: RuleReady and MetricsReady are both True. */
  reconciled: "Reconciled",
} as const;

/**
 * The {@link READY} condition of `conditions` (RuleReady and MetricsReady; pure): True when every
 * one is True; else False when one is False, else Unknown, with the reason and message of the
 * first that is not True (RuleReady first), its type named in the message. The kstatus convention
 * (https://github.com/kubernetes-sigs/cli-utils/blob/master/pkg/kstatus/README.md): `Ready` True
 * only once the object is reconciled, read with the condition's `observedGeneration`.
 */
export function readyOf(conditions: readonly DesiredCondition[]): DesiredCondition {
  const parts = conditions.filter((c) => c.type !== READY);
  const notTrue = parts.find((c) => c.status === "False") ?? parts.find((c) => c.status !== "True");
  if (notTrue === undefined) return { type: READY, status: "True", reason: READY_REASONS.reconciled, message: "the rule is loaded by Prometheus and the series it reads exist" };
  return { type: READY, status: notTrue.status, reason: notTrue.reason, message: `${notTrue.type}: ${notTrue.message}` };
}
