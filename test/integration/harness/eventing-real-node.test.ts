// Knative Eventing for real on the stack's real node: its controller, webhook, Broker ingress and
// filter, and in-memory channel run there as Pods (test/harness/stack/eventing-install.ts), appmonitor's
// own Eventing objects are applied as the shipped Eventing-only profile has them (knative/eventing-only/,
// through the stack's overlay, test/harness/stack/stack-profile.ts), and the functions run as Pods with alert-receiver's K_SINK injected
// by the SinkBinding. Events go through the real data plane: ingress → channel → filter →
// Trigger → memory-scaler.
//
// AppMonitor changes reach rule-sync through the real ApiServerSource adapter and the Broker (add,
// update, delete).
//
// Starts its own stack (one kwok Node, the real node) in a temporary state directory
// (test/support/eventing-stack.ts); one real node per machine, so it waits for the machine-wide
// lock `/tmp/appmonitor-real-node.lock` first.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import type { CloudEvent } from "cloudevents";
import { EVENTING_NAMESPACE } from "../../harness/stack/eventing-manifests.ts";
import { BROKER } from "../../harness/stack/eventing-objects.ts";
import { FUNCTIONS_NAMESPACE } from "../../harness/stack/function-pods-install.ts";
import { REAL_NODE } from "../../harness/stack/real-node-config.ts";
import { logFilterReceipts, readFilterReceipts } from "../../harness/stack/broker-filter-log.ts";
import { waitForDelivery } from "../../harness/lib/broker-hop.ts";
import { brokerIngressUrl, logTail, postToBroker, readyPod, runningMemhog, scalerEvents, useEventingStack } from "../../support/eventing-stack.ts";
import { kustomize } from "../../support/knative.ts";
import { alertEvent, createAppMonitor } from "../../support/memory-scaler.ts";
import { waitFor } from "../../support/stack.ts";

/** The namespace of the scaled workload: memhog and the AppMonitor that governs it. */
const WORKLOAD_NS = "eventing-workload";

const stack = useEventingStack({ stateDirPrefix: "appmonitor-eventing-", workloadNamespace: WORKLOAD_NS });

test("Eventing runs on the real node and its webhook is reached: the Broker was defaulted by it", { timeout: 60_000 }, async (t) => {
  const { core, kc, installation } = stack();
  const pods = (await core.listNamespacedPod({ namespace: EVENTING_NAMESPACE })).items.filter((p) => p.status?.phase === "Running");
  for (const name of installation.deployments) {
    const pod = pods.find((p) => p.metadata?.name?.startsWith(`${name}-`));
    assert.equal(pod?.spec?.nodeName, REAL_NODE.name, `${name} runs on the real node`);
  }
  t.diagnostic(`Available: ${installation.deployments.join(", ")} (${installation.seconds.toFixed(1)} s from the first image import)`);
  // The Broker class annotation is not in knative/eventing/broker.yaml: the mutating webhook adds it.
  const broker = await kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
    group: "eventing.knative.dev", version: "v1", namespace: BROKER.namespace, plural: "brokers", name: BROKER.name,
  }) as { metadata: { annotations?: Record<string, string> } };
  assert.equal(broker.metadata.annotations?.["eventing.knative.dev/broker.class"], "MTChannelBasedBroker");
});

test("alert-receiver's K_SINK is the Broker's address, injected by the SinkBinding", { timeout: 60_000 }, async () => {
  const { core, brokerUrl } = stack();
  const pod = await readyPod(core, FUNCTIONS_NAMESPACE, "alert-receiver-");
  const sink = pod.spec?.containers[0]?.env?.find((e) => e.name === "K_SINK")?.value;
  assert.equal(sink, brokerUrl);
});

test("a firing alert posted to the Broker reaches memory-scaler through its Trigger and scales memhog once; resolved and unrelated events never reach it", { timeout: 180_000 }, async (t) => {
  const { core, apps } = stack();
  const memhog = await runningMemhog(core, WORKLOAD_NS);
  const alert = { namespace: WORKLOAD_NS, pod: memhog.metadata?.name ?? "", container: "memhog", appmonitor: "mymonitor" };
  const scaler = await readyPod(core, FUNCTIONS_NAMESPACE, "memory-scaler-");
  await waitForDelivery(core, await brokerIngressUrl(core), { name: scaler.metadata.name, namespace: FUNCTIONS_NAMESPACE });
  const before = await scalerEvents(core);
  assert.equal(await postToBroker(core, alertEvent(alert)), 202);
  const scaled = await waitFor("memhog scaled to 768Mi", async () => {
    const d = await apps.readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
    return d.spec?.template.spec?.containers[0]?.resources?.limits?.memory === "768Mi" ? d : undefined;
  }, 60_000, 200).catch(async (error: Error) => {
    // What memory-scaler said of the event, and whether the filter delivered it, make the failure readable.
    throw new Error(`${error.message}\nmemory-scaler:\n${await logTail(core, FUNCTIONS_NAMESPACE, "memory-scaler-")}\nmt-broker-filter:\n${await logTail(core, EVENTING_NAMESPACE, "mt-broker-filter-")}`, { cause: error });
  });
  t.diagnostic(`memhog limits ${JSON.stringify(scaled.spec?.template.spec?.containers[0]?.resources)}`);

  assert.equal(await postToBroker(core, alertEvent({ ...alert, status: "resolved" })), 202);
  const unrelated = alertEvent(alert).cloneWith({ type: "com.kubedemo.appmonitor.unrelated" }) as CloudEvent<unknown>;
  assert.equal(await postToBroker(core, unrelated), 202);
  // A marker through the same path after them: once it arrives, the two before it had their chance.
  const marker = alertEvent({ namespace: WORKLOAD_NS, pod: "marker", alertname: "Marker" });
  assert.equal(await postToBroker(core, marker), 202);
  const afterEvents = await waitFor("the marker reached memory-scaler", async () => {
    const now = await scalerEvents(core);
    return Object.entries(now).some(([k, v]) => k.includes('reason="NotAppMonitorAlert"') && v > (before[k] ?? 0)) ? now : undefined;
  }, 30_000, 200);
  const delta = Object.fromEntries(Object.entries(afterEvents).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0));
  t.diagnostic(`memory-scaler events since the first post: ${JSON.stringify(delta)}`);
  // Skips are the marker's (and a late probe of waitForDelivery's, if one was slow rather than dropped).
  // A probe the Broker delivered twice is answered as a duplicate the second time.
  const seen = Object.entries(delta).map(([k, v]) => [/type="(\w+)"/.exec(k)?.[1], /outcome="(\w+)"/.exec(k)?.[1], /reason="(\w+)"/.exec(k)?.[1], v] as const)
    .filter(([, outcome, reason]) => !(outcome === "duplicate" && reason === "NotAppMonitorAlert"));
  assert.deepEqual(seen.map(([type, outcome, reason]) => [type, outcome, reason]).sort(),
    [["firing", "scaled", "Scaled"], ["firing", "skipped", "NotAppMonitorAlert"]], "a scale and the marker; no resolved event, nothing else");
  assert.equal(seen.find(([, outcome]) => outcome === "scaled")?.[3], 1, "scaled once");
  const d = await apps.readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
  assert.equal(d.metadata?.generation, scaled.metadata?.generation, "scaled once");
});

test("creating an AppMonitor makes rule-sync write its PrometheusRule, the event coming through the ApiServerSource's adapter and the Broker", { timeout: 120_000 }, async (t) => {
  const { core, kc } = stack();
  const adapter = await readyPod(core, FUNCTIONS_NAMESPACE, "apiserversource-appmonitors-");
  assert.equal(adapter.spec?.nodeName, REAL_NODE.name, "the adapter Eventing's controller made was placed on the real node by its namespace");
  await createAppMonitor(WORKLOAD_NS, "through-the-source", { memThresholdPercent: 80, memMultiplier: 2 });
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const rule = await waitFor("a PrometheusRule for AppMonitor through-the-source", async () => {
    const list = await custom.listNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: WORKLOAD_NS, plural: "prometheusrules" }) as { items: { metadata: { name: string; ownerReferences?: { kind: string; name: string }[] } }[] };
    return list.items.find((r) => r.metadata.ownerReferences?.some((o) => o.kind === "AppMonitor" && o.name === "through-the-source"));
  }, 60_000, 200);
  const ruleSync = await readyPod(core, FUNCTIONS_NAMESPACE, "rule-sync-");
  const log = await core.readNamespacedPodLog({ name: ruleSync.metadata.name, namespace: FUNCTIONS_NAMESPACE });
  const line = log.split("\n").find((l) => l.includes('"eventType":"dev.knative.apiserver.resource.add"') && l.includes('"name":"through-the-source"'));
  assert.ok(line, "rule-sync logged the ApiServerSource's add event for it");
  t.diagnostic(`PrometheusRule ${WORKLOAD_NS}/${rule.metadata.name}; rule-sync: ${line.slice(0, 240)}`);
});

type RuleSyncLine = { msg?: string; eventType?: string; namespace?: string; name?: string; rule?: string; result?: string };

/** rule-sync's JSON log lines, from its Running Pod. */
async function ruleSyncLog(): Promise<RuleSyncLine[]> {
  const { core } = stack();
  const pod = await readyPod(core, FUNCTIONS_NAMESPACE, "rule-sync-");
  const log = await core.readNamespacedPodLog({ name: pod.metadata.name, namespace: FUNCTIONS_NAMESPACE, container: "rule-sync" });
  return log.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as RuleSyncLine);
}

type StoredRule = { metadata: { name: string; annotations?: Record<string, string>; ownerReferences?: { kind: string; name: string }[] }; spec: { groups: { rules: { alert?: string; expr: string }[] }[] } };

/** The PrometheusRule rule-sync writes for AppMonitor `WORKLOAD_NS/<name>`, or undefined. */
async function ruleOf(name: string): Promise<StoredRule | undefined> {
  const custom = stack().kc.makeApiClient(k8s.CustomObjectsApi);
  return (custom.getNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: WORKLOAD_NS, plural: "prometheusrules", name }) as Promise<StoredRule>)
    .catch((error: { code?: number }) => {
      if (error.code === 404) return undefined;
      throw error;
    });
}

/** Resolves once rule-sync's log has had no new line about AppMonitor `WORKLOAD_NS/<name>` for 3 s. */
async function ruleSyncQuiet(name: string): Promise<void> {
  const count = async () => (await ruleSyncLog()).filter((l) => l.namespace === WORKLOAD_NS && l.name === name).length;
  let last = await count();
  let since = Date.now();
  await waitFor(`rule-sync done with ${name}`, async () => {
    const now = await count();
    if (now !== last) [last, since] = [now, Date.now()];
    return Date.now() - since >= 3_000;
  }, 60_000, 500);
}

/** The subject of an ApiServerSource event for AppMonitor `WORKLOAD_NS/<name>` (Resource mode: the object's selfLink). */
const appMonitorSubject = (name: string) => `/apis/kubedemo.com/v1/namespaces/${WORKLOAD_NS}/appmonitors/${name}`;

test("editing an AppMonitor re-applies its PrometheusRule and deleting it deletes the rule, the update and delete events coming through the ApiServerSource and the Broker's Triggers", { timeout: 180_000 }, async (t) => {
  const { kc } = stack();
  // The filter logs each event it is handed from now on: the proof that the events went through the Broker.
  await logFilterReceipts(kc);
  const name = "edited-through-the-source";
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await createAppMonitor(WORKLOAD_NS, name, { memThresholdPercent: 80, memMultiplier: 2 });
  const created = await waitFor(`the PrometheusRule of ${name}`, () => ruleOf(name), 60_000, 200);
  assert.equal(created.metadata.annotations?.["app-monitor.kubedemo.com/appmonitor-generation"], "1");

  await custom.patchNamespacedCustomObject(
    { group: "kubedemo.com", version: "v1", namespace: WORKLOAD_NS, plural: "appmonitors", name, body: { spec: { memThresholdPercent: 90 } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  const edited = await waitFor(`the PrometheusRule of ${name} at generation 2`, async () => {
    const rule = await ruleOf(name);
    return rule?.metadata.annotations?.["app-monitor.kubedemo.com/appmonitor-generation"] === "2" ? rule : undefined;
  }, 60_000, 200);
  const threshold = edited.spec.groups.flatMap((g) => g.rules).find((r) => r.alert === "AppMonitorMemoryHigh")?.expr ?? "";
  assert.match(threshold, />= 90\b/, "the edited threshold is in the rule's expression");
  assert.doesNotMatch(threshold, />= 80\b/);

  // The status rule-sync wrote is an update event of its own: let that reconcile finish first. One
  // that read the AppMonitor before the delete and applied after the orphaning would put the
  // ownerReference back, and the garbage collector, not rule-sync, would then delete the rule.
  await ruleSyncQuiet(name);
  // Orphan: the garbage collector leaves the rule (and drops its ownerReference), so only rule-sync can delete it.
  await custom.deleteNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace: WORKLOAD_NS, plural: "appmonitors", name, propagationPolicy: "Orphan" });
  await waitFor(`the PrometheusRule of ${name} deleted`, async () => (await ruleOf(name)) === undefined, 60_000, 200);

  // The rule may go on the update event (below), before the delete event has reached rule-sync.
  for (const action of ["update", "delete"] as const) {
    const type = `dev.knative.apiserver.resource.${action}`;
    await waitFor(
      `rule-sync reconciled ${name} on its ${action} event`,
      async () => (await ruleSyncLog()).some((l) => l.msg === "AppMonitor reconciled" && l.eventType === type && l.namespace === WORKLOAD_NS && l.name === name),
      60_000,
      200,
    );
    const receipts = (await readFilterReceipts(kc)).filter((r) => r.trigger === `${FUNCTIONS_NAMESPACE}/rule-sync-appmonitor-${action}` && r.eventType === type && r.subject === appMonitorSubject(name));
    assert.ok(receipts.length >= 1 && receipts.every((r) => r.arrivedAt !== undefined), `the Broker filter handed the ${action} event to Trigger rule-sync-appmonitor-${action}: ${JSON.stringify(receipts)}`);
  }
  const lines = await ruleSyncLog();
  // The delete marks the AppMonitor (its orphan finalizer: an update event) before it goes (the
  // delete event); rule-sync deletes the rule on whichever finds the AppMonitor deleting or gone,
  // after a lost compare-and-swap ("changed") when the garbage collector was orphaning the rule.
  const attempts = lines.filter((l) => l.msg === "PrometheusRule without a live AppMonitor: delete" && l.namespace === WORKLOAD_NS && l.name === name);
  const deleted = attempts.find((l) => l.result === "deleted");
  assert.ok(deleted, `rule-sync deleted the orphaned rule: ${JSON.stringify(attempts)}`);
  assert.match(deleted.eventType ?? "", /^dev\.knative\.apiserver\.resource\.(update|delete)$/, "on an event of the ApiServerSource");
  t.diagnostic(`rule-sync: ${attempts.map((l) => `${l.eventType} ${l.result}`).join(", ")}`);
});


type Named = { metadata: { name: string; uid?: string; generation?: number; ownerReferences?: { uid: string }[] } };
type Channel = Named & { spec?: { subscribers?: { uid: string }[] }; status?: { subscribers?: { uid: string }[] } };

test("an AppMonitor whose add event is lost while rule-sync is down gets its PrometheusRule from the next PingSource resync once rule-sync is back, with no change to the AppMonitor", { timeout: 600_000 }, async (t) => {
  const { kc, core, apps } = stack();
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const name = "made-while-down";
  const addTrigger = { group: "eventing.knative.dev", version: "v1", namespace: FUNCTIONS_NAMESPACE, plural: "triggers", name: "rule-sync-appmonitor-add" };
  const ping = { group: "sources.knative.dev", version: "v1", namespace: FUNCTIONS_NAMESPACE, plural: "pingsources", name: "rule-sync-resync" };
  const channels = { group: "messaging.knative.dev", version: "v1", namespace: FUNCTIONS_NAMESPACE, plural: "inmemorychannels" };
  const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
  const strategic = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch);
  const shippedSchedule = (await custom.getNamespacedCustomObject(ping) as { spec: { schedule: string } }).spec.schedule;
  const shippedTrigger = (await kustomize("knative/eventing-only")).find((o) => o.kind === "Trigger" && o.metadata.name === addTrigger.name);
  assert.ok(shippedTrigger, "the Eventing-only profile has the add Trigger");
  const ruleSyncPods = async () => (await core.listNamespacedPod({ namespace: FUNCTIONS_NAMESPACE, labelSelector: "app.kubernetes.io/name=rule-sync" })).items;
  const triggerExists = async () => custom.getNamespacedCustomObject(addTrigger).then(() => true, (error: { code?: number }) => {
    if (error.code === 404) return false;
    throw error;
  });
  try {
    // Every 10 s instead of every 10 minutes (the adapter's cron takes seconds), so the test need not wait for the shipped tick.
    await custom.patchNamespacedCustomObject({ ...ping, body: { spec: { schedule: "*/10 * * * * *" } } }, mergePatch);
    // Down; and back without its start-up resync, which would repair the rule before any tick.
    await apps.patchNamespacedDeployment({
      name: "rule-sync", namespace: FUNCTIONS_NAMESPACE,
      body: { spec: { replicas: 0, template: { spec: { containers: [{ name: "rule-sync", env: [{ name: "RESYNC_ON_START", value: "false" }] }] } } } },
    }, strategic);
    await waitFor("no rule-sync Pod", async () => (await ruleSyncPods()).length === 0, 120_000, 500);

    // The add event must be lost for good, as an event is when its retries run out: the Trigger
    // would retry it into rule-sync's return. So its Trigger goes, and the event is created only
    // once the Broker's channel says (in its status, written by its dispatcher after it changed
    // its fan-out) that the Trigger's subscription is no longer among its subscribers.
    const trigger = await custom.getNamespacedCustomObject(addTrigger) as Named;
    const subscriptions = await custom.listNamespacedCustomObject({ group: "messaging.knative.dev", version: "v1", namespace: FUNCTIONS_NAMESPACE, plural: "subscriptions" }) as { items: Named[] };
    const subscription = subscriptions.items.find((s) => s.metadata.ownerReferences?.some((o) => o.uid === trigger.metadata.uid));
    assert.ok(subscription?.metadata.uid, "the add Trigger's Subscription");
    await custom.deleteNamespacedCustomObject(addTrigger);
    await waitFor("the channel's dispatcher without the add Trigger's subscription", async () => {
      const list = await custom.listNamespacedCustomObject(channels) as { items: Channel[] };
      const uids = list.items.flatMap((c) => [...(c.spec?.subscribers ?? []), ...(c.status?.subscribers ?? [])].map((s) => s.uid));
      return list.items.length > 0 && !uids.includes(subscription.metadata.uid ?? "");
    }, 60_000, 500);

    // The Trigger stays away until the resync has written the rule: the ApiServerSource's adapter
    // lists again whenever its watch reconnects, and an add event from that list through a
    // re-created Trigger would repair the rule before the tick (seen in CI).
    await createAppMonitor(WORKLOAD_NS, name, { memThresholdPercent: 70, memMultiplier: 2 });
    assert.equal(await ruleOf(name), undefined, "no rule while rule-sync was down");

    await apps.patchNamespacedDeployment({ name: "rule-sync", namespace: FUNCTIONS_NAMESPACE, body: { spec: { replicas: 1 } } }, mergePatch);
    const back = await waitFor("rule-sync Ready again", async () => (await ruleSyncPods()).find((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")), 120_000, 500);
    assert.equal(back.spec?.containers[0]?.env?.find((e) => e.name === "RESYNC_ON_START")?.value, "false");
    const rule = await waitFor(`the PrometheusRule of ${name}`, () => ruleOf(name), 120_000, 500);
    assert.ok(rule.metadata.ownerReferences?.some((o) => o.kind === "AppMonitor" && o.name === name));

    const lines = await ruleSyncLog();
    const applied = lines.find((l) => l.msg === "PrometheusRule applied" && l.namespace === WORKLOAD_NS && l.name === name);
    assert.equal(applied?.eventType, "dev.knative.sources.ping", `created by a PingSource resync: ${JSON.stringify(applied)}`);
    assert.equal(applied?.result, "created");
    await custom.createNamespacedCustomObject({ ...addTrigger, body: shippedTrigger });
    await waitFor("the add Trigger Ready again", async () => {
      const back = await custom.getNamespacedCustomObject(addTrigger) as { status?: { conditions?: { type: string; status: string }[] } };
      return back.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    }, 60_000, 500);
    // The ApiServerSource may still send an add event for it later (its adapter lists again when
    // it reconnects): legitimate, and it must change nothing. rule-sync logs "applied" only for a
    // write that changed the rule, so the resync's is the only one.
    const after = await ruleSyncLog();
    const writes = after.filter((l) => l.msg === "PrometheusRule applied" && l.namespace === WORKLOAD_NS && l.name === name);
    assert.deepEqual(writes.map((l) => `${String(l.eventType)} ${String(l.result)}`), ["dev.knative.sources.ping created"], "one write, the resync's; a late add event changed nothing");
    const late = after.filter((l) => l.eventType === "dev.knative.apiserver.resource.add" && l.name === name);
    t.diagnostic(`add events for it that reached rule-sync after the resync: ${late.length}`);
    const appMonitor = await custom.getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace: WORKLOAD_NS, plural: "appmonitors", name }) as Named;
    assert.equal(appMonitor.metadata.generation, 1, "the AppMonitor was not changed");
    t.diagnostic(`rule-sync: ${JSON.stringify(applied)}`);
  } finally {
    if (!(await triggerExists())) await custom.createNamespacedCustomObject({ ...addTrigger, body: shippedTrigger }).catch(() => undefined);
    await custom.patchNamespacedCustomObject({ ...ping, body: { spec: { schedule: shippedSchedule } } }, mergePatch).catch(() => undefined);
    await apps.patchNamespacedDeployment({
      name: "rule-sync", namespace: FUNCTIONS_NAMESPACE,
      body: { spec: { replicas: 1, template: { spec: { containers: [{ name: "rule-sync", env: [{ name: "RESYNC_ON_START", $patch: "delete" }] }] } } } },
    }, strategic).catch(() => undefined);
  }
});
