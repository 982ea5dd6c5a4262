/**
 * alert-receiver's delivery to the sink (functions/alert-receiver/sink.ts, deliver.ts): which
 * answers are retried, which are the sink refusing the event, and what a payload's report says.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deliverAll } from "../../../functions/alert-receiver/deliver.ts";
import { mapWebhook } from "../../../functions/alert-receiver/mapping.ts";
import type { AlertEventAttributes } from "../../../functions/alert-receiver/mapping.ts";
import { DeliveryError, isTransientStatus } from "../../../functions/alert-receiver/sink.ts";

describe("isTransientStatus", () => {
  const cases: [number, boolean, string][] = [
    [400, false, "malformed event"],
    [401, false, "credentials"],
    [403, false, "forbidden"],
    [404, true, "a Broker not ready yet"],
    [405, false, "method"],
    [408, true, "request timeout"],
    [409, true, "conflict"],
    [410, false, "gone"],
    [413, false, "event too large"],
    [415, false, "content type"],
    [422, false, "unprocessable"],
    [429, true, "throttled"],
    [500, true, "server error"],
    [502, true, "bad gateway"],
    [503, true, "unavailable"],
    [504, true, "gateway timeout"],
    [301, true, "a redirect: K_SINK is wrong, not the event"],
    [307, true, "a redirect"],
  ];
  for (const [status, transient, why] of cases) {
    it(`${status} (${why}) → ${transient ? "retry" : "refused"}`, () => assert.equal(isTransientStatus(status), transient));
  }
});

describe("deliverAll", () => {
  const startsAt = "2024-05-01T10:00:00Z";
  const events: AlertEventAttributes[] = mapWebhook({
    version: "4",
    status: "firing",
    receiver: "r",
    alerts: ["ok", "refused", "flaky", "down", "broken"].map((pod) => ({
      status: "firing" as const,
      labels: { namespace: "default", pod },
      annotations: {},
      startsAt,
      endsAt: "0001-01-01T00:00:00Z",
      fingerprint: `fp-${pod}`,
    })),
  }).events;
  const policy = { maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0 };

  /** The sink's behaviour per pod, and the tries each event got. */
  function fakeSink(): { send: (event: AlertEventAttributes) => Promise<void>; tries: Map<string, number> } {
    const tries = new Map<string, number>();
    const send = async (event: AlertEventAttributes): Promise<void> => {
      const pod = event.data.pod;
      const attempt = (tries.get(pod) ?? 0) + 1;
      tries.set(pod, attempt);
      if (pod === "refused") throw new DeliveryError("sink answered 400: bad event", { status: 400, transient: false });
      if (pod === "flaky" && attempt < 3) throw new DeliveryError("sink answered 503", { status: 503, transient: true });
      if (pod === "down") throw new DeliveryError("sink unreachable: ECONNREFUSED", { transient: true });
      if (pod === "broken") throw new TypeError("invalid CloudEvent");
    };
    return { send, tries };
  }

  it("retries transient failures, never a refusal, and reports each event once", async () => {
    const { send, tries } = fakeSink();
    const seen: Record<string, string[]> = { delivered: [], refused: [], failed: [], retried: [] };
    const report = await deliverAll(events, send, policy, 2, {
      onDelivered: (event) => seen.delivered?.push(event.data.pod),
      onRefused: (event, error) => seen.refused?.push(`${event.data.pod}:${error.status}`),
      onFailed: (event) => seen.failed?.push(event.data.pod),
      onRetry: (event) => seen.retried?.push(event.data.pod),
    });
    assert.equal(report.delivered, 2);
    assert.deepEqual(report.refused, [{ id: events[1]?.id, fingerprint: "fp-refused", status: 400, error: "sink answered 400: bad event" }]);
    assert.deepEqual(report.failed.map((f) => [f.fingerprint, f.error, f.attempts]).sort(), [
      ["fp-broken", "invalid CloudEvent", 1],
      ["fp-down", "sink unreachable: ECONNREFUSED", 3],
    ]);
    assert.deepEqual(Object.fromEntries(tries), { ok: 1, refused: 1, flaky: 3, down: 3, broken: 1 });
    assert.deepEqual(seen.delivered?.sort(), ["flaky", "ok"]);
    assert.deepEqual(seen.refused, ["refused:400"]);
    assert.deepEqual(seen.failed?.sort(), ["broken", "down"]);
    assert.deepEqual(seen.retried?.sort(), ["down", "down", "flaky", "flaky"]);
  });

  it("stops at the signal: the try in flight is stopped, no retry follows, the events not yet sent are never sent", async () => {
    const stop = new AbortController();
    const sent: string[] = [];
    // Holds every event until the signal aborts, then fails it as the transport does.
    const send = (event: AlertEventAttributes, signal?: AbortSignal): Promise<void> =>
      new Promise((_resolve, reject) => {
        sent.push(event.data.pod);
        if (sent.length === 2) setImmediate(() => stop.abort(new Error("the webhook deadline of 50 ms passed")));
        signal?.addEventListener("abort", () => reject(new DeliveryError("stopped: the webhook deadline of 50 ms passed", { transient: true })), { once: true });
      });
    const failedHooks: [string, number][] = [];
    const report = await deliverAll(events, send, { maxAttempts: 5, baseDelayMs: 0, maxDelayMs: 0 }, 2, { onFailed: (event, _error, attempts) => failedHooks.push([event.data.pod, attempts]) }, stop.signal);
    assert.deepEqual(sent, ["ok", "refused"], "two in flight, nothing tried again, nothing sent after the signal");
    assert.equal(report.delivered, 0);
    assert.deepEqual(report.failed.map((f) => [f.fingerprint, f.attempts, f.error]), [
      ["fp-ok", 1, "stopped: the webhook deadline of 50 ms passed"],
      ["fp-refused", 1, "stopped: the webhook deadline of 50 ms passed"],
      ["fp-flaky", 0, "not sent: the webhook deadline of 50 ms passed"],
      ["fp-down", 0, "not sent: the webhook deadline of 50 ms passed"],
      ["fp-broken", 0, "not sent: the webhook deadline of 50 ms passed"],
    ]);
    assert.deepEqual(failedHooks, [["ok", 1], ["refused", 1], ["flaky", 0], ["down", 0], ["broken", 0]]);
  });

  it("reports nothing for no events", async () => {
    assert.deepEqual(await deliverAll([], fakeSink().send, policy, 4), { delivered: 0, refused: [], failed: [] });
  });
});
