/**
 * rule-sync's handler, reconcile shell and resync against an in-memory Cluster: what is written,
 * and which HTTP status each kind of API failure becomes (DESIGN.md: 2xx handled, 4xx never,
 * 5xx/429 retry).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { Registry } from "prom-client";
import type { IPrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { HttpError } from "../../functions/lib/runtime/errors.ts";
import type { Cluster, DeleteOutcome } from "../../functions/rule-sync/cluster.ts";
import { readConfig } from "../../functions/rule-sync/config.ts";
import { REF_EVENT_PREFIX, RESOURCE_EVENT_PREFIX, RESYNC_EVENT_TYPE } from "../../functions/rule-sync/events.ts";
import { createHandler } from "../../functions/rule-sync/handler.ts";
import { createMetrics } from "../../functions/rule-sync/metrics.ts";
import { REASONS, RULE_READY, type ObservedAppMonitor, type ObservedRule, type RuleRef } from "../../functions/rule-sync/plan.ts";
import { resyncUntilDone } from "../../functions/rule-sync/resync.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../functions/rule-sync/rule.ts";
import type { StatusApply } from "../../functions/rule-sync/status.ts";
import { syncOne, type SyncDeps } from "../../functions/rule-sync/sync.ts";

const silent = pino({ level: "silent" });

/** An in-memory API server holding AppMonitors and PrometheusRules; `fail` injects errors per call. */
class FakeCluster implements Cluster {
  monitors = new Map<string, ObservedAppMonitor>();
  rules = new Map<string, ObservedRule & { spec?: unknown }>();
  statusWrites: StatusApply[] = [];
  calls: string[] = [];
  fail: Partial<Record<keyof Cluster, (attempt: number) => unknown>> = {};
  private version = 1000;
  private counts = new Map<string, number>();

  private maybeFail(call: keyof Cluster): void {
    const attempt = (this.counts.get(call) ?? 0) + 1;
    this.counts.set(call, attempt);
    this.calls.push(call);
    const error = this.fail[call]?.(attempt);
    if (error !== undefined) throw error;
  }

  addMonitor(name: string, spec: unknown, namespace = "demo", uid = `uid-${name}`): ObservedAppMonitor {
    const m: ObservedAppMonitor = { metadata: { name, namespace, uid, generation: 1, resourceVersion: String(this.version++) }, spec };
    this.monitors.set(`${namespace}/${name}`, m);
    return m;
  }

  addRule(name: string, managed: boolean, ownerUid: string | undefined, namespace = "demo"): void {
    this.rules.set(`${namespace}/${name}`, {
      metadata: {
        name, namespace, uid: `rule-${name}-${this.version}`, resourceVersion: String(this.version++),
        labels: managed ? { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } : {},
        ownerReferences: ownerUid === undefined ? [] : [{ apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name, uid: ownerUid, controller: true }],
      },
    });
  }

  async getAppMonitor(namespace: string, name: string) {
    this.maybeFail("getAppMonitor");
    return this.monitors.get(`${namespace}/${name}`);
  }
  async listAppMonitors() {
    this.maybeFail("listAppMonitors");
    return [...this.monitors.values()];
  }
  async getRule(namespace: string, name: string) {
    this.maybeFail("getRule");
    return this.rules.get(`${namespace}/${name}`);
  }
  async listManagedRules() {
    this.maybeFail("listManagedRules");
    return [...this.rules.values()].filter((r) => r.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE);
  }
  async applyRule(rule: IPrometheusRule) {
    this.maybeFail("applyRule");
    const key = `${rule.metadata?.namespace}/${rule.metadata?.name}`;
    const old = this.rules.get(key);
    const same = old !== undefined && JSON.stringify(old.spec) === JSON.stringify(rule.spec);
    const stored = {
      metadata: { ...rule.metadata, uid: old?.metadata.uid ?? `rule-${this.version}`, resourceVersion: same ? old.metadata.resourceVersion : String(this.version++) },
      spec: rule.spec,
    } as ObservedRule & { spec?: unknown };
    this.rules.set(key, stored);
    return stored;
  }
  async deleteRule(ref: RuleRef): Promise<DeleteOutcome> {
    this.maybeFail("deleteRule");
    const key = `${ref.namespace}/${ref.name}`;
    const current = this.rules.get(key);
    if (current === undefined) return "gone";
    if (current.metadata.uid !== ref.uid || current.metadata.resourceVersion !== ref.resourceVersion) return "changed";
    this.rules.delete(key);
    return "deleted";
  }
  async applyStatus(body: StatusApply): Promise<"written" | "gone" | "conflict"> {
    this.maybeFail("applyStatus");
    const key = `${body.metadata.namespace}/${body.metadata.name}`;
    const current = this.monitors.get(key);
    if (current === undefined) return "gone";
    if (body.metadata.resourceVersion !== current.metadata.resourceVersion) return "conflict";
    this.statusWrites.push(body);
    this.monitors.set(key, { ...current, metadata: { ...current.metadata, resourceVersion: String(this.version++) }, status: body.status });
    return "written";
  }
  async probe() {
    this.maybeFail("probe");
  }
}

function setup(env: Record<string, string> = {}): { cluster: FakeCluster; deps: SyncDeps; registry: Registry; handle: ReturnType<typeof createHandler> } {
  const cluster = new FakeCluster();
  const registry = new Registry();
  const deps: SyncDeps = { cluster, config: readConfig(env), metrics: createMetrics(registry), log: silent, now: () => new Date("2026-05-01T00:00:00Z") };
  return { cluster, deps, registry, handle: createHandler(deps) };
}

const context = { log: silent, requestId: "r1" };
const spec = { memThresholdPercent: 75, memMultiplier: 2 };
const ref = (name: string, namespace = "demo") => ({ apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name, namespace });
const apiError = (code: number, body: object = {}, headers: Record<string, string> = {}) => new k8s.ApiException(code, "Unsuccessful HTTP Request", JSON.stringify(body), headers);

async function rejectsWith(promise: Promise<unknown>, status: number, reason?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, status, error.reason);
    if (reason) assert.match(error.reason, reason);
    return true;
  });
}

async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const found = (await registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return found?.value ?? 0;
}

describe("add and update events", () => {
  it("create the rule and report RuleReady True with observedGeneration", async () => {
    const { cluster, handle, registry } = setup();
    cluster.addMonitor("mymonitor", spec);
    const response = await handle(context, { type: `${RESOURCE_EVENT_PREFIX}add`, data: { ...ref("mymonitor"), metadata: { name: "mymonitor", namespace: "demo" } } });
    assert.equal(response.status, 200);
    assert.deepEqual((response.body as { rule: string }).rule, "created");
    assert.ok(cluster.rules.has("demo/mymonitor"));
    assert.equal(cluster.statusWrites.length, 1);
    const condition = cluster.statusWrites[0]?.status.conditions[0];
    assert.equal(condition?.type, RULE_READY);
    assert.equal(condition?.status, "True");
    assert.match(condition?.message ?? "", /PrometheusRule demo\/mymonitor/);
    assert.equal(cluster.statusWrites[0]?.status.observedGeneration, 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_rule_writes_total", { result: "created" }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_events_total", { type: "add", outcome: "handled" }), 1);
  });

  it("repeated, apply again without a change and write no status", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec);
    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    const second = await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    assert.equal((second.body as { rule: string }).rule, "unchanged");
    assert.equal(cluster.statusWrites.length, 1);
  });

  it("for an invalid AppMonitor answer 200 with RuleReady False and write no rule", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("bad", { ...spec, selector: { matchLabels: { "no spaces": "x" } } });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("bad") });
    assert.equal(response.status, 200);
    assert.equal(cluster.rules.size, 0);
    assert.deepEqual(
      { status: cluster.statusWrites[0]?.status.conditions[0]?.status, reason: cluster.statusWrites[0]?.status.conditions[0]?.reason },
      { status: "False", reason: REASONS.invalid },
    );
  });

  it("report a rule the API server refuses as RuleRejected, 200", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec);
    cluster.fail.applyRule = () => apiError(422, { reason: "Invalid", message: "PrometheusRule.monitoring.coreos.com \"mymonitor\" is invalid: spec.groups: bad" });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.equal(response.status, 200);
    assert.equal((response.body as { rule: string }).rule, "rejected");
    const condition = cluster.statusWrites[0]?.status.conditions[0];
    assert.equal(condition?.reason, REASONS.rejected);
    assert.match(condition?.message ?? "", /is invalid: spec\.groups: bad/);
  });

  it("leave someone else's rule of that name alone and report RuleConflict", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec);
    cluster.addRule("mymonitor", false, undefined);
    const before = structuredClone(cluster.rules.get("demo/mymonitor"));
    await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(cluster.rules.get("demo/mymonitor"), before);
    assert.equal(cluster.statusWrites[0]?.status.conditions[0]?.reason, REASONS.conflict);
    assert.ok(!cluster.calls.includes("applyRule"));
  });

  it("replace a rule left by an earlier AppMonitor of the same name", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec, "demo", "uid-new");
    cluster.addRule("mymonitor", true, "uid-old");
    const oldUid = cluster.rules.get("demo/mymonitor")?.metadata.uid;
    await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    const now = cluster.rules.get("demo/mymonitor");
    assert.notEqual(now?.metadata.uid, oldUid);
    assert.equal(now?.metadata.ownerReferences?.[0]?.uid, "uid-new");
  });

  it("write the status again against a fresh read when only the resourceVersion moved, and stop when the generation did", async () => {
    const { cluster, deps } = setup();
    const m = cluster.addMonitor("mymonitor", spec);
    // The AppMonitor was touched (e.g. a label) after the read: same generation, new resourceVersion.
    cluster.monitors.set("demo/mymonitor", { ...m, metadata: { ...m.metadata, resourceVersion: "9999" } });
    await syncOne(deps, "demo", "mymonitor", m);
    assert.equal(cluster.statusWrites.length, 1);
    assert.equal(cluster.statusWrites[0]?.metadata.resourceVersion, "9999");

    const m2 = cluster.addMonitor("other", spec);
    cluster.monitors.set("demo/other", { ...m2, metadata: { ...m2.metadata, resourceVersion: "9998", generation: 2 } });
    await syncOne(deps, "demo", "other", m2);
    assert.equal(cluster.statusWrites.length, 1, "a newer generation reports through its own event");
  });

  const failures: [string, () => unknown, number, RegExp][] = [
    ["a refused connection", () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6443"), { code: "ECONNREFUSED" }), 503, /API server unavailable/],
    ["a 500", () => apiError(500, { message: "etcdserver: request timed out" }), 503, /etcdserver/],
    ["a missing CRD (404 without an object name)", () => apiError(404, { reason: "NotFound", message: "the server could not find the requested resource" }), 503, /CRD installed/],
    ["throttling", () => apiError(429, { reason: "TooManyRequests" }, { "retry-after": "3" }), 429, /throttled/],
    ["an RBAC denial", () => apiError(403, { reason: "Forbidden", message: 'appmonitors.kubedemo.com "m" is forbidden: User "system:serviceaccount:appmonitor:rule-sync" cannot get resource "appmonitors"' }), 500, /not allowed/],
  ];
  for (const [what, error, status, reason] of failures) {
    it(`answer ${status} for ${what}`, async () => {
      const { cluster, handle, registry } = setup();
      cluster.addMonitor("mymonitor", spec);
      cluster.fail.getAppMonitor = error;
      await rejectsWith(handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") }), status, reason);
      assert.equal(await metric(registry, "appmonitor_rule_sync_events_total", { type: "update", outcome: "failed" }), 1);
    });
  }

  it("pass Retry-After on through a 429", async () => {
    const { cluster, handle } = setup();
    cluster.fail.getAppMonitor = () => apiError(429, {}, { "retry-after": "7" });
    await assert.rejects(handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("m") }), (error: HttpError) => error.headers["retry-after"] === "7");
  });
});

describe("delete events", () => {
  it("delete our rule when the AppMonitor is gone", async () => {
    const { cluster, handle } = setup();
    cluster.addRule("mymonitor", true, "uid-mymonitor");
    const response = await handle(context, { type: `${RESOURCE_EVENT_PREFIX}delete`, data: { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor", namespace: "demo", uid: "uid-mymonitor" } } });
    assert.equal((response.body as { rule: string }).rule, "deleted");
    assert.equal(cluster.rules.size, 0);
  });

  it("leave a rule that is not ours", async () => {
    const { cluster, handle } = setup();
    cluster.addRule("mymonitor", false, undefined);
    await handle(context, { type: `${REF_EVENT_PREFIX}delete`, data: ref("mymonitor") });
    assert.equal(cluster.rules.size, 1);
  });

  it("keep the rule of an AppMonitor re-created under the same name (the event is stale)", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec, "demo", "uid-2");
    cluster.addRule("mymonitor", true, "uid-2");
    await handle(context, { type: `${RESOURCE_EVENT_PREFIX}delete`, data: { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor", namespace: "demo", uid: "uid-1" } } });
    assert.equal(cluster.rules.get("demo/mymonitor")?.metadata.ownerReferences?.[0]?.uid, "uid-2");
  });

  it("are best effort: a failure is logged and answered 200", async () => {
    const { cluster, handle, registry } = setup();
    cluster.addRule("mymonitor", true, "uid-mymonitor");
    cluster.fail.deleteRule = () => new Error("socket hang up");
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}delete`, data: ref("mymonitor") });
    assert.equal(response.status, 200);
    assert.match((response.body as { deleteFailed: string }).deleteFailed, /socket hang up/);
    assert.equal(await metric(registry, "appmonitor_rule_sync_events_total", { type: "delete", outcome: "failed" }), 1);
  });
});

describe("scope and refusals", () => {
  it("skip an AppMonitor outside WATCH_NAMESPACES without calling the API server", async () => {
    const { cluster, handle } = setup({ WATCH_NAMESPACES: "demo" });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("m", "elsewhere") });
    assert.equal(response.status, 200);
    assert.ok("skipped" in (response.body as object));
    assert.deepEqual(cluster.calls, []);
  });

  it("answer 400 for an event that can never be handled", async () => {
    const { cluster, handle } = setup();
    await rejectsWith(handle(context, { type: "com.example.unknown", data: {} }), 400, /unsupported event type/);
    await rejectsWith(handle(context, { type: `${REF_EVENT_PREFIX}add`, data: { apiVersion: "v1", kind: "Pod", name: "p", namespace: "demo" } }), 400, /not kubedemo\.com\/v1 AppMonitor/);
    assert.deepEqual(cluster.calls, []);
  });
});

describe("resync", () => {
  it("creates missing rules, re-applies, deletes orphans, keeps others' rules and reports", async () => {
    const { cluster, handle, registry } = setup();
    cluster.addMonitor("a", spec);
    cluster.addMonitor("b", spec);
    cluster.addMonitor("bad", { ...spec, selector: { matchExpressions: [{ key: "bad key", operator: "Exists" }] } });
    cluster.addRule("b", true, "uid-b");
    cluster.addRule("ghost", true, "uid-ghost");
    cluster.addRule("orphaned", true, undefined);
    cluster.addRule("theirs", false, undefined);
    const response = await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.equal(response.status, 200);
    const body = response.body as { appMonitors: number; rules: Record<string, number>; notReady: { name: string; reason: string }[]; failed: unknown[] };
    assert.equal(body.appMonitors, 3);
    assert.deepEqual([...cluster.rules.keys()].sort(), ["demo/a", "demo/b", "demo/theirs"]);
    assert.equal(body.rules.created, 1);
    assert.equal(body.rules.deleted, 2);
    assert.deepEqual(body.notReady.map((n) => [n.name, n.reason]), [["bad", REASONS.invalid]]);
    assert.deepEqual(body.failed, []);
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors", { reason: REASONS.applied }), 2);
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors", { reason: REASONS.invalid }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_resyncs_total", { trigger: "event", outcome: "ok" }), 1);
    assert.ok((await metric(registry, "appmonitor_rule_sync_last_resync_timestamp_seconds", {})) > 0);
  });

  it("lists the rules before the AppMonitors", async () => {
    const { cluster, handle } = setup();
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.deepEqual(cluster.calls.slice(0, 2), ["listManagedRules", "listAppMonitors"]);
  });

  it("goes on after one AppMonitor fails, then answers 503 with the summary", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("a", spec);
    cluster.addMonitor("b", spec);
    cluster.fail.applyRule = (attempt) => (attempt === 1 ? apiError(503, { message: "overloaded" }) : undefined);
    await assert.rejects(handle(context, { type: RESYNC_EVENT_TYPE }), (error: unknown) => {
      assert.ok(error instanceof HttpError);
      assert.equal(error.status, 503);
      const details = error.details as { failed: { name: string }[]; rules: { created: number } };
      assert.equal(details.failed.length, 1);
      assert.equal(details.rules.created, 1);
      return true;
    });
    assert.equal(cluster.rules.size, 1);
  });

  it("answers 503 when the API server cannot list", async () => {
    const { cluster, handle } = setup();
    cluster.fail.listManagedRules = () => new Error("connect ECONNREFUSED");
    await rejectsWith(handle(context, { type: RESYNC_EVENT_TYPE }), 503);
  });
});

describe("the start-up resync", () => {
  it("retries until it succeeds once", async () => {
    const { cluster, deps, registry } = setup();
    cluster.addMonitor("a", spec);
    cluster.fail.listManagedRules = (attempt) => (attempt === 1 ? new Error("connect ECONNREFUSED") : undefined);
    await resyncUntilDone(deps, new AbortController().signal);
    assert.ok(cluster.rules.has("demo/a"));
    assert.equal(await metric(registry, "appmonitor_rule_sync_resyncs_total", { trigger: "startup", outcome: "failed" }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_resyncs_total", { trigger: "startup", outcome: "ok" }), 1);
  });

  it("stops when aborted while waiting to retry", async () => {
    const { cluster, deps } = setup();
    cluster.fail.listManagedRules = () => new Error("connect ECONNREFUSED");
    const stop = new AbortController();
    const running = resyncUntilDone(deps, stop.signal);
    while (!cluster.calls.includes("listManagedRules")) await new Promise((resolve) => setImmediate(resolve));
    stop.abort();
    await running;
    assert.equal(cluster.calls.filter((c) => c === "listManagedRules").length, 1);
  });
});
