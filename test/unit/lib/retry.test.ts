/** Bounded exponential backoff (functions/lib/retry.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoffDelay, retry } from "../../../functions/lib/retry.ts";

const policy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 300 };

describe("backoffDelay", () => {
  const cases: [attempt: number, random: number, expected: number][] = [
    [1, 0, 50],
    [1, 1, 100],
    [2, 0, 100],
    [2, 1, 200],
    [3, 0.5, 225],
    [10, 1, 300],
  ];
  for (const [attempt, random, expected] of cases) {
    it(`attempt ${attempt}, random ${random} → ${expected} ms`, () => assert.equal(backoffDelay(policy, attempt, () => random), expected));
  }
});

describe("retry", () => {
  const fast = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 };
  const transient = (error: unknown): boolean => error instanceof Error && error.message === "transient";

  it("retries transient failures and returns the first success", async () => {
    const attempts: number[] = [];
    const result = await retry(
      async (attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw new Error("transient");
        return "ok";
      },
      fast,
      transient,
    );
    assert.equal(result, "ok");
    assert.deepEqual(attempts, [1, 2, 3]);
  });

  it("gives up after maxAttempts with the last error", async () => {
    let calls = 0;
    const retries: number[] = [];
    await assert.rejects(
      retry(
        async () => {
          calls += 1;
          throw new Error("transient");
        },
        fast,
        transient,
        (_error, attempt) => retries.push(attempt),
      ),
      /transient/,
    );
    assert.equal(calls, 3);
    assert.deepEqual(retries, [1, 2]);
  });

  it("does not retry a permanent failure", async () => {
    let calls = 0;
    await assert.rejects(
      retry(
        async () => {
          calls += 1;
          throw new Error("permanent");
        },
        fast,
        transient,
      ),
      /permanent/,
    );
    assert.equal(calls, 1);
  });

  it("starts no try once the signal is aborted, and a backoff it cuts short ends the loop with the last error", async () => {
    const slow = { maxAttempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 };
    const stop = new AbortController();
    let calls = 0;
    const running = retry(
      async () => {
        calls += 1;
        throw new Error("transient");
      },
      slow,
      transient,
      () => setImmediate(() => stop.abort()),
      stop.signal,
    );
    await assert.rejects(running, /transient/);
    assert.equal(calls, 1, "the backoff of a minute was cut short, and nothing tried after it");

    let after = 0;
    await assert.rejects(retry(async () => { after += 1; throw new Error("transient"); }, fast, transient, undefined, stop.signal), /transient/);
    assert.equal(after, 1, "an aborted signal: the first try's failure is the answer");
  });
});
