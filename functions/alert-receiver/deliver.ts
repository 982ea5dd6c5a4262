/**
 * Delivering all events of one payload: a bounded number in flight, each retried with
 * bounded exponential backoff while its failure is transient. Reports what the sink refused and
 * what could not be delivered instead of throwing, so the caller can answer 2xx for a refusal
 * (no retry can change it) and 5xx for a failure (Alertmanager re-sends the payload).
 */
import { retry } from "../lib/retry.ts";
import type { RetryPolicy } from "../lib/retry.ts";
import { forEachLimit } from "../lib/worker-pool.ts";
import type { AlertEventAttributes } from "./mapping.ts";
import { DeliveryError } from "./sink.ts";
import type { Send } from "./sink.ts";

/** An event that was not delivered, and the last error. */
export interface FailedDelivery {
  readonly id: string;
  readonly fingerprint: string;
  readonly error: string;
}

/** An event the sink refused with a permanent 4xx (`isTransientStatus` in sink.ts): sent once, never again. */
export interface RefusedDelivery extends FailedDelivery {
  /** The sink's answer, a 4xx. */
  readonly status: number;
}

/** What became of a payload's events. */
export interface DeliveryReport {
  /** How many the sink accepted. */
  readonly delivered: number;
  /** Refused by the sink: a re-send would be refused again. */
  readonly refused: RefusedDelivery[];
  /** Not delivered after every try (transient failures), or not sendable at all. */
  readonly failed: FailedDelivery[];
}

/** Hooks for metrics and logs. */
export interface DeliveryHooks {
  onRetry?(event: AlertEventAttributes, error: unknown, attempt: number, delayMs: number): void;
  onDelivered?(event: AlertEventAttributes): void;
  onRefused?(event: AlertEventAttributes, error: DeliveryError & { status: number }): void;
  onFailed?(event: AlertEventAttributes, error: unknown): void;
}

/**
 * Sends every event, at most `concurrency` at once. A transient {@link DeliveryError} is
 * retried per `policy`; a permanent one (the sink refused the event) is not, and is reported in
 * `refused`. Errors that are not a DeliveryError (e.g. an invalid event) are not retried and
 * count as failures.
 */
export async function deliverAll(
  events: readonly AlertEventAttributes[],
  send: Send,
  policy: RetryPolicy,
  concurrency: number,
  hooks: DeliveryHooks = {},
): Promise<DeliveryReport> {
  const refused: RefusedDelivery[] = [];
  const failed: FailedDelivery[] = [];
  let delivered = 0;
  await forEachLimit(events, concurrency, async (event) => {
    try {
      await retry(
        () => send(event),
        policy,
        (error) => error instanceof DeliveryError && error.transient,
        (error, attempt, delayMs) => hooks.onRetry?.(event, error, attempt, delayMs),
      );
      delivered += 1;
      hooks.onDelivered?.(event);
    } catch (error) {
      const entry = { id: event.id, fingerprint: event.data.fingerprint, error: error instanceof Error ? error.message : String(error) };
      if (isRefusal(error)) {
        hooks.onRefused?.(event, error);
        refused.push({ ...entry, status: error.status });
      } else {
        hooks.onFailed?.(event, error);
        failed.push(entry);
      }
    }
  });
  return { delivered, refused, failed };
}

/** A sink's permanent answer to this event. */
function isRefusal(error: unknown): error is DeliveryError & { status: number } {
  return error instanceof DeliveryError && !error.transient && error.status !== undefined;
}
