/** Polling for a condition that another process makes true. */
import { setTimeout as sleep } from "node:timers/promises";

/** Options of {@link waitUntil}. */
export interface WaitOptions {
  /** Give up after this many ms (default 15 000). */
  readonly timeoutMs?: number;
  /** Poll every this many ms (default 50). */
  readonly intervalMs?: number;
}

/**
 * Calls `check` until it returns a value other than `undefined`/`false`, and returns it. A
 * throwing check counts as not yet.
 * @throws Error "timed out after N ms waiting for <what>" (with the last error, if any, as cause).
 */
export async function waitUntil<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, options: WaitOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, lastError === undefined ? undefined : { cause: lastError });
    }
    await sleep(intervalMs);
  }
}
