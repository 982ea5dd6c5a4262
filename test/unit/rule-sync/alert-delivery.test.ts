/** Which firing alerts Alertmanager does not deliver to alert-receiver, and what the Warning says (functions/rule-sync/alert-delivery.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { APPMONITOR_RECEIVER } from "../../../functions/lib/alertmanager-receiver.ts";
import {
  DELIVERY_REASONS, deliveryEventKey, deliveryMessage, describeAlert, findUndelivered, firingAlertsQuery, firingOf, namespaceFilter, type ManagedAlert,
} from "../../../functions/rule-sync/alert-delivery.ts";
import { GENERATED_ALERT_NAMES } from "../../../functions/rule-sync/rule.ts";
import { APPMONITOR_RECEIVER as ROUTING_RECEIVER } from "../../../scripts/alertmanager-routing.ts";

const ours = { alertname: "AppMonitorMemoryHigh", namespace: "lab", pod: "memhog-1", container: "memhog", appmonitor: "mymonitor", severity: "warning" };
/** Alertmanager's copy of `labels`: Prometheus's external label added; delivered to appmonitor unless `status` says otherwise. */
const managed = (labels: Record<string, string>, over: Partial<ManagedAlert> = {}): ManagedAlert => ({
  fingerprint: `fp-${labels.alertname}-${labels.pod ?? labels.namespace}`,
  labels: { ...labels, prometheus: "monitoring/kps-prometheus" },
  startsAt: "2026-05-01T00:00:00Z",
  state: "active",
  inhibitedBy: [],
  silencedBy: [],
  mutedBy: [],
  receivers: [APPMONITOR_RECEIVER],
  ...over,
});
const infoInhibitor = managed({ alertname: "InfoInhibitor", namespace: "lab", severity: "none" });

describe("the queries", () => {
  it("asks Prometheus for every generated alert firing, Alertmanager for the namespace's alerts", () => {
    assert.equal(firingAlertsQuery(), `ALERTS{alertstate="firing", alertname=~"${GENERATED_ALERT_NAMES.join("|")}", appmonitor!=""}`);
    assert.equal(namespaceFilter("lab"), 'namespace="lab"');
  });

  it("firingOf keeps the AppMonitor's own alerts, without __name__ and alertstate", () => {
    const samples = [
      { metric: { __name__: "ALERTS", alertstate: "firing", ...ours } },
      { metric: { __name__: "ALERTS", alertstate: "firing", ...ours, appmonitor: "other" } },
      { metric: { __name__: "ALERTS", alertstate: "firing", ...ours, namespace: "shop" } },
    ];
    assert.deepEqual(firingOf(samples, "lab", "mymonitor"), [ours]);
  });

  it("the receiver rule-sync looks for is the one the routing script writes", () => {
    assert.equal(APPMONITOR_RECEIVER, ROUTING_RECEIVER);
  });
});

describe("findUndelivered", () => {
  const table: { name: string; alertmanager: ManagedAlert[]; cause?: string; inhibitors?: string[] }[] = [
    { name: "delivered: active, routed to appmonitor", alertmanager: [managed(ours)] },
    { name: "delivered beside another receiver (a route with continue)", alertmanager: [managed(ours, { receivers: ["team-pager", APPMONITOR_RECEIVER] })] },
    { name: "not listed by Alertmanager yet: not judged", alertmanager: [] },
    { name: "unprocessed: not judged", alertmanager: [managed(ours, { state: "unprocessed", receivers: [] })] },
    {
      name: "inhibited by InfoInhibitor, named from the same answer",
      alertmanager: [managed(ours, { state: "suppressed", inhibitedBy: [infoInhibitor.fingerprint] }), infoInhibitor],
      cause: "inhibited",
      inhibitors: ['InfoInhibitor{namespace="lab", prometheus="monitoring/kps-prometheus", severity="none"}'],
    },
    {
      name: "inhibited by an alert outside the answer: by fingerprint",
      alertmanager: [managed(ours, { state: "suppressed", inhibitedBy: ["0123abcd"] })],
      cause: "inhibited",
      inhibitors: ["an alert of fingerprint 0123abcd (outside namespace lab)"],
    },
    { name: "inhibited and silenced: inhibited first", alertmanager: [managed(ours, { state: "suppressed", inhibitedBy: ["x"], silencedBy: ["s1"] })], cause: "inhibited", inhibitors: ["an alert of fingerprint x (outside namespace lab)"] },
    { name: "silenced", alertmanager: [managed(ours, { state: "suppressed", silencedBy: ["s1"] })], cause: "silenced", inhibitors: [] },
    { name: "muted by a time interval", alertmanager: [managed(ours, { state: "suppressed", mutedBy: ["weekends"] })], cause: "muted", inhibitors: [] },
    { name: "routed to null", alertmanager: [managed(ours, { receivers: ["null"] })], cause: "notRouted", inhibitors: [] },
    { name: "routed nowhere", alertmanager: [managed(ours, { receivers: [] })], cause: "notRouted", inhibitors: [] },
    { name: "another alert of another pod is not this one", alertmanager: [managed({ ...ours, pod: "memhog-2" }, { receivers: ["null"] })] },
  ];
  for (const row of table) {
    it(row.name, () => {
      const found = findUndelivered([ours], row.alertmanager);
      if (row.cause === undefined) return assert.deepEqual(found, []);
      assert.equal(found.length, 1);
      assert.deepEqual([found[0]?.cause, found[0]?.alert, found[0]?.inhibitors], [row.cause, ours, row.inhibitors]);
    });
  }

  it("an alert Alertmanager holds with Prometheus's external labels is the same alert", () => {
    const [u] = findUndelivered([ours], [managed(ours, { receivers: ["null"] })]);
    assert.equal(u?.managed.labels.prometheus, "monitoring/kps-prometheus");
  });
});

describe("the Warning", () => {
  const inhibited = findUndelivered([ours], [managed(ours, { state: "suppressed", inhibitedBy: [infoInhibitor.fingerprint] }), infoInhibitor])[0];
  const silenced = findUndelivered([ours], [managed(ours, { state: "suppressed", silencedBy: ["5b1d"] })])[0];
  const muted = findUndelivered([ours], [managed(ours, { state: "suppressed", mutedBy: ["nights"] })])[0];
  const misrouted = findUndelivered([ours], [managed(ours, { receivers: ["null"] })])[0];
  const url = "http://alertmanager.test:9093";

  it("a reason per cause", () => {
    assert.deepEqual(DELIVERY_REASONS, { inhibited: "AlertInhibited", silenced: "AlertSilenced", muted: "AlertMuted", notRouted: "AlertNotRouted" });
  });

  it("names the alert, the pod, the Alertmanager, what stopped it and the fix", () => {
    assert.ok(inhibited && silenced && muted && misrouted);
    const head = `AppMonitorMemoryHigh of pod lab/memhog-1, container memhog fires in Prometheus, but the Alertmanager at ${url}`;
    const cases: [string, RegExp[]][] = [
      [deliveryMessage(inhibited, url), [/inhibits it \(inhibited by InfoInhibitor\{namespace="lab", prometheus="monitoring\/kps-prometheus", severity="none"\}\)/, /ALERT_SEVERITY, the chart's alertSeverity/, /inhibit_rules/]],
      [deliveryMessage(silenced, url), [/silences it \(silence 5b1d\)/, /amtool silence expire 5b1d/]],
      [deliveryMessage(muted, url), [/mutes it \(time interval nights of its route\)/, /mute_time_intervals/]],
      [deliveryMessage(misrouted, url), [/routes it to the receiver null, not appmonitor/, /Put appmonitor's route first/, /docs\/install\.md, "Routing and rules"/]],
    ];
    for (const [message, patterns] of cases) {
      assert.ok(message.startsWith(head), message);
      assert.match(message, /alert-receiver never gets it/);
      for (const pattern of patterns) assert.match(message, pattern);
      assert.ok(message.length <= 1024, `fits an Event's note: ${message.length}`);
    }
  });

  it("one key per firing and cause", () => {
    assert.ok(inhibited && misrouted);
    assert.notEqual(deliveryEventKey(inhibited), deliveryEventKey(misrouted));
    const later = findUndelivered([ours], [managed(ours, { receivers: ["null"], startsAt: "2026-05-01T01:00:00Z" })])[0];
    assert.ok(later);
    assert.notEqual(deliveryEventKey(later), deliveryEventKey(misrouted), "a new firing");
    assert.equal(deliveryEventKey(findUndelivered([ours], [managed(ours, { receivers: ["null"] })])[0] ?? later), deliveryEventKey(misrouted), "the same firing seen again");
  });

  it("describeAlert", () => {
    assert.equal(describeAlert({ severity: "none", alertname: "InfoInhibitor", namespace: "lab" }), 'InfoInhibitor{namespace="lab", severity="none"}');
  });
});
