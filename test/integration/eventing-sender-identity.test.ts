// Sender identity through Knative Eventing's real data plane on the stack's real node: with
// Eventing's `authentication-oidc` feature on (ConfigMap config-features), each Trigger gets its
// OIDC identity and the Broker's filter sends each delivery with a token for the subscriber's
// audience; memory-scaler, run as the Eventing-only profile runs it with REQUIRE_SENDER_IDENTITY=true,
// takes the Broker's delivery and refuses 401 an event posted straight to its Pod, where its
// Service forwards. The feature
// is turned off again when the file ends (the run's shared stack keeps Eventing for later files).
//
// Starts its own stack (one kwok Node, the real node, Eventing) in a temporary state directory
// (test/support/eventing-stack.ts), or uses the run's shared one; one real node per machine, so it
// waits for the machine-wide lock `/tmp/appmonitor-real-node.lock` first.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { HTTP } from "cloudevents";
import { FIRING_TYPE } from "../../functions/lib/alert-event.ts";
import { SENDERS } from "../../functions/memory-scaler/config.ts";
import { BEARER_CHALLENGE, triggerIdentity } from "../../functions/lib/sender-identity.ts";
import { EVENTING_NAMESPACE } from "../harness/stack/eventing-manifests.ts";
import { BROKER } from "../harness/stack/eventing-objects.ts";
import { FUNCTIONS_NAMESPACE } from "../harness/stack/function-pods-install.ts";
import { deliveriesOf, readJsonLog } from "../harness/lib/function-logs.ts";
import { brokerIngressUrl, logTail, useEventingStack } from "../support/eventing-stack.ts";
import { alertEvent } from "../support/memory-scaler.ts";
import { describeAnswer, postEvent } from "../support/post-event.ts";
import { waitFor } from "../support/stack.ts";

const WORKLOAD_NS = "oidc-workload";
const FEATURES = { name: "config-features", namespace: EVENTING_NAMESPACE };
const ALERT_TRIGGER = "memory-scaler-alert-firing";

const stack = useEventingStack({ stateDirPrefix: "appmonitor-oidc-", workloadNamespace: WORKLOAD_NS });

/** Sets Eventing's `authentication-oidc` flag. */
async function setOidc(core: k8s.CoreV1Api, value: "enabled" | "disabled"): Promise<void> {
  await core.patchNamespacedConfigMap({ ...FEATURES, body: { data: { "authentication-oidc": value } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
}

interface Addressed { status?: { address?: { audience?: string }; auth?: { serviceAccountName?: string }; conditions?: { type: string; status: string; message?: string }[] } }

/** A Trigger or the Broker as the API server holds it. */
function eventingObject(kc: k8s.KubeConfig, plural: "triggers" | "brokers", name: string): Promise<Addressed> {
  return kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({ group: "eventing.knative.dev", version: "v1", namespace: BROKER.namespace, plural, name }) as Promise<Addressed>;
}

// Root-level before hooks run side by side (node:test), so the file's own waits in a describe for the stack's.
describe("sender identity with authentication-oidc on", () => {
  let oidcOn = false;
  before(async () => {
    const { core, kc, apps } = stack();
    await setOidc(core, "enabled");
    oidcOn = true;
    // The Trigger's identity, made by Eventing's controller once it sees the flag.
    await waitFor(`Trigger ${ALERT_TRIGGER} with its OIDC identity, Ready`, async () => {
      const t = await eventingObject(kc, "triggers", ALERT_TRIGGER);
      return t.status?.auth?.serviceAccountName !== undefined && t.status.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    }, 120_000, 500);
    // memory-scaler as shipped but for the option (the chart's requireSenderIdentity=true).
    const deployment = await apps.readNamespacedDeployment({ name: "memory-scaler", namespace: FUNCTIONS_NAMESPACE });
    const container = deployment.spec?.template.spec?.containers[0];
    assert.ok(container?.env?.some((e) => e.name === "REQUIRE_SENDER_IDENTITY" && e.value === "false"), "the shipped Deployment sets REQUIRE_SENDER_IDENTITY, off");
    const env = (container?.env ?? []).map((e) => (e.name === "REQUIRE_SENDER_IDENTITY" ? { name: e.name, value: "true" } : e));
    await apps.patchNamespacedDeployment({ name: "memory-scaler", namespace: FUNCTIONS_NAMESPACE, body: { spec: { template: { spec: { containers: [{ name: container?.name, env }] } } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch));
    await waitFor("memory-scaler rolled out with REQUIRE_SENDER_IDENTITY=true", async () => {
      const d = await apps.readNamespacedDeployment({ name: "memory-scaler", namespace: FUNCTIONS_NAMESPACE });
      return d.status?.observedGeneration === d.metadata?.generation && d.status?.updatedReplicas === 1 && d.status.readyReplicas === 1 && d.status.replicas === 1;
    }, 180_000, 500);
  }, { timeout: 6 * 60_000 });

  after(async () => {
    if (oidcOn) await setOidc(stack().core, "disabled");
  });

  test("the Trigger's identity is the ServiceAccount memory-scaler accepts by default", async () => {
    const trigger = await eventingObject(stack().kc, "triggers", ALERT_TRIGGER);
    assert.equal(trigger.status?.auth?.serviceAccountName, triggerIdentity(ALERT_TRIGGER));
    assert.ok(SENDERS.triggers.includes(ALERT_TRIGGER));
  });

  test("an event posted straight to memory-scaler (its Service's Pod) is refused 401; the Broker's delivery of one is taken", { timeout: 180_000 }, async (t) => {
    const { core, kc } = stack();
    // Straight to what memory-scaler's Service forwards to, its Pod (ClusterIPs are routed to Pods
    // only on this node, not to the host this test runs on).
    // The rolled-out Pod, not one the rollout is replacing.
    const scaler = await waitFor("memory-scaler's Pod with REQUIRE_SENDER_IDENTITY=true, Ready", async () => (await core.listNamespacedPod({ namespace: FUNCTIONS_NAMESPACE })).items.find((p) =>
      p.metadata?.name?.startsWith("memory-scaler-") && p.metadata.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
      && p.spec?.containers[0]?.env?.some((e) => e.name === "REQUIRE_SENDER_IDENTITY" && e.value === "true")), 60_000, 200) as k8s.V1Pod & { metadata: { name: string } };
    const forged = alertEvent({ namespace: WORKLOAD_NS, pod: "memhog-forged" });
    const answer = await postEvent(`http://${scaler.status?.podIP}:8080/`, forged);
    assert.equal(answer.status, 401, describeAnswer(answer));
    assert.equal(answer.headers.get("www-authenticate"), BEARER_CHALLENGE);

    // A sender of the Broker's own namespace, with a token for the Broker's audience (Eventing's
    // default-authorization-mode allow-same-namespace; the install's senders are its sources).
    // The Broker's reconciler and its ingress each read the flag on their own, after the Trigger's.
    const audience = await waitFor("the Broker's audience, once OIDC is on", async () => (await eventingObject(kc, "brokers", BROKER.name)).status?.address?.audience, 60_000, 200);
    const token = (await core.createNamespacedServiceAccountToken({ name: "alert-receiver", namespace: FUNCTIONS_NAMESPACE, body: { spec: { audiences: [audience], expirationSeconds: 600 } } })).status?.token;
    assert.ok(token);
    const event = alertEvent({ namespace: WORKLOAD_NS, pod: "memhog-not-there" });
    assert.equal(event.type, FIRING_TYPE);
    const message = HTTP.binary(event);
    const ingress = await brokerIngressUrl(core);
    // Probes of their own, so that one the ingress took before it read the flag is not the event followed below.
    const refused = await waitFor("the Broker's ingress refusing a sender without a token", async () => {
      const probe = HTTP.binary(alertEvent({ namespace: WORKLOAD_NS, pod: "memhog-unsigned" }));
      const unsigned = await fetch(ingress, { method: "POST", headers: probe.headers as Record<string, string>, body: probe.body as string });
      return unsigned.status === 401 ? unsigned.status : undefined;
    }, 60_000, 500);
    assert.equal(refused, 401, "the Broker's ingress refuses a sender without a token once OIDC is on");
    // A 5xx is the ingress not ready to verify tokens yet (it fetches the issuer's keys itself): a sender retries it, as Knative's contract says.
    const signed = await waitFor("the Broker's ingress taking the signed event", async () => {
      const answer = await fetch(ingress, { method: "POST", headers: { ...(message.headers as Record<string, string>), authorization: `Bearer ${token}` }, body: message.body as string });
      return answer.status >= 500 ? undefined : { status: answer.status, text: await answer.text() };
    }, 60_000, 500);
    assert.equal(signed.status, 202, signed.text);

    const delivered = await waitFor(`the Broker's delivery of ${event.id} in memory-scaler's log`, async () => {
      const found = deliveriesOf(await readJsonLog(core, { name: scaler.metadata.name, namespace: FUNCTIONS_NAMESPACE }), event.id);
      return found.length > 0 ? found : undefined;
    }, 60_000, 500).catch(async (error: Error) => {
      throw new Error(`${error.message}\nmt-broker-filter:\n${await logTail(core, EVENTING_NAMESPACE, "mt-broker-filter-", 20)}`, { cause: error });
    });
    assert.deepEqual(delivered.map((d) => d.status), [204], "taken at the first delivery: the filter's token verified");
    t.diagnostic(`Broker audience ${audience}; forged: ${answer.status} ${answer.body.error}; delivered: ${delivered.map((d) => d.status).join(",")}`);
  });
});
