// kubectl appmonitor resend's pure part (scripts/resend/resend.ts): the event kept on a dead
// letter's Event, sent to the Broker it names through the API server's service proxy.
import assert from "node:assert/strict";
import { test } from "node:test";
import { deadLetterEvent, fallbackObject, MAX_STORED_EVENT_BYTES } from "../../../../functions/dead-letter/letter.ts";
import { brokerProxyPath, ResendError, resendOf } from "../../../../scripts/resend/resend.ts";

const place = { namespace: "appmonitor", serviceAccount: "appmonitor-dead-letter", broker: "default" };
const letter = (data: unknown) => ({
  specversion: "1.0", id: "ev-1", source: "/test", type: "com.kubedemo.appmonitor.resync", datacontenttype: "application/json", data,
  knativeerrorcode: "500", knativeerrordest: "http://rule-sync.appmonitor.svc.cluster.local", knativeerrordata: "",
});
const recorded = (data: unknown) => deadLetterEvent({ attributes: letter(data) }, fallbackObject(place), place, "p", new Date());

test("the kept event, without Knative's error extensions, goes to the Broker the Event names, through the service proxy", () => {
  const resend = resendOf(recorded({ why: "test" }));
  assert.deepEqual(resend.broker, { namespace: "appmonitor", name: "default" });
  assert.equal(resend.path, "/api/v1/namespaces/knative-eventing/services/broker-ingress:80/proxy/appmonitor/default");
  assert.equal(resend.event.id, "ev-1");
  assert.deepEqual(resend.event.data, { why: "test" });
  assert.equal((resend.event as unknown as Record<string, unknown>).knativeerrorcode, undefined);
  assert.equal(resendOf(recorded({}), "other/b2").path, brokerProxyPath("other", "b2"));
});

test("an Event that is no dead letter's, one whose event was too large to keep, or a Broker that is no name: a clear error", () => {
  assert.throws(() => resendOf({ reason: "Scaled", metadata: { name: "x", namespace: "a" } }), (e: Error) => e instanceof ResendError && /is not a dead letter's/.test(e.message));
  assert.throws(() => resendOf(recorded({ blob: "x".repeat(MAX_STORED_EVENT_BYTES) })), /too large to keep on it; the dead-letter sink's log line "dead letter" has it whole/);
  assert.throws(() => resendOf(recorded({}), "no-slash"), /no Broker to send to/);
});
