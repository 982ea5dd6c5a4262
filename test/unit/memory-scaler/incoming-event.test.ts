// memory-scaler's reading of an incoming CloudEvent (functions/memory-scaler/incoming-event.ts), as tables.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CloudEvent } from "cloudevents";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import { FIRING_TYPE, RESOLVED_TYPE, validateAlertEventData } from "../../../functions/lib/alert-event.ts";
import { readAlertEvent } from "../../../functions/memory-scaler/incoming-event.ts";

const validate = validateAlertEventData;

const goodData = {
  alertname: "AppMonitorMemoryHigh",
  status: "firing",
  namespace: "team-a",
  pod: "memhog-5d8f-x2",
  container: "memhog",
  appmonitor: "mymonitor",
  value: 81.25,
  fingerprint: "a1b2c3d4e5f60718",
  startsAt: "2025-06-01T11:59:00Z",
  endsAt: null,
  labels: { alertname: "AppMonitorMemoryHigh" },
  annotations: {},
  generatorURL: "",
};

function cloudEvent(over: Record<string, unknown> = {}): CloudEvent<unknown> {
  return new CloudEvent<unknown>({
    id: "e1",
    source: "/alertmanager",
    type: FIRING_TYPE,
    subject: "namespaces/team-a/pods/memhog-5d8f-x2",
    datacontenttype: "application/json",
    data: goodData,
    ...over,
  });
}

function httpStatusOf(thunk: () => unknown): { status: number; details: unknown } {
  try {
    thunk();
  } catch (error) {
    assert.ok(error instanceof HttpError, `expected HttpError, got ${String(error)}`);
    return { status: error.status, details: error.details };
  }
  assert.fail("did not throw");
}

describe("readAlertEvent", () => {
  it("accepts a firing event and returns its data", () => {
    const event = readAlertEvent(cloudEvent(), validate);
    assert.equal(event.kind, "firing");
    assert.equal(event.id, "e1");
    assert.equal(event.data.pod, "memhog-5d8f-x2");
  });

  it("accepts a resolved event", () => {
    const event = readAlertEvent(cloudEvent({ type: RESOLVED_TYPE, data: { ...goodData, status: "resolved", endsAt: "2025-06-01T12:05:00Z" } }), validate);
    assert.equal(event.kind, "resolved");
  });

  it("parses JSON data that arrived as text", () => {
    const event = readAlertEvent(cloudEvent({ data: JSON.stringify(goodData) }), validate);
    assert.equal(event.data.namespace, "team-a");
  });

  const refused: { name: string; over: Record<string, unknown>; path: string }[] = [
    { name: "another type", over: { type: "com.example.other" }, path: "/type" },
    { name: "no data", over: { data: undefined }, path: "/data" },
    { name: "data that is not JSON", over: { data: "{not json" }, path: "/data" },
    { name: "a missing required field", over: { data: { ...goodData, pod: undefined } }, path: "/data" },
    { name: "a namespace that is not a DNS label", over: { data: { ...goodData, namespace: "Team_A" } }, path: "/data/namespace" },
    { name: "an unknown field", over: { data: { ...goodData, extra: 1 } }, path: "/data" },
    { name: "a status contradicting the type", over: { data: { ...goodData, status: "resolved" } }, path: "/data/status" },
    { name: "a subject naming another Pod", over: { subject: "namespaces/team-a/pods/other" }, path: "/subject" },
  ];
  for (const c of refused) {
    it(`refuses ${c.name} with 400 and an error list`, () => {
      const { status, details } = httpStatusOf(() => readAlertEvent(cloudEvent(c.over), validate));
      assert.equal(status, 400);
      assert.ok(Array.isArray(details) && details.length > 0);
      assert.ok((details as { path: string }[]).some((d) => d.path.startsWith(c.path)), JSON.stringify(details));
    });
  }
});
