// rule-sync on the local stack, under a token of exactly its ServiceAccount, with the upstream
// PrometheusRule CRD: a rule per AppMonitor that follows it and is garbage-collected with it,
// resync (start-up and event) that restores, fixes and removes orphans, RuleReady and
// observedGeneration, least-privilege RBAC (and a missing permission named in a Warning Event),
// and 503 when the API server is away.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { before, test } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { forEachLimit } from "../../functions/lib/worker-pool.ts";
import { ALERT_NAME, GENERATION_ANNOTATION } from "../../functions/rule-sync/rule.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../functions/rule-sync/rule-config.ts";
import { REF_EVENT_PREFIX, RESOURCE_EVENT_PREFIX, RESYNC_EVENT_TYPE } from "../../functions/rule-sync/incoming-event.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { describeAnswer } from "../support/post-event.ts";
import { sampleSum, scrape } from "../support/prometheus-text.ts";
import {
  APPMONITORS,
  createAppMonitor,
  installRuleSync,
  readAppMonitor,
  readRule,
  RULE_SYNC_NAMESPACE,
  RULE_SYNC_SERVICE_ACCOUNT,
  startRuleSync,
  type StoredAppMonitor,
} from "../support/rule-sync.ts";
import { tailOf } from "../support/child-process.ts";
import { adminKubeConfig, freshNamespace, serviceAccountForEventsOnly, waitFor } from "../support/stack.ts";
import { tempDir } from "../support/temp-dir.ts";

before(() => installRuleSync());

const spec = { memThresholdPercent: 75, memMultiplier: 2 };

function ruleReady(monitor: StoredAppMonitor) {
  return monitor.status?.conditions?.find((c) => c.type === "RuleReady");
}

function expr(rule: Awaited<ReturnType<typeof readRule>>): string {
  return String(rule?.spec.groups?.[0]?.rules?.[0]?.expr ?? "");
}

const RULE_WRITE_RESULTS = ["created", "updated", "unchanged", "deleted", "rejected"] as const;

/** rule-sync's PrometheusRule writes so far, by result (`appmonitor_rule_sync_rule_writes_total`). */
async function ruleWrites(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Object.fromEntries(RULE_WRITE_RESULTS.map((result) => [result, sampleSum(text, "appmonitor_rule_sync_rule_writes_total", { result })]));
}

/** The writes between two {@link ruleWrites} readings. */
function since(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(RULE_WRITE_RESULTS.map((result) => [result, (after[result] ?? 0) - (before[result] ?? 0)]));
}

async function customApi(): Promise<k8s.CustomObjectsApi> {
  return (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
}

async function objectApi(): Promise<k8s.KubernetesObjectApi> {
  return k8s.KubernetesObjectApi.makeApiClient(await adminKubeConfig());
}

test("an AppMonitor's PrometheusRule is created with its ownerReference, follows its threshold and is garbage-collected with it", async (t) => {
  const ns = await freshNamespace(t);
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false" });
  t.after(() => fn.stop());
  await waitFor("rule-sync ready", async () => (await fetch(`${fn.url}/health/readiness`)).status === 200);

  // The original demo's AppMonitor, unchanged, and the event an ApiServerSource in Resource mode sends.
  const example = parse(await readFile(path.join(repoRoot, "knative", "examples", "appmonitor.yaml"), "utf8")) as { metadata: { name: string }; spec: Record<string, unknown> };
  const created = await createAppMonitor(ns, example.metadata.name, example.spec);
  const name = created.metadata.name;
  const added = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, created);
  assert.equal(added.status, 204, describeAnswer(added));
  assert.equal(added.text, "", "no body: a Broker fails a reply body that is not a CloudEvent");
  assert.equal(added.outcome, "created");
  assert.equal(added.reason, "PrometheusNotConfigured", "no PROMETHEUS_URL: whether Prometheus loaded it is not known (rule-sync-readiness.test.ts asks one)");

  const rule = await readRule(ns, name);
  assert.ok(rule, "the PrometheusRule exists");
  assert.deepEqual(rule.metadata?.ownerReferences, [
    { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name, uid: created.metadata.uid, controller: true, blockOwnerDeletion: true },
  ]);
  assert.equal(rule.metadata?.labels?.[MANAGED_BY_LABEL], MANAGED_BY_VALUE);
  assert.equal(rule.metadata?.annotations?.[GENERATION_ANNOTATION], "1");
  assert.equal(rule.spec.groups?.[0]?.rules?.[0]?.alert, ALERT_NAME);
  assert.equal(rule.spec.groups?.[0]?.rules?.[0]?.for, "60s");
  assert.match(expr(rule), new RegExp(`namespace="${ns}"`));
  assert.match(expr(rule), />= 75$/);
  // Written by server-side apply, under rule-sync's field manager.
  assert.ok(rule.metadata?.managedFields?.some((f) => f.manager === "appmonitor-rule-sync" && f.operation === "Apply"), JSON.stringify(rule.metadata?.managedFields));

  let monitor = await readAppMonitor(ns, name);
  assert.equal(ruleReady(monitor)?.status, "Unknown");
  assert.equal(ruleReady(monitor)?.reason, "PrometheusNotConfigured");
  assert.match(ruleReady(monitor)?.message ?? "", new RegExp(`PrometheusRule ${ns}/${name}`));
  assert.equal(monitor.status?.observedGeneration, 1);
  assert.equal(ruleReady(monitor)?.observedGeneration, 1);

  // A new threshold is a new generation; an ApiServerSource in Reference mode sends only a reference.
  await (await customApi()).patchNamespacedCustomObject(
    { ...APPMONITORS, namespace: ns, name, body: { spec: { memThresholdPercent: 80 } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  const updated = await fn.send(`${REF_EVENT_PREFIX}update`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name, namespace: ns });
  assert.equal(updated.status, 204, describeAnswer(updated));
  assert.equal(updated.outcome, "updated");
  const followed = await readRule(ns, name);
  assert.match(expr(followed), />= 80$/);
  assert.equal(followed?.metadata?.annotations?.[GENERATION_ANNOTATION], "2");
  assert.equal(followed?.metadata?.uid, rule.metadata?.uid, "replaced in place, not re-created");
  monitor = await readAppMonitor(ns, name);
  assert.equal(monitor.status?.observedGeneration, 2);
  assert.equal(ruleReady(monitor)?.observedGeneration, 2);

  // Deleted without any event to rule-sync: the garbage collector follows the ownerReference.
  await (await customApi()).deleteNamespacedCustomObject({ ...APPMONITORS, namespace: ns, name });
  await waitFor("the PrometheusRule garbage-collected", async () => (await readRule(ns, name)) === undefined, 60_000);
  const deleted = await fn.send(`${RESOURCE_EVENT_PREFIX}delete`, monitor);
  assert.equal(deleted.status, 204, describeAnswer(deleted));
  assert.equal(deleted.outcome, "kept", "nothing left to delete");

  assert.equal(await fn.stop(), 0, `exits 0 on SIGTERM\n${tailOf(fn.process)}`);
  assert.match(fn.process.output(), /"msg":"draining"/);
});

test("a delete event removes the rule of an AppMonitor deleted with propagationPolicy=Orphan", async (t) => {
  const ns = await freshNamespace(t);
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false" });
  t.after(() => fn.stop());
  const created = await createAppMonitor(ns, "orphaning", spec);
  assert.equal((await fn.send(`${RESOURCE_EVENT_PREFIX}add`, created)).status, 204);
  assert.ok(await readRule(ns, "orphaning"));

  await (await customApi()).deleteNamespacedCustomObject({ ...APPMONITORS, namespace: ns, name: "orphaning", propagationPolicy: "Orphan" });
  // The garbage collector orphans the dependent: it drops the ownerReference and keeps the rule.
  await waitFor("the rule orphaned", async () => {
    const rule = await readRule(ns, "orphaning");
    return rule !== undefined && (rule.metadata?.ownerReferences ?? []).length === 0;
  }, 60_000);
  const deleted = await fn.send(`${RESOURCE_EVENT_PREFIX}delete`, created);
  assert.equal(deleted.status, 204, describeAnswer(deleted));
  assert.equal(deleted.outcome, "deleted");
  assert.equal(await readRule(ns, "orphaning"), undefined);
});

test("resync at start-up and on an event restores a deleted rule, fixes an edited one, removes an orphan and leaves others' rules", async (t) => {
  const ns = await freshNamespace(t);
  const objects = await objectApi();
  const foreign = {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name: "theirs", namespace: ns, labels: { team: "other" } },
    spec: { groups: [{ name: "theirs", rules: [{ alert: "Theirs", expr: "vector(1)" }] }] },
  };
  await objects.create(foreign);
  const early = await createAppMonitor(ns, "early", spec);

  // Start-up: the AppMonitor that existed before gets its rule without any event.
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns });
  t.after(() => fn.stop());
  const first = await waitFor("the start-up resync to create the rule", () => readRule(ns, "early"), 30_000);
  assert.equal(first.metadata?.ownerReferences?.[0]?.uid, early.metadata.uid);

  // Break things the way ApiServerSource could miss: a rule deleted by hand, a rule edited by
  // hand, an AppMonitor created while nothing listened, an orphan with our label.
  const edited = await createAppMonitor(ns, "edited", { ...spec, memThresholdPercent: 90 });
  assert.equal((await fn.send(`${RESOURCE_EVENT_PREFIX}add`, edited)).status, 204);
  await objects.delete({ apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule", metadata: { namespace: ns, name: "early" } });
  const hand = await readRule(ns, "edited");
  assert.ok(hand);
  const groups = structuredClone(hand.spec.groups ?? []);
  const handRule = groups[0]?.rules?.[0];
  assert.ok(handRule);
  handRule.expr = "vector(0)";
  await objects.patch(
    { apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule", metadata: { namespace: ns, name: "edited" }, spec: { groups } } as k8s.KubernetesObject,
    undefined, undefined, "someone-by-hand", undefined, k8s.PatchStrategy.MergePatch,
  );
  assert.equal(expr(await readRule(ns, "edited")), "vector(0)");
  const missed = await createAppMonitor(ns, "missed", spec);
  await objects.create({
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name: "leftover", namespace: ns, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
    spec: { groups: [{ name: "appmonitor/x/leftover", rules: [{ alert: ALERT_NAME, expr: "vector(1)" }] }] },
  });

  // What the resync did, from rule-sync's metrics (the answer carries only the outcome).
  const writesBefore = await ruleWrites(fn.url);
  const resynced = await fn.send(RESYNC_EVENT_TYPE, { reason: "test" });
  assert.equal(resynced.status, 204, describeAnswer(resynced));
  assert.equal(resynced.outcome, "resynced");
  assert.equal(await scrape(`${fn.url}/metrics`, "appmonitor_rule_sync_appmonitors"), 3, "AppMonitors in scope");
  assert.deepEqual(since(writesBefore, await ruleWrites(fn.url)), { created: 2, updated: 1, unchanged: 0, deleted: 1, rejected: 0 });

  assert.equal((await readRule(ns, "early"))?.metadata?.ownerReferences?.[0]?.uid, early.metadata.uid, "restored");
  assert.match(expr(await readRule(ns, "edited")), />= 90$/, "fixed");
  assert.equal((await readRule(ns, "missed"))?.metadata?.ownerReferences?.[0]?.uid, missed.metadata.uid, "created");
  assert.equal(await readRule(ns, "leftover"), undefined, "orphan removed");
  const theirs = await readRule(ns, "theirs");
  assert.equal(expr(theirs), "vector(1)", "someone else's rule untouched");
  assert.equal(theirs?.metadata?.labels?.[MANAGED_BY_LABEL], undefined);

  // Nothing changed since: a second resync writes nothing.
  const writesBeforeAgain = await ruleWrites(fn.url);
  assert.equal((await fn.send(RESYNC_EVENT_TYPE)).outcome, "resynced");
  assert.deepEqual(since(writesBeforeAgain, await ruleWrites(fn.url)), { created: 0, updated: 0, unchanged: 3, deleted: 0, rejected: 0 });
});

test("an invalid AppMonitor gets RuleReady False with the reason and no rule, and its rule once fixed, keeping other writers' conditions", async (t) => {
  const ns = await freshNamespace(t);
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false" });
  t.after(() => fn.stop());
  // The CRD accepts any matchLabels key; a key that is not label syntax cannot go into PromQL.
  const bad = await createAppMonitor(ns, "bad", { ...spec, selector: { matchLabels: { "not a key!": "x" } } });
  const answer = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, bad);
  assert.equal(answer.status, 204, "handled: a retry cannot fix it");
  assert.equal(answer.reason, "InvalidSpec");
  let monitor = await readAppMonitor(ns, "bad");
  assert.equal(ruleReady(monitor)?.status, "False");
  assert.equal(ruleReady(monitor)?.reason, "InvalidSpec");
  assert.match(ruleReady(monitor)?.message ?? "", /spec\.selector\.matchLabels\["not a key!"\]: not a valid Kubernetes label key/);
  assert.equal(monitor.status?.observedGeneration, 1);
  assert.equal(await readRule(ns, "bad"), undefined);

  // Another writer's condition (as memory-scaler would set one) must survive rule-sync's writes:
  // conditions is a map list keyed by type, and rule-sync applies only RuleReady, MetricsReady and Ready.
  await (await customApi()).patchNamespacedCustomObjectStatus(
    {
      ...APPMONITORS, namespace: ns, name: "bad", fieldManager: "another-writer", force: true,
      body: { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name: "bad", namespace: ns }, status: { conditions: [{ type: "Scaled", status: "False", reason: "NoAlert", message: "x", lastTransitionTime: "2026-01-01T00:00:00Z" }] } },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply),
  );
  await (await customApi()).patchNamespacedCustomObject(
    { ...APPMONITORS, namespace: ns, name: "bad", body: [{ op: "remove", path: "/spec/selector" }] },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
  );
  assert.equal((await fn.send(`${REF_EVENT_PREFIX}update`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "bad", namespace: ns })).status, 204);
  monitor = await readAppMonitor(ns, "bad");
  assert.deepEqual([ruleReady(monitor)?.status, ruleReady(monitor)?.reason], ["Unknown", "PrometheusNotConfigured"], "applied; no PROMETHEUS_URL to tell whether it is loaded");
  assert.equal(monitor.status?.observedGeneration, 2);
  assert.deepEqual(monitor.status?.conditions?.map((c) => c.type).sort(), ["MetricsReady", "Ready", "RuleReady", "Scaled"]);
  assert.ok(await readRule(ns, "bad"));
});

test("rule-sync's ServiceAccount may do exactly what it needs", async () => {
  const authz = (await adminKubeConfig()).makeApiClient(k8s.AuthorizationV1Api);
  const user = `system:serviceaccount:${RULE_SYNC_NAMESPACE}:${RULE_SYNC_SERVICE_ACCOUNT}`;
  const can = async (group: string, resource: string, verb: string, subresource?: string, namespace = "any"): Promise<boolean> => {
    const review = await authz.createSubjectAccessReview({
      body: { spec: { user, groups: ["system:serviceaccounts", `system:serviceaccounts:${RULE_SYNC_NAMESPACE}`], resourceAttributes: { group, resource, verb, namespace, ...(subresource ? { subresource } : {}) } } },
    });
    return review.status?.allowed === true;
  };
  const allowed: [string, string, string, string?][] = [
    ["kubedemo.com", "appmonitors", "get"], ["kubedemo.com", "appmonitors", "list"],
    ["kubedemo.com", "appmonitors", "patch", "status"], ["kubedemo.com", "appmonitors", "update", "finalizers"],
    ["monitoring.coreos.com", "prometheusrules", "get"], ["monitoring.coreos.com", "prometheusrules", "list"],
    ["monitoring.coreos.com", "prometheusrules", "create"], ["monitoring.coreos.com", "prometheusrules", "patch"],
    ["monitoring.coreos.com", "prometheusrules", "delete"],
  ];
  const denied: [string, string, string, string?][] = [
    ["kubedemo.com", "appmonitors", "update"], ["kubedemo.com", "appmonitors", "patch"], ["kubedemo.com", "appmonitors", "delete"],
    ["kubedemo.com", "appmonitors", "create"], ["kubedemo.com", "appmonitors", "watch"],
    ["monitoring.coreos.com", "prometheusrules", "update"], ["monitoring.coreos.com", "prometheusrules", "deletecollection"],
    ["monitoring.coreos.com", "prometheuses", "get"], ["", "pods", "get"], ["", "secrets", "list"], ["apps", "deployments", "patch"],
  ];
  for (const [group, resource, verb, sub] of allowed) assert.equal(await can(group, resource, verb, sub), true, `${verb} ${group}/${resource}${sub ? `/${sub}` : ""}`);
  for (const [group, resource, verb, sub] of denied) assert.equal(await can(group, resource, verb, sub), false, `${verb} ${group}/${resource}${sub ? `/${sub}` : ""}`);
  // Events where the AppMonitors are (its Warnings on them) and in its own namespace (PermissionDenied on its ServiceAccount); never read.
  assert.equal(await can("events.k8s.io", "events", "create", undefined, RULE_SYNC_NAMESPACE), true, "create Events in its namespace");
  assert.equal(await can("events.k8s.io", "events", "create"), true, "create Events in the AppMonitors' namespaces");
  assert.equal(await can("events.k8s.io", "events", "list", undefined, RULE_SYNC_NAMESPACE), false, "no reading Events");
  assert.equal(await can("", "events", "create"), false, "no core/v1 Events");
});

test("a ServiceAccount without rule-sync's grants is not ready, fails events with 500, and a Warning Event on it and a metric name the missing permission", async (t) => {
  const ns = await freshNamespace(t);
  const admin = await adminKubeConfig();
  // It may create Events in its own namespace, and nothing else.
  await serviceAccountForEventsOnly(ns, "nobody");
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false" }, { namespace: ns, name: "nobody" });
  t.after(() => fn.stop());
  const readiness = await fetch(`${fn.url}/health/readiness`);
  assert.equal(readiness.status, 503);
  assert.match(((await readiness.json()) as { reason: string }).reason, /not allowed/);
  const answer = await fn.send(`${REF_EVENT_PREFIX}add`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "m", namespace: ns });
  assert.equal(answer.status, 500, "retried by the Broker, then dead-lettered");
  assert.match(String(answer.body.error), /not allowed to read AppMonitor/);

  const events = admin.makeApiClient(k8s.EventsV1Api);
  const warning = await waitFor("a PermissionDenied Event naming get appmonitors", async () =>
    (await events.listNamespacedEvent({ namespace: ns })).items.find(
      (e) => e.reason === "PermissionDenied" && e.regarding?.kind === "ServiceAccount" && e.regarding.name === "nobody" && (e.note ?? "").includes(`get appmonitors.kubedemo.com in namespace ${ns}`),
    ),
  );
  assert.equal(warning.type, "Warning");
  assert.equal(warning.reportingController, "kubedemo.com/rule-sync");
  assert.ok((await scrape(`${fn.url}/metrics`, "appmonitor_kubernetes_permission_denied_total", { verb: "get", group: "kubedemo.com", resource: "appmonitors" })) >= 1);
  assert.match(fn.process.output(), /a permission is missing from the function's RBAC/);
});

test("with the API server unreachable: readiness 503, events 503, and the start-up resync keeps trying", async (t) => {
  const port = await freePort();
  const dir = await tempDir("rule-sync-down");
  t.after(() => dir.remove());
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "down", server: `https://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "c", cluster: "down", user: "u" }],
    currentContext: "c",
  });
  const file = path.join(dir.path, "kubeconfig");
  await writeFile(file, kc.exportConfig());
  const fn = await startRuleSync({ KUBECONFIG: file });
  t.after(() => fn.stop());
  const readiness = await fetch(`${fn.url}/health/readiness`);
  assert.equal(readiness.status, 503);
  assert.match(((await readiness.json()) as { reason: string }).reason, /unavailable/);
  const event = await fn.send(`${REF_EVENT_PREFIX}update`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", name: "m", namespace: "ns" });
  assert.equal(event.status, 503);
  assert.match(String(event.body.error), /Kubernetes API server unavailable/);
  assert.equal((await fn.send(RESYNC_EVENT_TYPE)).status, 503);
  await waitFor("a start-up resync retry logged", async () => /"msg":"start-up resync failed; retrying"/.test(fn.process.output()));
  assert.equal(await fn.stop(), 0, "stops cleanly while the start-up resync waits to retry");
});

test("a resync reads every page of the managed rules: 501 orphans, one more than a page, are all removed", async (t) => {
  const ns = await freshNamespace(t);
  const objects = await objectApi();
  const names = Array.from({ length: 501 }, (_, i) => `orphan-${i}`);
  await forEachLimit(names, 16, async (name) => { await objects.create({
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name, namespace: ns, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
    spec: { groups: [{ name: `appmonitor/${ns}/${name}`, rules: [{ alert: ALERT_NAME, expr: "vector(1)" }] }] },
  }); });
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false" });
  t.after(() => fn.stop());
  const writesBefore = await ruleWrites(fn.url);
  const resynced = await fn.send(RESYNC_EVENT_TYPE, { reason: "test" });
  assert.equal(resynced.status, 204, describeAnswer(resynced));
  assert.equal(since(writesBefore, await ruleWrites(fn.url)).deleted, 501);
  const left = await (await customApi()).listNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", plural: "prometheusrules", namespace: ns }) as { items: unknown[] };
  assert.equal(left.items.length, 0);
});
