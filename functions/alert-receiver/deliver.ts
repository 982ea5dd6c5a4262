/**
 * Delivering all events of one payload: a bounded number in flight, each retried with
 * bounded exponential backoff while its failure is transient. Reports what could not be
 * delivered instead of throwing, so the caller can answer 5xx and let Alertmanager re-send.
 */
import { retry } from "../lib/retry.ts";
import type { RetryPolicy } from "../lib/retry.ts";
import type { AlertEventAttributes } from "./mapping.ts";
import { DeliveryError } from "./sink.ts";
import type { Send } from "./sink.ts";

/** An event that was not delivered, and the last error. */
export interface FailedDelivery {
  readonly id: string;
  readonly fingerprint: string;
  readonly error: string;
}

/** Hooks for metrics and logs. */
export interface DeliveryHooks {
  onRetry?(event: AlertEventAttributes, error: unknown, attempt: number, delayMs: number): void;
  onDelivered?(event: AlertEventAttributes): void;
  onFailed?(event: AlertEventAttributes, error: unknown): void;
}

/**
 * Sends every event, at most `concurrency` at once; resolves with the failures (empty when
 * all were delivered). Errors that are not a {@link DeliveryError} (e.g. an invalid event)
 * are not retried and count as failures.
 */
export async function deliverAll(
  events: readonly AlertEventAttributes[],
  send: Send,
  policy: RetryPolicy,
  concurrency: number,
  hooks: DeliveryHooks = {},
): Promise<FailedDelivery[]> {
  const failed: FailedDelivery[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let index = next++; index < events.length; index = next++) {
      const event = events[index];
      if (event === undefined) continue;
      try {
        await retry(
          () => send(event),
          policy,
          (error) => error instanceof DeliveryError && error.transient,
          (error, attempt, delayMs) => hooks.onRetry?.(event, error, attempt, delayMs),
        );
        hooks.onDelivered?.(event);
      } catch (error) {
        hooks.onFailed?.(event, error);
        failed.push({ id: event.id, fingerprint: event.data.fingerprint, error: error instanceof Error ? error.message : String(error) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, events.length) }, worker));
  return failed;
}
