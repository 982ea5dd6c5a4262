/**
 * rule-sync's handler, reconcile shell and resync against an in-memory Cluster and Prometheus:
 * what is written (the rule, RuleReady and MetricsReady, Warning Events once per change), and
 * which HTTP status each kind of API failure becomes (DESIGN.md: 2xx handled, 4xx never, 5xx/429
 * retry).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import { readConfig } from "../../../functions/rule-sync/config.ts";
import { REF_EVENT_PREFIX, RESOURCE_EVENT_PREFIX, RESYNC_EVENT_TYPE } from "../../../functions/rule-sync/incoming-event.ts";
import { createHandler } from "../../../functions/rule-sync/handler.ts";
import { createMetrics } from "../../../functions/rule-sync/metrics.ts";
import { METRICS_READY, METRICS_REASONS, PROMETHEUS_REASONS, REASONS, RULE_READY } from "../../../functions/rule-sync/conditions.ts";
import { createLoadWatcher } from "../../../functions/rule-sync/load-watcher.ts";
import type { ManagedAlert } from "../../../functions/rule-sync/alert-delivery.ts";
import { AlertmanagerError, type AlertmanagerApi } from "../../../functions/rule-sync/alertmanager.ts";
import { PrometheusError } from "../../../functions/rule-sync/prometheus.ts";
import { resyncUntilDone } from "../../../functions/rule-sync/resync.ts";
import { syncOne, type SyncDeps } from "../../../functions/rule-sync/sync.ts";
import { waitUntil } from "../../harness/lib/wait-until.ts";
import { apiError, FakeCluster, FakePrometheus, ref, unreachable } from "../../support/rule-sync-fakes.ts";

const silent = pino({ level: "silent" });

interface Setup {
  cluster: FakeCluster;
  deps: SyncDeps;
  registry: Registry;
  handle: ReturnType<typeof createHandler>;
}

/** rule-sync on a FakeCluster, without PROMETHEUS_URL unless `prometheus` is given (its load watcher polling every 5 ms, waiting `loadWaitMs`). */
function setup(env: Record<string, string> = {}, prometheus?: FakePrometheus, loadWaitMs = 0): Setup {
  const cluster = new FakeCluster();
  const registry = new Registry();
  const config = readConfig({ ...env, ...(prometheus === undefined ? {} : { PROMETHEUS_URL: prometheus.url, RULE_LOAD_WAIT_MS: String(loadWaitMs) }) });
  const deps: SyncDeps = {
    cluster, config, metrics: createMetrics(registry), log: silent, now: () => new Date("2026-05-01T00:00:00Z"), reportingInstance: "rule-sync-test",
    ...(prometheus === undefined || config.prometheus === undefined ? {} : { prometheus: { api: prometheus, watcher: createLoadWatcher(prometheus, silent, { pollMs: 5 }), config: config.prometheus } }),
  };
  return { cluster, deps, registry, handle: createHandler(deps) };
}

/** The conditions of the last status write, by type: [status, reason]. */
/** RuleReady's and MetricsReady's status and reason in the last status write (Ready, their summary, is checked where it matters). */
function lastConditions(cluster: FakeCluster, withReady = false): Record<string, [string, string]> {
  const write = cluster.statusWrites.at(-1);
  return Object.fromEntries((write?.status.conditions ?? []).filter((c) => withReady || c.type !== "Ready").map((c) => [c.type, [c.status, c.reason]]));
}

const context = { log: silent, requestId: "r1", signal: new AbortController().signal };
const spec = { memThresholdPercent: 75, memMultiplier: 2 };

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
  it("create the rule; without PROMETHEUS_URL both conditions are Unknown, never True, with observedGeneration", async () => {
    const { cluster, handle, registry } = setup();
    cluster.addMonitor("mymonitor", spec);
    const response = await handle(context, { type: `${RESOURCE_EVENT_PREFIX}add`, data: { ...ref("mymonitor"), metadata: { name: "mymonitor", namespace: "demo" } } });
    assert.deepEqual(response, { outcome: "created", reason: PROMETHEUS_REASONS.notConfigured });
    assert.ok(cluster.rules.has("demo/mymonitor"));
    assert.equal(cluster.statusWrites.length, 1);
    const [ruleReady, metricsReady] = cluster.statusWrites[0]?.status.conditions ?? [];
    assert.deepEqual([ruleReady?.type, ruleReady?.status, ruleReady?.reason], [RULE_READY, "Unknown", PROMETHEUS_REASONS.notConfigured]);
    assert.match(ruleReady?.message ?? "", /^PrometheusRule demo\/mymonitor \(generation 1\) is applied; whether Prometheus loaded it is not known: PROMETHEUS_URL is not set on rule-sync$/);
    assert.deepEqual([metricsReady?.type, metricsReady?.status, metricsReady?.reason], [METRICS_READY, "Unknown", PROMETHEUS_REASONS.notConfigured]);
    assert.equal(cluster.statusWrites[0]?.status.observedGeneration, 1);
    assert.deepEqual(cluster.events, [], "no Warning: nothing is wrong, only not asked");
    assert.equal(await metric(registry, "appmonitor_rule_sync_rule_writes_total", { result: "created" }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_events_total", { type: "add", outcome: "handled" }), 1);
  });

  it("with Prometheus: RuleReady True once it lists the group at this generation, MetricsReady True with both sides", async () => {
    const prometheus = new FakePrometheus();
    prometheus.load("demo", "mymonitor", "1");
    prometheus.series.inNamespace = { workingSet: 3, cadvisorLimit: 3, ksmLimit: 3 };
    const { cluster, handle } = setup({}, prometheus, 1_000);
    cluster.addMonitor("mymonitor", spec);
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(response, { outcome: "created", reason: REASONS.loaded });
    assert.deepEqual(lastConditions(cluster, true), { [RULE_READY]: ["True", REASONS.loaded], [METRICS_READY]: ["True", METRICS_REASONS.found], Ready: ["True", "Reconciled"] });
    assert.match(cluster.statusWrites[0]?.status.conditions[0]?.message ?? "", /is loaded by Prometheus at http:\/\/prometheus\.test:9090 as rule group appmonitor\/demo\/mymonitor/);
    assert.deepEqual(prometheus.requests, { rules: 1, query: 1 }, "the group asked once, the sides in one query; nothing cluster-wide when nothing is missing");
  });

  it("an event that wrote the rule waits for Prometheus to load it, and answers True when it does within RULE_LOAD_WAIT_MS", async () => {
    const prometheus = new FakePrometheus();
    prometheus.series.inNamespace = { workingSet: 1, cadvisorLimit: 1 };
    const { cluster, handle } = setup({}, prometheus, 5_000);
    cluster.addMonitor("mymonitor", spec);
    setTimeout(() => prometheus.load("demo", "mymonitor", "1"), 50);
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(response, { outcome: "created", reason: REASONS.loaded });
    assert.equal(cluster.statusWrites.length, 1, "one status write, after the wait");
  });

  it("not loaded within the wait: RuleNotLoaded, then the instance follows the group and writes True once Prometheus loads it", async () => {
    const prometheus = new FakePrometheus();
    prometheus.series.inNamespace = { workingSet: 1, cadvisorLimit: 1 };
    const { cluster, handle, deps } = setup({ RULE_LABELS: "release=prometheus" }, prometheus, 20);
    cluster.addMonitor("mymonitor", spec);
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(response, { outcome: "created", reason: REASONS.notLoaded });
    assert.deepEqual(lastConditions(cluster)[RULE_READY], ["False", REASONS.notLoaded]);
    assert.match(cluster.statusWrites[0]?.status.conditions[0]?.message ?? "", /has not loaded its rule group appmonitor\/demo\/mymonitor: prometheus-operator loads it once its Prometheus's ruleSelector matches the rule's labels \(release=prometheus, app\.kubernetes\.io\/managed-by=appmonitor-rule-sync\)/);
    assert.equal(deps.prometheus?.watcher.watching(), 1, "followed");
    prometheus.load("demo", "mymonitor", "1");
    await waitUntil("the follow-up's status write", () => (cluster.statusWrites.length === 2 ? true : undefined), { timeoutMs: 5_000, intervalMs: 5 });
    assert.deepEqual(lastConditions(cluster)[RULE_READY], ["True", REASONS.loaded]);
    assert.equal(deps.prometheus?.watcher.watching(), 0);
    deps.prometheus?.watcher.close();
  });

  it("the group loaded at an earlier generation is not this one: RuleNotLoaded until the new generation is there", async () => {
    const prometheus = new FakePrometheus();
    prometheus.series.inNamespace = { workingSet: 1, cadvisorLimit: 1 };
    const { cluster, handle, deps } = setup({}, prometheus);
    const m = cluster.addMonitor("mymonitor", spec);
    cluster.monitors.set("demo/mymonitor", { ...m, metadata: { ...m.metadata, generation: 2 } });
    prometheus.load("demo", "mymonitor", "1");
    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    assert.deepEqual(lastConditions(cluster)[RULE_READY], ["False", REASONS.notLoaded]);
    assert.match(cluster.statusWrites[0]?.status.conditions[0]?.message ?? "", /has generation 1 of rule group appmonitor\/demo\/mymonitor loaded, not this one yet/);
    deps.prometheus?.watcher.close();
  });

  it("a side without series anywhere: MetricsReady False naming it, and one Warning Event for the change", async () => {
    const prometheus = new FakePrometheus();
    prometheus.load("demo", "mymonitor", "1");
    // kube-prometheus-stack's relabeling dropped container_spec_*, and no kube-state-metrics.
    prometheus.series = { inNamespace: { workingSet: 2 }, inCluster: { workingSet: 40 } };
    const { cluster, handle } = setup({}, prometheus);
    cluster.addMonitor("mymonitor", spec);
    await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(lastConditions(cluster), { [RULE_READY]: ["True", REASONS.loaded], [METRICS_READY]: ["False", METRICS_REASONS.limitNotScraped] });
    assert.match(cluster.statusWrites[0]?.status.conditions[1]?.message ?? "", /neither container_spec_memory_limit_bytes \(kube-prometheus-stack drops it/);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind, e.regarding?.name, e.regarding?.uid]), [["Warning", METRICS_REASONS.limitNotScraped, "AppMonitor", "mymonitor", "uid-mymonitor"]]);
    assert.equal(prometheus.requests.query, 2, "the cluster-wide counts asked to explain the missing side");
    // The next event finds the same: no status write, no second Event.
    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    assert.equal(cluster.statusWrites.length, 1);
    assert.equal(cluster.events.length, 1);
  });

  it("a Prometheus that does not answer: both Unknown PrometheusUnreachable, handled (2xx), one Warning per change, not per event", async () => {
    const prometheus = new FakePrometheus();
    prometheus.down = unreachable();
    const { cluster, handle, deps } = setup({}, prometheus, 5_000);
    cluster.addMonitor("mymonitor", spec);
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(response, { outcome: "created", reason: PROMETHEUS_REASONS.unreachable }, "no wait for a load nobody can see");
    assert.deepEqual(lastConditions(cluster), { [RULE_READY]: ["Unknown", PROMETHEUS_REASONS.unreachable], [METRICS_READY]: ["Unknown", PROMETHEUS_REASONS.unreachable] });
    assert.match(cluster.statusWrites[0]?.status.conditions[0]?.message ?? "", /Prometheus at http:\/\/prometheus\.test:9090 did not answer: connect ECONNREFUSED 127\.0\.0\.1:9; check rule-sync's PROMETHEUS_URL/);
    assert.deepEqual(prometheus.requests, { rules: 1, query: 0 }, "nothing more asked after the groups failed");
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.reportingController, e.action]), [["Warning", PROMETHEUS_REASONS.unreachable, "kubedemo.com/rule-sync", "CheckRule"]]);
    assert.match(cluster.events[0]?.note ?? "", /did not answer/);

    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.equal(cluster.statusWrites.length, 1, "the same failure writes nothing again");
    assert.equal(cluster.events.length, 1);

    // Another failure is a change: a wrong URL that answers, but not as Prometheus does.
    prometheus.down = new PrometheusError("apiError", "HTTP 404 to GET /api/v1/rules, not JSON");
    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    assert.deepEqual(lastConditions(cluster)[RULE_READY], ["Unknown", PROMETHEUS_REASONS.apiError]);
    assert.deepEqual(cluster.events.map((e) => e.reason), [PROMETHEUS_REASONS.unreachable, PROMETHEUS_REASONS.apiError]);
    deps.prometheus?.watcher.close();
  });

  it("a Warning Event the API server refuses is logged, not a failure: the status says the same", async () => {
    const prometheus = new FakePrometheus();
    prometheus.down = unreachable();
    const { cluster, handle } = setup({}, prometheus);
    cluster.addMonitor("mymonitor", spec);
    cluster.fail.createEvent = () => apiError(403, { reason: "Forbidden", message: "events.events.k8s.io is forbidden" });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.equal(response.outcome, "created");
    assert.equal(cluster.statusWrites.length, 1);
  });

  it("repeated, apply again without a change and write no status", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec);
    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    const second = await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    assert.equal(second.outcome, "unchanged");
    assert.equal(cluster.statusWrites.length, 1);
  });

  it("for an invalid AppMonitor answer handled (2xx) with RuleReady False and write no rule", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("bad", { ...spec, selector: { matchLabels: { "no spaces": "x" } } });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("bad") });
    assert.deepEqual(response, { outcome: "kept", reason: REASONS.invalid });
    assert.equal(cluster.rules.size, 0);
    assert.deepEqual(
      { status: cluster.statusWrites[0]?.status.conditions[0]?.status, reason: cluster.statusWrites[0]?.status.conditions[0]?.reason },
      { status: "False", reason: REASONS.invalid },
    );
  });

  it("report a rule the API server refuses as RuleRejected, handled (2xx)", async () => {
    const { cluster, handle } = setup();
    cluster.addMonitor("mymonitor", spec);
    cluster.fail.applyRule = () => apiError(422, { reason: "Invalid", message: "PrometheusRule.monitoring.coreos.com \"mymonitor\" is invalid: spec.groups: bad" });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(response, { outcome: "rejected", reason: REASONS.rejected });
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
      cluster.fail.readAppMonitor = error;
      await rejectsWith(handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") }), status, reason);
      assert.equal(await metric(registry, "appmonitor_rule_sync_events_total", { type: "update", outcome: "failed" }), 1);
    });
  }

  it("pass Retry-After on through a 429", async () => {
    const { cluster, handle } = setup();
    cluster.fail.readAppMonitor = () => apiError(429, {}, { "retry-after": "7" });
    await assert.rejects(handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("m") }), (error: HttpError) => error.headers["retry-after"] === "7");
  });
});

describe("alert delivery (ALERTMANAGER_URL)", () => {
  /** An Alertmanager in memory: `alerts` is what GET /api/v2/alerts lists, `down` fails every request. */
  class FakeAlertmanager implements AlertmanagerApi {
    readonly url = "http://alertmanager.test:9093";
    alerts_: ManagedAlert[] = [];
    filters: string[][] = [];
    down: AlertmanagerError | undefined;
    async alerts(filters: readonly string[]) {
      this.filters.push([...filters]);
      if (this.down) throw this.down;
      return this.alerts_;
    }
  }
  const firing = { alertname: "AppMonitorMemoryHigh", namespace: "demo", pod: "web-1", container: "app", appmonitor: "mymonitor", severity: "warning" };
  const copy = (over: Partial<ManagedAlert>): ManagedAlert => ({
    fingerprint: "f1", labels: { ...firing, prometheus: "monitoring/kps" }, startsAt: "2026-05-01T00:00:00Z", state: "active",
    inhibitedBy: [], silencedBy: [], mutedBy: [], receivers: ["appmonitor"], ...over,
  });

  function withAlertmanager(): Setup & { prometheus: FakePrometheus; alertmanager: FakeAlertmanager } {
    const prometheus = new FakePrometheus();
    prometheus.load("demo", "mymonitor", "1");
    prometheus.series.inNamespace = { workingSet: 1, cadvisorLimit: 1 };
    const base = setup({}, prometheus);
    const alertmanager = new FakeAlertmanager();
    const deps: SyncDeps = { ...base.deps, alertmanager };
    return { ...base, deps, handle: createHandler(deps), prometheus, alertmanager };
  }

  it("nothing firing: Alertmanager is not asked", async () => {
    const { cluster, handle, alertmanager } = withAlertmanager();
    cluster.addMonitor("mymonitor", spec);
    await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(alertmanager.filters, []);
    assert.deepEqual(cluster.events, []);
  });

  it("a firing alert Alertmanager inhibits: one Warning AlertInhibited per firing, not per event or resync; conditions unchanged", async () => {
    const { cluster, handle, alertmanager, prometheus, registry } = withAlertmanager();
    cluster.addMonitor("mymonitor", spec);
    prometheus.firing = [firing, { ...firing, appmonitor: "other" }];
    alertmanager.alerts_ = [copy({ state: "suppressed", inhibitedBy: ["f2"] }), { ...copy({}), fingerprint: "f2", labels: { alertname: "InfoInhibitor", namespace: "demo" } }];
    await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(alertmanager.filters, [['namespace="demo"']]);
    assert.deepEqual(lastConditions(cluster), { [RULE_READY]: ["True", REASONS.loaded], [METRICS_READY]: ["True", METRICS_REASONS.found] });
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.action, e.regarding?.name]), [["Warning", "AlertInhibited", "CheckAlertDelivery", "mymonitor"]]);
    assert.match(cluster.events[0]?.note ?? "", /^AppMonitorMemoryHigh of pod demo\/web-1, container app fires in Prometheus, but the Alertmanager at http:\/\/alertmanager\.test:9093 inhibits it \(inhibited by InfoInhibitor\{namespace="demo"\}\)/);
    await handle(context, { type: `${REF_EVENT_PREFIX}update`, data: ref("mymonitor") });
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.equal(cluster.events.length, 1, "the same firing: the Event's name is taken");
    assert.equal(await metric(registry, "appmonitor_rule_sync_undelivered_alerts_total", { reason: "AlertInhibited" }), 1);

    // Routed elsewhere now: another cause, another Warning.
    alertmanager.alerts_ = [copy({ receivers: ["null"] })];
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.deepEqual(cluster.events.map((e) => e.reason), ["AlertInhibited", "AlertNotRouted"]);
    assert.match(cluster.events[1]?.note ?? "", /routes it to the receiver null, not appmonitor/);
  });

  it("a resync asks Prometheus for the firing alerts once, Alertmanager once per AppMonitor with a firing alert", async () => {
    const { cluster, handle, alertmanager, prometheus } = withAlertmanager();
    for (const name of ["a", "b", "mymonitor"]) {
      cluster.addMonitor(name, spec);
      prometheus.load("demo", name, "1");
    }
    prometheus.firing = [firing];
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.deepEqual(prometheus.requests, { rules: 1, query: 4 }, "three for the sides, one for the firing alerts");
    assert.equal(alertmanager.filters.length, 1);
  });

  it("an Alertmanager that does not answer fails nothing: handled, no Event, logged", async () => {
    const { cluster, handle, alertmanager, prometheus } = withAlertmanager();
    cluster.addMonitor("mymonitor", spec);
    prometheus.firing = [firing];
    alertmanager.down = new AlertmanagerError("unreachable", "GET /api/v2/alerts: connect ECONNREFUSED 127.0.0.1:9093");
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(response, { outcome: "created", reason: REASONS.loaded });
    assert.deepEqual(cluster.events, []);
  });

  it("a Prometheus that does not answer: Alertmanager is not asked", async () => {
    const { cluster, handle, alertmanager, prometheus } = withAlertmanager();
    cluster.addMonitor("mymonitor", spec);
    prometheus.down = unreachable();
    await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("mymonitor") });
    assert.deepEqual(alertmanager.filters, []);
    assert.deepEqual(cluster.events.map((e) => e.reason), [PROMETHEUS_REASONS.unreachable]);
  });
});

describe("delete events", () => {
  it("delete our rule when the AppMonitor is gone", async () => {
    const { cluster, handle } = setup();
    cluster.addRule("mymonitor", true, "uid-mymonitor");
    const response = await handle(context, { type: `${RESOURCE_EVENT_PREFIX}delete`, data: { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "mymonitor", namespace: "demo", uid: "uid-mymonitor" } } });
    assert.deepEqual(response, { outcome: "deleted" });
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

  // A delete it could not carry out is never acknowledged: the rule of an AppMonitor deleted with
  // propagationPolicy=Orphan has no garbage collector to remove it, so the Broker must retry.
  const deleteFailures: [string, () => unknown, number, RegExp][] = [
    ["the connection dropped", () => new Error("socket hang up"), 503, /API server unavailable/],
    ["the API server answered 500", () => apiError(500, { message: "etcdserver: request timed out" }), 503, /etcdserver/],
    ["throttled", () => apiError(429, {}, { "retry-after": "2" }), 429, /throttled/],
    ["RBAC lacks delete", () => apiError(403, { reason: "Forbidden", message: 'prometheusrules.monitoring.coreos.com "mymonitor" is forbidden: User "system:serviceaccount:appmonitor:rule-sync" cannot delete resource "prometheusrules" in API group "monitoring.coreos.com" in the namespace "demo"' }), 500, /not allowed to delete PrometheusRule/],
  ];
  for (const [what, error, status, reason] of deleteFailures) {
    it(`answer ${status}, not 2xx, when ${what}`, async () => {
      const { cluster, handle, registry } = setup();
      cluster.addRule("mymonitor", true, "uid-mymonitor");
      cluster.fail.deleteRule = error;
      await rejectsWith(handle(context, { type: `${REF_EVENT_PREFIX}delete`, data: ref("mymonitor") }), status, reason);
      assert.ok(cluster.rules.has("demo/mymonitor"));
      assert.equal(await metric(registry, "appmonitor_rule_sync_events_total", { type: "delete", outcome: "failed" }), 1);
    });
  }

  it("answer 503 when the rule changed since it was read (its precondition failed), and delete it on the retry", async () => {
    const { cluster, handle } = setup();
    cluster.addRule("mymonitor", true, "uid-mymonitor");
    const stale = cluster.rules.get("demo/mymonitor");
    assert.ok(stale);
    // Someone wrote the rule between rule-sync's read and its delete: a new resourceVersion.
    cluster.fail.deleteRule = (attempt) => {
      if (attempt === 1) cluster.rules.set("demo/mymonitor", { ...stale, metadata: { ...stale.metadata, resourceVersion: "9999" } });
      return undefined;
    };
    await assert.rejects(handle(context, { type: `${REF_EVENT_PREFIX}delete`, data: ref("mymonitor") }), (error: unknown) => {
      assert.ok(error instanceof HttpError);
      assert.equal(error.status, 503);
      assert.equal(error.headers["retry-after"], "1");
      return true;
    });
    assert.deepEqual(await handle(context, { type: `${REF_EVENT_PREFIX}delete`, data: ref("mymonitor") }), { outcome: "deleted" });
    assert.equal(cluster.rules.size, 0);
  });
});

describe("scope and refusals", () => {
  it("skip an AppMonitor outside WATCH_NAMESPACES without calling the API server", async () => {
    const { cluster, handle } = setup({ WATCH_NAMESPACES: "demo" });
    const response = await handle(context, { type: `${REF_EVENT_PREFIX}add`, data: ref("m", "elsewhere") });
    assert.deepEqual(response, { outcome: "skipped", reason: "NamespaceNotWatched" });
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
    assert.deepEqual(response, { outcome: "resynced" });
    assert.deepEqual([...cluster.rules.keys()].sort(), ["demo/a", "demo/b", "demo/theirs"]);
    assert.equal(await metric(registry, "appmonitor_rule_sync_rule_writes_total", { result: "created" }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_rule_writes_total", { result: "deleted" }), 2);
    assert.deepEqual(
      cluster.statusWrites.filter((w) => w.status.conditions[0]?.status === "False").map((w) => [w.metadata.name, w.status.conditions[0]?.reason]),
      [["bad", REASONS.invalid]],
    );
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors", { reason: PROMETHEUS_REASONS.notConfigured }), 2);
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors_metrics", { reason: METRICS_REASONS.ruleNotApplied }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors", { reason: REASONS.invalid }), 1);
    assert.equal(await metric(registry, "appmonitor_rule_sync_resyncs_total", { trigger: "event", outcome: "ok" }), 1);
    assert.ok((await metric(registry, "appmonitor_rule_sync_last_resync_timestamp_seconds", {})) > 0);
  });

  it("asks Prometheus for the rule groups once for every AppMonitor, and not again after that failed", async () => {
    const prometheus = new FakePrometheus();
    const { cluster, handle, registry } = setup({}, prometheus, 5_000);
    for (const name of ["a", "b", "c"]) {
      cluster.addMonitor(name, spec);
      prometheus.load("demo", name, "1");
    }
    prometheus.series.inNamespace = { workingSet: 1, cadvisorLimit: 1 };
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.deepEqual(prometheus.requests, { rules: 1, query: 3 }, "one list of groups; one query per AppMonitor; no wait in a resync");
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors", { reason: REASONS.loaded }), 3);
    assert.equal(await metric(registry, "appmonitor_rule_sync_appmonitors_metrics", { reason: METRICS_REASONS.found }), 3);

    prometheus.down = unreachable();
    prometheus.requests = { rules: 0, query: 0 };
    await handle(context, { type: RESYNC_EVENT_TYPE });
    assert.deepEqual(prometheus.requests, { rules: 1, query: 0 });
    assert.equal(cluster.events.filter((e) => e.reason === PROMETHEUS_REASONS.unreachable).length, 3, "one Warning per AppMonitor whose condition turned");
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
