// A bare Pod resized in place: the pure parts as tables (the resize patch, the last resize's
// time, the memory the containers run with, the follow-up's decision from the Pod's conditions),
// then the flow and the follow-up against the in-memory cluster.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import type { ContainerChange, ContainerMemory } from "../../../../../functions/memory-scaler/model.ts";
import { followRollouts } from "../../../../../functions/memory-scaler/follow-up/flow.ts";
import type { PendingRollout } from "../../../../../functions/memory-scaler/status/rollouts.ts";
import { lastResizeTime, runningMemory } from "../../../../../functions/memory-scaler/kube/views.ts";
import { buildResizePatch } from "../../../../../functions/memory-scaler/scale/targets/resize-patch.ts";
import { decideResizeFollowUp } from "../../../../../functions/memory-scaler/follow-up/resize.ts";
import type { PodResizeView } from "../../../../../functions/memory-scaler/kube/views.ts";
import { withResizeProgress } from "../../../../../functions/memory-scaler/status/rollouts.ts";
import type { AppMonitorStatus } from "../../../../../functions/lib/appmonitor.ts";
import { handleFiring } from "../../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, apiError, editPod, flowDeps, memhogCluster, NS, type FakeCluster } from "../../../../support/memory-scaler-fakes.ts";

const log = pino({ level: "silent" });
const memhog: ContainerMemory = { name: "memhog", kind: "container", limit: "384Mi", request: "256Mi" };
const doubled: ContainerChange = { container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } };

describe("buildResizePatch", () => {
  it("tests the resourceVersion and the values decided from, then replaces the memory", () => {
    const ops = buildResizePatch([memhog], [doubled], "42").map((o) => `${o.op} ${o.path} ${String(o.value)}`);
    const at = "/spec/containers/0";
    assert.deepEqual(ops, [
      "test /metadata/resourceVersion 42",
      `test ${at}/name memhog`,
      `test ${at}/resources/limits/memory 384Mi`,
      `test ${at}/resources/requests/memory 256Mi`,
      `replace ${at}/resources/limits/memory 768Mi`,
      `replace ${at}/resources/requests/memory 512Mi`,
    ]);
  });

  it("a native sidecar is addressed in initContainers, counted among them only", () => {
    const containers: ContainerMemory[] = [memhog, { name: "seed", kind: "init", limit: "1Gi" }, { name: "proxy", kind: "sidecar", limit: "64Mi" }];
    const ops = buildResizePatch(containers, [{ container: "proxy", from: { limit: "64Mi" }, to: { limit: "128Mi" } }], "7");
    assert.deepEqual(ops.map((o) => `${o.op} ${o.path}`), ["test /metadata/resourceVersion", "test /spec/initContainers/1/name", "test /spec/initContainers/1/resources/limits/memory", "replace /spec/initContainers/1/resources/limits/memory"]);
  });

  const refused: { name: string; containers: ContainerMemory[]; change: ContainerChange; error: RegExp }[] = [
    { name: "a container the Pod lacks", containers: [memhog], change: { ...doubled, container: "other" }, error: /not in the Pod's spec/ },
    { name: "an init container", containers: [{ name: "memhog", kind: "init", limit: "384Mi", request: "256Mi" }], change: doubled, error: /init container/ },
    { name: "values other than the spec's", containers: [{ ...memhog, limit: "512Mi" }], change: doubled, error: /other values/ },
    { name: "a request the spec lacks", containers: [{ name: "memhog", limit: "384Mi" }], change: { container: "memhog", from: { limit: "384Mi" }, to: { limit: "768Mi", request: "512Mi" } }, error: /cannot add a memory request/ },
  ];
  for (const c of refused) it(`refuses ${c.name}`, () => assert.throws(() => buildResizePatch(c.containers, [c.change], "1"), c.error));
});

describe("lastResizeTime", () => {
  const entry = (manager: string, subresource: string | undefined, time: unknown): k8s.V1ManagedFieldsEntry => ({ manager, operation: "Update", ...(subresource === undefined ? {} : { subresource }), time: time as Date });
  const cases: { name: string; fields: k8s.V1ManagedFieldsEntry[] | undefined; want: string | undefined }[] = [
    { name: "no managedFields", fields: undefined, want: undefined },
    { name: "another manager's resize", fields: [entry("kubectl-patch", "resize", "2025-06-01T11:00:00Z")], want: undefined },
    { name: "ours, not on the resize subresource", fields: [entry("appmonitor-memory-scaler", undefined, "2025-06-01T11:00:00Z")], want: undefined },
    { name: "ours on resize, as a string", fields: [entry("kubectl-patch", "resize", "2025-06-01T10:00:00Z"), entry("appmonitor-memory-scaler", "resize", "2025-06-01T11:00:00Z")], want: "2025-06-01T11:00:00Z" },
    { name: "ours on resize, as the client's Date", fields: [entry("appmonitor-memory-scaler", "resize", new Date("2025-06-01T11:00:00Z"))], want: "2025-06-01T11:00:00Z" },
  ];
  for (const c of cases) it(c.name, () => assert.equal(lastResizeTime(c.fields === undefined ? {} : { managedFields: c.fields }), c.want));
});

describe("runningMemory", () => {
  it("the status's resources where reported, the spec's elsewhere", () => {
    const pod: k8s.V1Pod = {
      spec: {
        containers: [
          { name: "memhog", resources: { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } } },
          { name: "other", resources: { limits: { memory: "64Mi" } } },
        ],
      },
      status: { containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: 0, resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }] },
    };
    assert.deepEqual(runningMemory(pod), [
      { name: "memhog", kind: "container", limit: "384Mi", request: "256Mi" },
      { name: "other", kind: "container", limit: "64Mi" },
    ]);
  });
});

describe("decideResizeFollowUp", () => {
  const rollout: PendingRollout = { workload: { kind: "Pod", name: "solo" }, generation: 2, startedAt: "2025-06-01T12:00:00Z", event: "e1" };
  const at = (seconds: number) => new Date(Date.parse(rollout.startedAt) + seconds * 1000);
  const container = (actual: { limit?: string; request?: string } | undefined, restartCount = 0) => ({ name: "memhog", desired: { limit: "768Mi", request: "512Mi" }, actual, restartCount });
  const pod = (over: Partial<PodResizeView> = {}): PodResizeView => ({ name: "solo", generation: 2, observedGeneration: 2, conditions: [], containers: [container({ limit: "768Mi", request: "512Mi" })], ...over });
  const cases: { name: string; pod: PodResizeView | undefined; now?: Date; want: [string, string?]; message?: RegExp }[] = [
    { name: "the Pod is gone", pod: undefined, want: ["gone"] },
    { name: "deleted and created again (generation below the resize's)", pod: pod({ generation: 1 }), want: ["gone"] },
    {
      name: "PodResizePending Infeasible: failed, with the kubelet's message",
      pod: pod({ conditions: [{ type: "PodResizePending", status: "True", reason: "Infeasible", message: "Node didn't have enough capacity: memory, requested: 536870912, capacity: 268435456" }] }),
      want: ["failed", "Infeasible"],
      message: /Infeasible\): Node didn't have enough capacity/,
    },
    { name: "PodResizeInProgress Error: failed", pod: pod({ conditions: [{ type: "PodResizeInProgress", status: "True", reason: "Error", message: "runc update failed" }] }), want: ["failed", "ResizeError"], message: /runc update failed/ },
    { name: "PodResizePending Deferred: pending, however long", pod: pod({ conditions: [{ type: "PodResizePending", status: "True", reason: "Deferred", message: "Node didn't have enough resource" }] }), now: at(3600), want: ["progressing"], message: /Deferred/ },
    { name: "PodResizeInProgress: pending", pod: pod({ conditions: [{ type: "PodResizeInProgress", status: "True" }] }), want: ["progressing"] },
    { name: "the kubelet has not observed the generation", pod: pod({ observedGeneration: 1 }), want: ["progressing"], message: /not yet observed generation 2/ },
    { name: "the container still runs the old memory", pod: pod({ containers: [container({ limit: "384Mi", request: "256Mi" })] }), want: ["progressing"], message: /memhog not yet running/ },
    { name: "no kubelet reports the memory, past the deadline", pod: pod({ observedGeneration: undefined, containers: [container(undefined)] }), now: at(601), want: ["failed", "ProgressDeadlineExceeded"], message: /no kubelet confirmed it/ },
    { name: "done: the status shows the new memory (in bytes), no resize condition", pod: pod({ containers: [container({ limit: "805306368", request: "536870912" }, 0)] }), want: ["rolledOut"], message: /resized in place \(generation 2\): memhog: limit 805306368, request 536870912, 0 restarts/ },
    { name: "done without observedGeneration reported", pod: pod({ observedGeneration: undefined }), want: ["rolledOut"] },
    { name: "a later resize (generation above) that is done is done too", pod: pod({ generation: 3, observedGeneration: 3 }), want: ["rolledOut"] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const follow = decideResizeFollowUp({ rollout, pod: c.pod, now: c.now ?? at(10) });
      assert.deepEqual([follow.result, "reason" in follow ? follow.reason : undefined].slice(0, c.want.length), c.want);
      if (c.message !== undefined) assert.match(follow.message, c.message);
    });
  }
});

describe("withResizeProgress", () => {
  const rollout: PendingRollout = { workload: { kind: "Pod", name: "solo" }, generation: 2, startedAt: "2025-06-01T12:00:00Z" };
  const deferred = "Pod solo: resize pending (Deferred): Node didn't have enough resource";
  const status = (message: string, conditionStatus: "Unknown" | "True" = "Unknown", rollouts: PendingRollout[] = [rollout]): AppMonitorStatus =>
    ({ rollouts, conditions: [{ type: "RuleReady", status: "True" }, { type: "RolledOut", status: conditionStatus, reason: "RolloutProgressing", message, lastTransitionTime: "2025-06-01T12:00:00Z" }] }) as AppMonitorStatus;
  const cases: { name: string; before: AppMonitorStatus | undefined; changed: boolean }[] = [
    { name: "the resize's own condition: its message becomes where the resize stands", before: status("Pod solo: resizing in place to generation 2 (…)"), changed: true },
    { name: "the same message already: unchanged (no write)", before: status(deferred), changed: false },
    { name: "the condition is about a later rollout of another workload: unchanged", before: status("Deployment web: rolling out generation 3 (…)"), changed: false },
    { name: "the condition has ended: unchanged", before: status("Pod solo: resizing in place", "True"), changed: false },
    { name: "the resize is no longer pending: unchanged", before: status("Pod solo: resizing in place", "Unknown", []), changed: false },
    { name: "no status: unchanged", before: undefined, changed: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const after = withResizeProgress(c.before, rollout, deferred);
      if (!c.changed) return assert.equal(after, c.before);
      assert.deepEqual(after?.conditions?.map((x) => [x.type, x.status, x.message ?? ""]), [["RuleReady", "True", ""], ["RolledOut", "Unknown", deferred]]);
      assert.equal(after?.conditions?.[1]?.lastTransitionTime, "2025-06-01T12:00:00Z", "the status did not change, nor its transition time");
    });
  }
});

/** The memhog Pod of {@link memhogCluster} made bare (no owner), with memory's status as the kubelet reports it. */
function bareMemhog(spec: Record<string, unknown> = { memThresholdPercent: 75, memMultiplier: 2 }): FakeCluster {
  const cluster = memhogCluster(spec);
  editPod(cluster, (meta) => ({ ...meta, ownerReferences: [], resourceVersion: "10", generation: 1 }));
  const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
  assert.ok(pod);
  pod.status = { containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: 0, resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }] };
  return cluster;
}

type Status = { scaleCount?: number; recentScales?: { workload: { kind: string; name: string }; to: { limit: string } }[]; rollouts?: PendingRollout[]; conditions?: { type: string; status: string; reason: string; message: string }[] };

describe("a bare Pod covered by an AppMonitor is resized in place", () => {
  it("resizes it through the resize subresource, records Resized Events, the status entry and the pending resize", async () => {
    const cluster = bareMemhog();
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason, outcome.workload], ["scaled", "Resized", { kind: "Pod", name: "memhog-5d8f-x2" }]);
    assert.equal(cluster.writes.length, 0, "no workload patched");
    assert.equal(cluster.resizes.length, 1);
    assert.deepEqual(cluster.pods.get(`${NS}/memhog-5d8f-x2`)?.spec?.containers[0]?.resources, { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [["Normal", "Resized", "AppMonitor"], ["Normal", "Resized", "Pod"]]);
    assert.match(cluster.events[0]?.note ?? "", /resized Pod memhog-5d8f-x2 in place by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi/);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as Status;
    assert.equal(status.scaleCount, 1);
    assert.deepEqual(status.recentScales?.map((r) => [r.workload.kind, r.workload.name, r.to.limit]), [["Pod", "memhog-5d8f-x2", "768Mi"]]);
    assert.deepEqual(status.rollouts?.map((r) => [r.workload.kind, r.workload.name, r.generation, r.event]), [["Pod", "memhog-5d8f-x2", 2, "e1"]]);
    assert.match(status.conditions?.find((c) => c.type === "RolledOut")?.message ?? "", /resizing in place to generation 2/);
  });

  it("a declared runtime that sizes its heap at start: resized all the same (no template to roll out), with HeapNotReached Warnings saying the heap is not reached", async () => {
    const cluster = bareMemhog({ memThresholdPercent: 75, memMultiplier: 2, containerPolicies: [{ containerName: "memhog", runtime: "JVM" }] });
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Resized"]);
    const warnings = cluster.events.filter((e) => e.reason === "HeapNotReached");
    assert.deepEqual(warnings.map((e) => [e.type, e.regarding?.kind]).sort(), [["Warning", "AppMonitor"], ["Warning", "Pod"]]);
    assert.match(warnings[0]?.note ?? "", /container memhog \(JVM\) sizes its heap when it starts, so the resize does not reach the heap .*a bare Pod has no Pod template to roll out/);
    assert.match(outcome.message, /does not reach the heap/);
  });

  it("a second delivery in the cooldown (memory-scaler's managedFields time on the resize subresource): Cooldown; without a cooldown, before the kubelet applied it: ResizeUnderWay; never a second resize", async () => {
    const cluster = bareMemhog();
    const deps = flowDeps(cluster);
    await handleFiring(deps, "e1", alertData(), log);
    const again = await handleFiring({ ...deps, now: () => new Date("2025-06-01T12:01:00Z") }, "e1", alertData(), log);
    assert.deepEqual([again.outcome, again.reason], ["skipped", "Cooldown"]);
    assert.match(again.message, /last scaled at 2025-06-01T12:00:00Z/);

    const eager = bareMemhog({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0 });
    await handleFiring(flowDeps(eager), "e1", alertData(), log);
    const underWay = await handleFiring(flowDeps(eager), "e2", alertData(), log);
    assert.deepEqual([underWay.outcome, underWay.reason], ["skipped", "ResizeUnderWay"]);
    assert.match(underWay.message, /its spec asks for more memory than its containers run with/);
    assert.equal(cluster.resizes.length + eager.resizes.length, 2);
  });

  it("concurrent deliveries resize once: the loser's compare-and-swap fails and it reads the resized Pod", async () => {
    const cluster = bareMemhog();
    const deps = flowDeps(cluster);
    const outcomes = await Promise.all([handleFiring(deps, "e1", alertData(), log), handleFiring(deps, "e2", alertData(), log)]);
    assert.deepEqual(outcomes.map((o) => o.reason).sort(), ["Cooldown", "Resized"]);
    assert.equal(cluster.resizes.length, 1);
  });

  it("a resize the API server refuses: AdmissionRefused, Warnings on the Pod and the AppMonitor, nothing written", async () => {
    const cluster = bareMemhog();
    cluster.resizeRefusal = apiError(422, 'Pod "memhog-5d8f-x2" is invalid: spec: Forbidden: Pod QOS Class may not change as a result of resizing');
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "AdmissionRefused"]);
    assert.match(outcome.message, /QOS Class may not change/);
    assert.deepEqual(cluster.pods.get(`${NS}/memhog-5d8f-x2`)?.spec?.containers[0]?.resources, { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
    // No scale entry: only the outcome, in status.lastOutcome.
    assert.deepEqual(Object.keys(cluster.appMonitors.get(`${NS}/mymonitor`)?.status ?? {}), ["lastOutcome"]);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [["Warning", "AdmissionRefused", "AppMonitor"], ["Warning", "AdmissionRefused", "Pod"]]);
  });

  it("a bare Pod no AppMonitor covers (its own labels and annotations): NotCovered, nothing written", async () => {
    const cluster = bareMemhog();
    editPod(cluster, (meta) => ({ ...meta, annotations: {} }));
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "NotCovered"]);
    assert.equal(cluster.resizes.length, 0);
  });

  it("a bare Pod a GitOps tool applies (Argo CD's tracking annotation on the Pod): gitOpsManaged Skip holds the resize, Patch resizes and warns", async () => {
    const tracked = (spec: Record<string, unknown>): FakeCluster => {
      const cluster = bareMemhog(spec);
      editPod(cluster, (meta) => ({ ...meta, annotations: { ...meta.annotations, "argocd.argoproj.io/tracking-id": "shop:/Pod:team-a/memhog-5d8f-x2" } }));
      return cluster;
    };
    const skipped = tracked({ memThresholdPercent: 75, memMultiplier: 2 });
    const outcome = await handleFiring(flowDeps(skipped), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "GitOpsManaged"]);
    assert.match(outcome.message, /Argo CD \(Application shop/);
    assert.equal(skipped.resizes.length, 0);
    assert.deepEqual(skipped.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [["Warning", "GitOpsManaged", "AppMonitor"], ["Warning", "GitOpsManaged", "Pod"]]);
    const held = (skipped.appMonitors.get(`${NS}/mymonitor`)?.status as { recentScales?: { held?: string; to: { limit: string } }[] }).recentScales;
    assert.deepEqual(held?.map((r) => [r.held, r.to.limit]), [["GitOpsManaged", "768Mi"]]);

    const patched = tracked({ memThresholdPercent: 75, memMultiplier: 2, gitOpsManaged: "Patch" });
    const resized = await handleFiring(flowDeps(patched), "e1", alertData(), log);
    assert.deepEqual([resized.outcome, resized.reason], ["scaled", "Resized"]);
    assert.equal(patched.resizes.length, 1);
    assert.deepEqual(patched.events.filter((e) => e.reason === "GitOpsManaged").map((e) => e.regarding?.kind).sort(), ["AppMonitor", "Pod"]);
  });

  it("an OOM kill answered by a resize is not evidence again: a later delivery past the cooldown but within the kill's window resizes nothing; a kill after the resize does", async () => {
    const cluster = bareMemhog();
    const memhogStatus = (finishedAt: string, limit: string, request: string): void => {
      const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
      assert.ok(pod);
      const terminated = { reason: "OOMKilled", exitCode: 137, startedAt: new Date(Date.parse(finishedAt) - 60_000), finishedAt: new Date(finishedAt) };
      pod.status = { containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: 1, lastState: { terminated }, resources: { limits: { memory: limit }, requests: { memory: request } } }] };
    };
    const oom = alertData({ alertname: "AppMonitorOOMKilled", trigger: "oomKilled", labels: { alertname: "AppMonitorOOMKilled", namespace: NS, pod: "memhog-5d8f-x2", container: "memhog", appmonitor: "mymonitor" } });
    memhogStatus("2025-06-01T11:59:30Z", "384Mi", "256Mi");
    assert.equal((await handleFiring(flowDeps(cluster), "k1", oom, log)).reason, "Resized");
    // The kubelet applied it without a restart (resizePolicy NotRequired): the kill stays the container's lastState.
    memhogStatus("2025-06-01T11:59:30Z", "768Mi", "512Mi");
    const again = await handleFiring(flowDeps(cluster, { now: () => new Date("2025-06-01T12:06:00Z") }), "k2", oom, log);
    assert.deepEqual([again.outcome, again.reason], ["skipped", "NotOOMKilled"]);
    assert.equal(cluster.resizes.length, 1, "one resize for one kill");
    memhogStatus("2025-06-01T12:05:00Z", "768Mi", "512Mi");
    assert.equal((await handleFiring(flowDeps(cluster, { now: () => new Date("2025-06-01T12:06:00Z") }), "k3", oom, log)).reason, "Resized", "a kill at the new memory");
  });

  it("at the cap: AtCap; DryRun: Events and a dryRun entry, no resize", async () => {
    const capped = bareMemhog({ memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi" });
    assert.equal((await handleFiring(flowDeps(capped), "e1", alertData(), log)).reason, "AtCap");
    const cappedStatus = capped.appMonitors.get(`${NS}/mymonitor`)?.status as { capped?: { workload: { kind: string; name: string }; containers: string[] }[]; conditions?: { type: string; status: string }[] } | undefined;
    assert.deepEqual(cappedStatus?.capped?.map((c) => [c.workload.kind, c.workload.name, c.containers]), [["Pod", "memhog-5d8f-x2", ["memhog"]]], "listed in status.capped, as a workload at the cap is");
    assert.equal(cappedStatus?.conditions?.find((c) => c.type === "AtMaxMemory")?.status, "True");
    const dry = bareMemhog({ memThresholdPercent: 75, memMultiplier: 2, mode: "DryRun" });
    const outcome = await handleFiring(flowDeps(dry), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["dry-run", "DryRun"]);
    assert.equal(capped.resizes.length + dry.resizes.length, 0);
  });

  it("the follow-up ends the resize RolledOut once the status shows the new memory, or RolloutFailed when Infeasible", async () => {
    for (const ending of ["applied", "infeasible"] as const) {
      const cluster = bareMemhog();
      const deps = flowDeps(cluster);
      await handleFiring(deps, "e1", alertData(), log);
      const follow = { cluster, events: deps.events, status: deps.status, now: () => new Date("2025-06-01T12:00:10Z") };
      assert.deepEqual(await followRollouts(follow, log), { checked: 1, ended: 0, pending: 1 }, "not applied yet");
      const waiting = (cluster.appMonitors.get(`${NS}/mymonitor`)?.status as Status).conditions?.find((c) => c.type === "RolledOut");
      assert.equal(waiting?.message, "Pod memhog-5d8f-x2: container memhog not yet running with the new memory");
      const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
      assert.ok(pod?.status?.containerStatuses?.[0]);
      if (ending === "applied") pod.status.containerStatuses[0].resources = { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } };
      else pod.status.conditions = [{ type: "PodResizePending", status: "True", reason: "Infeasible", message: "Node didn't have enough capacity" }];
      const ended: string[] = [];
      assert.deepEqual(await followRollouts({ ...follow, onEnded: (kind, result, reason) => ended.push(`${kind} ${result} ${reason}`) }, log), { checked: 1, ended: 1, pending: 0 });
      const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as Status;
      const condition = status.conditions?.find((c) => c.type === "RolledOut");
      if (ending === "applied") {
        assert.deepEqual(ended, ["Pod RolledOut RolledOut"]);
        assert.deepEqual([condition?.status, condition?.reason], ["True", "RolledOut"]);
        assert.match(condition?.message ?? "", /resized in place/);
      } else {
        assert.deepEqual(ended, ["Pod RolloutFailed Infeasible"]);
        assert.deepEqual([condition?.status, condition?.reason], ["False", "Infeasible"]);
      }
      const events = cluster.events.filter((e) => e.reason === "RolledOut" || e.reason === "RolloutFailed");
      assert.deepEqual(events.map((e) => [e.regarding?.kind, e.regarding?.apiVersion]).sort(), [["AppMonitor", "kubedemo.com/v1"], ["Pod", "v1"]]);
      assert.deepEqual(status.rollouts, []);
    }
  });

  it("a replica whose last status write is older than another replica's: the follow-up it runs still ends the rollout the other one started", async () => {
    const cluster = bareMemhog();
    const mine = flowDeps(cluster);
    const other = flowDeps(cluster);
    // This replica wrote the AppMonitor's status last while nothing was pending (its writer remembers that object) …
    await mine.status.update({ namespace: NS, name: "mymonitor", uid: "a1" }, (status) => ({ ...status, scaleCount: 0 }), cluster.appMonitors.get(`${NS}/mymonitor`));
    // … then another replica resized the Pod and recorded the resize pending.
    assert.equal((await handleFiring(other, "e1", alertData(), log)).reason, "Resized");
    const status = cluster.pods.get(`${NS}/memhog-5d8f-x2`)?.status?.containerStatuses?.[0];
    assert.ok(status);
    status.resources = { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } };
    // The ping reaches this replica.
    assert.deepEqual(await followRollouts({ cluster, events: mine.events, status: mine.status, now: () => new Date("2025-06-01T12:00:10Z") }, log), { checked: 1, ended: 1, pending: 0 });
    const after = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as Status;
    assert.deepEqual(after.rollouts, [], "the ended resize is no longer pending");
    assert.equal(after.conditions?.find((c) => c.type === "RolledOut")?.status, "True");
  });

  it("a bare Pod deleted and created again with the same name, resized again to the same generation: its RolledOut Events are written too, on the AppMonitor as on the Pod", async () => {
    const cluster = bareMemhog();
    const fresh = structuredClone(cluster.pods.get(`${NS}/memhog-5d8f-x2`));
    assert.ok(fresh?.metadata);
    const deps = flowDeps(cluster);
    const applied = (): void => {
      const status = cluster.pods.get(`${NS}/memhog-5d8f-x2`)?.status?.containerStatuses?.[0];
      assert.ok(status);
      status.resources = { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } };
    };
    assert.equal((await handleFiring(deps, "e1", alertData(), log)).reason, "Resized");
    applied();
    const follow = { cluster, events: deps.events, status: deps.status, now: () => new Date("2025-06-01T12:00:10Z") };
    assert.deepEqual(await followRollouts(follow, log), { checked: 1, ended: 1, pending: 0 });
    // The same Pod manifest applied again: a new uid, generation 1, the old memory.
    cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...fresh, metadata: { ...fresh.metadata, uid: "p2" } });
    const later = { ...deps, now: () => new Date("2025-06-01T12:30:00Z") };
    assert.equal((await handleFiring(later, "e2", alertData(), log)).reason, "Resized");
    applied();
    assert.deepEqual(await followRollouts({ ...follow, now: () => new Date("2025-06-01T12:30:10Z") }, log), { checked: 1, ended: 1, pending: 0 });
    const rolledOut = cluster.events.filter((e) => e.reason === "RolledOut");
    assert.deepEqual(rolledOut.map((e) => `${e.regarding?.kind ?? ""} ${e.regarding?.uid ?? ""}`).sort(), ["AppMonitor a1", "AppMonitor a1", "Pod p1", "Pod p2"]);
  });
});
