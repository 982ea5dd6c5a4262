// The follow-up of a scale's rollout, from plain data (functions/memory-scaler/follow-up/rollout.ts),
// and through the flow on an in-memory cluster (follow-up/flow.ts): where a rollout stands. How the
// AppMonitor's status records it: status/rollouts.test.ts; the quota: scale/capacity.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import type { FollowUp } from "../../../../functions/memory-scaler/follow-up/follow-up.ts";
import { decideFollowUp, ROLLOUT_DEADLINE_SECONDS } from "../../../../functions/memory-scaler/follow-up/rollout.ts";
import type { PodView, WorkloadView } from "../../../../functions/memory-scaler/kube/views.ts";
import type { PendingRollout } from "../../../../functions/memory-scaler/status/rollouts.ts";
import { followRollouts } from "../../../../functions/memory-scaler/follow-up/flow.ts";
import { withRolloutStarted } from "../../../../functions/memory-scaler/status/rollouts.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, flowDeps, memhogCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const log = pino({ level: "silent" });
const START = "2026-12-01T10:00:00Z";
const rollout: PendingRollout = { workload: { kind: "Deployment", name: "web" }, generation: 2, startedAt: START, event: "e1" };
const sts: PendingRollout = { ...rollout, workload: { kind: "StatefulSet", name: "db" } };

function deployment(over: Partial<WorkloadView> = {}): WorkloadView {
  return {
    kind: "Deployment",
    name: "web",
    uid: "u1",
    generation: 2,
    observedGeneration: 2,
    desired: 3,
    current: 3,
    updated: 3,
    available: 3,
    updateStrategy: undefined,
    partition: 0,
    updateRevision: undefined,
    currentRevision: undefined,
    conditions: [{ type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" }],
    ...over,
  };
}
const statefulSet = (over: Partial<WorkloadView> = {}): WorkloadView =>
  deployment({ kind: "StatefulSet", name: "db", desired: 2, current: 2, updated: 2, available: 2, updateRevision: "db-new", currentRevision: "db-new", conditions: [], ...over });
const pod = (name: string, over: Partial<PodView> = {}): PodView => ({ name, uid: `uid-${name}`, revision: "db-new", deleting: false, unschedulable: undefined, crashLoopingOOM: [], ...over });

/** A one-Pod StatefulSet whose old Pod crash-loops after OOM kills. */
const blocked = () => ({ rollout: sts, workload: statefulSet({ updated: 0, available: 1, currentRevision: "db-old" }), pods: [pod("db-0", { revision: "db-old", crashLoopingOOM: ["memhog"] })] });

describe("decideFollowUp", () => {
  const at = (seconds: number) => new Date(Date.parse(START) + seconds * 1000);
  const cases: {
    name: string;
    rollout?: PendingRollout;
    workload: WorkloadView | undefined;
    pods?: PodView[];
    stuckRollout?: "Report" | "DeletePod";
    uid?: string;
    now?: Date;
    want: FollowUp["result"];
    reason?: string;
    message?: RegExp;
  }[] = [
    { name: "workload gone", workload: undefined, want: "gone" },
    { name: "another workload of that name (another uid)", workload: deployment({ uid: "u2" }), uid: "u1", want: "gone" },
    { name: "a generation below the recorded one: recreated", workload: deployment({ generation: 1, observedGeneration: 1 }), want: "gone" },
    { name: "the controller has not observed the generation", workload: deployment({ observedGeneration: 1 }), want: "progressing", message: /not yet seen generation 2/ },
    { name: "every replica updated and available", workload: deployment(), want: "rolledOut", message: /rolled out generation 2: 3 of 3 Pods updated and available/ },
    { name: "a later generation (edited since) rolled out counts", workload: deployment({ generation: 3, observedGeneration: 3 }), want: "rolledOut" },
    { name: "old Pods still there", workload: deployment({ current: 4 }), want: "progressing" },
    { name: "updated but not all available", workload: deployment({ available: 2 }), want: "progressing", message: /3 of 3 updated, 2 available/ },
    {
      name: "ReplicaFailure: FailedCreate with the quota's message",
      workload: deployment({ updated: 0, conditions: [{ type: "ReplicaFailure", status: "True", reason: "FailedCreate", message: 'pods "web-1" is forbidden: exceeded quota: mem' }] }),
      want: "failed",
      reason: "FailedCreate",
      message: /cannot create its Pods: .*exceeded quota: mem/,
    },
    {
      name: "ProgressDeadlineExceeded, with the Pod the scheduler left Pending",
      workload: deployment({ updated: 1, available: 3, current: 4, conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: 'ReplicaSet "web-2" has timed out progressing.' }] }),
      pods: [pod("web-2-a", { unschedulable: "0/3 nodes are available: 3 Insufficient memory." }), pod("web-1-a")],
      want: "failed",
      reason: "ProgressDeadlineExceeded",
      message: /timed out progressing\.; Pod web-2-a Pending, unschedulable: 0\/3 nodes are available: 3 Insufficient memory\./,
    },
    { name: "Progressing False for another reason is not a failure", workload: deployment({ available: 2, conditions: [{ type: "Progressing", status: "False", reason: "Other" }] }), want: "progressing" },
    {
      name: "StatefulSet OnDelete: Pods on the old revision are named",
      rollout: sts,
      workload: statefulSet({ updateStrategy: "OnDelete", updated: 1, currentRevision: "db-old" }),
      pods: [pod("db-0", { revision: "db-old" }), pod("db-1")],
      want: "progressing",
      message: /OnDelete: Pod db-0 still runs the old revision; delete it/,
    },
    { name: "StatefulSet OnDelete: every Pod replaced (currentRevision stays behind)", rollout: sts, workload: statefulSet({ updateStrategy: "OnDelete", currentRevision: "db-old" }), pods: [pod("db-0"), pod("db-1")], want: "rolledOut" },
    {
      name: "StatefulSet RollingUpdate: an old Pod crash-looping after OOM kills, Report",
      rollout: sts,
      workload: statefulSet({ updated: 0, available: 1, currentRevision: "db-old" }),
      pods: [pod("db-0", { revision: "db-old", crashLoopingOOM: ["memhog"] }), pod("db-1", { revision: "db-old" })],
      stuckRollout: "Report",
      want: "failed",
      reason: "CrashLoopingPod",
      message: /Pod db-0 of the old revision is crash-looping after OOM kills \(memhog\).*kubectl delete pod db-0/,
    },
    { name: "the same, stuckRollout absent: Report", ...blocked(), want: "failed", reason: "CrashLoopingPod" },
    { name: "the same, DeletePod", ...blocked(), stuckRollout: "DeletePod", want: "deletePod" },
    {
      name: "a crash-looping Pod already on the new revision does not block the old-Pod rule",
      rollout: sts,
      workload: statefulSet({ available: 1 }),
      pods: [pod("db-0", { crashLoopingOOM: ["memhog"] }), pod("db-1")],
      want: "progressing",
    },
    {
      name: "StatefulSet: a Pod Pending unschedulable within the deadline",
      rollout: sts,
      workload: statefulSet({ updated: 1, available: 1, currentRevision: "db-old" }),
      pods: [pod("db-1", { unschedulable: "Insufficient memory" })],
      now: at(ROLLOUT_DEADLINE_SECONDS - 1),
      want: "progressing",
    },
    {
      name: "StatefulSet: a Pod Pending unschedulable past the deadline",
      rollout: sts,
      workload: statefulSet({ updated: 1, available: 1, currentRevision: "db-old" }),
      pods: [pod("db-1", { unschedulable: "Insufficient memory" })],
      now: at(ROLLOUT_DEADLINE_SECONDS + 1),
      want: "failed",
      reason: "PodUnschedulable",
    },
    { name: "StatefulSet RollingUpdate: updated and ready but currentRevision not moved on yet", rollout: sts, workload: statefulSet({ currentRevision: "db-old" }), want: "progressing" },
    {
      name: "StatefulSet RollingUpdate still short of its Pods past the deadline (a Pod a quota refuses)",
      rollout: sts,
      workload: statefulSet({ updated: 1, available: 1, currentRevision: "db-old" }),
      now: at(ROLLOUT_DEADLINE_SECONDS + 1),
      want: "failed",
      reason: "ProgressDeadlineExceeded",
      message: /has not rolled out generation 2 600s after the scale: 1 of 2 updated, 1 ready/,
    },
    { name: "StatefulSet OnDelete past the deadline: still waiting for the user", rollout: sts, workload: statefulSet({ updateStrategy: "OnDelete", updated: 1 }), pods: [pod("db-0", { revision: "db-old" })], now: at(ROLLOUT_DEADLINE_SECONDS + 1), want: "progressing" },
    { name: "StatefulSet with a partition: only the Pods above it", rollout: sts, workload: statefulSet({ partition: 1, updated: 1, available: 2, currentRevision: "db-old" }), want: "rolledOut" },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = decideFollowUp({ rollout: c.rollout ?? rollout, uid: c.uid, workload: c.workload, pods: c.pods ?? [], stuckRollout: c.stuckRollout, now: c.now ?? at(60) });
      assert.equal(got.result, c.want, got.message);
      if (c.reason !== undefined) assert.equal((got as { reason?: string }).reason, c.reason);
      if (c.message !== undefined) assert.match(got.message, c.message);
    });
  }
});

describe("the flow records the rollout a scale starts, the follow-up ends it", () => {
  it("a scale lists the rollout at the patch's generation; a tick with the workload rolled out ends it RolledOut, with Events", async () => {
    const cluster = memhogCluster();
    const deps = flowDeps(cluster);
    const outcome = await handleFiring(deps, "e1", alertData(), log);
    assert.equal(outcome.outcome, "scaled");
    const status = () => cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { rollouts?: PendingRollout[]; conditions?: { type: string; status: string; reason: string }[] };
    assert.deepEqual(status().rollouts?.map((r) => [r.workload.kind, r.workload.name, r.generation, r.event]), [["Deployment", "memhog", 2, "e1"]]);

    const follow = { cluster, events: deps.events, status: deps.status, now: deps.now };
    assert.deepEqual(await followRollouts(follow, log), { checked: 1, ended: 0, pending: 1 }, "the controller has not observed generation 2");
    const workload = cluster.workloads.get(`Deployment/${NS}/memhog`);
    assert.ok(workload);
    workload.spec = { ...workload.spec, replicas: 1, selector: { matchLabels: { name: "memhog" } } };
    workload.status = { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1 };
    const ended: string[] = [];
    assert.deepEqual(await followRollouts({ ...follow, onEnded: (kind, result, reason) => ended.push(`${kind} ${result} ${reason}`) }, log), { checked: 1, ended: 1, pending: 0 });
    assert.deepEqual(ended, ["Deployment RolledOut RolledOut"]);
    assert.deepEqual(status().rollouts, []);
    assert.deepEqual(status().conditions?.map((c) => [c.type, c.status, c.reason]), [["RolledOut", "True", "RolledOut"]]);
    assert.deepEqual(cluster.events.filter((e) => e.reason === "RolledOut").map((e) => [e.type, e.regarding?.kind]).sort(), [["Normal", "AppMonitor"], ["Normal", "Deployment"]]);
    assert.deepEqual(await followRollouts(follow, log), { checked: 0, ended: 0, pending: 0 }, "nothing pending: nothing more read");
  });

  it("a tick with nothing pending makes one API call, the LIST of AppMonitors", async () => {
    const cluster = memhogCluster();
    const calls: string[] = [];
    const counted = new Proxy(cluster, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          calls.push(String(property));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const deps = flowDeps(cluster);
    assert.deepEqual(await followRollouts({ cluster: counted, events: deps.events, status: deps.status, now: deps.now }, log), { checked: 0, ended: 0, pending: 0 });
    assert.deepEqual(calls, ["listAllAppMonitors"]);
  });

  it("a ResourceQuota that cannot hold the surge: RolloutExceedsQuota, no patch, no rollout", async () => {
    const cluster = memhogCluster();
    cluster.quotas.push({ metadata: { name: "mem", namespace: NS }, status: { hard: { "requests.memory": "700Mi" }, used: { "requests.memory": "256Mi" } } });
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "RolloutExceedsQuota"]);
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason]), [["Warning", "RolloutExceedsQuota"], ["Warning", "RolloutExceedsQuota"]]);
  });

  it("DeletePod: the crash-looping old Pod is deleted with its uid, the rollout stays pending", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, stuckRollout: "DeletePod" });
    const am = cluster.appMonitors.get(`${NS}/mymonitor`);
    assert.ok(am);
    am.status = withRolloutStarted(undefined, sts, "rolling", START);
    cluster.workloads.set(`StatefulSet/${NS}/db`, {
      metadata: { name: "db", namespace: NS, uid: "s1", generation: 2 },
      spec: { replicas: 1, selector: { matchLabels: { app: "db" } } },
      status: { observedGeneration: 2, replicas: 1, updatedReplicas: 0, readyReplicas: 0, updateRevision: "db-new", currentRevision: "db-old" },
    });
    cluster.pods.set(`${NS}/db-0`, {
      metadata: { name: "db-0", namespace: NS, uid: "p0", labels: { app: "db", "controller-revision-hash": "db-old" } },
      status: { containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: false, restartCount: 4, state: { waiting: { reason: "CrashLoopBackOff" } }, lastState: { terminated: { reason: "OOMKilled", exitCode: 137 } } }] },
    });
    const deps = flowDeps(cluster);
    assert.deepEqual(await followRollouts({ cluster, events: deps.events, status: deps.status, now: deps.now }, log), { checked: 1, ended: 0, pending: 1 });
    assert.deepEqual(cluster.deletedPods, ["db-0"]);
    assert.deepEqual(cluster.events.map((e) => e.reason), ["DeletedStuckPod", "DeletedStuckPod"]);
  });
});
