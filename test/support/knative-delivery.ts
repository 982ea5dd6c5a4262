/**
 * Knative's delivery of an event to a subscriber, as the pinned knative.dev/eventing (v0.50.0,
 * test/harness/bins/eventing) does it, for tests to hold the functions' answers and the shipped delivery
 * spec against. Pure.
 *
 * - What an answer leads to: `pkg/kncloudevents/event_dispatcher.go` (`isFailure`: anything
 *   outside 2xx failed) and `retries.go` (`SelectiveRetry`: a failure is retried when it is 5xx,
 *   404, 408, 409 or 429, or no answer came; any other, 3xx included, goes to the dead-letter
 *   sink at once).
 * - When the retries come: `retries.go` (`RetryConfigFromDeliverySpec`) with hashicorp's
 *   go-retryablehttp, which numbers the waits from 0: before retry n (1-based) an exponential
 *   policy waits `backoffDelay × 2^(n-1)`, a linear one `backoffDelay × (n-1)`. A `Retry-After`
 *   is honoured only with a delivery's `retryAfterMax` (and the `delivery-retryafter` feature).
 */

/** What Knative does with one answer of a subscriber. */
export type KnativeVerdict = "delivered" | "retried" | "dead-lettered";

/** Knative's `SelectiveRetry` for an answer with HTTP status `status`. */
export function knativeRetries(status: number): boolean {
  return status >= 500 || status === 404 || status === 408 || status === 409 || status === 429;
}

/** What Knative does with a subscriber's answer `status` (while retries remain). */
export function knativeVerdict(status: number): KnativeVerdict {
  if (status >= 200 && status < 300) return "delivered";
  return knativeRetries(status) ? "retried" : "dead-lettered";
}

/** The retry part of a delivery spec (`eventing.knative.dev/v1` Broker or Trigger `spec.delivery`). */
export interface DeliverySpec {
  readonly retry?: number;
  readonly backoffPolicy?: "exponential" | "linear";
  /** ISO 8601 duration, e.g. `PT1S`, `PT0.5S`, `PT2M`. */
  readonly backoffDelay?: string;
}

/**
 * An ISO 8601 duration of hours, minutes and seconds (`PT1H2M3.5S`), in seconds.
 * @throws Error for anything else (days, months and years are not used by our specs).
 */
export function durationSeconds(iso: string): number {
  const match = /^PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(iso);
  if (match === null || iso === "PT") throw new Error(`not an ISO 8601 duration of hours, minutes and seconds: ${iso}`);
  const [, h = "0", m = "0", s = "0"] = match;
  return Number(h) * 3600 + Number(m) * 60 + Number(s);
}

/** The waits, in seconds, before each of the spec's retries (none without a policy and a delay: Knative retries at once). */
export function backoffSeconds(spec: DeliverySpec): number[] {
  const retries = spec.retry ?? 0;
  const delay = spec.backoffDelay === undefined ? 0 : durationSeconds(spec.backoffDelay);
  return Array.from({ length: retries }, (_, i) => {
    if (spec.backoffPolicy === "exponential") return delay * 2 ** i;
    if (spec.backoffPolicy === "linear") return delay * i;
    return 0;
  });
}
