/**
 * alert-receiver's Prometheus metrics, registered in the runtime's registry (served at
 * `/metrics` with `function="alert-receiver"`).
 */
import { Counter, Histogram } from "prom-client";
import { WEBHOOK_BODY_LIMIT_BYTES } from "./limits.ts";
import type { Registry } from "prom-client";

/** The function's counters. */
export interface AlertReceiverMetrics {
  /**
   * Webhook requests by outcome: accepted, unauthorized, invalid, undelivered (502), deadline
   * (504: the webhook's deadline passed with events not delivered), aborted (the sender closed
   * the connection before the answer).
   */
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
  /**
   * Events the sink refused with a permanent 4xx, by status: not retried, answered 2xx to
   * Alertmanager. A payload re-sent for another event's failure counts its refusals again.
   */
  readonly eventsRefused: Counter<"status">;
  /** Size of each valid webhook payload, in bytes: how close max_alerts brings payloads to the body limit. */
  readonly payloadBytes: Histogram;
}

/** Creates the counters in `registry`. */
export function createMetrics(registry: Registry): AlertReceiverMetrics {
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
    new Counter<L>({ name: `appmonitor_alert_receiver_${name}`, help, labelNames, registers: [registry] });
  return {
    webhooks: counter("webhooks_total", "Webhook requests, by outcome (accepted, unauthorized, invalid, undelivered, deadline, aborted).", ["outcome"]),
    alertsReceived: counter("alerts_received_total", "Alerts in accepted webhook payloads."),
    eventsEmitted: counter("events_emitted_total", "CloudEvents delivered to the sink, by type.", ["type"]),
    alertsDropped: counter("alerts_dropped_total", "Alerts that gave no event, by reason.", ["reason"]),
    alertsTruncated: counter("alerts_truncated_total", "Alerts Alertmanager left out of payloads (truncatedAlerts, max_alerts)."),
    deliveryRetries: counter("delivery_retries_total", "Retries after a transient sink failure."),
    deliveryFailures: counter("delivery_failures_total", "Events not delivered after all tries."),
    payloadBytes: new Histogram({
      name: "appmonitor_alert_receiver_webhook_payload_bytes",
      help: "Size of valid webhook payloads, in bytes; the body limit is the last bucket.",
      buckets: [4, 16, 64, 256, 512, 768].map((kib) => kib * 1024).concat(WEBHOOK_BODY_LIMIT_BYTES),
      registers: [registry],
    }),
    eventsRefused: counter("events_refused_total", "Events the sink refused with a permanent 4xx (not retried, not re-sent), by status.", ["status"]),
  };
}
