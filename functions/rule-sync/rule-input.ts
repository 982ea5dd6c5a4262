/**
 * What a rule is built from: an AppMonitor whose spec passed `validateAppMonitorSpec`
 * (functions/lib/appmonitor-spec.ts), checked once more for what only a PromQL expression and a
 * PrometheusRule need ({@link checkRuleInput}). The rule builder (`rule.ts`) takes the
 * {@link RuleInput} this returns and checks nothing again.
 */
import type { AppMonitorSpecWithDefaults, ObjectMetaLike } from "../lib/appmonitor.ts";
import { isDnsLabel, isDnsSubdomain, isLabelKey, isLabelValue } from "../lib/kube-names.ts";

/**
 * Largest `for` accepted, in seconds: Prometheus holds durations as int64 nanoseconds
 * (https://pkg.go.dev/github.com/prometheus/common/model#Duration).
 */
export const MAX_FOR_SECONDS = 9_223_372_036;

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
 * The parts of an AppMonitor (kubedemo.com/v1) a rule is built from, its spec as
 * `validateAppMonitorSpec` returns it (valid, defaults applied): spec.memThresholdPercent in
 * percent (0 < x ≤ 100), spec.forSeconds in whole seconds ≥ 0, spec.containers (at least one
 * container name, each a DNS label), spec.selector (operators with the values they need) and
 * spec.trend (whole seconds within the schema's bounds, its defaults applied), spec.targetRef (a
 * workload name), spec.selectorMode (absent: `Widen`) and spec.containerPolicies (each
 * `heapMetrics: Watch` with a `runtime`) are taken as that function promises them.
 */
export interface AppMonitorForRule {
  readonly metadata: Pick<ObjectMetaLike, "name" | "namespace" | "uid" | "generation">;
  readonly spec: Pick<AppMonitorSpecWithDefaults, "memThresholdPercent" | "forSeconds" | "selector" | "containers" | "trend" | "targetRef"> &
    Partial<Pick<AppMonitorSpecWithDefaults, "selectorMode" | "containerPolicies">>;
}

/**
 * An {@link AppMonitorForRule} that {@link checkRuleInput} accepted: `name` (a DNS subdomain)
 * names the PrometheusRule and the rule group, `namespace` (a DNS label) limits the Pods, `uid`
 * is needed for the ownerReference only; every selector key and value is Kubernetes label
 * syntax, so each can enter a PromQL expression quoted.
 */
export interface RuleInput {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string | undefined;
  readonly generation: number | undefined;
  readonly spec: AppMonitorForRule["spec"];
}

/**
 * Checks what the AppMonitor's schema does not: its name and namespace (the API server checks
 * them, a manifest may not), the syntax of every label key and value in `spec.selector` (the API
 * server does not check labels inside a custom resource's spec; kube-state-metrics and PromQL see
 * them), and `spec.forSeconds` no larger than {@link MAX_FOR_SECONDS}.
 *
 * @param monitor the AppMonitor, its spec validated.
 * @returns the same AppMonitor as a {@link RuleInput}.
 * @throws {RuleInputError} naming the first offending field, in this order: `metadata.name`,
 *   `metadata.namespace`, `spec.selector.matchLabels["<key>"]`,
 *   `spec.selector.matchExpressions[<i>].key` or `.values[<j>]`, `spec.forSeconds`.
 */
export function checkRuleInput(monitor: AppMonitorForRule): RuleInput {
  const { name, namespace, uid, generation } = monitor.metadata;
  if (typeof name !== "string" || !isDnsSubdomain(name)) {
    throw new RuleInputError("metadata.name", `must be a DNS subdomain (RFC 1123), got ${JSON.stringify(name)}`);
  }
  if (typeof namespace !== "string" || !isDnsLabel(namespace)) {
    throw new RuleInputError("metadata.namespace", `must be a DNS label (RFC 1123), got ${JSON.stringify(namespace)}`);
  }
  const { selector } = monitor.spec;
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    const field = `spec.selector.matchLabels[${JSON.stringify(key)}]`;
    if (!isLabelKey(key)) throw new RuleInputError(field, "not a valid Kubernetes label key");
    if (!isLabelValue(value)) throw new RuleInputError(field, "not a valid Kubernetes label value");
  }
  (selector?.matchExpressions ?? []).forEach((req, i) => {
    const field = `spec.selector.matchExpressions[${i}]`;
    if (!isLabelKey(req.key)) throw new RuleInputError(`${field}.key`, "not a valid Kubernetes label key");
    (req.values ?? []).forEach((v, j) => {
      if (!isLabelValue(v)) throw new RuleInputError(`${field}.values[${j}]`, "not a valid Kubernetes label value");
    });
  });
  if (monitor.spec.forSeconds > MAX_FOR_SECONDS) {
    throw new RuleInputError("spec.forSeconds", `must be a whole number of seconds from 0 to ${MAX_FOR_SECONDS}, got ${String(monitor.spec.forSeconds)}`);
  }
  return { name, namespace, uid, generation, spec: monitor.spec };
}
