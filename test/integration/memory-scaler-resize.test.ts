/**
 * memory-scaler resizes a bare Pod in place against the stack's real kube-apiserver (1.36): its
 * `resize` subresource, its validation and admission, `managedFields`, the cooldown from it, and
 * the follow-up of the resize on PingSource ticks. kwok runs the Pods and has no kubelet: it sets
 * no container `resources` in the status and no resize condition. The API server refuses to
 * resize a running Pod whose container statuses lack `resources` ("Pod running on node without
 * support for resize": its guard against kubelets older than in-place resize), so on kwok as it
 * is a resize is refused (a case below); where the test needs a kubelet's report it writes the
 * Pod's status as a kubelet ≥ 1.33 would (admin, `pods/status`), and says so. The real kubelet's resize is in
 * `test/integration/harness/real-node.test.ts`. The file has a stack of its own: a tick follows the
 * pending rollouts of every namespace, which would end other files' rollouts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, ownStackForFile, pingTick, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, onlyRunningPod, scalerForSuite, startScaler } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

ownStackForFile("resize");

const MONITOR = { "app-monitor.kubedemo.com/monitor": "true" };

interface ResizeStatus {
  scaleCount?: number;
  recentScales?: { workload: { kind: string; name: string }; event?: string; to: { limit: string; request?: string } }[];
  rollouts?: { workload: { kind: string; name: string }; generation: number }[];
  conditions?: { type: string; status: string; reason: string; message: string }[];
}

async function core(): Promise<k8s.CoreV1Api> {
  return (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
}


/** Creates the bare Pod `solo` (no owner), opted in by its own annotation, and waits for it to run. */
async function createBarePod(ns: string, spec: Partial<k8s.V1PodSpec> = {}, resources: k8s.V1ResourceRequirements = { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } }): Promise<k8s.V1Pod> {
  await (await core()).createNamespacedPod({
    namespace: ns,
    body: { metadata: { name: "solo", labels: { app: "solo" }, annotations: MONITOR }, spec: { containers: [{ name: "memhog", image: "registry.example/app:1", resources }], ...spec } },
  });
  return onlyRunningPod(ns, "app=solo");
}

const readPod = async (ns: string): Promise<k8s.V1Pod> => (await core()).readNamespacedPod({ namespace: ns, name: "solo" });

/**
 * Writes the Pod's container statuses as a kubelet that supports resize does (kwok does not):
 * `resources` as applied (`limits`/`requests` memory), and `conditions` added.
 */
async function reportAsKubelet(ns: string, memory: { limit: string; request: string }, conditions: k8s.V1PodCondition[] = []): Promise<void> {
  const pod = await readPod(ns);
  const containerStatuses = (pod.status?.containerStatuses ?? []).map((s) => ({ ...s, resources: { limits: { memory: memory.limit }, requests: { memory: memory.request } } }));
  await (await core()).replaceNamespacedPodStatus({ namespace: ns, name: "solo", body: { ...pod, status: { ...pod.status, containerStatuses, conditions: [...(pod.status?.conditions ?? []), ...conditions] } } });
}
const OLD = { limit: "384Mi", request: "256Mi" };
/** The memory the Pod's spec asks for: [limit, request]. */
const specMemory = (pod: k8s.V1Pod): [string | undefined, string | undefined] => [pod.spec?.containers[0]?.resources?.limits?.memory, pod.spec?.containers[0]?.resources?.requests?.memory];

describe("memory-scaler resizes a bare Pod in place", { concurrency: 1 }, () => {
  const running = scalerForSuite();
  const url = () => running().url;
  const alert = (ns: string) => alertEvent({ namespace: ns, pod: "solo", container: "memhog", appmonitor: "m" });

  it("the API server accepts the resize: the spec shows the new memory, managedFields our manager on the resize subresource; Events, status; a copy and a new alert in the cooldown resize nothing more", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createBarePod(ns);
    await reportAsKubelet(ns, OLD);
    const before = await readPod(ns);
    const event = alert(ns);
    const answer = await deliver(url(), event);
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Resized"], describeAnswer(answer));

    const pod = await readPod(ns);
    assert.deepEqual(specMemory(pod), ["768Mi", "512Mi"]);
    assert.equal(pod.metadata?.uid, before.metadata?.uid, "the same Pod, not a new one");
    const mine = pod.metadata?.managedFields?.filter((f) => f.manager === "appmonitor-memory-scaler");
    assert.deepEqual(mine?.map((f) => [f.operation, f.subresource]), [["Update", "resize"]]);
    assert.ok((pod.metadata?.generation ?? 0) > (before.metadata?.generation ?? 0), `generation ${before.metadata?.generation} → ${pod.metadata?.generation}`);

    for (const kind of ["Pod", "AppMonitor"]) {
      const events = await eventsRegarding(ns, kind, kind === "Pod" ? "solo" : "m");
      assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Normal", "Resized"]], kind);
      assert.match(events[0]?.note ?? "", /resized Pod solo in place by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi/);
    }
    const status = (await appMonitorStatus(ns, "m")) as ResizeStatus;
    assert.equal(status.scaleCount, 1);
    assert.deepEqual(status.recentScales?.map((r) => [r.workload.kind, r.workload.name, r.event, r.to.limit, r.to.request]), [["Pod", "solo", event.id, "768Mi", "512Mi"]]);
    assert.deepEqual(status.rollouts?.map((r) => [r.workload.kind, r.workload.name, r.generation]), [["Pod", "solo", pod.metadata?.generation]]);

    // The same event again, to this instance (its answer memory) and to a second instance (read and decided again).
    const copy = await deliver(url(), event);
    assert.deepEqual([copy.status, copy.outcome], [204, "scaled"], describeAnswer(copy));
    const other = await startScaler();
    try {
      const again = await deliver(other.url, event);
      assert.deepEqual([again.status, again.outcome, again.reason], [204, "skipped", "Cooldown"], describeAnswer(again));
    } finally {
      await other.stop();
    }
    const later = await deliver(url(), alert(ns));
    assert.deepEqual([later.outcome, later.reason], ["skipped", "Cooldown"], describeAnswer(later));
    const after = await readPod(ns);
    assert.equal(after.metadata?.generation, pod.metadata?.generation, "resized once");
    assert.deepEqual(specMemory(after), specMemory(pod));
    assert.equal(((await appMonitorStatus(ns, "m")) as ResizeStatus).scaleCount, 1);
  });

  it("a tick leaves the resize pending while the status shows the old memory; the kubelet's answers, written as it would, end it RolledOut or RolloutFailed (Infeasible)", async (t) => {
    for (const ending of ["applied", "infeasible"] as const) {
      const ns = await freshNamespace(t);
      await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
      await createBarePod(ns);
      await reportAsKubelet(ns, OLD);
      const answer = await deliver(url(), alert(ns));
      assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Resized"], describeAnswer(answer));

      const idle = await deliver(url(), pingTick());
      assert.equal(idle.status, 204, describeAnswer(idle));
      const pending = (await appMonitorStatus(ns, "m")) as ResizeStatus;
      const progressing = pending.conditions?.find((c) => c.type === "RolledOut");
      assert.deepEqual([progressing?.status, progressing?.reason, progressing?.message], ["Unknown", "RolloutProgressing", "Pod solo: container memhog not yet running with the new memory"]);
      assert.equal(pending.rollouts?.length, 1, "the status still shows the old memory: pending");

      // What the kubelet writes next (pods/status): the applied memory, or the Infeasible condition.
      if (ending === "applied") await reportAsKubelet(ns, { limit: "768Mi", request: "512Mi" });
      else await reportAsKubelet(ns, OLD, [{ type: "PodResizePending", status: "True", reason: "Infeasible", message: "Node didn't have enough capacity: memory, requested: 536870912, capacity: 268435456", lastTransitionTime: new Date() }]);

      const ended = await waitFor("the resize to end", async () => {
        await deliver(url(), pingTick());
        const status = (await appMonitorStatus(ns, "m")) as ResizeStatus;
        const condition = status.conditions?.find((c) => c.type === "RolledOut");
        return condition !== undefined && condition.status !== "Unknown" ? { status, condition } : undefined;
      }, 30_000, 500);
      assert.deepEqual(ended.status.rollouts, []);
      if (ending === "applied") {
        assert.deepEqual([ended.condition.status, ended.condition.reason], ["True", "RolledOut"]);
        assert.match(ended.condition.message, /Pod solo resized in place .*memhog: limit 768Mi, request 512Mi, 0 restarts/);
      } else {
        assert.deepEqual([ended.condition.status, ended.condition.reason], ["False", "Infeasible"]);
        assert.match(ended.condition.message, /Infeasible\): Node didn't have enough capacity/);
      }
      const events = await eventsRegarding(ns, "Pod", "solo");
      assert.deepEqual(events.filter((e) => e.reason !== "Resized").map((e) => [e.type, e.reason]), [ending === "applied" ? ["Normal", "RolledOut"] : ["Warning", "RolloutFailed"]]);
    }
  });

  it("a resize the API server refuses is AdmissionRefused, with Warnings and nothing written: a Pod whose node reports no container resources (kwok), a ResourceQuota, a Windows Pod", async (t) => {
    // settle: what must hold before the alert (the quota controller counts a new Pod a moment after its creation; until then the quota would admit the resize).
    const cases: { name: string; setup: (ns: string) => Promise<void>; settle?: (ns: string) => Promise<void>; spec: Partial<k8s.V1PodSpec>; kubelet: boolean; message: RegExp }[] = [
      { name: "kwok as it is", setup: async () => undefined, spec: {}, kubelet: false, message: /Pod running on node without support for resize/ },
      {
        name: "a ResourceQuota the resize would pass",
        setup: async (ns) => void (await (await core()).createNamespacedResourceQuota({ namespace: ns, body: { metadata: { name: "mem" }, spec: { hard: { "limits.memory": "600Mi" } } } })),
        settle: async (ns) => void (await waitFor("the quota to count the Pod", async () => ((await (await core()).readNamespacedResourceQuota({ namespace: ns, name: "mem" })).status?.used?.["limits.memory"] === "384Mi" ? true : undefined), 30_000)),
        spec: {},
        kubelet: true,
        message: /exceeded quota: mem, requested: limits.memory=384Mi, used: limits.memory=384Mi, limited: limits.memory=600Mi/,
      },
      { name: "a Windows Pod", setup: async () => undefined, spec: { os: { name: "windows" } }, kubelet: true, message: /windows pods cannot be resized/ },
    ];
    for (const c of cases) {
      const ns = await freshNamespace(t);
      await c.setup(ns);
      await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
      await createBarePod(ns, c.spec);
      if (c.kubelet) await reportAsKubelet(ns, OLD);
      await c.settle?.(ns);
      const before = await readPod(ns);
      const answer = await deliver(url(), alert(ns));
      assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "skipped", "AdmissionRefused"], `${c.name}: ${describeAnswer(answer)}`);
      const pod = await readPod(ns);
      assert.deepEqual(specMemory(pod), ["384Mi", "256Mi"], c.name);
      assert.equal(pod.metadata?.generation, before.metadata?.generation, c.name);
      assert.equal(pod.metadata?.managedFields?.some((f) => f.manager === "appmonitor-memory-scaler"), false, c.name);
      const status = (await appMonitorStatus(ns, "m")) as ResizeStatus;
      assert.deepEqual([status.scaleCount ?? 0, status.rollouts ?? []], [0, []], c.name);
      const warnings = await eventsRegarding(ns, "Pod", "solo");
      assert.deepEqual(warnings.map((e) => [e.type, e.reason]), [["Warning", "AdmissionRefused"]], c.name);
      assert.match(warnings[0]?.note ?? "", c.message, c.name);
    }
  });
});
