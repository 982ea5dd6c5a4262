/**
 * memory-scaler follows the rollout each scale starts, on the stack: the real controller-manager
 * rolls the workloads out (kwok runs their Pods), a PingSource tick (posted as Knative's
 * PingSource sends it) makes memory-scaler look, and each rollout ends in its condition, Events
 * and metric. Each failure is produced for real: a ResourceQuota that cannot hold the surge
 * (refused before the patch), one that refuses the new Pods (FailedCreate), a progress deadline
 * passed while the new Pod stays Pending on a full Node, a StatefulSet with OnDelete, and a
 * StatefulSet whose old Pod crash-loops after OOM kills (Report and DeletePod).
 * The cases run one after another: a tick follows the rollouts of every namespace. For the same
 * reason the file has a stack of its own: the shared stack holds other files' pending rollouts.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { alertEvent, ownStackForFile, pingTick, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, onlyRunningPod, scalerForSuite } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

ownStackForFile("rollout");

const MONITOR = { "app-monitor.kubedemo.com/monitor": "true" };
const memhog = (limit = "384Mi", request = "256Mi"): k8s.V1Container => ({ name: "memhog", image: "registry.example/app:1", resources: { limits: { memory: limit }, requests: { memory: request } } });

interface RolloutStatus {
  rollouts?: { workload: { kind: string; name: string }; generation: number; waitingPods?: string[] }[];
  conditions?: { type: string; status: string; reason: string; message: string }[];
}

const rolledOut = (status: RolloutStatus) => status.conditions?.find((c) => c.type === "RolledOut");

async function apps(): Promise<k8s.AppsV1Api> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
}
async function core(): Promise<k8s.CoreV1Api> {
  return (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
}
const merge = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

describe("memory-scaler follows each rollout to its end", { concurrency: 1 }, () => {
  const running = scalerForSuite();
  const url = () => running().url;

  /** Ticks until the AppMonitor's RolledOut condition is no longer Unknown; returns the status. */
  async function tickUntilEnded(ns: string, name = "m", timeoutMs = 60_000): Promise<RolloutStatus> {
    return waitFor(`the rollout of AppMonitor ${ns}/${name} to end`, async () => {
      const answer = await deliver(url(), pingTick());
      assert.equal(answer.status, 204, describeAnswer(answer));
      const status = (await appMonitorStatus(ns, name)) as RolloutStatus;
      const condition = rolledOut(status);
      return condition !== undefined && condition.status !== "Unknown" ? status : undefined;
    }, timeoutMs, 500);
  }

  async function scale(ns: string, pod: string): Promise<void> {
    const answer = await deliver(url(), alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
  }

  async function createDeployment(ns: string, spec: Partial<k8s.V1DeploymentSpec> = {}, podSpec: Partial<k8s.V1PodSpec> = {}, container = memhog()): Promise<void> {
    await (await apps()).createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: "web" },
        spec: { replicas: 1, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" }, annotations: MONITOR }, spec: { containers: [container], ...podSpec } }, ...spec },
      },
    });
  }

  it("with nothing pending a tick is idle; a scale records its rollout, and the tick after the rollout ends it RolledOut", async (t) => {
    // Right after the CRD is installed the API server answers a LIST of it 429 (Retry-After)
    // while its cache of the new resource fills; memory-scaler passes the 429 on, and the Broker retries.
    const idle = await waitFor("a tick answered other than 429", async () => {
      const answer = await deliver(url(), pingTick());
      return answer.status === 429 ? undefined : answer;
    });
    assert.deepEqual([idle.status, idle.outcome, idle.reason], [204, "idle", "NoPendingRollout"], describeAnswer(idle));

    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns);
    const pod = await onlyRunningPod(ns, "app=web");
    await scale(ns, pod.metadata.name);
    const started = (await appMonitorStatus(ns, "m")) as RolloutStatus;
    assert.deepEqual(started.rollouts?.map((r) => [r.workload.kind, r.workload.name, r.generation]), [["Deployment", "web", 2]]);
    assert.deepEqual([rolledOut(started)?.status, rolledOut(started)?.reason], ["Unknown", "RolloutProgressing"]);

    const ended = await tickUntilEnded(ns);
    assert.deepEqual([rolledOut(ended)?.status, rolledOut(ended)?.reason], ["True", "RolledOut"]);
    assert.match(rolledOut(ended)?.message ?? "", /Deployment web rolled out generation 2: 1 of 1 Pod updated and available/);
    assert.deepEqual(ended.rollouts, []);
    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      const events = (await eventsRegarding(ns, kind, name)).filter((e) => e.reason === "RolledOut");
      assert.deepEqual(events.map((e) => e.type), ["Normal"], kind);
    }
    const metrics = await (await fetch(`${url()}/metrics`)).text();
    assert.match(metrics, /appmonitor_memory_scaler_rollouts_total\{kind="Deployment",result="RolledOut",reason="RolledOut"[^}]*\} [1-9]/);
    // Ended: a later tick writes nothing more.
    assert.equal((await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.reason === "RolledOut").length, 1);
  });

  it("a ResourceQuota that holds one scaled Pod but not the rollout's surge: refused before the patch, RolloutExceedsQuota Warnings", async (t) => {
    const ns = await freshNamespace(t);
    await (await core()).createNamespacedResourceQuota({ namespace: ns, body: { metadata: { name: "mem" }, spec: { hard: { "requests.memory": "1536Mi" } } } });
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, { replicas: 3 });
    await waitFor("3 Pods Running and counted by the quota", async () => {
      const quota = await (await core()).readNamespacedResourceQuota({ namespace: ns, name: "mem" });
      return quota.status?.used?.["requests.memory"] === "768Mi";
    }, 60_000);
    const [pod] = (await (await core()).listNamespacedPod({ namespace: ns, labelSelector: "app=web" })).items;
    // One more 512Mi Pod fits (768Mi + 512Mi ≤ 1536Mi), so the Pod dry run passes; the rollout's
    // peak, 3 new Pods beside 1 old one (maxSurge 25% of 3 → 1), is 1792Mi.
    const answer = await deliver(url(), alertEvent({ namespace: ns, pod: pod?.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["skipped", "RolloutExceedsQuota"], describeAnswer(answer));
    assert.equal((await (await apps()).readNamespacedDeployment({ namespace: ns, name: "web" })).metadata?.generation, 1);
    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      const [warning, ...more] = await eventsRegarding(ns, kind, name);
      assert.equal(more.length, 0, kind);
      assert.deepEqual([warning?.type, warning?.reason], ["Warning", "RolloutExceedsQuota"], kind);
      assert.match(warning?.note ?? "", /needs 1Gi more requests\.memory at its peak \(3 new Pods at 512Mi beside 1 old Pod still running \(maxSurge\)\), but ResourceQuota mem has 768Mi of 1536Mi used/);
    }
    assert.equal(((await appMonitorStatus(ns, "m")) as RolloutStatus).rollouts, undefined, "no rollout started");
  });

  it("a ResourceQuota that refuses the new Pods after the patch: RolloutFailed FailedCreate with the quota's message", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns);
    const pod = await onlyRunningPod(ns, "app=web");
    await (await apps()).patchNamespacedDeployment({ namespace: ns, name: "web", body: { spec: { paused: true } } }, merge);
    await scale(ns, pod.metadata.name);
    // Paused, the Deployment holds the new template; a quota of one Pod then refuses the surge Pod.
    await (await core()).createNamespacedResourceQuota({ namespace: ns, body: { metadata: { name: "pods" }, spec: { hard: { pods: "1" } } } });
    await waitFor("the quota to count the Pod", async () => (await (await core()).readNamespacedResourceQuota({ namespace: ns, name: "pods" })).status?.used?.pods === "1");
    await (await apps()).patchNamespacedDeployment({ namespace: ns, name: "web", body: { spec: { paused: false } } }, merge);

    const ended = await tickUntilEnded(ns);
    assert.deepEqual([rolledOut(ended)?.status, rolledOut(ended)?.reason], ["False", "FailedCreate"]);
    assert.match(rolledOut(ended)?.message ?? "", /Deployment web cannot create its Pods: .*exceeded quota: pods/);
    const [failed] = (await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.reason === "RolloutFailed");
    assert.equal(failed?.type, "Warning");
    assert.match(failed?.note ?? "", /rollout failed \(FailedCreate\): .*exceeded quota: pods/);
    assert.equal((await eventsRegarding(ns, "AppMonitor", "m")).filter((e) => e.reason === "RolloutFailed").length, 1);
  });

  it("a progress deadline passed while the new Pod stays Pending on a full Node: RolloutFailed ProgressDeadlineExceeded naming the unschedulable Pod", async (t) => {
    const ns = await freshNamespace(t);
    // A Node of its own, 1Gi: the old Pod's 600Mi and the new one's 900Mi do not fit together,
    // although 900Mi fits the other Nodes (so it is not refused as Unschedulable).
    const node = `small-${randomBytes(3).toString("hex")}`;
    const taint = { key: "appmonitor.test/small", value: node, effect: "NoSchedule" };
    await (await core()).createNode({
      body: {
        metadata: { name: node, annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" }, labels: { "kubernetes.io/hostname": node, type: "kwok" } },
        spec: { taints: [taint] },
        status: { capacity: { cpu: "4", memory: "1Gi", pods: "10" }, allocatable: { cpu: "4", memory: "1Gi", pods: "10" } },
      },
    });
    t.after(async () => {
      await (await core()).deleteNode({ name: node }).catch(() => undefined);
    });
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 1.5 });
    await createDeployment(
      ns,
      { progressDeadlineSeconds: 10 },
      { nodeSelector: { "kubernetes.io/hostname": node }, tolerations: [{ key: taint.key, operator: "Equal", value: node, effect: "NoSchedule" }] },
      memhog("600Mi", "600Mi"),
    );
    const pod = await onlyRunningPod(ns, "app=web");
    await scale(ns, pod.metadata.name);

    const ended = await tickUntilEnded(ns, "m", 90_000);
    assert.deepEqual([rolledOut(ended)?.status, rolledOut(ended)?.reason], ["False", "ProgressDeadlineExceeded"]);
    assert.match(rolledOut(ended)?.message ?? "", /has timed out progressing.*Pod web-[a-z0-9-]+ Pending, unschedulable: 0\/\d+ nodes are available: .*Insufficient memory/);
    const [failed] = (await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.reason === "RolloutFailed");
    assert.equal(failed?.type, "Warning");
    assert.match(failed?.note ?? "", /rollout failed \(ProgressDeadlineExceeded\)/);
  });

  it("a StatefulSet with OnDelete: pending, naming the Pods on the old revision; no scale on top of it; RolledOut once they are replaced", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0 });
    await (await apps()).createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: "db" },
        spec: { replicas: 2, serviceName: "db", updateStrategy: { type: "OnDelete" }, selector: { matchLabels: { app: "db" } }, template: { metadata: { labels: { app: "db" }, annotations: MONITOR }, spec: { containers: [memhog()] } } },
      },
    });
    await waitFor("db-0 and db-1 Running", async () => (await (await core()).listNamespacedPod({ namespace: ns, labelSelector: "app=db" })).items.filter((p) => p.status?.phase === "Running").length === 2, 60_000);
    await scale(ns, "db-0");

    const waiting = await waitFor("the rollout to name both Pods", async () => {
      await deliver(url(), pingTick());
      const status = (await appMonitorStatus(ns, "m")) as RolloutStatus;
      return status.rollouts?.[0]?.waitingPods?.length === 2 ? status : undefined;
    });
    assert.deepEqual(waiting.rollouts?.[0]?.waitingPods, ["db-0", "db-1"]);
    assert.equal(rolledOut(waiting)?.status, "Unknown");

    // db-1 replaced runs the new memory: its alert (cooldown 0) would scale again, but db-0 has not got the last scale.
    await replacePod(ns, "db-1");
    const blocked = await deliver(url(), alertEvent({ namespace: ns, pod: "db-1", container: "memhog", appmonitor: "m" }));
    assert.deepEqual([blocked.outcome, blocked.reason], ["skipped", "RolloutWaitsForDelete"], describeAnswer(blocked));
    assert.equal((await (await apps()).readNamespacedStatefulSet({ namespace: ns, name: "db" })).metadata?.generation, 2);

    await replacePod(ns, "db-0");
    const ended = await tickUntilEnded(ns);
    assert.deepEqual([rolledOut(ended)?.status, rolledOut(ended)?.reason], ["True", "RolledOut"]);
    assert.deepEqual(ended.rollouts, []);
  });

  /** Deletes a StatefulSet's Pod, as the OnDelete Warning says to, and waits for its replacement to run. */
  async function replacePod(ns: string, name: string): Promise<void> {
    const client = await core();
    const old = await client.readNamespacedPod({ namespace: ns, name });
    await client.deleteNamespacedPod({ namespace: ns, name });
    await waitFor(`${name} replaced and Running`, async () => {
      const p = await client.readNamespacedPod({ namespace: ns, name }).catch(() => undefined);
      return p?.metadata?.uid !== old.metadata?.uid && p?.status?.phase === "Running";
    }, 60_000);
  }

  /** A StatefulSet `db` of one Pod whose container, OOM-killed, is in CrashLoopBackOff and not Ready; scaled. */
  async function crashLoopingStatefulSet(ns: string, stuckRollout: string): ReturnType<typeof onlyRunningPod> {
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, stuckRollout });
    await (await apps()).createNamespacedStatefulSet({
      namespace: ns,
      body: { metadata: { name: "db" }, spec: { replicas: 1, serviceName: "db", selector: { matchLabels: { app: "db" } }, template: { metadata: { labels: { app: "db" }, annotations: MONITOR }, spec: { containers: [memhog()] } } } },
    });
    const pod = await onlyRunningPod(ns, "app=db");
    const client = await core();
    const now = new Date();
    const current = await client.readNamespacedPod({ namespace: ns, name: "db-0" });
    current.status = {
      ...current.status,
      conditions: (current.status?.conditions ?? []).map((c) => (c.type === "Ready" || c.type === "ContainersReady" ? { ...c, status: "False", lastTransitionTime: now } : c)),
      containerStatuses: (current.status?.containerStatuses ?? []).map((s) => ({
        ...s,
        ready: false,
        restartCount: 5,
        state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 2m40s restarting failed container" } },
        lastState: { terminated: { reason: "OOMKilled", exitCode: 137, startedAt: new Date(now.getTime() - 5000), finishedAt: now } },
      })),
    };
    await client.replaceNamespacedPodStatus({ namespace: ns, name: "db-0", body: current });
    await scale(ns, "db-0");
    return pod;
  }

  it("a StatefulSet RollingUpdate blocked by its old Pod crash-looping after OOM kills, stuckRollout Report: RolloutFailed CrashLoopingPod, the Pod left alone", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await crashLoopingStatefulSet(ns, "Report");
    const ended = await tickUntilEnded(ns);
    assert.deepEqual([rolledOut(ended)?.status, rolledOut(ended)?.reason], ["False", "CrashLoopingPod"]);
    assert.match(rolledOut(ended)?.message ?? "", /Pod db-0 of the old revision is crash-looping after OOM kills \(memhog\).*kubectl delete pod db-0/);
    const [failed] = (await eventsRegarding(ns, "StatefulSet", "db")).filter((e) => e.reason === "RolloutFailed");
    assert.equal(failed?.type, "Warning");
    assert.equal((await (await core()).readNamespacedPod({ namespace: ns, name: "db-0" })).metadata?.uid, pod.metadata.uid, "Report deletes nothing");
  });

  it("the same with stuckRollout DeletePod: the Pod is deleted, recreated at the new revision, and the rollout ends RolledOut", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await crashLoopingStatefulSet(ns, "DeletePod");
    const ended = await tickUntilEnded(ns);
    assert.deepEqual([rolledOut(ended)?.status, rolledOut(ended)?.reason], ["True", "RolledOut"]);
    const now = await (await core()).readNamespacedPod({ namespace: ns, name: "db-0" });
    assert.notEqual(now.metadata?.uid, pod.metadata.uid);
    assert.equal(now.spec?.containers[0]?.resources?.limits?.memory, "768Mi");
    const deleted = (await eventsRegarding(ns, "StatefulSet", "db")).filter((e) => e.reason === "DeletedStuckPod");
    assert.equal(deleted.length, 1);
    assert.match(deleted[0]?.note ?? "", /deleting it so that it is recreated at the new revision/);
  });
});
