// Delivery semantics as Knative Eventing defines them, through its real data plane on the stack's
// real node (ingress → in-memory channel → filter → Trigger → function) with appmonitor's shipped
// delivery spec (knative/eventing/triggers.yaml: 8 retries, exponential backoff from 1 s, then the
// dead-letter sink) and its dead-letter sink as shipped, appmonitor's dead-letter function:
//   - memory-scaler cut off from the API server answers 503, the Broker redelivers on the shipped
//     backoff, and once the path is back the workload is scaled exactly once;
//   - an event memory-scaler refuses as malformed (400) is delivered once and lands in the
//     dead-letter sink with Knative's error extensions: a Warning Event DeadLetter on the AppMonitor
//     it names, which `kubectl appmonitor resend` sends again through the API server's proxy;
//   - no answer of memory-scaler or rule-sync is a reply event, so nothing of ours goes back into
//     the Broker: a catch-all Trigger sees each event once and nothing after.
// The statuses of every failure class against Knative's retry table: test/unit/knative/delivery-retries.test.ts.
//
// Starts its own stack (one kwok Node, the real node, Eventing) in a temporary state directory
// (test/support/eventing-stack.ts); one real node per machine, so it waits for the machine-wide
// lock `/tmp/appmonitor-real-node.lock` first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import * as k8s from "@kubernetes/client-node";
import { CloudEvent } from "cloudevents";
import { FIRING_TYPE } from "../../functions/lib/alert-event.ts";
import { RESYNC_EVENT_TYPE } from "../../functions/rule-sync/incoming-event.ts";
import { EVENTING_NAMESPACE, eventingImage } from "../harness/stack/eventing-manifests.ts";
import { BROKER, DEAD_LETTER_SINK } from "../harness/stack/eventing-objects.ts";
import { DEAD_LETTER_REASON } from "../../functions/dead-letter/letter.ts";
import { FUNCTION_IMAGES } from "../../scripts/images/build.ts";
import { DEAD_LETTER_FUNCTION, FUNCTIONS_NAMESPACE } from "../harness/stack/function-pods-install.ts";
import { runCommand } from "../support/run-command.ts";
import { REAL_NODE } from "../harness/stack/real-node-config.ts";
import { waitForDelivery } from "../harness/lib/broker-hop.ts";
import { displayedEvents, type DisplayedEvent } from "../support/event-display.ts";
import { brokerIngressUrl, logTail, postToBroker, readyPod, runningMemhog, useEventingStack } from "../support/eventing-stack.ts";
import { deliveriesOf, readJsonLog, type PodRef } from "../harness/lib/function-logs.ts";
import { backoffSeconds, type DeliverySpec } from "../support/knative-delivery.ts";
import { alertEvent, appMonitorStatus, eventsRegarding } from "../support/memory-scaler.ts";
import { assertNoReplyEvent, postEvent } from "../support/post-event.ts";
import { cutFromApiServer } from "../support/pod-network.ts";
import { waitFor } from "../support/stack.ts";

/** The namespace of the scaled workload: memhog and the AppMonitor `mymonitor` that governs it. */
const WORKLOAD_NS = "delivery-workload";

/** The source of the events this file makes up (alert-receiver's are Alertmanager's URL). */
const TEST_SOURCE = "/appmonitor/test/eventing-delivery";

const stack = useEventingStack({ stateDirPrefix: "appmonitor-delivery-", workloadNamespace: WORKLOAD_NS });

const podRef = (pod: k8s.V1Pod & { metadata: { name: string } }): PodRef => ({ name: pod.metadata.name, namespace: pod.metadata.namespace ?? FUNCTIONS_NAMESPACE });
const scalerPod = () => readyPod(stack().core, FUNCTIONS_NAMESPACE, "memory-scaler-");
const sinkPod = () => readyPod(stack().core, DEAD_LETTER_SINK.namespace, `${DEAD_LETTER_SINK.name}-`);

/** The deliveries of `eventId` to the function in `pod`, from its access log. */
async function deliveries(pod: PodRef, eventId: string) {
  return deliveriesOf(await readJsonLog(stack().core, pod), eventId);
}

/**
 * A Trigger's `spec.delivery` as the API server holds it: what the Broker applies (its controller
 * copies it to the channel's subscription for the Trigger, whose dispatcher retries and dead-letters).
 */
async function triggerDelivery(name: string): Promise<DeliverySpec> {
  const trigger = await stack().kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
    group: "eventing.knative.dev", version: "v1", namespace: BROKER.namespace, plural: "triggers", name,
  }) as { spec: { delivery: DeliverySpec } };
  return trigger.spec.delivery;
}

const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

/** The Warning Events `DeadLetter` of the event `id`, in every namespace (their note names the id). */
async function deadLetterEvents(id: string): Promise<k8s.EventsV1Event[]> {
  const list = await stack().kc.makeApiClient(k8s.EventsV1Api).listEventForAllNamespaces({ fieldSelector: `reason=${DEAD_LETTER_REASON}` });
  return list.items.filter((e) => e.note?.includes(`(id ${id})`) === true);
}

test("the dead-letter sink is appmonitor's dead-letter function on the real node: an event posted straight to it becomes a Warning Event on its ServiceAccount, once, however often it comes", { timeout: 120_000 }, async (t) => {
  const pod = await sinkPod();
  assert.equal(pod.spec?.nodeName, REAL_NODE.name);
  assert.equal(pod.spec?.containers[0]?.image, FUNCTION_IMAGES[DEAD_LETTER_FUNCTION]);
  const event = new CloudEvent({ type: "com.kubedemo.appmonitor.test.display", source: TEST_SOURCE, datacontenttype: "application/json", data: { hello: "sink" } });
  for (const outcome of ["recorded", "duplicate"]) {
    const answer = await postEvent(`http://${pod.status?.podIP}:8080/`, event);
    assert.equal(answer.status, 204, answer.text);
    assert.equal(answer.outcome, outcome);
  }
  const [recorded, ...more] = await deadLetterEvents(event.id);
  assert.ok(recorded, "the Warning Event");
  assert.equal(more.length, 0, "one Event for the two deliveries");
  assert.deepEqual([recorded.type, recorded.regarding?.kind, recorded.regarding?.namespace, recorded.regarding?.name], ["Warning", "ServiceAccount", FUNCTIONS_NAMESPACE, DEAD_LETTER_SINK.name]);
  assert.match(recorded.note ?? "", /came without Knative's error extensions/);
  t.diagnostic(`${pod.metadata.name} on ${pod.spec?.nodeName}, image ${pod.spec?.containers[0]?.image}; Event ${recorded.metadata?.namespace}/${recorded.metadata?.name}`);
});

/**
 * Posts `event` to the Broker without waiting: with the in-memory channel (synchronous fan-out)
 * the ingress answers only once the delivery is over, retries included.
 * @returns when and how it answered.
 */
function postInBackground(event: CloudEvent<unknown>, signal?: AbortSignal): Promise<{ status: number; at: number } | { error: Error; at: number }> {
  return postToBroker(stack().core, event, signal).then((status) => ({ status, at: Date.now() }), (error: Error) => ({ error, at: Date.now() }));
}

/** Runs `check`, and on failure adds what the data plane logged (the channel's dispatcher, the Broker's filter, memory-scaler). */
async function explained<T>(check: () => Promise<T>): Promise<T> {
  return check().catch(async (error: Error) => {
    const { core } = stack();
    const tails = await Promise.all([[EVENTING_NAMESPACE, "imc-dispatcher-"], [EVENTING_NAMESPACE, "mt-broker-filter-"], [FUNCTIONS_NAMESPACE, "memory-scaler-"]].map(async ([namespace, prefix]) =>
      `${prefix}:\n${await logTail(core, namespace as string, prefix as string, 12).catch((e: Error) => e.message)}`));
    throw new Error(`${error.message}\n${tails.join("\n")}`, { cause: error });
  });
}

test("memory-scaler cut off from the API server answers 503; the Broker redelivers on the shipped backoff, and once the path is back memhog is scaled exactly once", { timeout: 300_000 }, (t) => explained(async () => {
  const { core, apps } = stack();
  const memhog = await runningMemhog(core, WORKLOAD_NS);
  const scaler = await scalerPod();
  const scalerRef = podRef(scaler);
  await waitForDelivery(core, await brokerIngressUrl(core), scalerRef);
  const waits = backoffSeconds(await triggerDelivery("memory-scaler-alert-firing"));
  const before = await apps.readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
  const scaleCountBefore = (await appMonitorStatus(WORKLOAD_NS, "mymonitor")).scaleCount ?? 0;

  // Four answers of 503 (the first delivery and the retries after 1, 2 and 4 s), then the path back.
  const failures = 4;
  const restore = await cutFromApiServer(scaler);
  t.after(restore);
  const event = alertEvent({ namespace: WORKLOAD_NS, pod: memhog.metadata?.name ?? "", container: "memhog", appmonitor: "mymonitor" });
  const posted = Date.now();
  const answer = postInBackground(event);
  const failed = await waitFor(`${failures} deliveries answered`, async () => {
    const seen = await deliveries(scalerRef, event.id);
    return seen.length >= failures ? seen : undefined;
  }, 60_000, 100);
  await restore();
  const restored = Date.now();
  assert.deepEqual(failed.map((d) => d.status), Array(failures).fill(503), "memory-scaler answered 503 while the API server was away");

  const answered = await answer;
  assert.ok("status" in answered && answered.status === 202, `the Broker accepted the event once it was delivered: ${JSON.stringify(answered)}`);
  const scaled = await waitFor("memhog scaled to 768Mi", async () => {
    const d = await apps.readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
    return d.spec?.template.spec?.containers[0]?.resources?.limits?.memory === "768Mi" ? d : undefined;
  }, 30_000, 200);
  // A few seconds more: nothing comes after the 204.
  await sleep(3_000);
  const all = await deliveries(scalerRef, event.id);
  assert.deepEqual(all.map((d) => d.status), [...Array(all.length - 1).fill(503), 204], "503s, then one 204, then nothing");

  // The waits between deliveries are the shipped backoff's (1, 2, 4, … s), each a little longer for the request itself.
  const gaps = all.slice(1).map((d, i) => seconds(d.at - (all[i] as { at: number }).at));
  gaps.forEach((gap, i) => {
    const wait = waits[i] as number;
    assert.ok(gap >= wait * 0.95 && gap <= wait + 2, `wait ${i + 1}: ${gap} s, the backoff says ${wait} s (gaps ${gaps.join(", ")})`);
  });

  // Exactly one patch: one more generation, one scale in the AppMonitor's status for this event, one Scaled Event.
  assert.equal(scaled.metadata?.generation, (before.metadata?.generation ?? 0) + 1, "one patch of the Pod template");
  const status = await appMonitorStatus(WORKLOAD_NS, "mymonitor");
  assert.equal(status.scaleCount, scaleCountBefore + 1);
  assert.equal(status.recentScales?.filter((s) => s.event === event.id).length, 1, "one scale recorded for the event");
  const events = (await eventsRegarding(WORKLOAD_NS, "Deployment", "memhog")).filter((e) => e.reason === "Scaled");
  assert.equal(events.length, 1, `one Scaled Event: ${events.map((e) => e.note).join(" | ")}`);
  const after = await apps.readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
  assert.equal(after.metadata?.generation, scaled.metadata?.generation, "no later patch");

  const last = all.at(-1) as { at: number };
  t.diagnostic(`deliveries after the POST (s): ${all.map((d) => `${seconds(d.at - posted)} → ${d.status}`).join(", ")}`);
  t.diagnostic(`waits between them (s): ${gaps.join(", ")}; the shipped backoff: ${waits.slice(0, gaps.length).join(", ")}`);
  t.diagnostic(`path back ${seconds(restored - posted)} s after the POST; scaled ${seconds(last.at - restored)} s after that, ${seconds(last.at - posted)} s after the POST`);
  t.diagnostic(`the Broker answered the POST ${answered.status} ${seconds(answered.at - posted)} s after it (the in-memory channel fans out synchronously)`);
}));

test("with the in-memory channel a sender that stops waiting before the delivery is over cancels it: no more retries, no dead letter, no 202 (the event is the sender's to send again)", { timeout: 120_000 }, (t) => explained(async () => {
  const { core } = stack();
  const memhog = await runningMemhog(core, WORKLOAD_NS);
  const scaler = await scalerPod();
  const scalerRef = podRef(scaler);
  const restore = await cutFromApiServer(scaler);
  t.after(restore);
  // An alert that needs the API server (memhog is in its cooldown now, which memory-scaler reads), sent
  // as alert-receiver sends: it stops waiting after DELIVERY_TIMEOUT_MS, 2 s by default.
  const event = alertEvent({ namespace: WORKLOAD_NS, pod: memhog.metadata?.name ?? "", container: "memhog", appmonitor: "mymonitor" });
  const posted = Date.now();
  const answered = await postInBackground(event, AbortSignal.timeout(2_000));
  assert.ok("error" in answered, `no answer within 2 s: ${JSON.stringify(answered)}`);
  // The retries after 2 s (at 3 and 7 s) would come now if the delivery went on.
  await sleep(9_000);
  await restore();
  const seen = await deliveries(scalerRef, event.id);
  assert.ok(seen.length >= 1 && seen.every((d) => d.at - posted < 2_500), `deliveries only while the sender waited: ${JSON.stringify(seen.map((d) => seconds(d.at - posted)))}`);
  assert.deepEqual(seen.map((d) => d.status), Array(seen.length).fill(503));
  assert.equal((await deadLetterEvents(event.id)).length, 0, "no dead letter");
  t.diagnostic(`deliveries after the POST (s): ${seen.map((d) => `${seconds(d.at - posted)} → ${d.status}`).join(", ")}; the sender gave up at 2 s, nothing after`);
}));

test("an event memory-scaler refuses as malformed is delivered once, not retried, and leaves a Warning Event DeadLetter on the AppMonitor it names with Knative's reason; resend sends it through the API server's proxy to the Broker, where it arrives again", { timeout: 180_000 }, (t) => explained(async () => {
  const { core, state } = stack();
  const scalerRef = podRef(await scalerPod());
  const dispatcherBefore = (await readyPod(core, EVENTING_NAMESPACE, "imc-dispatcher-")).status?.containerStatuses?.[0];
  // The firing type, so the Trigger routes it; data that names the AppMonitor but is no alert, so memory-scaler answers 400.
  const data = { namespace: WORKLOAD_NS, appmonitor: "mymonitor", not: "an alert" };
  const event = new CloudEvent({ type: FIRING_TYPE, source: TEST_SOURCE, datacontenttype: "application/json", data });
  const posted = Date.now();
  assert.equal(await postToBroker(core, event), 202);
  const [letter] = await waitFor("the dead letter's Warning Event", async () => {
    const found = await deadLetterEvents(event.id);
    return found.length > 0 ? found : undefined;
  }, 30_000, 100);
  const seen = Date.now();
  assert.ok(letter);
  const [refused] = await deliveries(scalerRef, event.id);
  assert.ok(refused, "memory-scaler got it");
  assert.equal(refused.status, 400);

  assert.equal(letter.type, "Warning");
  assert.equal(letter.metadata?.namespace, WORKLOAD_NS);
  const monitor = await stack().kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace: WORKLOAD_NS, plural: "appmonitors", name: "mymonitor" }) as { metadata: { uid: string } };
  assert.deepEqual({ ...letter.regarding }, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", namespace: WORKLOAD_NS, name: "mymonitor", uid: monitor.metadata.uid });
  assert.match(letter.note ?? "", new RegExp(`^${FIRING_TYPE.replaceAll(".", "\\.")} from ${TEST_SOURCE} \\(id ${event.id}\\) was dead-lettered`));
  // Knative's reason: the subscriber, its status and its answer (knativeerrordata, decoded).
  assert.match(letter.note ?? "", /Why: http:\/\/memory-scaler\.appmonitor\.svc\.cluster\.local\/? answered 400: \{"error":"malformed event data"/);
  const stored = JSON.parse(letter.metadata?.annotations?.["appmonitor.kubedemo.com/cloudevent"] ?? "{}") as Record<string, unknown>;
  assert.deepEqual([stored.id, stored.type, stored.data], [event.id, FIRING_TYPE, data], "the event as sent, kept on the Event");
  assert.ok(Object.keys(stored).every((k) => !k.startsWith("knativeerror")), "without Knative's error extensions");
  const dispatcher = (await readyPod(core, EVENTING_NAMESPACE, "imc-dispatcher-")).status?.containerStatuses?.[0];
  assert.equal(dispatcher?.restartCount, dispatcherBefore?.restartCount, `the in-memory channel's dispatcher did not restart: ${JSON.stringify(dispatcher?.lastState)}`);
  // Dead-lettered at once: no retry came at 1 s or 3 s.
  await sleep(4_000);
  assert.equal((await deliveries(scalerRef, event.id)).length, 1, "delivered once");
  assert.equal((await deadLetterEvents(event.id)).length, 1, "dead-lettered once");

  // Sent again with the user's kubeconfig through the API server's service proxy: it arrives at
  // memory-scaler a second time (refused again, so dead-lettered again: the Event is written anew).
  const resent = Date.now();
  const result = await runCommand("scripts/explain/kubectl-appmonitor", ["resend", letter.metadata?.name ?? "", "-n", WORKLOAD_NS], { env: { ...process.env, KUBECONFIG: state.kubeconfig } });
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, new RegExp(`sent ${FIRING_TYPE.replaceAll(".", "\\.")} .* to Broker ${FUNCTIONS_NAMESPACE}/default: HTTP 202`));
  const again = await waitFor("the resent event at memory-scaler", async () => {
    const all = await deliveries(scalerRef, event.id);
    return all.length >= 2 ? all : undefined;
  }, 30_000, 100);
  assert.deepEqual(again.map((d) => d.status), [400, 400]);
  const rewritten = await waitFor("its Warning Event again", async () => (await deadLetterEvents(event.id))[0], 30_000, 100);
  assert.equal(rewritten.metadata?.name, letter.metadata?.name, "the same name: one Event per dead letter");
  assert.notEqual(rewritten.metadata?.uid, letter.metadata?.uid, "written anew after resend deleted it");
  t.diagnostic(`refused 400 ${seconds(refused.at - posted)} s after the POST; its Warning Event seen ${seconds(seen - posted)} s after the POST (listed every 100 ms): ${letter.metadata?.namespace}/${letter.metadata?.name}`);
  t.diagnostic(`resend → second delivery ${seconds((again[1]?.at ?? 0) - resent)} s; note: ${letter.note?.slice(0, 300)}`);
}));

/** What the catch-all Trigger below delivers to: Knative's event_display, which logs every event it gets. */
const OBSERVER = "broker-observer";
/** A type no shipped Trigger matches: probes that tell when the observer's Trigger delivers. */
const PROBE_TYPE = "com.kubedemo.appmonitor.test.probe";

/**
 * Runs {@link OBSERVER} (Deployment, Service) and a Trigger without a filter to it, and waits
 * until an event posted to the Broker reaches it.
 * @returns its Pod.
 */
async function observeEverything(t: { after: (fn: () => Promise<unknown>) => void }): Promise<PodRef> {
  const { core, apps, kc, installation } = stack();
  const namespace = BROKER.namespace;
  const labels = { "app.kubernetes.io/name": OBSERVER };
  const container: k8s.V1Container = {
    name: "event-display", image: eventingImage("event_display", installation.version), imagePullPolicy: "IfNotPresent", ports: [{ containerPort: 8080 }],
    securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, seccompProfile: { type: "RuntimeDefault" } },
  };
  await apps.createNamespacedDeployment({ namespace, body: { metadata: { name: OBSERVER, labels }, spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { automountServiceAccountToken: false, containers: [container] } } } } });
  await core.createNamespacedService({ namespace, body: { metadata: { name: OBSERVER, labels }, spec: { selector: labels, ports: [{ name: "http", port: 80, targetPort: 8080 }] } } });
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const trigger = { group: "eventing.knative.dev", version: "v1", namespace, plural: "triggers" };
  await custom.createNamespacedCustomObject({ ...trigger, body: { apiVersion: "eventing.knative.dev/v1", kind: "Trigger", metadata: { name: OBSERVER }, spec: { broker: BROKER.name, subscriber: { ref: { apiVersion: "v1", kind: "Service", name: OBSERVER } } } } });
  t.after(async () => {
    await custom.deleteNamespacedCustomObject({ ...trigger, name: OBSERVER }).catch(() => undefined);
    await core.deleteNamespacedService({ name: OBSERVER, namespace }).catch(() => undefined);
    await apps.deleteNamespacedDeployment({ name: OBSERVER, namespace }).catch(() => undefined);
  });
  const pod = podRef(await readyPod(core, namespace, `${OBSERVER}-`));
  // The channel learns a new Trigger a little after it is Ready (broker-hop.ts): probe until one arrives.
  await waitFor("the catch-all Trigger delivers", async () => {
    assert.equal(await postToBroker(core, new CloudEvent({ type: PROBE_TYPE, source: TEST_SOURCE })), 202);
    return (await displayedEvents(core, pod)).some((e) => e.attributes.type === PROBE_TYPE);
  }, 90_000, 1_000);
  return pod;
}

/** What was not posted by this file: the sources' own events (ApiServerSource, PingSource). */
const fromSources = (e: DisplayedEvent) => e.attributes.type?.startsWith("dev.knative.apiserver.") === true || e.attributes.type === "dev.knative.sources.ping";

test("no reply of ours loops: memory-scaler and rule-sync answer without a reply event, and through the real Broker each event is delivered once and nothing comes back", { timeout: 300_000 }, async (t) => {
  const { core } = stack();
  const scaler = await scalerPod();
  const ruleSync = await readyPod(core, FUNCTIONS_NAMESPACE, "rule-sync-");
  const alert = () => alertEvent({ namespace: "nowhere", pod: "none", alertname: "NotAnAppMonitorAlert" });
  const resync = () => new CloudEvent({ type: RESYNC_EVENT_TYPE, source: TEST_SOURCE });

  // What they reply with, asked straight: 204, nothing a Broker could take for an event.
  for (const [pod, event] of [[scaler, alert()], [ruleSync, resync()]] as const) {
    const answer = await postEvent(`http://${pod.status?.podIP}:8080/`, event);
    assertNoReplyEvent(answer);
    t.diagnostic(`${pod.metadata.name}: ${event.type} → ${answer.status} ${answer.outcome ?? ""}/${answer.reason ?? ""}, ${answer.text.length} bytes`);
  }

  // Through the Broker, watched by a Trigger that matches everything: a reply of any type would show there.
  const observer = await observeEverything(t);
  const deadLettersBefore = (await stack().kc.makeApiClient(k8s.EventsV1Api).listEventForAllNamespaces({ fieldSelector: `reason=${DEAD_LETTER_REASON}` })).items.length;
  const start = (await displayedEvents(core, observer)).length;
  const sent = [alert(), resync()];
  for (const event of sent) assert.equal(await postToBroker(core, event), 202);
  const [toScaler, toRuleSync] = sent as [CloudEvent<unknown>, CloudEvent<unknown>];
  await waitFor("memory-scaler and rule-sync handled their events", async () =>
    (await deliveries(podRef(scaler), toScaler.id)).length > 0 && (await deliveries(podRef(ruleSync), toRuleSync.id)).length > 0, 60_000, 200);
  // Time for a reply to go round: a Broker hop is milliseconds (test/bench/broker-hop.ts). The
  // sources' events the handling caused (status writes seen by the ApiServerSource, a PingSource
  // tick's follow-up) end: a 10 s window with none comes within 90 s, which a loop never gives.
  await sleep(5_000);
  const sourceEvents = async () => (await displayedEvents(core, observer)).slice(start).filter((e) => e.attributes.type !== "dev.knative.sources.ping");
  let quiet = false;
  for (let waited = 0; !quiet && waited < 90_000; waited += 10_000) {
    const before = (await sourceEvents()).length;
    await sleep(10_000);
    const after = await sourceEvents();
    quiet = after.length === before;
    if (!quiet) t.diagnostic(`source events still coming: ${after.slice(before).map((e) => e.attributes.type).join(", ")}`);
  }
  const seen = (await displayedEvents(core, observer)).slice(start);

  assert.deepEqual((await deliveries(podRef(scaler), toScaler.id)).map((d) => d.status), [204], "memory-scaler got its event once and answered 204");
  assert.deepEqual((await deliveries(podRef(ruleSync), toRuleSync.id)).map((d) => d.status), [204], "rule-sync got its event once and answered 204");
  for (const event of sent) assert.equal(seen.filter((e) => e.attributes.id === event.id).length, 1, `${event.type} went through the Broker once`);
  const ours = new Set(sent.map((e) => e.id));
  const others = seen.filter((e) => !ours.has(e.attributes.id ?? "") && e.attributes.type !== PROBE_TYPE);
  assert.deepEqual(others.filter((e) => !fromSources(e)).map((e) => `${e.attributes.type} from ${e.attributes.source}`), [], "no event came back from a function");
  assert.ok(quiet, "the sources' events the handling caused end: a 10 s window without one within 90 s");
  assert.equal((await stack().kc.makeApiClient(k8s.EventsV1Api).listEventForAllNamespaces({ fieldSelector: `reason=${DEAD_LETTER_REASON}` })).items.length, deadLettersBefore, "no dead letter either");
  t.diagnostic(`through the Broker: ${seen.length} event(s) seen by the catch-all Trigger: ${seen.map((e) => e.attributes.type).join(", ")}`);
});
