// Reading Knative's event_display log (test/support/event-display.ts): the CloudEvents Go SDK's
// `Event.String()` after each `☁️  cloudevents.Event` line, with or without the kubelet's timestamps.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseEventDisplay } from "../../support/event-display.ts";

const DEAD_LETTER = [
  "2026-12-01T01:02:03.456789012Z 2026/12/01 01:02:03 failed to parse observability config from env, falling back to default config",
  "2026-12-01T01:02:04.100000000Z ☁️  cloudevents.Event",
  "2026-12-01T01:02:04.100000100Z Context Attributes,",
  "2026-12-01T01:02:04.100000200Z   specversion: 1.0",
  "2026-12-01T01:02:04.100000300Z   type: com.kubedemo.appmonitor.alert.firing",
  "2026-12-01T01:02:04.100000400Z   source: /appmonitor/test",
  "2026-12-01T01:02:04.100000500Z   id: 6f1c",
  "2026-12-01T01:02:04.100000600Z   datacontenttype: application/json",
  "2026-12-01T01:02:04.100000700Z Extensions,",
  "2026-12-01T01:02:04.100000800Z   knativeerrorcode: 400",
  "2026-12-01T01:02:04.100000900Z   knativeerrordata: eyJlcnJvciI6Im1hbGZvcm1lZCJ9",
  "2026-12-01T01:02:04.100001000Z   knativeerrordest: http://memory-scaler.appmonitor.svc.cluster.local",
  "2026-12-01T01:02:04.100001100Z Data,",
  "2026-12-01T01:02:04.100001200Z   {",
  '2026-12-01T01:02:04.100001300Z     "not": "an alert"',
  "2026-12-01T01:02:04.100001400Z   }",
].join("\n");

describe("parseEventDisplay", () => {
  it("reads attributes, extensions, data and when it was printed; passes over event_display's own lines", () => {
    const [event, more] = parseEventDisplay(DEAD_LETTER);
    assert.equal(more, undefined);
    assert.deepEqual(event?.attributes, { specversion: "1.0", type: "com.kubedemo.appmonitor.alert.firing", source: "/appmonitor/test", id: "6f1c", datacontenttype: "application/json" });
    assert.deepEqual(event?.extensions, { knativeerrorcode: "400", knativeerrordata: "eyJlcnJvciI6Im1hbGZvcm1lZCJ9", knativeerrordest: "http://memory-scaler.appmonitor.svc.cluster.local" });
    assert.deepEqual(JSON.parse(event?.data ?? ""), { not: "an alert" });
    assert.equal(event?.at, Date.parse("2026-12-01T01:02:04.100Z"));
  });

  it("reads several events, without timestamps, with and without data", () => {
    const text = ["☁️  cloudevents.Event", "Context Attributes,", "  specversion: 1.0", "  type: a", "  source: /s", "  id: 1",
      "☁️  cloudevents.Event", "Context Attributes,", "  specversion: 1.0", "  type: b", "  source: /s", "  id: 2", "Data,", "  plain text", ""].join("\n");
    const events = parseEventDisplay(text);
    assert.deepEqual(events.map((e) => [e.attributes.type, e.attributes.id, e.data, Number.isNaN(e.at)]), [["a", "1", "", true], ["b", "2", "plain text", true]]);
    assert.deepEqual(events[0]?.extensions, {});
  });

  it("finds nothing in a log without events", () => {
    assert.deepEqual(parseEventDisplay(""), []);
    assert.deepEqual(parseEventDisplay("2026/12/01 01:02:03 failed to parse observability config from env\n"), []);
  });
});
