/**
 * alert-receiver's Prometheus metrics, registered in the runtime's registry (served at
 * `/metrics` with `function="alert-receiver"`).
 */
import { Counter } from "prom-client";
import type { Registry } from "prom-client";

/** The function's counters. */
export interface AlertReceiverMetrics {
  /** Webhook requests by outcome: accepted, unauthorized, invalid, undelivered. */
  readonly webhooks: Counter<"outcome">;
  /** Alerts in accepted payloads. */
  readonly alertsReceived: Counter;
  /** Events delivered to the sink, by CloudEvent type. */
  readonly eventsEmitted: Counter<"type">;
  /** Alerts that gave no event, by reason (no-namespace-or-pod, invalid-namespace-or-pod, invalid-time). */
  readonly alertsDropped: Counter<"reason">;
  /** Sum of `truncatedAlerts`: alerts Alertmanager left out because of max_alerts. */
  readonly alertsTruncated: Counter;
  /** Retries of a transient sink failure. */
  readonly deliveryRetries: Counter;
  /** Events not delivered after all tries. */
  readonly deliveryFailures: Counter;
}

/** Creates the counters in `registry`. */
export function createMetrics(registry: Registry): AlertReceiverMetrics {
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
    new Counter<L>({ name: `appmonitor_alert_receiver_${name}`, help, labelNames, registers: [registry] });
  return {
    webhooks: counter("webhooks_total", "Webhook requests, by outcome (accepted, unauthorized, invalid, undelivered).", ["outcome"]),
    alertsReceived: counter("alerts_received_total", "Alerts in accepted webhook payloads."),
    eventsEmitted: counter("events_emitted_total", "CloudEvents delivered to the sink, by type.", ["type"]),
    alertsDropped: counter("alerts_dropped_total", "Alerts that gave no event, by reason.", ["reason"]),
    alertsTruncated: counter("alerts_truncated_total", "Alerts Alertmanager left out of payloads (truncatedAlerts, max_alerts)."),
    deliveryRetries: counter("delivery_retries_total", "Retries after a transient sink failure."),
    deliveryFailures: counter("delivery_failures_total", "Events not delivered after all tries."),
  };
}
