/**
 * rule-sync's Prometheus metrics, registered in the runtime's registry (served at `/metrics`
 * with `function="rule-sync"`).
 */
import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";

/** The function's metrics. */
export interface RuleSyncMetrics {
  /** Events by type (`add`, `update`, `delete`, `resync`; `unknown` for a refused event) and outcome (`handled`, `skipped`, `invalid`, `failed`). */
  readonly events: Counter<"type" | "outcome">;
  /** Writes to PrometheusRules by result: `created`, `updated`, `unchanged`, `deleted`, `rejected`. */
  readonly ruleWrites: Counter<"result">;
  /** Resyncs by trigger (`startup`, `event`) and outcome (`ok`, `failed`). */
  readonly resyncs: Counter<"trigger" | "outcome">;
  /** AppMonitors in scope at the last complete resync, by RuleReady reason (`RuleLoaded`, `RuleNotLoaded`, `InvalidSpec`, …). */
  readonly appMonitors: Gauge<"reason">;
  /** AppMonitors in scope at the last complete resync, by MetricsReady reason (`SeriesFound`, `LimitNotScraped`, …). */
  readonly metricsReady: Gauge<"reason">;
  /** Requests to Prometheus by endpoint (`rules`, `query`) and result (`ok`, `unreachable`, `apiError`). */
  readonly prometheusRequests: Counter<"endpoint" | "result">;
  /** Requests to Alertmanager (`ALERTMANAGER_URL`) by result (`ok`, `unreachable`, `apiError`). */
  readonly alertmanagerRequests: Counter<"result">;
  /** Warning Events written for firing alerts Alertmanager does not deliver, by reason (`AlertInhibited`, `AlertSilenced`, `AlertMuted`, `AlertNotRouted`). */
  readonly undeliveredAlerts: Counter<"reason">;
  /** Unix time of the last resync that completed without a failure, in seconds. */
  readonly lastResync: Gauge;
}

/** Creates the metrics in `registry`. */
export function createMetrics(registry: Registry): RuleSyncMetrics {
  const prefix = "appmonitor_rule_sync_";
  return {
    events: new Counter({
      name: `${prefix}events_total`,
      help: "CloudEvents handled, by type (add, update, delete, resync, unknown) and outcome (handled, skipped, invalid, failed).",
      labelNames: ["type", "outcome"] as const,
      registers: [registry],
    }),
    ruleWrites: new Counter({
      name: `${prefix}rule_writes_total`,
      help: "PrometheusRule writes, by result (created, updated, unchanged, deleted, rejected).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    resyncs: new Counter({
      name: `${prefix}resyncs_total`,
      help: "Reconciles of every AppMonitor in scope, by trigger (startup, event) and outcome (ok, failed).",
      labelNames: ["trigger", "outcome"] as const,
      registers: [registry],
    }),
    appMonitors: new Gauge({
      name: `${prefix}appmonitors`,
      help: "AppMonitors in scope at the last complete resync, by RuleReady reason.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    metricsReady: new Gauge({
      name: `${prefix}appmonitors_metrics`,
      help: "AppMonitors in scope at the last complete resync, by MetricsReady reason.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    prometheusRequests: new Counter({
      name: `${prefix}prometheus_requests_total`,
      help: "Requests to Prometheus (PROMETHEUS_URL), by endpoint (rules, query) and result (ok, unreachable, apiError).",
      labelNames: ["endpoint", "result"] as const,
      registers: [registry],
    }),
    alertmanagerRequests: new Counter({
      name: `${prefix}alertmanager_requests_total`,
      help: "Requests to Alertmanager (ALERTMANAGER_URL), by result (ok, unreachable, apiError).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    undeliveredAlerts: new Counter({
      name: `${prefix}undelivered_alerts_total`,
      help: "Warning Events written for firing alerts Alertmanager inhibits, silences, mutes or routes to no appmonitor receiver, by reason.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    lastResync: new Gauge({
      name: `${prefix}last_resync_timestamp_seconds`,
      help: "Unix time of the last resync that completed without a failure, in seconds.",
      registers: [registry],
    }),
  };
}
