/**
 * The dead-letter sink's endpoint (functions/dead-letter/handler.ts) against an in-memory Cluster:
 * the status of each answer by the delivery contract (2xx recorded, 5xx/429 for the API server,
 * 4xx for what is no CloudEvent), the Event's object, the count, and the whole request logged.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { Registry } from "prom-client";
import type { Cluster } from "../../../functions/dead-letter/cluster.ts";
import { createHandler } from "../../../functions/dead-letter/handler.ts";
import { createMetrics } from "../../../functions/dead-letter/metrics.ts";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import { apiError } from "../../support/rule-sync-fakes.ts";

const place = { namespace: "appmonitor", serviceAccount: "appmonitor-dead-letter", broker: "default" };

function setup(appMonitors: Record<string, string>, fail?: unknown) {
  const created: k8s.EventsV1Event[] = [];
  const cluster: Cluster = {
    async appMonitorUid(namespace, name) {
      if (fail !== undefined) throw fail;
      return appMonitors[`${namespace}/${name}`];
    },
    async createEvent(event) {
      if (created.some((e) => e.metadata?.name === event.metadata?.name && e.metadata?.namespace === event.metadata?.namespace)) return "exists";
      created.push(event);
      return "created";
    },
  };
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "info" }, new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk)) as Record<string, unknown>); done(); } }));
  const registry = new Registry();
  const handle = createHandler({ cluster, metrics: createMetrics(registry), place, now: () => new Date("2026-12-02T10:00:00Z"), reportingInstance: "sink" });
  const context = { log, requestId: "r", signal: new AbortController().signal };
  return { created, lines, registry, call: (headers: Record<string, string>, body: string, method = "POST", path = "/") => handle(context, { method, path, query: new URLSearchParams(), headers, body: Buffer.from(body) }) };
}

const binary = (data: object, extra: Record<string, string> = {}) => [{
  "content-type": "application/json", "ce-specversion": "1.0", "ce-id": "ev-1", "ce-source": "/test", "ce-type": "com.kubedemo.appmonitor.alert.firing",
  "ce-knativeerrorcode": "400", "ce-knativeerrordest": "http://memory-scaler.appmonitor.svc.cluster.local", "ce-knativeerrordata": Buffer.from('{"error":"malformed event data"}').toString("base64"), ...extra,
}, JSON.stringify(data)] as const;

test("a dead letter naming an AppMonitor that exists: 204 recorded, the Event on it with its uid, counted once however often it comes", async () => {
  const s = setup({ "shop/web": "u-1" });
  const first = await s.call(...binary({ namespace: "shop", appmonitor: "web" }));
  assert.equal(first.status, 204);
  assert.equal(first.headers?.["x-appmonitor-outcome"], "recorded");
  assert.deepEqual(s.created[0]?.regarding, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: "shop", name: "web", uid: "u-1" });
  const again = await s.call(...binary({ namespace: "shop", appmonitor: "web" }));
  assert.equal(again.headers?.["x-appmonitor-outcome"], "duplicate");
  assert.equal(s.created.length, 1);
  assert.match(await s.registry.metrics(), /appmonitor_dead_letters_total\{type="com.kubedemo.appmonitor.alert.firing",code="400"\} 1/);
  assert.ok(s.lines.some((l) => l.msg === "dead letter" && (l.deadLetter as Record<string, unknown>).knativeerrorcode === "400"), "logged whole");
});

test("an AppMonitor that does not exist: the Event goes on the sink's ServiceAccount in the install's namespace", async () => {
  const s = setup({});
  await s.call(...binary({ namespace: "shop", appmonitor: "gone" }));
  assert.deepEqual([s.created[0]?.metadata?.namespace, s.created[0]?.regarding?.kind, s.created[0]?.regarding?.name], ["appmonitor", "ServiceAccount", "appmonitor-dead-letter"]);
});

test("the API server away: 503 (Knative sends it again); throttled: 429", async () => {
  await assert.rejects(setup({}, new Error("connect ECONNREFUSED")).call(...binary({ namespace: "shop", appmonitor: "web" })), (e: HttpError) => e.status === 503);
  await assert.rejects(setup({}, apiError(429)).call(...binary({ namespace: "shop", appmonitor: "web" })), (e: HttpError) => e.status === 429);
});

test("no CloudEvent, another method or path: a 4xx with a clear error, and the request logged whole first", async () => {
  const s = setup({});
  await assert.rejects(s.call({ "content-type": "application/json" }, '{"no":"attributes"}'), (e: HttpError) => e.status === 400 && e.reason === "malformed CloudEvent");
  const logged = s.lines.find((l) => l.msg === "unreadable dead letter") as { request: { body: { text: string } } } | undefined;
  assert.equal(logged?.request.body.text, '{"no":"attributes"}');
  await assert.rejects(s.call({}, "", "GET"), (e: HttpError) => e.status === 405);
  await assert.rejects(s.call(...binary({}), "POST", "/x"), (e: HttpError) => e.status === 400);
  assert.equal(s.created.length, 0);
});
