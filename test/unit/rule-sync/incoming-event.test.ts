/** rule-sync's reading of CloudEvents (functions/rule-sync/incoming-event.ts): ApiServerSource payloads of both modes, resync, refusals. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CloudEvent } from "cloudevents";
import { PING_EVENT_TYPE } from "../../../functions/lib/ping-event.ts";
import { EventInputError, readTrigger, REF_EVENT_PREFIX, RESOURCE_EVENT_PREFIX, RESYNC_EVENT_TYPE } from "../../../functions/rule-sync/incoming-event.ts";

/** An AppMonitor as the ApiServerSource puts it into `data` in Resource mode. */
const object = {
  apiVersion: "kubedemo.com/v1",
  kind: "AppMonitor",
  metadata: { name: "mymonitor", namespace: "demo", uid: "3f1c-uid", generation: 2, resourceVersion: "77" },
  spec: { memThresholdPercent: 75, memMultiplier: 2 },
};
/** The ObjectReference of Reference mode. */
const reference = { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "mymonitor", namespace: "demo" };

describe("readTrigger", () => {
  for (const action of ["add", "update", "delete"] as const) {
    it(`reads ${RESOURCE_EVENT_PREFIX}${action} with the whole object`, () => {
      assert.deepEqual(readTrigger({ type: `${RESOURCE_EVENT_PREFIX}${action}`, data: object }), {
        kind: "object", action, mode: "resource", namespace: "demo", name: "mymonitor", uid: "3f1c-uid",
      });
    });
    it(`reads ${REF_EVENT_PREFIX}${action} with a reference`, () => {
      assert.deepEqual(readTrigger({ type: `${REF_EVENT_PREFIX}${action}`, data: reference }), {
        kind: "object", action, mode: "reference", namespace: "demo", name: "mymonitor", uid: undefined,
      });
    });
  }

  it("reads the event as the SDK decodes it from the wire, and data sent as JSON text or bytes", () => {
    const event = new CloudEvent({ type: `${RESOURCE_EVENT_PREFIX}update`, source: "https://10.96.0.1:443", subject: "/apis/kubedemo.com/v1/namespaces/demo/appmonitors/mymonitor", data: object });
    assert.equal(readTrigger(event).kind, "object");
    assert.deepEqual(readTrigger({ type: `${REF_EVENT_PREFIX}add`, data: JSON.stringify(reference) }), readTrigger({ type: `${REF_EVENT_PREFIX}add`, data: reference }));
    assert.deepEqual(readTrigger({ type: `${REF_EVENT_PREFIX}add`, data: Buffer.from(JSON.stringify(reference)) }), readTrigger({ type: `${REF_EVENT_PREFIX}add`, data: reference }));
  });

  it("reads a resync from our own type and from a PingSource, whatever the data", () => {
    assert.deepEqual(readTrigger({ type: RESYNC_EVENT_TYPE }), { kind: "resync" });
    assert.deepEqual(readTrigger({ type: PING_EVENT_TYPE, data: { reason: "periodic resync" } }), { kind: "resync" });
  });

  const refused: [string, { type: string; data?: unknown }, RegExp][] = [
    ["an unknown type", { type: "com.example.other", data: object }, /unsupported event type/],
    ["an unknown ApiServerSource action", { type: `${RESOURCE_EVENT_PREFIX}patch`, data: object }, /unsupported event type/],
    ["no data", { type: `${RESOURCE_EVENT_PREFIX}add` }, /JSON object, got no data/],
    ["an array", { type: `${RESOURCE_EVENT_PREFIX}add`, data: [object] }, /got an array/],
    ["null data", { type: `${RESOURCE_EVENT_PREFIX}add`, data: null }, /JSON object, got null/],
    ["text that is not JSON", { type: `${REF_EVENT_PREFIX}add`, data: "{" }, /not JSON/],
    ["another kind", { type: `${RESOURCE_EVENT_PREFIX}add`, data: { ...object, kind: "Pod", apiVersion: "v1" } }, /not kubedemo\.com\/v1 AppMonitor/],
    ["another version", { type: `${REF_EVENT_PREFIX}add`, data: { ...reference, apiVersion: "kubedemo.com/v2" } }, /not kubedemo\.com\/v1 AppMonitor/],
    ["no name", { type: `${REF_EVENT_PREFIX}add`, data: { ...reference, name: undefined } }, /data\.name must be/],
    ["a name that is not a DNS subdomain", { type: `${RESOURCE_EVENT_PREFIX}add`, data: { ...object, metadata: { ...object.metadata, name: "Bad/Name" } } }, /data\.metadata\.name must be/],
    ["a hostile namespace", { type: `${REF_EVENT_PREFIX}update`, data: { ...reference, namespace: 'x"} or vector(1) #' } }, /data\.namespace must be/],
    ["a metadata without namespace", { type: `${RESOURCE_EVENT_PREFIX}delete`, data: { ...object, metadata: { name: "m" } } }, /data\.metadata\.namespace must be/],
  ];
  for (const [what, event, message] of refused) {
    it(`refuses ${what}`, () => {
      assert.throws(() => readTrigger(event), (error: unknown) => error instanceof EventInputError && message.test(error.message));
    });
  }
});
