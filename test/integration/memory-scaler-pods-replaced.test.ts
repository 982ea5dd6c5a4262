/**
 * memory-scaler on the local stack says that a scale replaces the workload's Pods: every `Scaled`
 * note says the rollout replaces (restarts) them, and a workload whose Pods likely keep state gets
 * `PodsReplaced` Warnings on it and on its AppMonitor naming why (here: a single-replica Deployment
 * with an emptyDir volume). A 3-replica Deployment without emptyDir gets none, and a bare Pod
 * resized in place, which is not replaced, gets none either. The function runs with a token of
 * exactly its ServiceAccount; each case has its own namespace.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, createAppMonitor, deliver, eventsRegarding, onlyRunningPod, runningPods, scalerForSuite } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

const MONITOR = { "app-monitor.kubedemo.com/monitor": "true" };
const memhog: k8s.V1Container = { name: "memhog", image: "registry.example/app:1", resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } };

/** An annotated Deployment `web` of `replicas` memhog Pods, with the Pod template `volumes`; waits for them to run. */
async function createWeb(ns: string, replicas: number, volumes: k8s.V1Volume[]): Promise<k8s.V1Pod> {
  const container = volumes.length === 0 ? memhog : { ...memhog, volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/${v.name}` })) };
  await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name: "web" },
      spec: {
        replicas,
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" }, annotations: MONITOR }, spec: { containers: [container], ...(volumes.length === 0 ? {} : { volumes }) } },
      },
    },
  });
  const pods = await waitFor(`${replicas} Pods of web Running`, async () => {
    const running = await runningPods(ns, "app=web");
    return running.length === replicas ? running : undefined;
  }, 60_000);
  const [pod] = pods;
  if (pod === undefined) throw new Error("no Pod of web");
  return pod;
}

const SCALED = /^scaled Deployment web by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; the rollout replaces \(restarts\) its Pods$/;

describe("memory-scaler says a scale replaces the workload's Pods", { concurrency: 3 }, () => {
  const scaler = scalerForSuite();

  it("a single-replica Deployment with an emptyDir volume: Scaled says the rollout replaces its Pods, and PodsReplaced Warnings on it and on the AppMonitor name both reasons and what is lost", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const pod = await createWeb(ns, 1, [{ name: "cache", emptyDir: {} }]);
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));

    for (const [kind, name, prefix] of [["Deployment", "web", ""], ["AppMonitor", "m", "Deployment web: "]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      assert.deepEqual(events.map((e) => [e.type, e.reason]).sort(), [["Normal", "Scaled"], ["Warning", "PodsReplaced"]], kind);
      assert.match(events.find((e) => e.reason === "Scaled")?.note ?? "", SCALED, kind);
      const warning = events.find((e) => e.reason === "PodsReplaced");
      assert.ok(warning?.note?.startsWith(`${prefix}the rollout of this scale replaces (restarts) its Pods, and what they hold in memory and in emptyDir volumes is lost: `), warning?.note);
      assert.match(warning?.note ?? "", /Deployment web has a single replica, so no other Pod holds what its Pod holds; its Pod template has emptyDir volume cache\./, kind);
      assert.match(warning?.note ?? "", /spec\.updateMode: InPlace \(or InPlaceOrRollout\) on the AppMonitor resizes the running Pods instead, without replacing them$/, kind);
      assert.equal(warning?.related?.kind, kind === "Deployment" ? "AppMonitor" : "Deployment");
    }
  });

  it("a 3-replica Deployment without emptyDir: Scaled says the rollout replaces its Pods, and no PodsReplaced Warning", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const pod = await createWeb(ns, 3, []);
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));

    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Normal", "Scaled"]], kind);
      assert.match(events[0]?.note ?? "", SCALED, kind);
    }
  });

  it("a bare Pod with an emptyDir volume, resized in place: not replaced, so no PodsReplaced Warning", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: "solo", labels: { app: "solo" }, annotations: MONITOR }, spec: { containers: [{ ...memhog, volumeMounts: [{ name: "cache", mountPath: "/cache" }] }], volumes: [{ name: "cache", emptyDir: {} }] } },
    });
    const running = await onlyRunningPod(ns, "app=solo");
    // kwok reports no container resources, and the API server refuses to resize a running Pod
    // whose statuses lack them: written here as a kubelet that supports resize would (admin, pods/status).
    const containerStatuses = (running.status?.containerStatuses ?? []).map((s) => ({ ...s, resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }));
    await core.replaceNamespacedPodStatus({ namespace: ns, name: "solo", body: { ...running, status: { ...running.status, containerStatuses } } });

    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: "solo", container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Resized"], describeAnswer(answer));
    const after = await core.readNamespacedPod({ namespace: ns, name: "solo" });
    assert.equal(after.metadata?.uid, running.metadata?.uid, "the same Pod, not a replacement");
    for (const [kind, name] of [["Pod", "solo"], ["AppMonitor", "m"]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Normal", "Resized"]], kind);
    }
  });
});
