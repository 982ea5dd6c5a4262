/**
 * alert-receiver with real components: Debian's Alertmanager posts webhooks (bearer auth,
 * send_resolved) to alert-receiver servers running in this process, which send CloudEvents
 * to test sinks that decode them with the CloudEvents SDK. Plus hostile payloads
 * (fast-check) and the launcher as a child process.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { fn } from "../../functions/alert-receiver/index.ts";
import { ALERT_BYTES, LARGE_PAYLOAD_BYTES, SUGGESTED_MAX_ALERTS, WEBHOOK_BODY_LIMIT_BYTES, worstCasePayloadBytes } from "../../functions/alert-receiver/limits.ts";
import { DEFAULT_SOURCE, eventId } from "../../functions/alert-receiver/mapping.ts";
import { FIRING_TYPE, RESOLVED_TYPE, type AlertEventData } from "../../functions/lib/alert-event.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import { startAlertmanager } from "../support/alertmanager.ts";
import type { PostableAlert, TestAlertmanager } from "../support/alertmanager.ts";
import { startProcess, tailOf } from "../support/child-process.ts";
import { startSink } from "../support/cloudevent-sink.ts";
import type { ReceivedEvent, TestSink } from "../support/cloudevent-sink.ts";
import { startFunction } from "../support/function-server.ts";
import { scrape } from "../support/prometheus-text.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";

const token = randomBytes(24).toString("base64url");
/** Retry quickly inside alert-receiver so Alertmanager's own retries are what recovers. */
const fastDelivery = { DELIVERY_MAX_ATTEMPTS: "2", DELIVERY_BASE_DELAY_MS: "10", DELIVERY_MAX_DELAY_MS: "20", DELIVERY_TIMEOUT_MS: "1000" };

function dataOf(received: ReceivedEvent): AlertEventData {
  return received.event.data as AlertEventData;
}

function eventsOf(sink: TestSink, alertname: string): ReceivedEvent[] {
  return sink.received.filter((received) => dataOf(received).alertname === alertname);
}

/** Distinct events (by id) of `alertname` with `type`, once there are `count` of them. */
function distinct(sink: TestSink, alertname: string, type: string, count: number): Map<string, ReceivedEvent> | undefined {
  const byId = new Map<string, ReceivedEvent>();
  for (const received of eventsOf(sink, alertname)) if (received.event.type === type) byId.set(received.event.id, received);
  return byId.size >= count ? byId : undefined;
}

/** An alert for pod `pod` in namespace `ns` that started a minute ago. */
function memoryAlert(alertname: string, ns: string, pod: string, startsAt: string, extra: Record<string, string> = {}): PostableAlert {
  return {
    labels: { alertname, namespace: ns, pod, container: "memhog", appmonitor: "mymonitor", ...extra },
    annotations: { value: "81.25", summary: `${pod} uses 81.25% of its memory limit` },
    startsAt,
    generatorURL: `http://prometheus.test:9090/graph?g0.expr=${alertname}`,
  };
}

const minuteAgo = (): string => new Date(Date.now() - 60_000).toISOString();

describe("alert-receiver behind a real Alertmanager", () => {
  let sink: TestSink;
  let structuredSink: TestSink;
  let receiver: RunningServer;
  let structuredReceiver: RunningServer;
  let alertmanager: TestAlertmanager;

  before(async () => {
    sink = await startSink();
    structuredSink = await startSink();
    receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token, ...fastDelivery });
    structuredReceiver = await startFunction(fn, { K_SINK: structuredSink.url, WEBHOOK_TOKEN: token, CE_MODE: "structured", ...fastDelivery });
    const webhook = (url: string, credentials: string) => ({
      url: `${url}/`,
      send_resolved: true,
      http_config: { authorization: { type: "Bearer", credentials } },
    });
    alertmanager = await startAlertmanager({
      route: {
        receiver: "binary",
        group_by: ["alertname"],
        group_wait: "100ms",
        group_interval: "500ms",
        repeat_interval: "1s",
        routes: [
          { receiver: "structured", matchers: ['testroute="structured"'] },
          { receiver: "wrong-token", matchers: ['testroute="wrong-token"'] },
        ],
      },
      receivers: [
        { name: "binary", webhook_configs: [webhook(receiver.url, token)] },
        { name: "structured", webhook_configs: [webhook(structuredReceiver.url, token)] },
        { name: "wrong-token", webhook_configs: [webhook(receiver.url, `${token}-wrong`)] },
      ],
    });
  });

  after(async () => {
    await alertmanager?.stop();
    await receiver?.close();
    await structuredReceiver?.close();
    await sink?.stop();
    await structuredSink?.stop();
  });

  it("turns each alert into one CloudEvent with the right attributes and data", async () => {
    const startsAt = minuteAgo();
    await alertmanager.postAlerts([
      memoryAlert("MemoryHigh", "default", "memhog-1", startsAt),
      memoryAlert("MemoryHigh", "team-a", "memhog-2", startsAt),
      { labels: { alertname: "MemoryHigh", instance: "node-1" }, startsAt },
    ]);
    const events = await waitUntil("two firing events", () => distinct(sink, "MemoryHigh", FIRING_TYPE, 2));
    assert.equal(events.size, 2, "the alert without namespace/pod gives no event");
    const subjects = [...events.values()].map((received) => received.event.subject).sort();
    assert.deepEqual(subjects, ["namespaces/default/pods/memhog-1", "namespaces/team-a/pods/memhog-2"]);
    for (const received of events.values()) {
      const { event } = received;
      const data = dataOf(received);
      assert.equal(received.mode, "binary");
      assert.equal(received.headers["ce-id"], event.id);
      assert.equal(event.specversion, "1.0");
      assert.equal(event.source, alertmanager.externalUrl);
      assert.equal(event.time, startsAt);
      assert.equal(event.datacontenttype, "application/json");
      assert.equal(data.status, "firing");
      assert.equal(data.container, "memhog");
      assert.equal(data.appmonitor, "mymonitor");
      assert.equal(data.trigger, "threshold");
      assert.equal(data.value, 81.25);
      assert.equal(data.endsAt, null);
      assert.equal(Date.parse(data.startsAt), Date.parse(startsAt));
      assert.match(data.fingerprint, /^[0-9a-f]{16}$/);
      assert.equal(event.id, eventId(data.fingerprint, data.startsAt, "firing"));
      assert.equal(data.labels.namespace, data.namespace);
      assert.equal(data.annotations.summary, `${data.pod} uses 81.25% of its memory limit`);
      assert.equal(data.generatorURL, "http://prometheus.test:9090/graph?g0.expr=MemoryHigh");
    }
    // Alertmanager may flush the third alert of the group in a later notification (group_interval).
    await waitUntil("the alert without namespace/pod counted as dropped", async () =>
      (await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_alerts_dropped_total", { reason: "no-namespace-or-pod" })) >= 1,
    );
  });

  it("says an OOM-kill alert's event is trigger oomKilled, with no value when the rule sets none", async () => {
    const alert = memoryAlert("AppMonitorOOMKilled", "default", "memhog-oom", minuteAgo());
    await alertmanager.postAlerts([{ ...alert, annotations: { summary: "Container memhog of Pod default/memhog-oom was OOM-killed" } }]);
    const events = await waitUntil("the OOM-kill event", () => distinct(sink, "AppMonitorOOMKilled", FIRING_TYPE, 1));
    const [data] = [...events.values()].map(dataOf);
    assert.equal(data?.trigger, "oomKilled");
    assert.equal(data?.value, undefined);
    assert.equal(data?.container, "memhog");
  });

  it("gives re-sent alerts the same ids", async () => {
    const startsAt = minuteAgo();
    const alerts = [memoryAlert("MemoryResent", "default", "memhog-1", startsAt), memoryAlert("MemoryResent", "default", "memhog-2", startsAt)];
    await alertmanager.postAlerts(alerts);
    const first = await waitUntil("two firing events", () => distinct(sink, "MemoryResent", FIRING_TYPE, 2));
    // Alertmanager repeats a firing group every repeat_interval; post again as Prometheus would, too.
    await alertmanager.postAlerts(alerts);
    await waitUntil("each id delivered at least three times", () =>
      [...first.keys()].every((id) => sink.received.filter((received) => received.event.id === id).length >= 3),
    );
    assert.equal(distinct(sink, "MemoryResent", FIRING_TYPE, 0)?.size, 2, "re-sends bring no new ids");
  });

  it("sends resolved events when the alerts resolve", async () => {
    const startsAt = minuteAgo();
    const alerts = [memoryAlert("MemoryResolved", "default", "memhog-1", startsAt), memoryAlert("MemoryResolved", "default", "memhog-2", startsAt)];
    await alertmanager.postAlerts(alerts);
    const firing = await waitUntil("two firing events", () => distinct(sink, "MemoryResolved", FIRING_TYPE, 2));
    const endsAt = new Date(Date.now() - 1_000).toISOString();
    await alertmanager.postAlerts(alerts.map((alert) => ({ ...alert, endsAt })));
    const resolved = await waitUntil("two resolved events", () => distinct(sink, "MemoryResolved", RESOLVED_TYPE, 2));
    for (const received of resolved.values()) {
      const data = dataOf(received);
      assert.equal(data.status, "resolved");
      assert.equal(received.event.time, endsAt);
      assert.equal(Date.parse(data.endsAt ?? ""), Date.parse(endsAt));
      assert.equal(received.event.id, eventId(data.fingerprint, data.startsAt, "resolved"));
      assert.ok(!firing.has(received.event.id), "a resolved event has its own id");
      const firingOfSamePod = [...firing.values()].find((f) => dataOf(f).pod === data.pod);
      assert.equal(firingOfSamePod && dataOf(firingOfSamePod).fingerprint, data.fingerprint);
    }
  });

  it("sends structured mode when configured, decodable by the SDK", async () => {
    const startsAt = minuteAgo();
    await alertmanager.postAlerts([memoryAlert("MemoryStructured", "default", "memhog-9", startsAt, { testroute: "structured" })]);
    const events = await waitUntil("a structured event", () => distinct(structuredSink, "MemoryStructured", FIRING_TYPE, 1));
    const [received] = [...events.values()];
    assert.ok(received);
    assert.equal(received.mode, "structured");
    assert.match(received.headers["content-type"] ?? "", /^application\/cloudevents\+json/);
    assert.equal(received.headers["ce-id"], undefined);
    assert.equal(received.event.subject, "namespaces/default/pods/memhog-9");
    assert.equal(received.event.time, startsAt);
    assert.equal(dataOf(received).value, 81.25);
    assert.equal(eventsOf(sink, "MemoryStructured").length, 0, "routed to the structured receiver only");
  });

  it("keeps labels and annotations named __proto__ and constructor, in both content modes", async () => {
    const startsAt = minuteAgo();
    // JSON.parse: own properties named __proto__, as Alertmanager's JSON has them.
    const odd = (extra: Record<string, string>): PostableAlert => ({
      labels: { ...(JSON.parse('{"__proto__": "proto-label", "constructor": "ctor-label"}') as Record<string, string>), ...memoryAlert("MemoryProto", "default", "memhog-p", startsAt, extra).labels },
      annotations: JSON.parse('{"__proto__": "proto-annotation", "value": "90"}') as Record<string, string>,
      startsAt,
    });
    const alert = odd({});
    assert.equal(Object.getOwnPropertyDescriptor(alert.labels, "__proto__")?.value, "proto-label", "the test posts the label");
    await alertmanager.postAlerts([alert, odd({ testroute: "structured" })]);
    const binary = await waitUntil("the binary event", () => distinct(sink, "MemoryProto", FIRING_TYPE, 1));
    const structured = await waitUntil("the structured event", () => distinct(structuredSink, "MemoryProto", FIRING_TYPE, 1));
    for (const received of [...binary.values(), ...structured.values()]) {
      const data = dataOf(received);
      assert.equal(Object.getOwnPropertyDescriptor(data.labels, "__proto__")?.value, "proto-label", `${received.mode}: ${JSON.stringify(data.labels)}`);
      assert.equal(Object.getOwnPropertyDescriptor(data.labels, "constructor")?.value, "ctor-label");
      assert.equal(Object.getOwnPropertyDescriptor(data.annotations, "__proto__")?.value, "proto-annotation");
      assert.equal(data.value, 90);
    }
  });

  it("loses nothing while the sink is down: Alertmanager retries until it is back", async () => {
    const failuresBefore = await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_delivery_failures_total");
    const amFailuresBefore = await scrape(`${alertmanager.url}/metrics`, "alertmanager_notification_requests_failed_total", { integration: "webhook" });
    await sink.stop();
    const startsAt = minuteAgo();
    await alertmanager.postAlerts([memoryAlert("MemorySinkDown", "default", "memhog-1", startsAt), memoryAlert("MemorySinkDown", "default", "memhog-2", startsAt)]);
    await waitUntil("alert-receiver to fail a delivery", async () =>
      (await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_delivery_failures_total")) > failuresBefore,
    );
    // Per attempt (alertmanager_notifications_failed_total only counts once Alertmanager gives up on a flush).
    await waitUntil("Alertmanager to see the webhook fail", async () =>
      (await scrape(`${alertmanager.url}/metrics`, "alertmanager_notification_requests_failed_total", { integration: "webhook" })) > amFailuresBefore,
      { timeoutMs: 30_000 },
    );
    assert.equal(eventsOf(sink, "MemorySinkDown").length, 0);
    await sink.start();
    const events = await waitUntil("both events after the sink is back", () => distinct(sink, "MemorySinkDown", FIRING_TYPE, 2), { timeoutMs: 30_000 });
    assert.deepEqual([...events.values()].map((received) => dataOf(received).pod).sort(), ["memhog-1", "memhog-2"]);
  });

  it("answers a wrong token with 401 and emits nothing", async () => {
    const before = await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_webhooks_total", { outcome: "unauthorized" });
    await alertmanager.postAlerts([memoryAlert("MemoryWrongToken", "default", "memhog-1", minuteAgo(), { testroute: "wrong-token" })]);
    await waitUntil("alert-receiver to refuse Alertmanager's webhook", async () =>
      (await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_webhooks_total", { outcome: "unauthorized" })) > before,
    );
    assert.equal(eventsOf(sink, "MemoryWrongToken").length, 0);

    const payload = JSON.stringify({
      version: "4",
      status: "firing",
      receiver: "direct",
      alerts: [{ status: "firing", labels: { alertname: "MemoryDirect", namespace: "default", pod: "p" }, annotations: {}, startsAt: minuteAgo(), endsAt: "0001-01-01T00:00:00Z", fingerprint: "0123456789abcdef" }],
    });
    for (const authorization of [undefined, `Bearer ${token}x`, `Basic ${Buffer.from(`u:${token}`).toString("base64")}`, token]) {
      const response = await fetch(receiver.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
        body: payload,
      });
      assert.equal(response.status, 401, `authorization ${authorization ?? "absent"}`);
      assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="alert-receiver"');
    }
    assert.equal(eventsOf(sink, "MemoryDirect").length, 0);
    const accepted = await fetch(receiver.url, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: payload });
    assert.equal(accepted.status, 200, "the same payload with the right token is accepted");
    await waitUntil("the accepted event", () => eventsOf(sink, "MemoryDirect").length === 1);
  });
});

describe("alert-receiver delivery to a failing sink", () => {
  let sink: TestSink;
  let receiver: RunningServer;
  /** alert-receiver's log lines, parsed. */
  const logs: { msg?: string; status?: number; eventId?: string; subject?: string; fingerprint?: string; bytes?: number; alerts?: number; receiver?: string; groupKey?: string }[] = [];
  before(async () => {
    sink = await startSink();
    receiver = await startFunction(
      fn,
      { K_SINK: sink.url, WEBHOOK_TOKEN: token, DELIVERY_MAX_ATTEMPTS: "3", DELIVERY_BASE_DELAY_MS: "5", DELIVERY_MAX_DELAY_MS: "10", LOG_LEVEL: "info" },
      { logDestination: { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) } },
    );
  });
  after(async () => {
    await receiver?.close();
    await sink?.stop();
  });
  const post = (alertname: string, pods?: string[]): Promise<Response> =>
    fetch(receiver.url, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(validWebhook(alertname, pods)) });
  const metric = (name: string, labels: Record<string, string> = {}): Promise<number> => scrape(`${receiver.url}/metrics`, `appmonitor_alert_receiver_${name}`, labels);
  const podOf = (event: { data?: unknown }): string => (event.data as AlertEventData).pod;

  /** Summary of a 200 and the details of a 502. */
  interface Answer {
    emitted?: number;
    refused?: { id: string; fingerprint: string; status: number; error: string }[];
    error?: string;
    details?: { delivered: number; refused: { status: number }[]; failed: { id: string; error: string }[] };
  }

  for (const status of [503, 429, 404, 409]) {
    it(`answers 502 when the sink answers ${status}, after 3 tries, and 200 once it accepts`, async () => {
      const retriesBefore = await metric("delivery_retries_total");
      const failuresBefore = await metric("delivery_failures_total");
      sink.failWith(status);
      const refused = await post(`MemoryFailing${status}`);
      assert.equal(refused.status, 502);
      const body = (await refused.json()) as Answer;
      assert.match(body.error ?? "", /could not deliver 1 of 1 events/);
      assert.equal(body.details?.delivered, 0);
      assert.deepEqual(body.details?.refused, []);
      assert.match(body.details?.failed[0]?.error ?? "", new RegExp(`sink answered ${status}`));
      assert.equal((await metric("delivery_retries_total")) - retriesBefore, 2);
      assert.equal((await metric("delivery_failures_total")) - failuresBefore, 1);
      sink.failWith(undefined);
      assert.equal((await post(`MemoryFailing${status}`)).status, 200);
      assert.equal(eventsOf(sink, `MemoryFailing${status}`).length, 1);
    });
  }

  for (const status of [400, 403, 413, 422]) {
    it(`answers 200 when the sink refuses the event with ${status}: tried once, logged, counted, listed as refused`, async () => {
      const retriesBefore = await metric("delivery_retries_total");
      const failuresBefore = await metric("delivery_failures_total");
      const refusedBefore = await metric("events_refused_total", { status: String(status) });
      sink.failWith(status);
      const answer = await post(`MemoryRefused${status}`);
      sink.failWith(undefined);
      assert.equal(answer.status, 200);
      const body = (await answer.json()) as Answer;
      assert.equal(body.emitted, 0);
      assert.deepEqual(body.refused?.map((r) => [r.fingerprint, r.status]), [["fedcba9876543210", status]]);
      assert.match(body.refused?.[0]?.error ?? "", new RegExp(`sink answered ${status}`));
      assert.equal((await metric("events_refused_total", { status: String(status) })) - refusedBefore, 1);
      assert.equal((await metric("delivery_retries_total")) - retriesBefore, 0, "a refusal is not retried");
      assert.equal((await metric("delivery_failures_total")) - failuresBefore, 0, "a refusal is not a failure");
      const line = logs.find((entry) => entry.msg?.startsWith("sink refused the event") && entry.eventId === body.refused?.[0]?.id);
      assert.deepEqual([line?.status, line?.subject, line?.fingerprint], [status, "namespaces/default/pods/memhog-1", "fedcba9876543210"]);
    });
  }

  it("handles a payload near the body limit and warns with its size, alert count, receiver and groupKey", async () => {
    const payload = validWebhook("MemoryLargePayload", ["big-1", "big-2"]) as { alerts: { annotations: Record<string, string> }[] };
    for (const alert of payload.alerts) alert.annotations.description = "d".repeat(400 * 1024);
    const body = JSON.stringify({ ...payload, groupKey: '{}:{alertname="MemoryLargePayload"}' });
    assert.ok(body.length > LARGE_PAYLOAD_BYTES && body.length < WEBHOOK_BODY_LIMIT_BYTES);
    const answer = await fetch(receiver.url, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body });
    assert.equal(answer.status, 200);
    const line = logs.find((entry) => entry.msg?.startsWith("webhook payload near the body limit"));
    assert.deepEqual([line?.bytes, line?.alerts, line?.receiver, line?.groupKey], [body.length, 2, "direct", '{}:{alertname="MemoryLargePayload"}']);
    assert.ok((await metric("webhook_payload_bytes_bucket", { le: String(WEBHOOK_BODY_LIMIT_BYTES) })) >= 1);
  });

  it("reports several alerts apart: delivered and refused → 200; one that failed → 502 with all three", async () => {
    sink.failWith(400, (event) => podOf(event) === "refused-1");
    const partial = await post("MemoryPartial", ["ok-1", "refused-1", "ok-2"]);
    assert.equal(partial.status, 200);
    const summary = (await partial.json()) as Answer;
    assert.equal(summary.emitted, 2);
    assert.deepEqual(summary.refused?.map((r) => r.status), [400]);
    assert.deepEqual(eventsOf(sink, "MemoryPartial").map((received) => podOf(received.event)).sort(), ["ok-1", "ok-2"]);

    sink.failWith(503, (event) => podOf(event) === "down-1");
    const failedToo = await post("MemoryPartial", ["ok-3", "down-1"]);
    sink.failWith(undefined);
    assert.equal(failedToo.status, 502);
    const details = ((await failedToo.json()) as Answer).details;
    assert.equal(details?.delivered, 1);
    assert.equal(details?.failed.length, 1);
  });
});

describe("alert-receiver's answers as a real Alertmanager takes them: refusals and payload size", () => {
  let sink: TestSink;
  let receiver: RunningServer;
  let alertmanager: TestAlertmanager;
  before(async () => {
    sink = await startSink();
    receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token });
    const webhook = (maxAlerts: number) => ({ url: `${receiver.url}/`, max_alerts: maxAlerts, http_config: { authorization: { type: "Bearer", credentials: token } } });
    // One notification per group, no repeats: every request Alertmanager makes is counted. The
    // alerts start now, so group_wait holds the first notification until a whole postAlerts
    // call is in the group (an alert that started more than group_wait ago is flushed at once).
    alertmanager = await startAlertmanager({
      route: { receiver: "suggested", group_by: ["alertname"], group_wait: "3s", group_interval: "1h", repeat_interval: "1h", routes: [{ receiver: "earlier", matchers: ['testroute="earlier"'] }] },
      receivers: [
        { name: "suggested", webhook_configs: [webhook(SUGGESTED_MAX_ALERTS)] },
        { name: "earlier", webhook_configs: [webhook(1000)] },
      ],
    });
  });
  after(async () => {
    await alertmanager?.stop();
    await receiver?.close();
    await sink?.stop();
  });
  const amMetric = (name: string): Promise<number> => scrape(`${alertmanager.url}/metrics`, name, { integration: "webhook" });
  const metric = (name: string, labels: Record<string, string> = {}): Promise<number> => scrape(`${receiver.url}/metrics`, name, labels);
  /** Alertmanager's webhook requests and failures so far. */
  const amCounts = async (): Promise<number[]> =>
    Promise.all(["alertmanager_notification_requests_total", "alertmanager_notification_requests_failed_total", "alertmanager_notifications_failed_total"].map(amMetric));
  const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 3_000));

  /**
   * The `index`th of a group of alerts of ALERT_BYTES each in Alertmanager's JSON: a generated
   * rule's labels with the longest names, its summary, a long generatorURL, and a `cluster`
   * label (as external_labels add) padding it to the budget.
   */
  function budgetAlert(alertname: string, index: number, startsAt: string, extra: Record<string, string> = {}): PostableAlert {
    const pod = `${"p".repeat(240)}-${index}`;
    const labels: Record<string, string> = { alertname, namespace: "n".repeat(63), pod, container: "c".repeat(63), appmonitor: "a".repeat(253), severity: "warning", ...extra };
    const annotations = { summary: `Container ${labels.container} of Pod ${labels.namespace}/${pod} uses 91.0% of its memory limit (AppMonitor ${labels.appmonitor}, threshold 75%).`, value: "91" };
    const generatorURL = `http://prometheus.test:9090/graph?g0.expr=${"x".repeat(2_000)}&g0.tab=1`;
    const asSent = (cluster: string): string =>
      JSON.stringify({ status: "firing", labels: { ...labels, cluster }, annotations, startsAt, endsAt: "0001-01-01T00:00:00Z", generatorURL: generatorURL.replace("&", "\\u0026"), fingerprint: "0123456789abcdef" });
    return { labels: { ...labels, cluster: "k".repeat(ALERT_BYTES - asSent("").length) }, annotations, startsAt, generatorURL };
  }

  it("a refusal by the sink is a notification delivered: Alertmanager neither fails it nor sends it again", async () => {
    const [requests, failed] = await amCounts();
    sink.failWith(400, (event) => (event.data as AlertEventData).pod === "refused-1");
    const startsAt = new Date().toISOString();
    await alertmanager.postAlerts([memoryAlert("MemoryRefusedByAm", "default", "ok-1", startsAt), memoryAlert("MemoryRefusedByAm", "default", "refused-1", startsAt)]);
    await waitUntil("the accepted event", () => eventsOf(sink, "MemoryRefusedByAm").length === 1);
    await waitUntil("the refusal to be counted", async () => (await metric("appmonitor_alert_receiver_events_refused_total", { status: "400" })) === 1);
    await settle();
    sink.failWith(undefined);
    const [requestsAfter, failedAfter] = await amCounts();
    assert.deepEqual([(requestsAfter ?? 0) - (requests ?? 0), (failedAfter ?? 0) - (failed ?? 0)], [1, 0], "one request, not failed, not retried");
    assert.deepEqual(eventsOf(sink, "MemoryRefusedByAm").map((received) => dataOf(received).pod), ["ok-1"]);
  });

  it(`with the suggested max_alerts (${SUGGESTED_MAX_ALERTS}), 80 alerts of 8 KiB arrive as one payload under the worst case, the rest counted as truncated`, async () => {
    const [requests, failed] = await amCounts();
    const truncatedBefore = await metric("appmonitor_alert_receiver_alerts_truncated_total");
    const bytesBefore = await metric("appmonitor_alert_receiver_webhook_payload_bytes_sum");
    const startsAt = new Date().toISOString();
    await alertmanager.postAlerts(Array.from({ length: 80 }, (_, i) => budgetAlert("MemoryBudget", i, startsAt)));
    await waitUntil(`${SUGGESTED_MAX_ALERTS} events`, () => eventsOf(sink, "MemoryBudget").length === SUGGESTED_MAX_ALERTS, { timeoutMs: 30_000 });
    await settle();
    const bytes = (await metric("appmonitor_alert_receiver_webhook_payload_bytes_sum")) - bytesBefore;
    assert.ok(bytes > SUGGESTED_MAX_ALERTS * ALERT_BYTES * 0.95 && bytes <= worstCasePayloadBytes(SUGGESTED_MAX_ALERTS), `payload of ${bytes} bytes`);
    assert.ok(bytes < WEBHOOK_BODY_LIMIT_BYTES * 0.6, `payload of ${bytes} bytes`);
    assert.equal((await metric("appmonitor_alert_receiver_alerts_truncated_total")) - truncatedBefore, 80 - SUGGESTED_MAX_ALERTS);
    const [requestsAfter, failedAfter] = await amCounts();
    assert.deepEqual([(requestsAfter ?? 0) - (requests ?? 0), (failedAfter ?? 0) - (failed ?? 0)], [1, 0]);
    assert.equal(eventsOf(sink, "MemoryBudget").length, SUGGESTED_MAX_ALERTS, "sent once");
  });

  it("with the earlier max_alerts: 1000, 130 such alerts are over 1 MiB: 413, not retried, all lost; Alertmanager's log names the receiver and the count", async () => {
    const [requests, , givenUp] = await amCounts();
    const tooLarge = { route: "function", method: "POST", code: "413" };
    const refusedBefore = await metric("appmonitor_http_requests_total", tooLarge);
    const [oversizeBefore, oversizeBytesBefore] = await Promise.all([metric("appmonitor_http_oversize_bodies_total"), metric("appmonitor_http_oversize_body_bytes_total")]);
    const startsAt = new Date().toISOString();
    await alertmanager.postAlerts(Array.from({ length: 130 }, (_, i) => budgetAlert("MemoryTooLarge", i, startsAt, { testroute: "earlier" })));
    await waitUntil("alert-receiver's runtime to answer 413", async () => (await metric("appmonitor_http_requests_total", tooLarge)) === refusedBefore + 1, { timeoutMs: 30_000 });
    await waitUntil("Alertmanager to give up", async () => ((await amCounts())[2] ?? 0) === (givenUp ?? 0) + 1, { timeoutMs: 30_000 });
    await settle();
    const [requestsAfter] = await amCounts();
    assert.equal((requestsAfter ?? 0) - (requests ?? 0), 1, "a 4xx is not retried");
    assert.equal((await metric("appmonitor_http_requests_total", tooLarge)) - refusedBefore, 1);
    // A trace of its own: the refused payload and its size, as Alertmanager declared it (130 alerts of 8 KiB and the envelope).
    assert.equal((await metric("appmonitor_http_oversize_bodies_total")) - oversizeBefore, 1);
    const refusedBytes = (await metric("appmonitor_http_oversize_body_bytes_total")) - oversizeBytesBefore;
    assert.ok(refusedBytes > 130 * ALERT_BYTES && refusedBytes <= worstCasePayloadBytes(130), `${refusedBytes} bytes`);
    assert.equal(eventsOf(sink, "MemoryTooLarge").length, 0);
    const line = alertmanager.process.output().split("\n").find((l) => l.includes("Notify for alerts failed") && l.includes("earlier"));
    assert.ok(line !== undefined, tailOf(alertmanager.process));
    assert.match(line, /num_alerts=130/);
    assert.match(line, /413/);
  });
});

/**
 * A sink of this test's own: counts the requests it gets and the ones still open, and answers
 * each as `answer` says (by default never: the request is held until the sender lets go).
 */
async function startRawSink(answer: (res: ServerResponse) => void = () => undefined): Promise<{ url: string; requests: () => number; open: () => number; stop: () => Promise<void> }> {
  let requests = 0;
  let open = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests += 1;
    open += 1;
    res.on("close", () => (open -= 1));
    req.resume();
    req.on("end", () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`,
    requests: () => requests,
    open: () => open,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Answers 202 at once, then trickles its body a byte a second, never ending it. */
function trickle(res: ServerResponse): void {
  res.writeHead(202, { "content-type": "text/plain" });
  const timer = setInterval(() => res.write("."), 1_000);
  res.on("close", () => clearInterval(timer));
}

describe("alert-receiver's deadline: the webhook ends in time whatever the sink does", () => {
  /** The 5xx answer's details. */
  interface Failure {
    error?: string;
    details?: { delivered: number; refused: unknown[]; failed: { id: string; error: string; attempts: number }[] };
  }
  const post = (url: string, webhook: object, signal?: AbortSignal): Promise<Response> =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(webhook), ...(signal === undefined ? {} : { signal }) });
  const metric = (server: RunningServer, name: string, labels: Record<string, string> = {}): Promise<number> => scrape(`${server.url}/metrics`, name, labels);

  it("a sink that answers 202 and trickles its body a byte a second: each try is cut at DELIVERY_TIMEOUT_MS, body included", async (t) => {
    const sink = await startRawSink(trickle);
    t.after(() => sink.stop());
    const receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token, DELIVERY_TIMEOUT_MS: "1500", DELIVERY_MAX_ATTEMPTS: "2", DELIVERY_BASE_DELAY_MS: "10", DELIVERY_MAX_DELAY_MS: "20", WEBHOOK_DEADLINE_MS: "20000" });
    t.after(() => receiver.close());
    const started = performance.now();
    const answer = await post(receiver.url, validWebhook("MemoryTrickleTry"));
    const elapsedMs = performance.now() - started;
    assert.equal(answer.status, 502, "both tries failed before the deadline");
    const body = (await answer.json()) as Failure;
    assert.deepEqual(body.details?.failed.map((f) => [f.attempts, f.error]), [[2, "answer 202 not complete within 1500 ms"]]);
    assert.equal(sink.requests(), 2);
    assert.ok(elapsedMs < 20_000, `answered after ${Math.round(elapsedMs)} ms, not at the deadline`);
    await waitUntil("the sink's connections closed by alert-receiver", () => sink.open() === 0);
  });

  it("the same sink with tries enough for half a minute: the webhook ends by WEBHOOK_DEADLINE_MS with 504", async (t) => {
    const sink = await startRawSink(trickle);
    t.after(() => sink.stop());
    const deadlineMs = 3_000;
    const receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token, DELIVERY_TIMEOUT_MS: "1500", DELIVERY_MAX_ATTEMPTS: "20", DELIVERY_BASE_DELAY_MS: "10", DELIVERY_MAX_DELAY_MS: "20", WEBHOOK_DEADLINE_MS: String(deadlineMs) });
    t.after(() => receiver.close());
    const started = performance.now();
    const answer = await post(receiver.url, validWebhook("MemoryTrickleDeadline", ["trickle-1", "trickle-2"]));
    const elapsedMs = performance.now() - started;
    assert.equal(answer.status, 504);
    const body = (await answer.json()) as Failure;
    assert.match(body.error ?? "", /could not deliver 2 of 2 events within the webhook deadline of 3000 ms/);
    assert.ok(body.details?.failed.every((f) => f.attempts >= 2 && /stopped: the webhook deadline of 3000 ms passed/.test(f.error)), JSON.stringify(body.details));
    // The deadline is the contract; the second is for writing the answer on a busy machine.
    assert.ok(elapsedMs >= deadlineMs && elapsedMs < deadlineMs + 1_000, `answered after ${Math.round(elapsedMs)} ms`);
    assert.equal(await metric(receiver, "appmonitor_alert_receiver_webhooks_total", { outcome: "deadline" }), 1);
    await waitUntil("the tries in flight stopped: the sink's connections closed", () => sink.open() === 0);
  });

  it("a sink slow to answer each of 64 alerts: the webhook ends by the deadline with 504; what was not sent by then never is", async (t) => {
    const sink = await startSink();
    t.after(() => sink.stop());
    sink.answerAfter(700);
    const deadlineMs = 3_000;
    const receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token, DELIVERY_CONCURRENCY: "4", WEBHOOK_DEADLINE_MS: String(deadlineMs) });
    t.after(() => receiver.close());
    const pods = Array.from({ length: 64 }, (_, i) => `slow-${i}`);
    const started = performance.now();
    const answer = await post(receiver.url, validWebhook("MemorySlowSink", pods));
    const elapsedMs = performance.now() - started;
    assert.equal(answer.status, 504, "64 events, 4 at a time, 0.7 s each, would take 11 s");
    assert.ok(elapsedMs >= deadlineMs && elapsedMs < deadlineMs + 1_000, `answered after ${Math.round(elapsedMs)} ms`);
    const { details } = (await answer.json()) as Failure;
    assert.ok(details !== undefined);
    assert.ok(details.delivered >= 4 && details.delivered < 64, `delivered ${details.delivered}`);
    assert.equal(details.delivered + details.failed.length, 64);
    const unsent = details.failed.filter((f) => f.attempts === 0);
    assert.ok(unsent.length > 0 && unsent.every((f) => /^not sent: the webhook deadline of 3000 ms passed$/.test(f.error)), JSON.stringify(details.failed.slice(0, 3)));
    // Whatever reached the sink before the deadline has been answered (and kept) by now.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const reached = new Set(eventsOf(sink, "MemorySlowSink").map((received) => received.event.id));
    assert.ok(unsent.every((f) => !reached.has(f.id)), "an event not sent by the deadline is not sent after it");
    assert.equal(await metric(receiver, "appmonitor_alert_receiver_delivery_failures_total"), details.failed.length);
  });

  it("a sender that gives up before the answer: delivery stops, the request is logged and counted as aborted, not as answered", async (t) => {
    const sink = await startRawSink();
    t.after(() => sink.stop());
    const logs: { msg?: string; aborted?: boolean; status?: number | null; requestId?: string; level?: string }[] = [];
    const receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token, LOG_LEVEL: "info" }, { logDestination: { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) } });
    t.after(() => receiver.close());
    const sender = new AbortController();
    const answer = post(receiver.url, validWebhook("MemorySenderGone"), sender.signal);
    await waitUntil("the event to reach the sink", () => sink.open() === 1);
    sender.abort();
    await assert.rejects(answer);
    await waitUntil("the request counted as aborted", async () => (await metric(receiver, "appmonitor_http_requests_aborted_total", { route: "function", method: "POST" })) === 1);
    await waitUntil("the webhook counted as aborted", async () => (await metric(receiver, "appmonitor_alert_receiver_webhooks_total", { outcome: "aborted" })) === 1);
    await waitUntil("the delivery in flight stopped", () => sink.open() === 0);
    const access = logs.filter((line) => line.msg === "request");
    assert.deepEqual(access.map((line) => [line.aborted, line.status, line.level]), [[true, null, "warn"]]);
    assert.equal(await metric(receiver, "appmonitor_http_requests_total", { route: "function" }), 0, "no status counted for an answer nobody got");
    assert.equal(sink.requests(), 1, "not tried again for a sender that is gone");
  });
});

describe("alert-receiver's deadline as a real Alertmanager takes it", () => {
  it("a sink that never answers: Alertmanager gets the 504 before its 10 s are up, and its own retry, cut at 10 s, is counted as aborted", async (t) => {
    const sink = await startRawSink();
    t.after(() => sink.stop());
    const receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token });
    t.after(() => receiver.close());
    // group_interval under 10 s: Alertmanager's budget for a notification is its minimum, 10 s.
    const alertmanager = await startAlertmanager({
      route: { receiver: "appmonitor", group_by: ["alertname"], group_wait: "0s", group_interval: "1s", repeat_interval: "1h" },
      receivers: [{ name: "appmonitor", webhook_configs: [{ url: `${receiver.url}/`, http_config: { authorization: { type: "Bearer", credentials: token } } }] }],
    });
    t.after(() => alertmanager.stop());
    await alertmanager.postAlerts([memoryAlert("MemoryNeverAnswered", "default", "memhog-1", minuteAgo())]);
    const line = await waitUntil("Alertmanager to log the failed attempt", () =>
      alertmanager.process.output().split("\n").find((l) => l.includes("Notify attempt failed")), { timeoutMs: 20_000 });
    assert.match(line, /unexpected status code 504/, line);
    assert.doesNotMatch(line, /context deadline exceeded/);
    await waitUntil("Alertmanager's retry within the same 10 s, cut off by it, counted as aborted", async () =>
      (await scrape(`${receiver.url}/metrics`, "appmonitor_http_requests_aborted_total", { route: "function", method: "POST" })) >= 1, { timeoutMs: 20_000 });
    assert.ok((await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_webhooks_total", { outcome: "deadline" })) >= 1);
  });
});

describe("alert-receiver under hostile input (fast-check)", () => {
  let sink: TestSink;
  let receiver: RunningServer;
  before(async () => {
    sink = await startSink();
    receiver = await startFunction(fn, { K_SINK: sink.url, WEBHOOK_TOKEN: token });
  });
  after(async () => {
    await receiver?.close();
    await sink?.stop();
  });

  const validAlert = {
    status: "firing",
    labels: { alertname: "MemoryHigh", namespace: "default", pod: "memhog-1" },
    annotations: { value: "80" },
    startsAt: "2024-05-01T10:00:00Z",
    endsAt: "0001-01-01T00:00:00Z",
    generatorURL: "http://prometheus:9090/graph",
    fingerprint: "0123456789abcdef",
  };
  const validPayload = { version: "4", status: "firing", receiver: "r", groupKey: "{}", externalURL: "http://am:9093", alerts: [validAlert] };

  /** A change that makes the valid payload invalid, or leaves it valid but without a usable namespace/pod. */
  const breakPayload = fc.oneof(
    fc.constantFrom("version", "status", "receiver", "alerts").map((key) => (p: Record<string, unknown>) => void delete p[key]),
    fc.anything().filter((v) => v !== "4").map((version) => (p: Record<string, unknown>) => void (p.version = version)),
    fc.anything().filter((v) => !Array.isArray(v)).map((alerts) => (p: Record<string, unknown>) => void (p.alerts = alerts)),
    fc.tuple(fc.constantFrom("status", "labels", "annotations", "startsAt", "endsAt", "fingerprint"), fc.boolean(), fc.oneof(fc.integer(), fc.constant(null), fc.array(fc.string()), fc.constant("string"))).map(
      ([key, remove, value]) =>
        (p: Record<string, unknown>) => {
          const alert = (p.alerts as Record<string, unknown>[])[0] as Record<string, unknown>;
          // Each replacement is wrong for its field: a string is only wrong where a non-empty string, a date or a status is due.
          const wrong = value === "string" ? { labels: "labels", annotations: "annotations", fingerprint: "" }[key as string] ?? "not-a-date-or-status" : value;
          if (remove) delete alert[key];
          else if ((key === "labels" || key === "annotations") && value !== "string") alert[key] = { namespace: wrong };
          else alert[key] = wrong;
        },
    ),
    fc.tuple(fc.constantFrom("namespace", "pod"), fc.oneof(fc.constant(undefined), fc.constant(""), fc.string(), fc.constantFrom("../etc", "Default", "a_b", "x".repeat(300), "ns\u0000", "ü"))).map(
      ([key, value]) =>
        (p: Record<string, unknown>) => {
          const alert = (p.alerts as Record<string, unknown>[])[0] as { labels: Record<string, string> };
          if (value === undefined) delete alert.labels[key];
          else if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(value)) alert.labels[key] = value;
          else alert.labels[key] = `${value}/not-a-name`;
        },
    ),
    fc.constant((p: Record<string, unknown>) => {
      const alert = (p.alerts as Record<string, unknown>[])[0] as { labels: Record<string, unknown> };
      alert.labels = JSON.parse('{"__proto__": {"namespace": "default", "pod": "polluted"}, "alertname": "x"}') as Record<string, unknown>;
    }),
  );

  /** A request: body bytes, content type, authorization. */
  const hostileRequest = fc.oneof(
    breakPayload.map((mutate) => {
      const payload = structuredClone(validPayload) as Record<string, unknown>;
      mutate(payload);
      return { body: JSON.stringify(payload), contentType: "application/json", authorized: true };
    }),
    fc.uint8Array({ maxLength: 2_000 }).map((bytes) => ({ body: Buffer.from(bytes), contentType: "application/json", authorized: true })),
    fc.json().map((body) => ({ body, contentType: "application/json", authorized: true })),
    fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "", "application/cloudevents+json", "application/jsonx").map((contentType) => ({
      body: JSON.stringify(validPayload),
      contentType,
      authorized: true,
    })),
    fc.constant({ body: JSON.stringify(validPayload), contentType: "application/json", authorized: false }),
    fc.constantFrom("[".repeat(200_000), `{"version":"4","x":"${"y".repeat(1_100_000)}"}`, "\u0000", "{\"version\":\"4\"").map((body) => ({
      body,
      contentType: "application/json",
      authorized: true,
    })),
  );

  it("never answers 5xx, never crashes and never emits for 300 malformed or hostile payloads", async () => {
    await fc.assert(
      fc.asyncProperty(hostileRequest, async ({ body, contentType, authorized }) => {
        const headers: Record<string, string> = {};
        if (contentType !== "") headers["content-type"] = contentType;
        if (authorized) headers.authorization = `Bearer ${token}`;
        const response = await fetch(receiver.url, { method: "POST", headers, body });
        const text = await response.text();
        assert.ok([200, 400, 401, 413, 415].includes(response.status), `status ${response.status}: ${text.slice(0, 300)}`);
        if (response.status === 200) assert.equal((JSON.parse(text) as { emitted: number }).emitted, 0, text);
        else assert.ok(typeof (JSON.parse(text) as { error?: unknown }).error === "string", text);
      }),
      { numRuns: 300 },
    );
    assert.equal(sink.received.length + sink.rejected.length, 0, "no event reached the sink");
    assert.equal((await fetch(`${receiver.url}/health/liveness`)).status, 200, "still serving");
    assert.equal(await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_events_emitted_total"), 0);
  });
});

describe("npm run function -- alert-receiver (the launcher)", () => {
  const node = process.execPath;
  const runTs = path.join(repoRoot, "functions", "run.ts");

  it("refuses to start without K_SINK, with one line naming it", async () => {
    const env = { ...process.env, K_SINK: "", WEBHOOK_TOKEN: token, PORT: "0", HOST: "127.0.0.1" };
    const child = startProcess({ name: "alert-receiver", command: node, args: [runTs, "alert-receiver"], env });
    after(() => child.stop("SIGKILL"));
    const status = await child.exited;
    assert.equal(status.code, 1);
    const lines = child.stderr().trim().split("\n");
    assert.equal(lines.length, 1, child.stderr());
    assert.match(lines[0] ?? "", /^alert-receiver: configuration error: K_SINK: is required/);
  });

  it("starts on PORT=0, logs its port, drains an in-flight webhook on SIGTERM and exits 0", async () => {
    // A sink that holds the first event until released, so the webhook is in flight at SIGTERM.
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let arrived = 0;
    const slowSink = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on("end", () => {
        arrived += 1;
        void held.then(() => res.writeHead(202).end());
      });
    });
    await new Promise<void>((resolve) => slowSink.listen(0, "127.0.0.1", resolve));
    after(() => new Promise<void>((resolve) => slowSink.close(() => resolve())));
    const sinkPort = (slowSink.address() as { port: number }).port;

    const env = { ...process.env, K_SINK: `http://127.0.0.1:${sinkPort}/`, WEBHOOK_TOKEN: token, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" };
    const child = startProcess({ name: "alert-receiver", command: node, args: [runTs, "alert-receiver"], env });
    after(() => child.stop("SIGKILL"));
    const url = await waitUntil("the listening log line", () => {
      if (!child.running()) throw new Error(tailOf(child));
      for (const line of child.output().split("\n")) {
        if (!line.startsWith("{")) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string; port?: number; function?: string };
        if (entry.msg === "listening" && entry.function === "alert-receiver" && typeof entry.port === "number" && entry.port > 0) return entry.url;
      }
      return undefined;
    });
    assert.ok(url !== undefined);
    assert.equal((await fetch(`${url}/health/readiness`)).status, 200);

    const webhook = fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(validWebhook()),
    });
    await waitUntil("the event to reach the sink", () => arrived === 1);
    child.child.kill("SIGTERM");
    await waitUntil("readiness to leave 200 or the port to close", async () => {
      try {
        return (await fetch(`${url}/health/readiness`)).status === 503;
      } catch {
        return true;
      }
    });
    assert.ok(child.running(), "still running while a webhook is in flight");
    release();
    assert.equal((await webhook).status, 200, "the in-flight webhook completes");
    const status = await child.exited;
    assert.equal(status.code, 0, tailOf(child));
    assert.match(child.output(), /"msg":"draining"/);
  });
});

function validWebhook(alertname = "MemoryLauncher", pods = ["memhog-1"]): object {
  return {
    version: "4",
    status: "firing",
    receiver: "direct",
    alerts: pods.map((pod, i) => ({
      status: "firing",
      labels: { alertname, namespace: "default", pod },
      annotations: {},
      startsAt: minuteAgo(),
      endsAt: "0001-01-01T00:00:00Z",
      fingerprint: (0xfedcba9876543210n + BigInt(i)).toString(16),
    })),
  };
}

// Referenced so a change of the fallback source is a conscious one (the payloads above carry externalURL).
assert.equal(DEFAULT_SOURCE, "/alertmanager");
