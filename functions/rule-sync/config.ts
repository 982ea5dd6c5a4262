/**
 * rule-sync's configuration: defaults as named constants, the environment overrides them,
 * validated at start-up with a message that names the variable (DESIGN.md "Configuration
 * shared by the functions").
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `METRIC_SOURCE` | `cadvisor` | where the rule reads the memory limit: `cadvisor` or `kube-state-metrics` (see `rule.ts`; the rule configuration is `rule-config.ts`) |
 * | `RULE_LABELS` | none | labels put on every PrometheusRule, `key=value` pairs separated by commas, e.g. `release=prometheus`: the Prometheus `ruleSelector` must match them or the rules are silently never loaded |
 * | `ALERT_SEVERITY` | `warning` | the alert's `severity` label; not `info`, which kube-prometheus-stack's Alertmanager inhibits (`rule-config.ts`) |
 * | `FIELD_MANAGER` | `appmonitor-rule-sync` | server-side apply field manager of the rules and of the AppMonitor status |
 * | `WATCH_NAMESPACES` | all namespaces | comma-separated namespaces whose AppMonitors are served; events for others are skipped |
 * | `RESYNC_ON_START` | `true` | reconcile every AppMonitor in scope once at start-up |
 * | `KUBECONFIG` | in-cluster credentials | kubeconfig file(s), as `KubeConfig.loadFromDefault()` reads them |
 * | `KUBE_API_TIMEOUT_MS` | 10000 | per Kubernetes API request, headers and body (`DEFAULT_KUBE_API_TIMEOUT_MS` in functions/lib/kubeconfig.ts says why); past it, 503 |
 * | `PROMETHEUS_URL` | unset | the Prometheus that loads the rules, e.g. `http://prometheus-operated.monitoring.svc:9090`: asked whether it loaded each AppMonitor's group (RuleReady) and has the series of its expression (MetricsReady); unset: both conditions `Unknown` `PrometheusNotConfigured` |
 * | `PROMETHEUS_TIMEOUT_MS` | 2000 | per request to Prometheus, headers and body (1–60000); past it, Prometheus counts as unreachable |
 * | `ALERTMANAGER_URL` | unset | the Alertmanager the Prometheus sends to, e.g. `http://alertmanager-operated.monitoring.svc.cluster.local:9093`: asked, for each AppMonitor whose alert fires in Prometheus, whether it inhibits, silences, mutes it or routes it to no `appmonitor` receiver (a Warning Event, `delivery-check.ts`); needs `PROMETHEUS_URL`; unset: not asked |
 * | `ALERTMANAGER_TIMEOUT_MS` | 2000 | per request to Alertmanager, headers and body (1–60000) |
 * | `REQUIRE_SENDER_IDENTITY`, `SENDER_AUDIENCE`, `ALLOWED_SENDERS` | `false`, {@link SENDERS} | accept only events the Broker sends with its OIDC token (functions/lib/sender-identity.ts) |
 * | `RULE_LOAD_WAIT_MS` | 10000 | how long an event that wrote a rule waits for Prometheus to load it before it answers (0–60000; the Service's `timeoutSeconds` is 120); the instance keeps watching afterwards (`load-watcher.ts`) |
 */
import { DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS } from "../lib/kubeconfig.ts";
import { ConfigError, readEnum, readHttpUrl, readInteger, readString } from "../lib/runtime/env.ts";
import type { Env } from "../lib/runtime/types.ts";
import { readNamespaceScope, type NamespaceScope } from "../lib/namespace-scope.ts";
import { readSenderIdentity, type SenderDefaults, type SenderIdentityConfig } from "../lib/sender-identity.ts";
import { DEFAULT_METRIC_SOURCE, DEFAULT_SEVERITY, METRIC_SOURCES, validateRuleConfig, type RuleConfig } from "./rule-config.ts";
import { RuleInputError } from "./rule-input.ts";

/** Default server-side apply field manager. */
export const DEFAULT_FIELD_MANAGER = "appmonitor-rule-sync";
/** Default of `RESYNC_ON_START`. */
export const DEFAULT_RESYNC_ON_START = true;
/** Default of `PROMETHEUS_TIMEOUT_MS`: as memory-scaler's, a Prometheus slower than this is not one to wait for. */
export const DEFAULT_PROMETHEUS_TIMEOUT_MS = 2_000;
/** rule-sync's audience and the Triggers that deliver to it (knative/eventing/triggers.yaml), the senders it accepts by default. */
export const SENDERS: SenderDefaults = {
  audience: "appmonitor.kubedemo.com/rule-sync",
  triggers: ["rule-sync-appmonitor-add", "rule-sync-appmonitor-update", "rule-sync-appmonitor-delete", "rule-sync-resync-ping", "rule-sync-resync"],
};

/** Default of `ALERTMANAGER_TIMEOUT_MS`: as Prometheus's. */
export const DEFAULT_ALERTMANAGER_TIMEOUT_MS = 2_000;
/**
 * Default of `RULE_LOAD_WAIT_MS`: what a Prometheus reloading its rule files on its own (a plain
 * one, or the operator's with a short kubelet sync) needs; the operator's usual minute or two is
 * followed in the background instead, so no event is held that long.
 */
export const DEFAULT_RULE_LOAD_WAIT_MS = 10_000;

/** Where rule-sync asks whether its rules are loaded and their series exist. */
export interface PrometheusConfig {
  /** Base URL, e.g. `http://prometheus-operated.monitoring.svc:9090`. */
  readonly url: URL;
  /** Per request, headers and body, in ms. */
  readonly timeoutMs: number;
  /** How long an event that wrote a rule waits for its load, in ms (0: not at all). */
  readonly loadWaitMs: number;
}

/** Where rule-sync asks what became of an AppMonitor's firing alerts. */
export interface AlertmanagerConfig {
  /** Base URL, e.g. `http://alertmanager-operated.monitoring.svc.cluster.local:9093`. */
  readonly url: URL;
  /** Per request, headers and body, in ms. */
  readonly timeoutMs: number;
}

export { inScope, type NamespaceScope } from "../lib/namespace-scope.ts";

/** The validated configuration. */
export interface RuleSyncConfig {
  /** How rules are built (metric source, PrometheusRule labels, severity). */
  readonly rule: RuleConfig;
  /** Field manager of every server-side apply. */
  readonly fieldManager: string;
  readonly scope: NamespaceScope;
  readonly resyncOnStart: boolean;
  /** `KUBECONFIG` of this environment; undefined → in-cluster or `~/.kube/config`. */
  readonly kubeconfig: string | undefined;
  /** Per Kubernetes API request, headers and body, in ms. */
  readonly kubeApiTimeoutMs: number;
  /** `PROMETHEUS_URL` and its timings; undefined when unset (RuleReady and MetricsReady `Unknown`). */
  readonly prometheus: PrometheusConfig | undefined;
  /** `ALERTMANAGER_URL` and its timeout; undefined when unset (no delivery check). */
  readonly alertmanager: AlertmanagerConfig | undefined;
  /** The sender check (`REQUIRE_SENDER_IDENTITY=true`); undefined: every sender is taken. */
  readonly senderIdentity: SenderIdentityConfig | undefined;
}

/**
 * Reads the variables in the table above.
 * @throws ConfigError naming the variable: an unknown metric source; a `RULE_LABELS` entry that
 * is not `key=value`, repeats a key, or is not a valid Kubernetes label (or sets
 * `app.kubernetes.io/managed-by`, which rule-sync sets itself); a severity outside
 * `[A-Za-z0-9_.-]{1,63}`; a field manager longer than 128 characters or with non-printable
 * characters (https://kubernetes.io/docs/reference/using-api/server-side-apply/#managers); a
 * namespace that is not a DNS label; `RESYNC_ON_START` other than true/false; a
 * `KUBE_API_TIMEOUT_MS` that is not an integer in 100–60000; a `PROMETHEUS_URL` that is not an
 * http(s) URL; `PROMETHEUS_TIMEOUT_MS` or `RULE_LOAD_WAIT_MS` out of their ranges; the same of
 * `ALERTMANAGER_URL` and `ALERTMANAGER_TIMEOUT_MS`; `REQUIRE_SENDER_IDENTITY` or `ALLOWED_SENDERS` as
 * `readSenderIdentity` refuses them.
 */
export function readConfig(env: Env): RuleSyncConfig {
  const rule: RuleConfig = {
    metricSource: readEnum(env, "METRIC_SOURCE", METRIC_SOURCES, DEFAULT_METRIC_SOURCE),
    ruleLabels: readRuleLabels(env),
    severity: readString(env, "ALERT_SEVERITY") ?? DEFAULT_SEVERITY,
  };
  try {
    validateRuleConfig(rule);
  } catch (error) {
    if (!(error instanceof RuleInputError)) throw error;
    const variable = error.field === "severity" ? "ALERT_SEVERITY" : error.field === "metricSource" ? "METRIC_SOURCE" : "RULE_LABELS";
    throw new ConfigError(variable, error.message, { cause: error });
  }
  const fieldManager = readString(env, "FIELD_MANAGER") ?? DEFAULT_FIELD_MANAGER;
  // The API server refuses managers over 128 characters or with non-printable characters.
  if (fieldManager.length > 128 || !/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]+$/u.test(fieldManager)) {
    throw new ConfigError("FIELD_MANAGER", `must be 1-128 printable characters, got ${JSON.stringify(fieldManager)}`);
  }
  return {
    rule,
    fieldManager,
    scope: readNamespaceScope(env),
    resyncOnStart: readBoolean(env, "RESYNC_ON_START", DEFAULT_RESYNC_ON_START),
    kubeconfig: readString(env, "KUBECONFIG"),
    kubeApiTimeoutMs: readInteger(env, "KUBE_API_TIMEOUT_MS", DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS),
    prometheus: readPrometheus(env),
    alertmanager: readAlertmanager(env),
    senderIdentity: readSenderIdentity(env, SENDERS),
  };
}

function readPrometheus(env: Env): PrometheusConfig | undefined {
  const timeoutMs = readInteger(env, "PROMETHEUS_TIMEOUT_MS", DEFAULT_PROMETHEUS_TIMEOUT_MS, { min: 1, max: 60_000 });
  const loadWaitMs = readInteger(env, "RULE_LOAD_WAIT_MS", DEFAULT_RULE_LOAD_WAIT_MS, { min: 0, max: 60_000 });
  const url = readHttpUrl(env, "PROMETHEUS_URL");
  return url === undefined ? undefined : { url, timeoutMs, loadWaitMs };
}

function readAlertmanager(env: Env): AlertmanagerConfig | undefined {
  const timeoutMs = readInteger(env, "ALERTMANAGER_TIMEOUT_MS", DEFAULT_ALERTMANAGER_TIMEOUT_MS, { min: 1, max: 60_000 });
  const url = readHttpUrl(env, "ALERTMANAGER_URL");
  return url === undefined ? undefined : { url, timeoutMs };
}

/** `a=b,c=d` → `{ a: "b", c: "d" }`; spaces around entries are ignored, an empty value is allowed. */
function readRuleLabels(env: Env): Record<string, string> {
  const raw = readString(env, "RULE_LABELS");
  const labels: Record<string, string> = {};
  if (raw === undefined) return labels;
  for (const entry of raw.split(",").map((part) => part.trim())) {
    if (entry === "") continue;
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new ConfigError("RULE_LABELS", `entries must be key=value, got ${JSON.stringify(entry)}`);
    const key = entry.slice(0, eq).trim();
    if (Object.hasOwn(labels, key)) throw new ConfigError("RULE_LABELS", `key ${JSON.stringify(key)} is given twice`);
    labels[key] = entry.slice(eq + 1).trim();
  }
  return labels;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  if (raw === "true") return true;
  if (raw === "false") return false;
  throw new ConfigError(name, `must be true or false, got ${JSON.stringify(raw)}`);
}
