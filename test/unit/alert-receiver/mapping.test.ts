/**
 * The pure alert → CloudEvent mapping (functions/alert-receiver/mapping.ts): tables of cases,
 * and a property: for any payload the webhook schema accepts, mapping never throws, every
 * event is a valid CloudEvent whose data matches schemas/alert-event.schema.json, and every
 * alert is either an event or listed as dropped.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { CloudEvent, HTTP } from "cloudevents";
import fc from "fast-check";
import {
  DEFAULT_SOURCE,
  eventId,
  isNotEnded,
  mapAlert,
  mapWebhook,
  parseValue,
  sourceOf,
} from "../../../functions/alert-receiver/mapping.ts";
import type { AlertEventAttributes } from "../../../functions/alert-receiver/mapping.ts";
import { FIRING_TYPE, RESOLVED_TYPE, triggerOf, validateAlertEventData } from "../../../functions/lib/alert-event.ts";
import { validateWebhook, type AlertmanagerAlert, type AlertmanagerWebhook } from "../../../functions/alert-receiver/webhook.ts";

const firing: AlertmanagerAlert = {
  status: "firing",
  labels: { alertname: "MemoryHigh", namespace: "default", pod: "memhog-5d8f", container: "memhog", appmonitor: "mymonitor" },
  annotations: { value: "80.5" },
  startsAt: "2024-05-01T10:00:00.123456789Z",
  endsAt: "0001-01-01T00:00:00Z",
  generatorURL: "http://prometheus:9090/graph",
  fingerprint: "a1b2c3d4e5f60718",
};
const resolved: AlertmanagerAlert = { ...firing, status: "resolved", endsAt: "2024-05-01T10:05:00Z" };

function mapped(alert: AlertmanagerAlert, source = "http://am:9093"): AlertEventAttributes {
  const result = mapAlert(alert, source);
  assert.equal(typeof result, "object", `dropped: ${String(result)}`);
  return result as AlertEventAttributes;
}

describe("mapAlert", () => {
  it("maps a firing alert to a firing event (DESIGN.md: the memory-threshold CloudEvent)", () => {
    const event = mapped(firing);
    // The label sets are null-prototype copies; compare what goes on the wire.
    assert.deepEqual(JSON.parse(JSON.stringify(event)), {
      id: createHash("sha256").update("a1b2c3d4e5f60718\n2024-05-01T10:00:00.123456789Z\nfiring").digest("hex"),
      type: FIRING_TYPE,
      source: "http://am:9093",
      subject: "namespaces/default/pods/memhog-5d8f",
      time: "2024-05-01T10:00:00.123Z",
      datacontenttype: "application/json",
      data: {
        alertname: "MemoryHigh",
        status: "firing",
        namespace: "default",
        pod: "memhog-5d8f",
        container: "memhog",
        appmonitor: "mymonitor",
        trigger: "threshold",
        value: 80.5,
        fingerprint: "a1b2c3d4e5f60718",
        startsAt: "2024-05-01T10:00:00.123456789Z",
        endsAt: null,
        labels: firing.labels,
        annotations: firing.annotations,
        generatorURL: "http://prometheus:9090/graph",
      },
    });
    assert.ok(validateAlertEventData(event.data), JSON.stringify(validateAlertEventData.errors));
  });

  it("types by the alert's own status and times a resolved event by endsAt", () => {
    const event = mapped(resolved);
    assert.equal(event.type, RESOLVED_TYPE);
    assert.equal(event.time, "2024-05-01T10:05:00.000Z");
    assert.equal(event.data.endsAt, "2024-05-01T10:05:00Z");
    assert.equal(event.data.status, "resolved");
  });

  const idCases: { name: string; a: AlertmanagerAlert; b: AlertmanagerAlert; same: boolean }[] = [
    { name: "the same alert re-sent", a: firing, b: { ...firing, annotations: { value: "99" } }, same: true },
    { name: "firing then resolved", a: firing, b: resolved, same: false },
    { name: "firing again later (new startsAt)", a: firing, b: { ...firing, startsAt: "2024-05-01T11:00:00Z" }, same: false },
    { name: "another label set (fingerprint)", a: firing, b: { ...firing, fingerprint: "ffffffffffffffff" }, same: false },
  ];
  for (const { name, a, b, same } of idCases) {
    it(`ids: ${name} → ${same ? "same" : "different"} id`, () => {
      assert.equal(mapped(a).id === mapped(b).id, same);
    });
  }

  const dropCases: { name: string; labels: Record<string, string>; reason: string }[] = [
    { name: "no namespace", labels: { pod: "p" }, reason: "no-namespace-or-pod" },
    { name: "no pod", labels: { namespace: "default" }, reason: "no-namespace-or-pod" },
    { name: "empty pod", labels: { namespace: "default", pod: "" }, reason: "no-namespace-or-pod" },
    { name: "upper-case namespace", labels: { namespace: "Default", pod: "p" }, reason: "invalid-namespace-or-pod" },
    { name: "pod with a slash", labels: { namespace: "default", pod: "a/b" }, reason: "invalid-namespace-or-pod" },
    { name: "path traversal", labels: { namespace: "..", pod: "p" }, reason: "invalid-namespace-or-pod" },
    { name: "namespace of 64 characters", labels: { namespace: "a".repeat(64), pod: "p" }, reason: "invalid-namespace-or-pod" },
    { name: "pod of 254 characters", labels: { namespace: "default", pod: "a".repeat(254) }, reason: "invalid-namespace-or-pod" },
  ];
  for (const { name, labels, reason } of dropCases) {
    it(`drops an alert with ${name} (${reason})`, () => {
      assert.equal(mapAlert({ ...firing, labels }, "/x"), reason);
    });
  }

  it("accepts the longest valid names and dotted pod names", () => {
    const event = mapped({ ...firing, labels: { namespace: "a".repeat(63), pod: `${"b".repeat(60)}.${"c".repeat(60)}` } });
    assert.ok(validateAlertEventData(event.data), JSON.stringify(validateAlertEventData.errors));
  });

  it("drops an alert whose time is not a real instant", () => {
    assert.equal(mapAlert({ ...firing, startsAt: "2016-12-31T23:59:60Z" }, "/x"), "invalid-time");
  });

  it("ignores inherited properties as labels", () => {
    const labels = JSON.parse('{"__proto__": {"namespace": "default", "pod": "p"}}') as Record<string, string>;
    assert.equal(mapAlert({ ...firing, labels }, "/x"), "no-namespace-or-pod");
    assert.equal(mapAlert({ ...firing, labels: { namespace: "default", pod: "p", constructor: "x" } }, "/x") !== "no-namespace-or-pod", true);
  });

  it("keeps labels and annotations named __proto__ and constructor, as own data on the wire", () => {
    // As JSON.parse gives them: own properties named __proto__ (an object literal would set the prototype instead).
    const alert: AlertmanagerAlert = {
      ...firing,
      labels: JSON.parse('{"__proto__": "x", "constructor": "c", "namespace": "default", "pod": "p"}') as Record<string, string>,
      annotations: JSON.parse('{"__proto__": "y", "value": "80"}') as Record<string, string>,
    };
    const { data } = mapped(alert);
    assert.equal(data.labels.__proto__, "x");
    assert.equal(data.labels.constructor, "c");
    assert.equal(data.annotations.__proto__, "y");
    assert.equal(Object.getPrototypeOf(data.labels), null);
    assert.deepEqual(Object.keys(data.labels), ["__proto__", "constructor", "namespace", "pod"]);
    const sent = JSON.parse(HTTP.binary(new CloudEvent({ specversion: "1.0", ...mapped(alert) })).body as string) as { labels: object; annotations: object };
    assert.equal(Object.getOwnPropertyDescriptor(sent.labels, "__proto__")?.value, "x");
    assert.equal(Object.getOwnPropertyDescriptor(sent.annotations, "__proto__")?.value, "y");
    assert.ok(validateAlertEventData(data), JSON.stringify(validateAlertEventData.errors));
  });

  it("leaves out optional fields that are absent or empty", () => {
    const event = mapped({ ...firing, labels: { namespace: "n", pod: "p", container: "" }, annotations: {}, generatorURL: undefined as unknown as string });
    assert.deepEqual(Object.keys(event.data).sort(), ["alertname", "annotations", "endsAt", "fingerprint", "generatorURL", "labels", "namespace", "pod", "startsAt", "status", "trigger"]);
    assert.equal(event.data.alertname, "");
    assert.equal(event.data.generatorURL, "");
  });

  const triggerCases: { alertname: string | undefined; trigger: string }[] = [
    { alertname: "AppMonitorOOMKilled", trigger: "oomKilled" },
    { alertname: "AppMonitorMemoryTrend", trigger: "trend" },
    { alertname: "AppMonitorHeapError", trigger: "heapError" },
    { alertname: "AppMonitorHeapThreshold", trigger: "heapThreshold" },
    { alertname: "AppMonitorHeapThresholds", trigger: "threshold" },
    { alertname: "AppMonitorMemoryTrends", trigger: "threshold" },
    { alertname: "AppMonitorMemoryHigh", trigger: "threshold" },
    { alertname: "appmonitoroomkilled", trigger: "threshold" },
    { alertname: "AppMonitorOOMKilled2", trigger: "threshold" },
    { alertname: "KubeContainerOOMKilled", trigger: "threshold" },
    { alertname: undefined, trigger: "threshold" },
  ];
  for (const { alertname, trigger } of triggerCases) {
    it(`trigger: alertname ${JSON.stringify(alertname)} → ${trigger}`, () => {
      const labels: Record<string, string> = { namespace: "n", pod: "p", ...(alertname === undefined ? {} : { alertname }) };
      const event = mapped({ ...firing, labels, annotations: {} });
      assert.equal(event.data.trigger, trigger);
      assert.equal(triggerOf(alertname ?? ""), trigger);
      assert.ok(validateAlertEventData(event.data), JSON.stringify(validateAlertEventData.errors));
    });
  }

  it("the schema keeps events without trigger valid (an older alert-receiver's) and refuses an unknown trigger", () => {
    const { trigger, ...older } = mapped(firing).data;
    assert.equal(trigger, "threshold");
    assert.ok(validateAlertEventData(older), JSON.stringify(validateAlertEventData.errors));
    assert.equal(validateAlertEventData({ ...older, trigger: "oom" }), false);
    assert.equal(validateAlertEventData({ ...older, trigger: "oomKilled" }), true);
  });

  it("prefers the value annotation over the value label", () => {
    assert.equal(mapped({ ...firing, labels: { ...firing.labels, value: "10" }, annotations: { value: "20" } }).data.value, 20);
    assert.equal(mapped({ ...firing, labels: { ...firing.labels, value: "10" }, annotations: { value: "n/a" } }).data.value, 10);
  });
});

describe("parseValue", () => {
  const cases: [string | undefined, number | undefined][] = [
    ["80.5", 80.5],
    [" 75 ", 75],
    ["1e2", 100],
    ["-3", -3],
    [".5", 0.5],
    ["0", 0],
    ["NaN", undefined],
    ["+Inf", undefined],
    ["1e400", undefined],
    ["80%", undefined],
    ["0x10", undefined],
    ["", undefined],
    [undefined, undefined],
  ];
  for (const [raw, expected] of cases) {
    it(`${JSON.stringify(raw)} → ${String(expected)}`, () => assert.equal(parseValue(raw), expected));
  }
});

describe("sourceOf", () => {
  const cases: [string | undefined, string][] = [
    ["http://alertmanager:9093", "http://alertmanager:9093"],
    ["https://am.example.com/prefix/", "https://am.example.com/prefix/"],
    [undefined, DEFAULT_SOURCE],
    ["", DEFAULT_SOURCE],
    ["not a url", DEFAULT_SOURCE],
    ["relative/path", DEFAULT_SOURCE],
    ["http://host/with space", DEFAULT_SOURCE],
    ["http://ünicode.example", DEFAULT_SOURCE],
  ];
  for (const [externalURL, expected] of cases) {
    it(`${JSON.stringify(externalURL)} → ${expected}`, () => assert.equal(sourceOf(externalURL), expected));
  }
});

describe("isNotEnded", () => {
  const cases: [string, boolean][] = [
    ["0001-01-01T00:00:00Z", true],
    ["0001-01-01T00:00:00.000Z", true],
    ["2024-05-01T10:05:00Z", false],
  ];
  for (const [endsAt, expected] of cases) it(`${endsAt} → ${expected}`, () => assert.equal(isNotEnded(endsAt), expected));
});

describe("eventId", () => {
  it("is the hex sha256 of fingerprint, startsAt and status", () => {
    assert.equal(eventId("f", "s", "firing"), createHash("sha256").update("f\ns\nfiring").digest("hex"));
    assert.match(eventId("f", "s", "resolved"), /^[0-9a-f]{64}$/);
  });
});

describe("mapWebhook", () => {
  it("emits one event per alert, in order, each by its own status, and lists the rest", () => {
    const payload: AlertmanagerWebhook = {
      version: "4",
      status: "firing",
      receiver: "r",
      alerts: [firing, { ...firing, labels: { alertname: "NoPod" } }, resolved],
    };
    const { events, dropped } = mapWebhook(payload);
    assert.deepEqual(events.map((event) => event.type), [FIRING_TYPE, RESOLVED_TYPE]);
    assert.deepEqual(dropped, [{ index: 1, fingerprint: firing.fingerprint, reason: "no-namespace-or-pod" }]);
    assert.ok(events.every((event) => event.source === DEFAULT_SOURCE), "no externalURL → /alertmanager");
  });

  const label = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom("", "default", "memhog-1", "a.b", "Default", "__proto__", "x".repeat(300)));
  const labelSet = fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("namespace", "pod", "container", "appmonitor", "value", "alertname", "__proto__")), label, { maxKeys: 8 });
  const time = fc.oneof(
    fc.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }).map((date) => date.toISOString()),
    fc.constantFrom("0001-01-01T00:00:00Z", "2024-05-01T10:00:00.123456789Z", "2024-05-01T12:00:00+02:00", "2016-12-31T23:59:60Z"),
  );
  const alert = fc.record({
    status: fc.constantFrom("firing" as const, "resolved" as const),
    labels: labelSet,
    annotations: labelSet,
    startsAt: time,
    endsAt: time,
    generatorURL: fc.string(),
    fingerprint: fc.string({ minLength: 1, maxLength: 20 }),
  });
  const payload = fc.record(
    {
      version: fc.constant("4" as const),
      status: fc.constantFrom("firing" as const, "resolved" as const),
      receiver: fc.string(),
      externalURL: fc.oneof(fc.webUrl(), fc.string()),
      truncatedAlerts: fc.nat(),
      alerts: fc.array(alert, { maxLength: 10 }),
    },
    { requiredKeys: ["version", "status", "receiver", "alerts"] },
  );

  it("never throws and only produces valid CloudEvents for any payload the schema accepts (fast-check)", () => {
    let valid = 0;
    fc.assert(
      fc.property(payload, (candidate) => {
        // JSON round trip: what the handler sees after JSON.parse (own __proto__ keys stay data).
        const parsed = JSON.parse(JSON.stringify(candidate)) as unknown;
        if (!validateWebhook(parsed)) return;
        valid += 1;
        const { events, dropped } = mapWebhook(parsed);
        assert.equal(events.length + dropped.length, parsed.alerts.length);
        for (const event of events) {
          assert.ok(validateAlertEventData(event.data), JSON.stringify(validateAlertEventData.errors));
          assert.equal(event.subject, `namespaces/${event.data.namespace}/pods/${event.data.pod}`);
          const cloudEvent = new CloudEvent({ specversion: "1.0", ...event });
          assert.equal(cloudEvent.id, event.id);
        }
      }),
      { numRuns: 500 },
    );
    assert.ok(valid > 100, `only ${valid} generated payloads were schema-valid`);
  });
});
