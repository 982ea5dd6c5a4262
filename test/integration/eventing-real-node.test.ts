// Knative Eventing for real on the stack's real node: its controller, webhook, Broker ingress and
// filter, and in-memory channel run there as Pods (test/stack/eventing-install.ts), appmonitor's
// own Eventing objects are applied through test/eventing-overlay (only the Knative Serving
// references substituted), and the functions run as Pods with alert-receiver's K_SINK injected
// by the SinkBinding. Events go through the real data plane: ingress → channel → filter →
// Trigger → memory-scaler.
//
// Starts its own stack (one kwok Node, the real node) in a temporary state directory
// (test/support/eventing-stack.ts); one real node per machine, so it waits for the machine-wide
// lock `/tmp/appmonitor-real-node.lock` first.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import type { CloudEvent } from "cloudevents";
import { EVENTING_NAMESPACE } from "../stack/eventing-manifests.ts";
import { BROKER } from "../stack/eventing-objects.ts";
import { FUNCTIONS_NAMESPACE } from "../stack/function-pods-install.ts";
import { REAL_NODE } from "../stack/real-node-config.ts";
import { measurePath, waitForDelivery } from "../support/broker-hop.ts";
import { brokerIngressUrl, logTail, postToBroker, readyPod, runningMemhog, scalerEvents, useEventingStack } from "../support/eventing-stack.ts";
import { alertEvent, createAppMonitor } from "../support/memory-scaler.ts";
import { waitFor } from "../support/stack.ts";

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
  const seen = Object.entries(delta).map(([k, v]) => [/type="(\w+)"/.exec(k)?.[1], /outcome="(\w+)"/.exec(k)?.[1], /reason="(\w+)"/.exec(k)?.[1], v] as const);
  assert.deepEqual(seen.map(([type, outcome, reason]) => [type, outcome, reason]).sort(),
    [["firing", "scaled", "Scaled"], ["firing", "skipped", "NotAppMonitorAlert"]], "a scale and the marker; no resolved event, nothing else");
  assert.equal(seen.find(([, outcome]) => outcome === "scaled")?.[3], 1, "scaled once");
  const d = await apps.readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
  assert.equal(d.metadata?.generation, scaled.metadata?.generation, "scaled once");
});

test("the Broker hop's latency: send → memory-scaler's log line, through the Broker and straight to its Pod, 200 events each", { timeout: 600_000 }, async (t) => {
  const { core } = stack();
  const scaler = await readyPod(core, FUNCTIONS_NAMESPACE, "memory-scaler-");
  const pod = { name: scaler.metadata.name, namespace: FUNCTIONS_NAMESPACE };
  const direct = await measurePath(core, `http://${scaler.status?.podIP}:8080/`, pod, 200);
  const broker = await measurePath(core, await brokerIngressUrl(core), pod, 200);
  t.diagnostic(`direct to memory-scaler: p50 ${direct.p50} ms, p99 ${direct.p99} ms`);
  t.diagnostic(`through the Broker: p50 ${broker.p50} ms, p99 ${broker.p99} ms; the hop adds ${broker.p50 - direct.p50} ms at the median`);
  assert.ok(broker.p99 < 5_000, `p99 through the Broker ${broker.p99} ms`);
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
