/**
 * The webhook endpoint: `POST /` with an Alertmanager webhook payload (version 4).
 *
 * | status | when |
 * | --- | --- |
 * | 200 `{ received, emitted, dropped: [{ index, fingerprint, reason }], refused: [{ id, fingerprint, status, error }], truncatedAlerts }` | every event delivered, or refused by the sink with a permanent 4xx (`isTransientStatus` in sink.ts), or nothing to deliver: a refusal is logged and counted, never retried, and not Alertmanager's to re-send |
 * | 401 (`WWW-Authenticate`) | missing or wrong credentials; nothing emitted |
 * | 404 / 405 (`Allow: POST`) | another path / method |
 * | 413 | body over 1 MiB (the runtime, before authentication; `limits.ts`: with the suggested `max_alerts` a payload stays under half of it) |
 * | 415 | content type is not `application/json` |
 * | 400 `{ error, details? }` | malformed JSON, no or another payload version, schema errors |
 * | 502 `{ error, details: { delivered, refused, failed: [{ id, fingerprint, error, attempts }] } }` | an event could not be delivered after retries (a transient failure, whatever happened to the others): Alertmanager retries the whole payload (webhook receivers treat 5xx as recoverable, https://prometheus.io/docs/alerting/latest/configuration/#webhook_config), and deterministic ids make the re-sent events harmless duplicates |
 * | 504 `{ error, details }` (as 502) | the webhook's deadline (`WEBHOOK_DEADLINE_MS`, 6 s) passed with events not delivered: those in flight were stopped, those not yet sent were not (`attempts: 0`); Alertmanager retries, as for a 502 |
 * | 503 | the sender closed the connection before the answer (Alertmanager at its notification timeout): delivery stops, and nobody reads this answer; the runtime logs and counts the request as aborted |
 *
 * The deadline runs from when the payload has been read; `DELIVERY_TIMEOUT_MS` bounds each
 * request to the sink within it, its answer's body included (sink.ts).
 */
import type { Logger } from "pino";
import { HttpError } from "../lib/runtime/errors.ts";
import type { FunctionContext, FunctionRequest, FunctionResponse } from "../lib/runtime/types.ts";
import type { RetryPolicy } from "../lib/retry.ts";
import type { Authenticator } from "./auth.ts";
import { deliverAll } from "./deliver.ts";
import type { DeliveryHooks, DeliveryReport } from "./deliver.ts";
import { LARGE_PAYLOAD_BYTES, WEBHOOK_BODY_LIMIT_BYTES } from "./limits.ts";
import { mapWebhook } from "./mapping.ts";
import type { AlertReceiverMetrics } from "./metrics.ts";
import type { Send } from "./sink.ts";
import { readWebhook } from "./webhook.ts";

/** What the handler needs; all adapters, so tests can substitute them. */
export interface HandlerDeps {
  readonly authenticate: Authenticator;
  /** `WWW-Authenticate` value for 401s. */
  readonly challenge: string;
  readonly send: Send;
  readonly retryPolicy: RetryPolicy;
  readonly concurrency: number;
  /** The whole webhook's deadline, in ms, from when its payload has been read. */
  readonly deadlineMs: number;
  readonly metrics: AlertReceiverMetrics;
}

/** Builds `handle` for the runtime (an HTTP function). */
export function createHandler(deps: HandlerDeps): (context: FunctionContext, request: FunctionRequest) => Promise<FunctionResponse> {
  const { metrics } = deps;
  return async (context, request) => {
    if (request.path !== "/") throw new HttpError(404, `not found: ${request.path.slice(0, 100)}; webhooks are POSTed to /`);
    if (request.method !== "POST") throw new HttpError(405, `method ${request.method} not allowed`, { headers: { allow: "POST" } });
    if (!deps.authenticate(request.headers.authorization)) {
      metrics.webhooks.inc({ outcome: "unauthorized" });
      throw new HttpError(401, "missing or wrong credentials", { headers: { "www-authenticate": deps.challenge } });
    }
    let payload;
    try {
      payload = readWebhook(request);
    } catch (error) {
      metrics.webhooks.inc({ outcome: "invalid" });
      throw error;
    }

    const truncatedAlerts = payload.truncatedAlerts ?? 0;
    metrics.payloadBytes.observe(request.body.length);
    if (request.body.length >= LARGE_PAYLOAD_BYTES) {
      context.log.warn(
        {
          bytes: request.body.length,
          limitBytes: WEBHOOK_BODY_LIMIT_BYTES,
          alerts: payload.alerts.length,
          bytesPerAlert: Math.round(request.body.length / Math.max(1, payload.alerts.length)),
          truncatedAlerts,
          receiver: payload.receiver,
          groupKey: payload.groupKey,
        },
        "webhook payload near the body limit: above it the runtime answers 413, which Alertmanager does not retry, and the whole notification is lost; lower max_alerts",
      );
    }
    metrics.alertsReceived.inc(payload.alerts.length);
    if (truncatedAlerts > 0) {
      metrics.alertsTruncated.inc(truncatedAlerts);
      context.log.warn({ truncatedAlerts, groupKey: payload.groupKey }, "Alertmanager left alerts out of this payload (max_alerts)");
    }
    const { events, dropped } = mapWebhook(payload);
    for (const alert of dropped) metrics.alertsDropped.inc({ reason: alert.reason });
    if (dropped.length > 0) context.log.info({ dropped }, "alerts without a usable namespace/pod or time: no event");

    const { delivered, refused, failed, stopped } = await deliverWithin(deps, context, events, hooks(context.log, metrics));
    if (stopped === "sender gone") {
      metrics.webhooks.inc({ outcome: "aborted" });
      throw new HttpError(503, `the sender closed the connection before the answer: delivery stopped with ${delivered} of ${events.length} events delivered`, {
        details: { delivered, refused, failed },
      });
    }
    if (failed.length > 0 && stopped === "deadline") {
      metrics.webhooks.inc({ outcome: "deadline" });
      throw new HttpError(504, `could not deliver ${failed.length} of ${events.length} events within the webhook deadline of ${deps.deadlineMs} ms`, {
        details: { delivered, refused, failed },
      });
    }
    if (failed.length > 0) {
      metrics.webhooks.inc({ outcome: "undelivered" });
      throw new HttpError(502, `could not deliver ${failed.length} of ${events.length} events to the sink`, {
        details: { delivered, refused, failed },
      });
    }
    metrics.webhooks.inc({ outcome: "accepted" });
    const summary = { received: payload.alerts.length, emitted: delivered, dropped, refused, truncatedAlerts };
    context.log.info({ received: summary.received, emitted: delivered, dropped: dropped.length, refused: refused.length, groupKey: payload.groupKey }, "webhook handled");
    return { status: 200, body: summary };
  };
}

/**
 * {@link deliverAll} within the webhook's deadline, stopped early if the sender goes away;
 * `stopped` says which of the two ended it, if either did.
 */
async function deliverWithin(
  deps: HandlerDeps,
  context: FunctionContext,
  events: Parameters<typeof deliverAll>[0],
  deliveryHooks: DeliveryHooks,
): Promise<DeliveryReport & { stopped: "deadline" | "sender gone" | undefined }> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new Error(`the webhook deadline of ${deps.deadlineMs} ms passed`)), deps.deadlineMs);
  const onGone = (): void => stop.abort(context.signal.reason);
  if (context.signal.aborted) onGone();
  else context.signal.addEventListener("abort", onGone, { once: true });
  try {
    const report = await deliverAll(events, deps.send, deps.retryPolicy, deps.concurrency, deliveryHooks, stop.signal);
    const stopped = context.signal.aborted ? "sender gone" : stop.signal.aborted ? "deadline" : undefined;
    return { ...report, stopped };
  } finally {
    clearTimeout(timer);
    context.signal.removeEventListener("abort", onGone);
  }
}

function hooks(log: Logger, metrics: AlertReceiverMetrics): DeliveryHooks {
  return {
    onRetry: (event, error, attempt, delayMs) => {
      metrics.deliveryRetries.inc();
      log.warn({ eventId: event.id, attempt, delayMs: Math.round(delayMs), err: error }, "sink delivery failed, retrying");
    },
    onDelivered: (event) => metrics.eventsEmitted.inc({ type: event.type }),
    onRefused: (event, error) => {
      metrics.eventsRefused.inc({ status: String(error.status) });
      log.error(
        { eventId: event.id, subject: event.subject, fingerprint: event.data.fingerprint, status: error.status, err: error },
        "sink refused the event: not retried, and answered 2xx to Alertmanager, which could only send it again",
      );
    },
    onFailed: (event, error, attempts) => {
      metrics.deliveryFailures.inc();
      // One never sent (the deadline came first) is in the webhook's own 504 line, with the others.
      if (attempts > 0) log.error({ eventId: event.id, attempts, err: error }, "sink delivery failed");
    },
  };
}
