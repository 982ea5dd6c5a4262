/**
 * Bounded exponential backoff with jitter for transient failures (AWS Architecture Blog,
 * "Exponential Backoff And Jitter", https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
 */
import { setTimeout as sleep } from "node:timers/promises";

/** How often and how patiently to retry. */
export interface RetryPolicy {
  /** Total tries, including the first; ≥ 1. */
  readonly maxAttempts: number;
  /** Backoff before the 2nd try, in ms; doubled per further try. */
  readonly baseDelayMs: number;
  /** Cap of one backoff, in ms. */
  readonly maxDelayMs: number;
}

/**
 * Backoff before try `attempt + 1` (attempt ≥ 1), in ms: "equal jitter" — half of
 * `min(max, base × 2^(attempt-1))` plus a random part of the other half, so retries of many
 * callers spread out without ever collapsing to zero.
 */
export function backoffDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return ceiling / 2 + random() * (ceiling / 2);
}

/**
 * Runs `operation` until it resolves, it throws an error `isTransient` rejects, or
 * `maxAttempts` tries failed; `onRetry` is told about each retry before the backoff. With
 * `signal`, no try starts once it is aborted: a backoff it cuts short ends the loop.
 * @throws the last error of `operation` (also when `signal` ended the loop).
 */
export async function retry<T>(
  operation: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  isTransient: (error: unknown) => boolean,
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void,
  signal?: AbortSignal,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (attempt >= policy.maxAttempts || !isTransient(error) || signal?.aborted === true) throw error;
      const delayMs = backoffDelay(policy, attempt);
      onRetry?.(error, attempt, delayMs);
      const slept = await sleep(delayMs, true, signal === undefined ? undefined : { signal }).catch(() => false);
      if (!slept) throw error;
    }
  }
}
