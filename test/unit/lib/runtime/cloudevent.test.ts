// The runtime's CloudEvent decoding (functions/lib/runtime/cloudevent.ts, invoke.ts): an
// extension attribute whose name CloudEvents does not allow is dropped and logged, never the
// whole event; everything else the spec requires is still enforced.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import { pino } from "pino";
import { decodeCloudEvent } from "../../../../functions/lib/runtime/cloudevent.ts";
import { HttpError } from "../../../../functions/lib/runtime/errors.ts";
import { invoke } from "../../../../functions/lib/runtime/invoke.ts";
import type { CloudEventFunction } from "../../../../functions/lib/runtime/types.ts";

const binary = { "ce-specversion": "1.0", "ce-id": "e1", "ce-source": "/test", "ce-type": "com.example.test", "content-type": "application/json" };
const structured = { specversion: "1.0", id: "e1", source: "/test", type: "com.example.test", datacontenttype: "application/json", data: { a: 1 } };
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

const accepted: { name: string; headers: Record<string, string>; body: Buffer; ignored: string[]; kept?: Record<string, unknown> }[] = [
  { name: "a binary event with valid extensions", headers: { ...binary, "ce-traceparent": "00-x", "ce-knativearrivaltime": "2026-01-01T00:00:00Z" }, body: json({ a: 1 }), ignored: [], kept: { traceparent: "00-x" } },
  { name: "a binary event with an underscore extension", headers: { ...binary, "ce-trace_id": "abc", "ce-kind": "AppMonitor" }, body: json({ a: 1 }), ignored: ["trace_id"], kept: { kind: "AppMonitor" } },
  { name: "a binary event with a dashed extension", headers: { ...binary, "ce-x-b3-spanid": "1" }, body: json({ a: 1 }), ignored: ["x-b3-spanid"] },
  {
    name: "a structured event with upper-case and dotted members",
    headers: { "content-type": "application/cloudevents+json" },
    body: json({ ...structured, "Foo.Bar": "x", camelCase: "y", good1: "z" }),
    ignored: ["Foo.Bar", "camelCase"],
    kept: { good1: "z" },
  },
  {
    name: "a structured event with binary data and a bad extension",
    headers: { "content-type": "application/cloudevents+json" },
    body: json({ specversion: "1.0", id: "e1", source: "/test", type: "com.example.test", data_base64: Buffer.from("hi").toString("base64"), bad_name: 1 }),
    ignored: ["bad_name"],
  },
];

describe("decodeCloudEvent", () => {
  for (const c of accepted) {
    it(`accepts ${c.name}, ignoring ${c.ignored.length === 0 ? "nothing" : c.ignored.join(", ")}`, () => {
      const { event, ignored } = decodeCloudEvent(c.headers, c.body);
      assert.deepEqual([...ignored].sort(), [...c.ignored].sort());
      assert.equal(event.id, "e1");
      assert.equal(event.type, "com.example.test");
      for (const name of c.ignored) assert.equal(Object.hasOwn(event, name), false, `${name} dropped`);
      for (const [name, value] of Object.entries(c.kept ?? {})) assert.equal((event as unknown as Record<string, unknown>)[name], value);
      assert.equal(event.validate(), true);
    });
  }

  it("keeps the data of an event it rebuilt", () => {
    const { event } = decodeCloudEvent({ ...binary, "ce-my_ext": "1" }, json({ a: 1 }));
    assert.deepEqual(event.data, { a: 1 });
    const { event: bytes } = decodeCloudEvent({ "content-type": "application/cloudevents+json" }, json({ specversion: "1.0", id: "e1", source: "/t", type: "t", data_base64: "aGk=", bad_name: 1 }));
    assert.equal(Buffer.from(bytes.data as Uint8Array).toString("utf8"), "hi");
  });

  const refused: { name: string; headers: Record<string, string>; body: Buffer; status: number }[] = [
    { name: "an empty type, beside a bad extension", headers: { ...binary, "ce-type": "", "ce-bad_name": "x" }, body: json({}), status: 400 },
    { name: "a missing source", headers: { "content-type": "application/cloudevents+json" }, body: json({ specversion: "1.0", id: "e1", type: "t", bad_name: 1 }), status: 400 },
    { name: "specversion 0.3", headers: { ...binary, "ce-specversion": "0.3" }, body: json({}), status: 400 },
    { name: "a batch", headers: { "content-type": "application/cloudevents-batch+json" }, body: json([structured]), status: 415 },
    { name: "no CloudEvent at all", headers: { "content-type": "application/json" }, body: json({}), status: 400 },
  ];
  for (const c of refused) {
    it(`refuses ${c.name} with ${c.status}`, () => {
      assert.throws(() => decodeCloudEvent(c.headers, c.body), (error: unknown) => error instanceof HttpError && error.status === c.status);
    });
  }
});

describe("invoke", () => {
  it("hands the function the event without the ignored attributes and logs their names with the event id", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: "info" },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString("utf8")) as Record<string, unknown>);
          done();
        },
      }),
    );
    const seen: string[][] = [];
    const instance: CloudEventFunction = {
      handle: async (_context, event) => {
        seen.push(Object.keys(event));
        return { outcome: "handled" };
      },
    };
    const answer = await invoke({ kind: "cloudevent", instance }, { log, requestId: "r1", signal: new AbortController().signal }, {
      method: "POST",
      path: "/",
      query: new URLSearchParams(),
      headers: { ...binary, "ce-trace_id": "abc" },
      body: json({ a: 1 }),
    });
    assert.equal(answer?.status, 204);
    assert.ok(seen[0] && !seen[0].includes("trace_id"));
    const line = lines.find((l) => Array.isArray(l.ignoredAttributes));
    assert.deepEqual(line?.ignoredAttributes, ["trace_id"]);
    assert.equal(line?.eventId, "e1");
    assert.equal(line?.level, 40, "a warning");
  });
});
