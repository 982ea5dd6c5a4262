/**
 * RuleReady once the rule is applied: whether the Prometheus rule-sync asks has loaded the
 * AppMonitor's rule group, at the AppMonitor's generation, and evaluates it. Pure: the group as
 * Prometheus's `/api/v1/rules` lists it (`prometheus.ts` reads it) in, the condition out.
 *
 * prometheus-operator loads a PrometheusRule only when its Prometheus's `ruleSelector` matches
 * the rule's labels and its `ruleNamespaceSelector` the rule's namespace
 * (https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusSpec),
 * and loads it late: it writes the rule files ConfigMap, the kubelet syncs the mounted copy (its
 * `syncFrequency`, a minute, plus its cache), then the config reloader asks Prometheus to reload.
 * Which generation is loaded comes from the rules' `appmonitor_generation` annotation
 * (`rule.ts` `RULE_GENERATION_ANNOTATION`), which every alerting rule of the group carries.
 */
import { PROMETHEUS_REASONS, REASONS, RULE_READY, type DesiredCondition } from "./conditions.ts";

/** A rule group as Prometheus lists it, reduced to what RuleReady needs. */
export interface LoadedGroup {
  readonly name: string;
  /** The rule file it came from (prometheus-operator: `…/prometheus-<name>-rulefiles-<n>/<namespace>-<name>-<uid>.yaml`). */
  readonly file: string;
  /** Per rule: its name (the alert) and generation annotation, when it has one. */
  readonly rules: readonly LoadedRule[];
}

/** One rule of a {@link LoadedGroup}. */
export interface LoadedRule {
  readonly name: string;
  readonly generation: string | undefined;
  /** Prometheus's `health`: `ok`, `err` or `unknown` (not evaluated yet). */
  readonly health: string;
  /** Prometheus's `lastError` when `health` is `err`. */
  readonly lastError: string | undefined;
}

/** The PrometheusRule whose group is looked for. */
export interface AppliedRule {
  readonly namespace: string;
  readonly name: string;
  /** Its rule group's name (`rule.ts` `ruleGroupName`). */
  readonly group: string;
  /** The AppMonitor's `metadata.generation` it was built from, when known. */
  readonly generation: number | undefined;
  /** The labels the PrometheusRule carries, which the Prometheus's `ruleSelector` must match. */
  readonly labels: Readonly<Record<string, string>>;
}

/** A lastError longer than this is cut: the condition's message stays readable, and Prometheus's errors say what matters first. */
const MAX_ERROR_LENGTH = 400;

/** `PrometheusRule ns/name (generation N)`. */
function ruleName(rule: AppliedRule): string {
  return `PrometheusRule ${rule.namespace}/${rule.name}${rule.generation === undefined ? "" : ` (generation ${rule.generation})`}`;
}

/** The generation Prometheus has loaded: the one its rules share; undefined when none carries one; `mixed` when they differ. */
function loadedGeneration(group: LoadedGroup): string | undefined {
  const seen = new Set(group.rules.map((r) => r.generation));
  if (seen.size === 1) return [...seen][0];
  return "mixed";
}

/**
 * Whether `loaded` is `rule`'s group as applied: present, and every rule at `rule.generation`
 * (a group whose rules carry no generation counts as loaded: it was written before rule-sync
 * recorded one, or by hand, and nothing says it is stale).
 */
export function isLoaded(rule: AppliedRule, loaded: LoadedGroup | undefined): boolean {
  if (loaded === undefined) return false;
  const generation = loadedGeneration(loaded);
  return generation === undefined || rule.generation === undefined || generation === String(rule.generation);
}

/**
 * RuleReady for an applied rule, from the group of that name Prometheus lists.
 *
 * | Prometheus lists | status | reason |
 * | --- | --- | --- |
 * | no group of that name | False | `RuleNotLoaded`: the message names the group, the URL and the selectors the rule's labels must match |
 * | the group at another generation | False | `RuleNotLoaded`, naming the generation loaded |
 * | the group at this generation, a rule with health `err` | False | `RuleEvaluationFailed`, with the rule and Prometheus's `lastError` |
 * | the group at this generation | True | `RuleLoaded` |
 *
 * The messages hold nothing that changes while the facts stay (no times, no values), so a
 * resync that finds the same writes nothing.
 *
 * @param rule the rule as applied.
 * @param loaded the group named `rule.group` in Prometheus's answer, or undefined.
 * @param prometheusUrl the URL asked, for the message.
 * @returns the condition.
 */
export function ruleReadyFromPrometheus(rule: AppliedRule, loaded: LoadedGroup | undefined, prometheusUrl: string): DesiredCondition {
  const name = ruleName(rule);
  const selectors =
    `prometheus-operator loads it once its Prometheus's ruleSelector matches the rule's labels (${Object.entries(rule.labels).map(([k, v]) => `${k}=${v}`).join(", ")}) ` +
    `and its ruleNamespaceSelector selects namespace ${rule.namespace}, usually within two minutes; checked again at the next resync`;
  if (loaded === undefined) {
    return { type: RULE_READY, status: "False", reason: REASONS.notLoaded, message: `${name} is applied, but Prometheus at ${prometheusUrl} has not loaded its rule group ${rule.group}: ${selectors}` };
  }
  if (!isLoaded(rule, loaded)) {
    const generation = loadedGeneration(loaded);
    const had = generation === "mixed" ? "rules of several generations" : `generation ${generation ?? "?"}`;
    return {
      type: RULE_READY,
      status: "False",
      reason: REASONS.notLoaded,
      message: `${name} is applied, but Prometheus at ${prometheusUrl} has ${had} of rule group ${rule.group} loaded, not this one yet; ${selectors}`,
    };
  }
  const failing = loaded.rules.find((r) => r.health === "err");
  if (failing !== undefined) {
    const error = (failing.lastError ?? "no error given").slice(0, MAX_ERROR_LENGTH);
    return {
      type: RULE_READY,
      status: "False",
      reason: REASONS.evaluationFailed,
      message: `${name} is loaded by Prometheus at ${prometheusUrl} as rule group ${rule.group}, but it fails to evaluate ${failing.name}: ${error}`,
    };
  }
  return { type: RULE_READY, status: "True", reason: REASONS.loaded, message: `${name} is loaded by Prometheus at ${prometheusUrl} as rule group ${rule.group}` };
}

/** Why Prometheus could not be asked: no `PROMETHEUS_URL`, no answer, or an answer that is not its API's. */
export type PrometheusUnavailable =
  | { readonly kind: "notConfigured" }
  | { readonly kind: "unreachable" | "apiError"; readonly url: string; readonly error: string };

/** The reason of either condition for `why`. */
export function unavailableReason(why: PrometheusUnavailable): string {
  return why.kind === "notConfigured" ? PROMETHEUS_REASONS.notConfigured : why.kind === "unreachable" ? PROMETHEUS_REASONS.unreachable : PROMETHEUS_REASONS.apiError;
}

/**
 * What Prometheus could not be asked, as the end of a message: "PROMETHEUS_URL is not set on
 * rule-sync" or "Prometheus at URL did not answer: …; check PROMETHEUS_URL …".
 */
export function unavailableText(why: PrometheusUnavailable): string {
  if (why.kind === "notConfigured") return "PROMETHEUS_URL is not set on rule-sync";
  const what = why.kind === "unreachable" ? "did not answer" : "answered something other than its HTTP API's success";
  return `Prometheus at ${why.url} ${what}: ${why.error}; check rule-sync's PROMETHEUS_URL (the Prometheus server's base URL, reachable from rule-sync)`;
}

/**
 * RuleReady for an applied rule when Prometheus cannot be asked: `Unknown`, never `True`.
 *
 * @param rule the rule as applied.
 * @param why what stopped the question.
 * @returns the condition; reason `PrometheusNotConfigured`, `PrometheusUnreachable` or `PrometheusAPIError`.
 */
export function ruleReadyUnknown(rule: AppliedRule, why: PrometheusUnavailable): DesiredCondition {
  return { type: RULE_READY, status: "Unknown", reason: unavailableReason(why), message: `${ruleName(rule)} is applied; whether Prometheus loaded it is not known: ${unavailableText(why)}` };
}
