/**
 * Delivering all events of one payload: a bounded number in flight, each retried with
 * bounded exponential backoff while its failure is transient, all of it stopped by a signal (the
 * webhook's deadline). Reports what the sink refused and what could not be delivered instead of
 * throwing, so the caller can answer 2xx for a refusal (no retry can change it) and 5xx for a
 * failure (Alertmanager re-sends the payload).
 */
import { retry } from "../lib/retry.ts";
import type { RetryPolicy } from "../lib/retry.ts";
import { forEachLimit } from "../lib/worker-pool.ts";
import type { AlertEventAttributes } from "./mapping.ts";
import { DeliveryError, reasonOf } from "./sink.ts";
import type { Send } from "./sink.ts";

/** An event that was not delivered, and why. */
export interface UndeliveredEvent {
  readonly id: string;
  readonly fingerprint: string;
  /** The last error's message. */
  readonly error: string;
}

/** An event not delivered after every try (transient failures), or not sendable at all, or stopped by the signal. */
export interface FailedDelivery extends UndeliveredEvent {
  /** Tries made: 0 when the signal had aborted before its turn came (never sent). */
  readonly attempts: number;
}

/** An event the sink refused with a permanent 4xx (`isTransientStatus` in sink.ts): sent once, never again. */
export interface RefusedDelivery extends UndeliveredEvent {
  /** The sink's answer, a 4xx. */
  readonly status: number;
}

/** What became of a payload's events. */
export interface DeliveryReport {
  /** How many the sink accepted. */
  readonly delivered: number;
  /** Refused by the sink: a re-send would be refused again. */
  readonly refused: RefusedDelivery[];
  /** Not delivered: after every try, not sendable at all, or stopped (or never sent) by the signal. */
  readonly failed: FailedDelivery[];
}

/** Hooks for metrics and logs. */
export interface DeliveryHooks {
  onRetry?(event: AlertEventAttributes, error: unknown, attempt: number, delayMs: number): void;
  onDelivered?(event: AlertEventAttributes): void;
  onRefused?(event: AlertEventAttributes, error: DeliveryError & { status: number }): void;
  /** `attempts` 0: never sent, the signal having aborted first. */
  onFailed?(event: AlertEventAttributes, error: unknown, attempts: number): void;
}

/**
 * Sends every event, at most `concurrency` at once. A transient {@link DeliveryError} is
 * retried per `policy`; a permanent one (the sink refused the event) is not, and is reported in
 * `refused`. Errors that are not a DeliveryError (e.g. an invalid event) are not retried and
 * count as failures.
 *
 * `signal` (the webhook's deadline, or its sender gone) ends the delivery early: requests in
 * flight are stopped, no retry follows, and events not yet sent are not sent; all of those are
 * in `failed`, those never sent with `attempts: 0` and the signal's reason as their error.
 * Resolves once every event is accounted for; never rejects.
 */
export async function deliverAll(
  events: readonly AlertEventAttributes[],
  send: Send,
  policy: RetryPolicy,
  concurrency: number,
  hooks: DeliveryHooks = {},
  signal?: AbortSignal,
): Promise<DeliveryReport> {
  const refused: RefusedDelivery[] = [];
  const failed: FailedDelivery[] = [];
  let delivered = 0;
  await forEachLimit(events, concurrency, async (event) => {
    let attempts = 0;
    try {
      if (signal?.aborted === true) throw new DeliveryError(`not sent: ${reasonOf(signal)}`, { transient: true, cause: signal.reason });
      await retry(
        (attempt) => {
          attempts = attempt;
          return send(event, signal);
        },
        policy,
        (error) => error instanceof DeliveryError && error.transient,
        (error, attempt, delayMs) => hooks.onRetry?.(event, error, attempt, delayMs),
        signal,
      );
      delivered += 1;
      hooks.onDelivered?.(event);
    } catch (error) {
      const entry = { id: event.id, fingerprint: event.data.fingerprint, error: error instanceof Error ? error.message : String(error) };
      if (isRefusal(error)) {
        hooks.onRefused?.(event, error);
        refused.push({ ...entry, status: error.status });
      } else {
        hooks.onFailed?.(event, error, attempts);
        failed.push({ ...entry, attempts });
      }
    }
  });
  return { delivered, refused, failed };
}

/** A sink's permanent answer to this event. */
function isRefusal(error: unknown): error is DeliveryError & { status: number } {
  return error instanceof DeliveryError && !error.transient && error.status !== undefined;
}
