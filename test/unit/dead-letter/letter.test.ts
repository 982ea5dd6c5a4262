/**
 * The dead-letter sink's pure core (functions/dead-letter/letter.ts): which object a dead letter's
 * Event goes on, its reason and note from Knative's extensions, its deterministic name, the event
 * stored for `resend`, and what happens when that does not fit.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  BROKER_ANNOTATION, CLOUDEVENT_ANNOTATION, DEAD_LETTER_REASON, MAX_STORED_EVENT_BYTES, OMITTED_ANNOTATION,
  deadLetterEvent, eventName, fallbackObject, knativeError, namedObject, originalEvent,
} from "../../../functions/dead-letter/letter.ts";

const place = { namespace: "appmonitor", serviceAccount: "appmonitor-dead-letter", broker: "default" };
const now = new Date("2026-12-02T10:00:00Z");
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** A memory-threshold event memory-scaler refused with 400, as Knative dead-letters it. */
const firing = (extra: Record<string, unknown> = {}) => ({
  specversion: "1.0", id: "ev-1", source: "http://alertmanager:9093", type: "com.kubedemo.appmonitor.alert.firing", datacontenttype: "application/json",
  data: { namespace: "shop", pod: "web-1", appmonitor: "web", alertname: "AppMonitorMemoryHigh" },
  knativeerrordest: "http://memory-scaler.appmonitor.svc.cluster.local", knativeerrorcode: "400", knativeerrordata: b64('{"error":"malformed event data"}'),
  ...extra,
});

describe("which object a dead letter's Event goes on", () => {
  it("a memory-threshold event names its AppMonitor by data.appmonitor and data.namespace", () => {
    assert.deepEqual(namedObject(firing()), { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web" });
  });
  it("data that is JSON text or base64 is read too", () => {
    const { data, ...rest } = firing();
    assert.equal(namedObject({ ...rest, data: JSON.stringify(data) })?.name, "web");
    assert.equal(namedObject({ ...rest, data_base64: b64(JSON.stringify(data)) })?.name, "web");
  });
  it("an ApiServerSource event names its object, with its uid in Resource mode", () => {
    const object = { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { namespace: "shop", name: "web", uid: "u-1" } };
    assert.deepEqual(namedObject({ type: "dev.knative.apiserver.resource.update", data: object }), { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web", uid: "u-1" });
    assert.deepEqual(namedObject({ type: "dev.knative.apiserver.ref.add", data: { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web" } }), { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web" });
  });
  it("an event that names nothing, or names it in a form Kubernetes refuses, names no object: the sink's ServiceAccount gets the Event", () => {
    assert.equal(namedObject({ type: "dev.knative.sources.ping", data: { body: "tick" } }), undefined);
    assert.equal(namedObject(firing({ data: { not: "an alert" } })), undefined);
    assert.equal(namedObject(firing({ data: { namespace: "Shop!", appmonitor: "web" } })), undefined);
    assert.equal(namedObject(firing({ data: "not json" })), undefined);
    assert.equal(namedObject({ type: "dev.knative.apiserver.resource.add", data: { kind: "AppMonitor", metadata: { name: "web", namespace: "shop" } } }), undefined, "no apiVersion");
    assert.deepEqual(fallbackObject(place), { apiVersion: "v1", kind: "ServiceAccount", namespace: "appmonitor", name: "appmonitor-dead-letter" });
  });
});

describe("the Event of a dead letter", () => {
  it("is a Warning DeadLetter in the object's namespace, its note naming the type, source, id, the subscriber, its status and its decoded answer", () => {
    const regarding = namedObject(firing()) ?? fallbackObject(place);
    const event = deadLetterEvent({ attributes: firing() }, { ...regarding, uid: "u-1" }, place, "sink-pod", now);
    assert.equal(event.type, "Warning");
    assert.equal(event.reason, DEAD_LETTER_REASON);
    assert.equal(event.metadata?.namespace, "shop");
    assert.deepEqual(event.regarding, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web", uid: "u-1" });
    assert.match(event.note ?? "", /^com\.kubedemo\.appmonitor\.alert\.firing from http:\/\/alertmanager:9093 \(id ev-1\) was dead-lettered; resend: kubectl appmonitor resend/);
    assert.match(event.note ?? "", /Why: http:\/\/memory-scaler\.appmonitor\.svc\.cluster\.local answered 400: \{"error":"malformed event data"\}$/);
    assert.equal(event.metadata?.annotations?.[BROKER_ANNOTATION], "appmonitor/default");
    assert.equal(JSON.stringify(event.eventTime), '"2026-12-02T10:00:00.000000Z"');
  });
  it("keeps the note within the API server's 1 kB", () => {
    const event = deadLetterEvent({ attributes: firing({ knativeerrordata: b64("x".repeat(5000)) }) }, fallbackObject(place), place, "sink-pod", now);
    assert.equal(event.note?.length, 1024);
    assert.ok(event.note?.endsWith("…"));
  });
  it("says so when Knative attached no reason; knativeerrordata that is not base64 is shown as it is", () => {
    const { knativeerrorcode: _c, knativeerrordest: _d, knativeerrordata: _e, ...plain } = firing();
    assert.match(deadLetterEvent({ attributes: plain }, fallbackObject(place), place, "p", now).note ?? "", /Why: it came without Knative's error extensions$/);
    assert.deepEqual(knativeError({ knativeerrorcode: 503, knativeerrordata: "not base64!" }), { code: "503", dest: undefined, data: "not base64!" });
  });
});

describe("the Event's name", () => {
  const regarding = { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web" };
  it("is the same for a re-delivered dead letter, so its second create answers 409", () => {
    assert.equal(eventName(regarding, firing()), eventName(regarding, firing({ knativeerrordata: b64("another answer"), time: "2026-12-02T10:05:00Z" })));
    assert.match(eventName(regarding, firing()), /^web\.[0-9a-f]{16}$/);
  });
  it("differs for another event id or source, or the same event dead-lettered at another subscriber", () => {
    const names = new Set([firing(), firing({ id: "ev-2" }), firing({ source: "/other" }), firing({ knativeerrordest: "http://rule-sync.appmonitor.svc.cluster.local" })].map((e) => eventName(regarding, e)));
    assert.equal(names.size, 4);
  });
  it("stays a valid name for the longest object name", () => {
    const name = eventName({ ...regarding, name: `${"a".repeat(199)}.b` }, firing());
    assert.ok(name.length <= 253);
    assert.match(name, /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/);
  });
});

describe("the event stored for resend", () => {
  it("is the original event without Knative's error extensions, in the JSON event format", () => {
    const event = deadLetterEvent({ attributes: firing() }, fallbackObject(place), place, "p", now);
    const stored = JSON.parse(event.metadata?.annotations?.[CLOUDEVENT_ANNOTATION] ?? "{}") as Record<string, unknown>;
    const { knativeerrorcode: _c, knativeerrordest: _d, knativeerrordata: _e, ...original } = firing();
    assert.deepEqual(stored, original);
    assert.deepEqual(originalEvent(firing()), original);
    assert.equal(event.metadata?.annotations?.[OMITTED_ANNOTATION], undefined);
  });
  it("is left out when it would pass the API server's 256 KiB of annotations: its size is kept instead, and the note says only the sink's log has it", () => {
    const big = firing({ data: { namespace: "shop", appmonitor: "web", blob: "x".repeat(MAX_STORED_EVENT_BYTES) } });
    const event = deadLetterEvent({ attributes: big }, fallbackObject(place), place, "p", now);
    assert.equal(event.metadata?.annotations?.[CLOUDEVENT_ANNOTATION], undefined);
    assert.equal(Number(event.metadata?.annotations?.[OMITTED_ANNOTATION]), Buffer.byteLength(JSON.stringify(originalEvent(big))));
    assert.match(event.note ?? "", /too large to keep here: only the dead-letter sink's log has it/);
    const sizes = Object.entries(event.metadata?.annotations ?? {}).reduce((n, [k, v]) => n + k.length + v.length, 0);
    assert.ok(sizes < 256 * 1024);
  });
  it("one just within the limit is kept", () => {
    const base = Buffer.byteLength(JSON.stringify(originalEvent(firing({ data: { blob: "" } }))));
    const fits = firing({ data: { blob: "x".repeat(MAX_STORED_EVENT_BYTES - base) } });
    const event = deadLetterEvent({ attributes: fits }, fallbackObject(place), place, "p", now);
    assert.equal(Buffer.byteLength(event.metadata?.annotations?.[CLOUDEVENT_ANNOTATION] ?? ""), MAX_STORED_EVENT_BYTES);
  });
});
