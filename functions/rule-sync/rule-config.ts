/**
 * How rule-sync builds rules, the same for every AppMonitor: the metric source, the labels on
 * each PrometheusRule object, the alert's severity; their defaults and the one check of a
 * configuration ({@link validateRuleConfig}), run where it is read (`config.ts`, `rules-cli.ts`),
 * so the rule builder (`rule.ts`) trusts a {@link RuleConfig} as it comes.
 */
import { isLabelKey, isLabelValue } from "../lib/kube-names.ts";
import { RuleInputError } from "./rule-input.ts";

/** The metric sources a rule can be built from; see `rule.ts` for what each needs. */
export const METRIC_SOURCES = ["cadvisor", "kube-state-metrics"] as const;

/** Where the memory limit (and, for kube-state-metrics, the Pod selection) comes from. */
export type MetricSource = (typeof METRIC_SOURCES)[number];

/**
 * Default metric source: cAdvisor, which every Kubernetes Prometheus setup scrapes; not every one
 * keeps its `container_spec_*` series (kube-prometheus-stack drops them by default, its values'
 * kubelet.serviceMonitor.cAdvisorMetricRelabelings), and then only "kube-state-metrics" fires.
 */
export const DEFAULT_METRIC_SOURCE: MetricSource = "cadvisor";

/** Default `severity` label of the alert. */
export const DEFAULT_SEVERITY = "warning";

/**
 * The severity a configuration may not set: kube-prometheus-stack's default Alertmanager
 * configuration inhibits every `severity: info` alert while its InfoInhibitor alert fires in the
 * namespace, and any info alert of the same name while a warning or critical one does, so the
 * alert would never reach alert-receiver and nothing would say why.
 */
export const SILENCED_SEVERITY = "info";

/**
 * Label set on every PrometheusRule rule-sync builds, so a resync can list the rules it owns
 * with the label selector `app.kubernetes.io/managed-by=appmonitor-rule-sync` and remove orphans;
 * a configuration may not set it ({@link validateRuleConfig}).
 */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** The value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY_VALUE = "appmonitor-rule-sync";

/** How rules are built, shared by every AppMonitor; valid once {@link validateRuleConfig} passed. */
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
 * Checks a RuleConfig.
 *
 * @param config the configuration to check.
 * @throws {RuleInputError} for an unknown metric source, a severity that is not 1–63 characters
 *   of `[A-Za-z0-9_.-]` (alert labels are expanded as Go templates, so `{{` must not get in) or is
 *   {@link SILENCED_SEVERITY}, or a rule label that is not a valid Kubernetes label or that sets
 *   {@link MANAGED_BY_LABEL}.
 */
export function validateRuleConfig(config: RuleConfig): void {
  if (!(METRIC_SOURCES as readonly string[]).includes(config.metricSource)) {
    throw new RuleInputError("metricSource", `must be one of ${METRIC_SOURCES.join(", ")}, got ${JSON.stringify(config.metricSource)}`);
  }
  if (!/^[A-Za-z0-9_.-]{1,63}$/.test(config.severity)) {
    throw new RuleInputError("severity", `must be 1-63 characters of A-Z a-z 0-9 _ . -, got ${JSON.stringify(config.severity)}`);
  }
  if (config.severity === SILENCED_SEVERITY) {
    throw new RuleInputError("severity", `must not be ${SILENCED_SEVERITY}: kube-prometheus-stack's default Alertmanager configuration inhibits info alerts (InfoInhibitor), so the alerts would never reach alert-receiver; use warning or critical`);
  }
  for (const [key, value] of Object.entries(config.ruleLabels)) {
    const field = `ruleLabels[${JSON.stringify(key)}]`;
    if (!isLabelKey(key)) throw new RuleInputError(field, "not a valid Kubernetes label key");
    if (typeof value !== "string" || !isLabelValue(value)) throw new RuleInputError(field, "not a valid Kubernetes label value");
    if (key === MANAGED_BY_LABEL) throw new RuleInputError(field, "is set by rule-sync itself");
  }
}
