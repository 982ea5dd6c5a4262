/**
 * memory-scaler on an OOM-kill event (alertname AppMonitorOOMKilled, trigger oomKilled) on the
 * local stack, with a token of exactly its ServiceAccount: the original demo's Deployment, its
 * kwok Pod's status patched as the kubelet reports an OOM kill (kwok leaves a status written
 * through the API alone), scaled once without asking Prometheus; a copy of the event gets its
 * answer and a new one scales nothing more; a Pod without that termination is skipped `NotOOMKilled`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { freePort } from "../harness/lib/free-port.ts";
import { installMemoryScaler } from "../support/install.ts";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, deliver, eventsRegarding, originalDemo, startScaler, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace } from "../support/stack.ts";


/**
 * Writes, as the admin, the memhog container's status as the kubelet reports it after an OOM
 * kill `secondsAgo` seconds ago (or with another `reason`): restarted, running again, the kill
 * in `lastState.terminated`.
 */
async function reportTermination(ns: string, name: string, secondsAgo: number, reason = "OOMKilled"): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  const pod = await core.readNamespacedPod({ name, namespace: ns });
  const finishedAt = new Date(Date.now() - secondsAgo * 1000);
  const statuses = pod.status?.containerStatuses ?? [];
  assert.equal(statuses.length, 1, "kwok reported the memhog container");
  pod.status = {
    ...pod.status,
    containerStatuses: statuses.map((s) => ({
      ...s,
      restartCount: s.restartCount + 1,
      state: { running: { startedAt: finishedAt } },
      lastState: { terminated: { reason, exitCode: 137, startedAt: new Date(finishedAt.getTime() - 60_000), finishedAt } },
    })),
  };
  await core.replaceNamespacedPodStatus({ name, namespace: ns, body: pod });
}

async function memhogGeneration(ns: string): Promise<number | undefined> {
  return (await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "memhog", namespace: ns })).metadata?.generation;
}

describe("memory-scaler on an OOM-kill event", () => {
  let scaler: ScalerUnderTest;

  before(async () => {
    await installMemoryScaler();
    // Nothing listens there: an OOM-kill event that asked Prometheus would be answered 503.
    scaler = await startScaler({ PROMETHEUS_URL: `http://127.0.0.1:${await freePort()}` });
  });
  after(async () => {
    await scaler?.stop();
  });

  it("a Pod whose container status shows a recent OOM kill: scaled once, 384Mi → 768Mi, the Event says OOM kill; a copy of the event gets its answer and a new one scales nothing", async (t) => {
    const ns = await freshNamespace(t);
    const pod = (await originalDemo(ns)).metadata.name;
    await reportTermination(ns, pod, 30);

    const event = alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "mymonitor", alertname: "AppMonitorOOMKilled" });
    assert.equal(event.data?.trigger, "oomKilled");
    const answer = await deliver(scaler.url, event);
    assert.equal(answer.status, 204, describeAnswer(answer));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));

    const deployment = await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "memhog", namespace: ns });
    assert.deepEqual(JSON.parse(JSON.stringify(deployment.spec?.template.spec?.containers[0]?.resources)), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.equal(deployment.metadata?.generation, 2);
    const scaled = await eventsRegarding(ns, "Deployment", "memhog");
    assert.deepEqual(scaled.map((e) => e.reason).sort(), ["PodsReplaced", "Scaled"]);
    assert.match(scaled.find((e) => e.reason === "Scaled")?.note ?? "", /^scaled Deployment memhog by 2 after an OOM kill: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; the rollout replaces \(restarts\) its Pods$/);

    const copy = await deliver(scaler.url, event, "structured");
    assert.deepEqual([copy.status, copy.outcome, copy.reason], [204, "scaled", "Scaled"], describeAnswer(copy));
    const again = await deliver(scaler.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "mymonitor", alertname: "AppMonitorOOMKilled" }), "structured");
    assert.equal(again.status, 204, describeAnswer(again));
    assert.equal(again.outcome, "skipped", describeAnswer(again));
    // The template is ahead of the Pod (RolloutUnderWay), the scale is recent (Cooldown), or the Pod is already replaced.
    assert.ok(["Cooldown", "RolloutUnderWay", "PodGone"].includes(again.reason ?? ""), describeAnswer(again));
    assert.equal(await memhogGeneration(ns), 2);
    // A Cooldown skip says so in an Event of its own; the scale's are written once.
    const events = (await eventsRegarding(ns, "Deployment", "memhog")).filter((e) => e.reason !== "Cooldown");
    assert.deepEqual(events.map((e) => e.reason).sort(), ["PodsReplaced", "Scaled"], "Scaled and PodsReplaced, once");
  });

  it("a Pod never OOM-killed, or last terminated for another reason, or killed too long ago: skipped NotOOMKilled, nothing written", async (t) => {
    const ns = await freshNamespace(t);
    const pod = (await originalDemo(ns)).metadata.name;
    const event = () => alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "mymonitor", alertname: "AppMonitorOOMKilled" });

    const never = await deliver(scaler.url, event());
    assert.equal(never.status, 204, describeAnswer(never));
    assert.deepEqual([never.outcome, never.reason], ["skipped", "NotOOMKilled"], describeAnswer(never));

    await reportTermination(ns, pod, 30, "Error");
    const error = await deliver(scaler.url, event());
    assert.deepEqual([error.outcome, error.reason], ["skipped", "NotOOMKilled"], describeAnswer(error));

    await reportTermination(ns, pod, 11 * 60);
    const old = await deliver(scaler.url, event());
    assert.deepEqual([old.outcome, old.reason], ["skipped", "NotOOMKilled"], describeAnswer(old));

    assert.equal(await memhogGeneration(ns), 1);
    assert.deepEqual(await eventsRegarding(ns, "Deployment", "memhog"), []);
  });

  it("a threshold event for the same kind of Pod does ask Prometheus (unreachable here: 503)", async (t) => {
    const ns = await freshNamespace(t);
    const pod = (await originalDemo(ns)).metadata.name;
    await reportTermination(ns, pod, 30);
    const answer = await deliver(scaler.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "mymonitor" }));
    assert.equal(answer.status, 503, describeAnswer(answer));
    assert.equal(await memhogGeneration(ns), 1);
  });
});
