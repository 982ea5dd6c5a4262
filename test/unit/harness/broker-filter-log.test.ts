// The Broker filter's debug line for each event it is handed, read back: the Trigger, the event's
// id, type and subject, and the ingress's knativearrivaltime, from the text form the CloudEvents
// Go SDK gives the event (knative/eventing v0.50.0 pkg/broker/filter/filter_handler.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseFilterLog, type FilterReceipt } from "../../harness/stack/broker-filter-log.ts";

/** The event as `event.String()` writes it: attributes, then extensions sorted by name, then data. */
const eventText = (attrs: { id: string; type: string; subject?: string; arrival?: string }) => [
  "Context Attributes,",
  "  specversion: 1.0",
  `  type: ${attrs.type}`,
  "  source: https://10.96.0.1:443",
  ...(attrs.subject ? [`  subject: ${attrs.subject}`] : []),
  `  id: ${attrs.id}`,
  "  datacontenttype: application/json",
  "Extensions,",
  ...(attrs.arrival ? [`  knativearrivaltime: ${attrs.arrival}`] : []),
  "  kind: AppMonitor",
  "Data,",
  '  {\n    "id": "not-the-event-id"\n  }',
  "",
].join("\n");

const line = (fields: Record<string, unknown>) => JSON.stringify({ level: "debug", ts: "2026-12-01T01:14:39.577Z", logger: "mt_broker_filter", caller: "filter/filter_handler.go:261", ...fields });

const cases: { name: string; log: string; expected: FilterReceipt[] }[] = [
  {
    name: "a Trigger's receipt with subject and arrival time",
    log: line({ msg: "Received message", trigger: { Namespace: "appmonitor", Name: "rule-sync-appmonitor-add" }, event: eventText({ id: "e1", type: "dev.knative.apiserver.resource.add", subject: "/apis/kubedemo.com/v1/namespaces/demo/appmonitors/m", arrival: "2026-12-01T01:14:39.541234567Z" }) }),
    expected: [{ at: Date.parse("2026-12-01T01:14:39.577Z"), trigger: "appmonitor/rule-sync-appmonitor-add", eventId: "e1", eventType: "dev.knative.apiserver.resource.add", subject: "/apis/kubedemo.com/v1/namespaces/demo/appmonitors/m", arrivedAt: Date.parse("2026-12-01T01:14:39.541Z") }],
  },
  {
    name: "a Trigger written as ns/name, no subject, no arrival time",
    log: line({ msg: "Received message", trigger: "appmonitor/memory-scaler-alert-firing", event: eventText({ id: "e2", type: "com.kubedemo.appmonitor.alert.firing" }) }),
    expected: [{ at: Date.parse("2026-12-01T01:14:39.577Z"), trigger: "appmonitor/memory-scaler-alert-firing", eventId: "e2", eventType: "com.kubedemo.appmonitor.alert.firing" }],
  },
  {
    name: "other messages, text lines and broken JSON are skipped",
    log: [
      line({ msg: "Successfully dispatched message", target: "http://memory-scaler" }),
      "panic: not JSON",
      "{broken",
      line({ msg: "Received message", trigger: { Namespace: "appmonitor" }, event: eventText({ id: "e3", type: "t" }) }),
      line({ msg: "Received message", trigger: "appmonitor/t", event: "no attributes" }),
    ].join("\n"),
    expected: [],
  },
];

for (const c of cases) {
  test(`parseFilterLog: ${c.name}`, () => assert.deepEqual(parseFilterLog(c.log), c.expected));
}
