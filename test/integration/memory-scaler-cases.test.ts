/**
 * memory-scaler on the local stack, case by case: multiplier 1.5, a two-container Pod, a
 * StatefulSet, a DaemonSet, an unannotated Pod template (and its live Pod annotated or labelled
 * by hand, which grants nothing), a namespace without AppMonitor, alerts no AppMonitor rule
 * raised (kube-state-metrics scraped without honor_labels among them), an alert of an AppMonitor
 * that does not govern the workload, coverage by targetRef and by a Narrow selector, two AppMonitors
 * over one workload (one scale, a Conflict condition on both), native sidecars and init containers, the maxMemory cap
 * (keeping the request/limit ratio; one AtCap Warning per window: the cooldown, at least an hour), the cooldown,
 * DryRun, LimitRanges (a max below the new limit, a maxLimitRequestRatio the container is
 * exactly at, a default limit the template lacks), a scaled Pod no Node can hold, a StatefulSet with updateStrategy OnDelete, and the
 * Prometheus check. The function runs with a token of exactly its ServiceAccount. Each case has
 * its own namespace, so the cases run concurrently.
 */
import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { freePort } from "../harness/lib/free-port.ts";
import { installMemoryScaler } from "../support/install.ts";
import { describeAnswer } from "../support/post-event.ts";
import {
  alertEvent,
  appMonitorResourceVersion,
  appMonitorStatus,
  createAppMonitor,
  deliver,
  eventsRegarding,
  onlyRunningPod,
  patchAppMonitorSpec,
  runningPods,
  waitForWatchCache,
  scalerForSuite,
  setWorkingSet,
  startScaler,
  type Answer,
  type ScalerUnderTest,
} from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../support/stack.ts";

const MONITOR = { "app-monitor.kubedemo.com/monitor": "true" };

interface ContainerSpec {
  name: string;
  /** Absent: no memory limit in the template. */
  limit?: string;
  /** Absent: no memory request in the template. */
  request?: string;
  /** `Always` on an init container: a native sidecar. */
  restartPolicy?: "Always";
}

function container(c: ContainerSpec): k8s.V1Container {
  const resources: k8s.V1ResourceRequirements = {};
  if (c.limit !== undefined) resources.limits = { memory: c.limit };
  if (c.request !== undefined) resources.requests = { memory: c.request };
  return { name: c.name, image: "registry.example/app:1", resources, ...(c.restartPolicy === undefined ? {} : { restartPolicy: c.restartPolicy }) };
}

function podTemplate(app: string, containers: ContainerSpec[], annotated: boolean, initContainers: ContainerSpec[] = []): k8s.V1PodTemplateSpec {
  return {
    metadata: { labels: { app }, ...(annotated ? { annotations: MONITOR } : {}) },
    spec: { containers: containers.map(container), ...(initContainers.length > 0 ? { initContainers: initContainers.map(container) } : {}) },
  };
}

/** The condition of `type` in an AppMonitor's status, as read. */
function conditionOf(status: Record<string, unknown>, type: string): { status?: string; reason?: string; message?: string } | undefined {
  const conditions = status.conditions as { type?: string; status?: string; reason?: string; message?: string }[] | undefined;
  return conditions?.find((c) => c.type === type);
}

const memhog: ContainerSpec = { name: "memhog", limit: "384Mi", request: "256Mi" };

async function apps(): Promise<k8s.AppsV1Api> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
}

async function createDeployment(ns: string, name: string, containers: ContainerSpec[] = [memhog], annotated = true, initContainers: ContainerSpec[] = []): Promise<void> {
  await (await apps()).createNamespacedDeployment({
    namespace: ns,
    body: { metadata: { name }, spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: podTemplate(name, containers, annotated, initContainers) } },
  });
}

/** A StatefulSet `db` of one memhog Pod, annotated; `updateStrategy` as given (RollingUpdate when absent). */
async function createStatefulSet(ns: string, updateStrategy?: k8s.V1StatefulSetUpdateStrategy): Promise<void> {
  const spec: k8s.V1StatefulSetSpec = { replicas: 1, serviceName: "db", selector: { matchLabels: { app: "db" } }, template: podTemplate("db", [memhog], true) };
  if (updateStrategy !== undefined) spec.updateStrategy = updateStrategy;
  await (await apps()).createNamespacedStatefulSet({ namespace: ns, body: { metadata: { name: "db" }, spec } });
}

/** Waits for the one Running Pod matching `labelSelector` to be another than `old` (same name or not) and returns it. */
async function replacementPod(ns: string, labelSelector: string, old: k8s.V1Pod): Promise<k8s.V1Pod> {
  return waitFor(`a Pod ${labelSelector} replacing ${old.metadata?.name ?? ""}`, async () => {
    const pods = await runningPods(ns, labelSelector);
    return pods.length === 1 && pods[0]?.metadata?.uid !== old.metadata?.uid ? pods[0] : undefined;
  }, 60_000);
}

async function readDeployment(ns: string, name: string): Promise<k8s.V1Deployment> {
  return (await apps()).readNamespacedDeployment({ namespace: ns, name });
}

/** Resources of every container and init container, as plain JSON, by name (names are unique across both). */
function resourcesOf(template: k8s.V1PodTemplateSpec | undefined): Record<string, unknown> {
  const all = [...(template?.spec?.containers ?? []), ...(template?.spec?.initContainers ?? [])];
  return Object.fromEntries(all.map((c) => [c.name, JSON.parse(JSON.stringify(c.resources ?? null))]));
}

/** `kubectl annotate pod` / `kubectl label pod`: a merge patch of one live Pod's metadata. */
async function editPodByHand(ns: string, name: string, metadata: { annotations?: Record<string, string>; labels?: Record<string, string> }): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  await core.patchNamespacedPod({ namespace: ns, name, body: { metadata } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
}

const res = (limit: string, request: string) => ({ limits: { memory: limit }, requests: { memory: request } });

/**
 * The cases' scaffold: a fresh namespace with AppMonitor `m` (`spec`), the workload `create`
 * makes there, and its one Running Pod (found by `labelSelector`).
 */
async function monitoredCase(t: TestContext, spec: Record<string, unknown>, create: (ns: string) => Promise<void>, labelSelector: string): Promise<{ ns: string; pod: k8s.V1Pod & { metadata: k8s.V1ObjectMeta & { name: string } } }> {
  const ns = await freshNamespace(t);
  await createAppMonitor(ns, "m", spec);
  await create(ns);
  return { ns, pod: await onlyRunningPod(ns, labelSelector) };
}

/** A handled event deliberately not acted on: 204, outcome `skipped`, `reason`. */
function assertSkipped(answer: Answer, reason: string): void {
  assert.equal(answer.status, 204, describeAnswer(answer));
  assert.deepEqual([answer.outcome, answer.reason], ["skipped", reason], describeAnswer(answer));
}

describe("memory-scaler, case by case", { concurrency: 4 }, () => {
  const scaler = scalerForSuite();

  it("multiplier 1.5: 384Mi/256Mi → 576Mi/384Mi", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 1.5 }, (ns) => createDeployment(ns, "web"), "app=web");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("576Mi", "384Mi") });
  });

  it("a two-container Pod: only the alerting container changes", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2 }, (ns) => createDeployment(ns, "web", [memhog, { name: "sidecar", limit: "64Mi", request: "32Mi" }]), "app=web");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "sidecar", appmonitor: "m" }), "structured");
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("384Mi", "256Mi"), sidecar: res("128Mi", "64Mi") });
    const next = await waitFor("the new Pod Running", async () => {
      const pods = await runningPods(ns, "app=web");
      return pods.length === 1 && pods[0]?.metadata?.uid !== pod.metadata.uid ? pods[0] : undefined;
    }, 60_000);
    assert.deepEqual(resourcesOf(next), { memhog: res("384Mi", "256Mi"), sidecar: res("128Mi", "64Mi") });
  });

  it("a StatefulSet is scaled and rolls its Pod", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2 }, (ns) => createStatefulSet(ns), "app=db");
    const client = await apps();
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    const sts = await client.readNamespacedStatefulSet({ namespace: ns, name: "db" });
    assert.deepEqual(resourcesOf(sts.spec?.template), { memhog: res("768Mi", "512Mi") });
    assert.deepEqual(resourcesOf(await replacementPod(ns, "app=db", pod)), { memhog: res("768Mi", "512Mi") });
    // A StatefulSet's Pods keep state: its rollout's replacement of them is warned about (PodsReplaced).
    assert.deepEqual((await eventsRegarding(ns, "StatefulSet", "db")).map((e) => e.reason).sort(), ["PodsReplaced", "Scaled"]);
  });

  it("a StatefulSet with updateStrategy OnDelete: patched with a Warning to delete the Pods; the old Pod's next alert says so; deleting it applies the memory", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2 }, (ns) => createStatefulSet(ns, { type: "OnDelete" }), "app=db");
    const client = await apps();
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    assert.deepEqual(resourcesOf((await client.readNamespacedStatefulSet({ namespace: ns, name: "db" })).spec?.template), { memhog: res("768Mi", "512Mi") });
    for (const [kind, name] of [["StatefulSet", "db"], ["AppMonitor", "m"]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      assert.deepEqual(events.map((e) => [e.type, e.reason]).sort(), [["Normal", "Scaled"], ["Warning", "PodsReplaced"], ["Warning", "RolloutWaitsForDelete"]], kind);
      assert.match(events.find((e) => e.reason === "RolloutWaitsForDelete")?.note ?? "", /updateStrategy is OnDelete: no Pod gets the new memory until it is deleted, and Pod db-0 still run the old template; delete the Pods to apply it/);
    }

    // The controller records the new revision and, OnDelete, leaves db-0 as it is.
    const sts = await waitFor("the StatefulSet's new updateRevision", async () => {
      const s = await client.readNamespacedStatefulSet({ namespace: ns, name: "db" });
      return s.status?.observedGeneration === 2 && s.status.updateRevision !== s.status.currentRevision ? s : undefined;
    }, 30_000);
    const [old] = await runningPods(ns, "app=db");
    assert.equal(old?.metadata?.uid, pod.metadata.uid, "OnDelete: the Pod is not replaced");
    assert.notEqual(old?.metadata?.labels?.["controller-revision-hash"], sts.status?.updateRevision);
    assert.deepEqual(resourcesOf(old), { memhog: res("384Mi", "256Mi") });
    assertSkipped(await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" })), "RolloutWaitsForDelete");
    assert.equal((await client.readNamespacedStatefulSet({ namespace: ns, name: "db" })).metadata?.generation, 2);

    // What the Warning says to do.
    await (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api).deleteNamespacedPod({ namespace: ns, name: pod.metadata.name });
    assert.deepEqual(resourcesOf(await replacementPod(ns, "app=db", pod)), { memhog: res("768Mi", "512Mi") });
  });

  it("a DaemonSet is scaled", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const client = await apps();
    await client.createNamespacedDaemonSet({
      namespace: ns,
      body: { metadata: { name: "agent" }, spec: { selector: { matchLabels: { app: "agent" } }, template: podTemplate("agent", [memhog], true) } },
    });
    const { nodes } = await stack();
    const pods = await waitFor("one agent Pod per Node", async () => {
      const running = await runningPods(ns, "app=agent");
      return running.length === nodes.length ? running : undefined;
    }, 60_000);
    const podName = pods[0]?.metadata?.name ?? "";
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: podName, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    const ds = await client.readNamespacedDaemonSet({ namespace: ns, name: "agent" });
    assert.deepEqual(resourcesOf(ds.spec?.template), { memhog: res("768Mi", "512Mi") });
    assert.equal(ds.metadata?.generation, 2);
    assert.deepEqual((await eventsRegarding(ns, "DaemonSet", "agent")).map((e) => e.reason), ["Scaled"]);
  });

  it("an unannotated Pod that no selector matches is not scaled", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2 }, (ns) => createDeployment(ns, "plain", [memhog], false), "app=plain");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 204);
    assert.equal(answer.outcome, "skipped");
    assert.equal(answer.reason, "NotCovered");
    const deployment = await readDeployment(ns, "plain");
    assert.equal(deployment.metadata?.generation, 1);
    assert.deepEqual(resourcesOf(deployment.spec?.template), { memhog: res("384Mi", "256Mi") });
  });

  it("a live Pod annotated by hand does not get its unannotated Deployment scaled", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "mymonitor", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "plain", [memhog], false);
    const pod = await onlyRunningPod(ns, "app=plain");
    await editPodByHand(ns, pod.metadata.name, { annotations: MONITOR });
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "mymonitor" }));
    assert.equal(answer.status, 204);
    assert.equal(answer.outcome, "skipped", describeAnswer(answer));
    assert.equal(answer.reason, "NotCovered");
    const deployment = await readDeployment(ns, "plain");
    assert.equal(deployment.metadata?.generation, 1);
    assert.deepEqual(resourcesOf(deployment.spec?.template), { memhog: res("384Mi", "256Mi") });
    // Said, not scaled: a NotCovered Warning names what is missing.
    const events = await eventsRegarding(ns, "Deployment", "plain");
    assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Warning", "NotCovered"]]);
    assert.match(events[0]?.note ?? "", /^not scaled: .*Pod template lacks the annotation/);
  });

  it("a selector matching only a label added by hand to the live Pod does not cover its Deployment", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { tier: "hot" } } }, (ns) => createDeployment(ns, "plain", [memhog], false), "app=plain");
    await editPodByHand(ns, pod.metadata.name, { labels: { tier: "hot" } });
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "skipped", describeAnswer(answer));
    assert.equal(answer.reason, "NotCovered");
    assert.equal((await readDeployment(ns, "plain")).metadata?.generation, 1);
  });

  it("a Pod selected by spec.selector, without the annotation, is scaled", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { app: "picked" } } }, (ns) => createDeployment(ns, "picked", [memhog], false), "app=picked");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
  });

  it("a namespace without AppMonitor: nothing is scaled", async (t) => {
    const ns = await freshNamespace(t);
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "mymonitor" }));
    assert.equal(answer.status, 204);
    assert.equal(answer.reason, "NoAppMonitor");
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);
  });

  it("a Pod that does not exist: skipped", async (t) => {
    const ns = await freshNamespace(t);
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: "no-such-pod", appmonitor: "m" }));
    assert.equal(answer.status, 204);
    assert.equal(answer.reason, "PodGone");
  });

  it("a bare Pod on kwok: its in-place resize refused by the API server (kwok reports no container resources), a Warning Event on the Pod (memory-scaler-resize.test.ts: the resize itself)", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: "bare", labels: { app: "bare" }, annotations: MONITOR }, spec: podTemplate("bare", [memhog], true).spec } });
    await onlyRunningPod(ns, "app=bare");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: "bare", container: "memhog", appmonitor: "m" }));
    assert.equal(answer.reason, "AdmissionRefused", describeAnswer(answer));
    const [warning] = await eventsRegarding(ns, "Pod", "bare");
    assert.equal(warning?.type, "Warning");
    assert.match(warning?.note ?? "", /Pod running on node without support for resize/);
  });

  it("maxMemory caps the limit keeping the request/limit ratio, and at the cap it warns instead of scaling", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, maxMemory: "400Mi", cooldownSeconds: 0 });
    await createDeployment(ns, "web");
    const first = await onlyRunningPod(ns, "app=web");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: first.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    // 256Mi/384Mi × 2 capped at 400Mi: the request keeps 2/3 of the limit, 279620266.67 bytes rounded up.
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("400Mi", "279620267") });

    const second = await waitFor("the capped Pod Running", async () => {
      const pods = await runningPods(ns, "app=web");
      return pods.length === 1 && pods[0]?.metadata?.uid !== first.metadata.uid ? pods[0] : undefined;
    }, 60_000);
    const atCap = await deliver(scaler().url, alertEvent({ namespace: ns, pod: second.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.equal(atCap.outcome, "skipped");
    assert.equal(atCap.reason, "AtCap");
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 2);
    // The first scale replaced the single replica's Pod (PodsReplaced); the second alert is AtCap.
    const warnings = (await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.type === "Warning");
    assert.deepEqual(warnings.map((e) => e.reason).sort(), ["AtCap", "PodsReplaced"]);
    assert.deepEqual((await eventsRegarding(ns, "AppMonitor", "m")).filter((e) => e.type === "Warning").map((e) => e.reason).sort(), ["AtCap", "PodsReplaced"]);

    // The status says so too: the workload in status.capped, the AtMaxMemory condition True.
    const atMax = await appMonitorStatus(ns, "m");
    const listed = atMax.capped as { workload: unknown; containers: unknown; maxMemory: unknown; since: unknown }[] | undefined;
    assert.deepEqual(listed?.map(({ workload, containers, maxMemory }) => ({ workload, containers, maxMemory })), [{ workload: { kind: "Deployment", name: "web" }, containers: ["memhog"], maxMemory: "400Mi" }]);
    assert.equal(conditionOf(atMax, "AtMaxMemory")?.status, "True");
    assert.match(conditionOf(atMax, "AtMaxMemory")?.message ?? "", /at the memory cap, not scaled further: Deployment web \(memhog at 400Mi, spec\.maxMemory\)/);

    // maxMemory raised: the next alert scales, and the workload leaves the list.
    await patchAppMonitorSpec(ns, "m", { maxMemory: "800Mi" });
    await waitForWatchCache({ group: "kubedemo.com", version: "v1", plural: "appmonitors" }, ns, "m", (o) => (o.spec as { maxMemory?: string }).maxMemory === "800Mi");
    const raised = await deliver(scaler().url, alertEvent({ namespace: ns, pod: second.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.equal(raised.outcome, "scaled", describeAnswer(raised));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("800Mi", "559240534") });
    const below = await appMonitorStatus(ns, "m");
    assert.equal(below.capped, undefined);
    assert.deepEqual(
      [conditionOf(below, "AtMaxMemory")?.status, conditionOf(below, "AtMaxMemory")?.reason],
      ["False", "BelowMaxMemory"],
    );
  });

  it("a scaled request larger than every Node's allocatable memory: Unschedulable, no patch, Warnings naming both", async (t) => {
    const ns = await freshNamespace(t);
    const nodes = (await (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api).listNode()).items;
    // 200Gi fits them, 200Gi × 1.5 = 300Gi does not.
    assert.deepEqual([...new Set(nodes.map((n) => n.status?.allocatable?.memory))], ["256Gi"], "the stack's kwok Nodes (test/harness/stack/stack.ts fakeNode) allocate 256Gi each");
    // A cap above the Nodes (else the install's DEFAULT_MAX_MEMORY, 8Gi, holds it first).
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 1.5, maxMemory: "1Ti" });
    await createDeployment(ns, "big", [{ name: "memhog", limit: "200Gi", request: "200Gi" }]);
    const pod = await onlyRunningPod(ns, "app=big");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assertSkipped(answer, "Unschedulable");
    const deployment = await readDeployment(ns, "big");
    assert.equal(deployment.metadata?.generation, 1, "not patched");
    assert.deepEqual(resourcesOf(deployment.spec?.template), { memhog: res("200Gi", "200Gi") });
    for (const [kind, name] of [["Deployment", "big"], ["AppMonitor", "m"]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Warning", "Unschedulable"]], kind);
      assert.match(events[0]?.note ?? "", /limit 200Gi → 300Gi, request 200Gi → 300Gi\): the scaled Pod would request 300Gi of memory, more than any Node can allocate \(the largest allocatable is 256Gi\)/);
    }
    assert.equal((await appMonitorStatus(ns, "m")).scaleCount ?? 0, 0);
  });

  it("at the cap, alert after alert: one AtCap Warning on the workload and one on the AppMonitor per cooldown window", async (t) => {
    const ns = await freshNamespace(t);
    // A ten-year window (its edges are multiples of it since the epoch): the three alerts below fall in one.
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi", cooldownSeconds: 315_360_000 });
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    const versions: (string | undefined)[] = [];
    for (let i = 0; i < 3; i += 1) {
      assertSkipped(await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" })), "AtCap");
      versions.push(await appMonitorResourceVersion(ns, "m"));
    }
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);
    // The first alert listed the workload in status.capped; the others found it listed and wrote nothing.
    assert.equal(new Set(versions).size, 1, `the AppMonitor's resourceVersion after each alert: ${versions.join(", ")}`);
    assert.equal(conditionOf(await appMonitorStatus(ns, "m"), "AtMaxMemory")?.status, "True");
    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Warning", "AtCap"]], kind);
      assert.match(events[0]?.note ?? "", /memory limit 384Mi is already at spec.maxMemory 384Mi \(this Warning is written at most once every 315360000s\)/);
    }
  });

  it("cooldown: a new alert right after a scale is skipped; with no cooldown it scales again", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 3600 });
    await createDeployment(ns, "web");
    const first = await onlyRunningPod(ns, "app=web");
    assert.equal((await deliver(scaler().url, alertEvent({ namespace: ns, pod: first.metadata.name, container: "memhog", appmonitor: "m" }))).outcome, "scaled");
    const second = await waitFor("the scaled Pod Running", async () => {
      const pods = await runningPods(ns, "app=web");
      return pods.length === 1 && pods[0]?.metadata?.uid !== first.metadata.uid ? pods[0] : undefined;
    }, 60_000);
    const event = alertEvent({ namespace: ns, pod: second.metadata?.name ?? "", container: "memhog", appmonitor: "m" });
    const cooling = await deliver(scaler().url, event);
    assert.equal(cooling.reason, "Cooldown", describeAnswer(cooling));
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 2);

    const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
    await custom.patchNamespacedCustomObject(
      { group: "kubedemo.com", version: "v1", plural: "appmonitors", namespace: ns, name: "m", body: { spec: { cooldownSeconds: 0 } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await waitForWatchCache({ group: "kubedemo.com", version: "v1", plural: "appmonitors" }, ns, "m", (o) => (o.spec as { cooldownSeconds?: number }).cooldownSeconds === 0);
    // A new alert for the same Pod.
    const again = await deliver(scaler().url, alertEvent({ namespace: ns, pod: second.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.equal(again.outcome, "scaled", describeAnswer(again));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("1536Mi", "1Gi") });
    assert.equal((await appMonitorStatus(ns, "m")).scaleCount, 2);
  });

  it("alerts no AppMonitor rule raised are skipped, even for a covered Pod: no appmonitor label, another alertname, kube-state-metrics without honor_labels", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    // kube-state-metrics itself, in a namespace an AppMonitor covers: without honor_labels its
    // series (and the alerts on them) name its own Pod, and the Pod they describe moves to exported_*.
    await createDeployment(ns, "kube-state-metrics", [{ name: "kube-state-metrics", limit: "384Mi", request: "256Mi" }]);
    const exporter = await onlyRunningPod(ns, "app=kube-state-metrics");
    const alerts = [
      alertEvent({ namespace: ns, pod: exporter.metadata.name, container: "kube-state-metrics" }),
      alertEvent({ namespace: ns, pod: exporter.metadata.name, container: "kube-state-metrics", alertname: "KubeContainerWaiting", appmonitor: "m" }),
      alertEvent({
        namespace: ns,
        pod: exporter.metadata.name,
        container: "kube-state-metrics",
        alertname: "KubePodNotReady",
        labels: { exported_namespace: "shop", exported_pod: "cart-0", exported_container: "cart" },
      }),
    ];
    for (const event of alerts) assertSkipped(await deliver(scaler().url, event), "NotAppMonitorAlert");
    const deployment = await readDeployment(ns, "kube-state-metrics");
    assert.equal(deployment.metadata?.generation, 1);
    assert.deepEqual(resourcesOf(deployment.spec?.template), { "kube-state-metrics": res("384Mi", "256Mi") });
    assert.deepEqual(await eventsRegarding(ns, "Deployment", "kube-state-metrics"), []);
  });

  it("an alert of an AppMonitor that does not govern the workload is skipped; the governing one's alert scales it", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "db-mon", { memThresholdPercent: 50, memMultiplier: 3, selector: { matchLabels: { app: "db" } } });
    await createAppMonitor(ns, "web-mon", { memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { app: "web" } } });
    await createDeployment(ns, "web", [memhog], false);
    const pod = await onlyRunningPod(ns, "app=web");
    // db-mon's cAdvisor rule fires for every Pod with a limit in the namespace, web's included.
    const foreign = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "db-mon" }));
    assertSkipped(foreign, "AppMonitorNotGoverning");
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);

    const own = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "web-mon" }));
    assert.equal(own.outcome, "scaled", describeAnswer(own));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("768Mi", "512Mi") });
    assert.equal((await appMonitorStatus(ns, "web-mon")).scaleCount, 1);
  });

  it("two AppMonitors over one workload: the targetRef's alert scales it once, the annotation's is a conflict, a Conflict condition on both naming the other", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "wide", { memThresholdPercent: 75, memMultiplier: 2 });
    await createAppMonitor(ns, "exact", { memThresholdPercent: 75, memMultiplier: 3, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } });
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    const outranked = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "wide" }));
    assertSkipped(outranked, "AppMonitorConflict");
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);

    const own = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "exact" }));
    assert.equal(own.outcome, "scaled", describeAnswer(own));
    const web = await readDeployment(ns, "web");
    assert.equal(web.metadata?.generation, 2);
    assert.deepEqual(resourcesOf(web.spec?.template), { memhog: res("1152Mi", "768Mi") });
    const [wide, exact] = await Promise.all([appMonitorStatus(ns, "wide"), appMonitorStatus(ns, "exact")]);
    assert.equal(wide.scaleCount, undefined);
    assert.equal(exact.scaleCount, 1);
    const lost = conditionOf(wide, "Conflict");
    const won = conditionOf(exact, "Conflict");
    assert.deepEqual([lost?.status, lost?.reason], ["True", "Outranked"]);
    assert.match(lost?.message ?? "", /Deployment web is covered by this AppMonitor \(annotation\) and by AppMonitor exact \(targetRef\)/);
    assert.deepEqual([won?.status, won?.reason], ["True", "TakesPrecedence"]);
    assert.match(won?.message ?? "", /Deployment web is covered by this AppMonitor \(targetRef\) and by AppMonitor wide \(annotation\): this AppMonitor acts on it/);
  });

  it("a targetRef covers its unannotated workload and nothing else", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "exact", { memThresholdPercent: 75, memMultiplier: 2, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } });
    await createDeployment(ns, "web", [memhog], false);
    await createDeployment(ns, "other");
    const [web, other] = await Promise.all([onlyRunningPod(ns, "app=web"), onlyRunningPod(ns, "app=other")]);
    const skipped = await deliver(scaler().url, alertEvent({ namespace: ns, pod: other.metadata.name, container: "memhog", appmonitor: "exact" }));
    assertSkipped(skipped, "NotCovered");
    const scaled = await deliver(scaler().url, alertEvent({ namespace: ns, pod: web.metadata.name, container: "memhog", appmonitor: "exact" }));
    assert.equal(scaled.outcome, "scaled", describeAnswer(scaled));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("768Mi", "512Mi") });
    assert.equal((await readDeployment(ns, "other")).metadata?.generation, 1);
  });

  it("a Narrow selector covers only the annotated Pod templates it matches", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "narrow", { memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { app: "web" } }, selectorMode: "Narrow" });
    await createDeployment(ns, "web");
    await createDeployment(ns, "db");
    const [web, db] = await Promise.all([onlyRunningPod(ns, "app=web"), onlyRunningPod(ns, "app=db")]);
    assertSkipped(await deliver(scaler().url, alertEvent({ namespace: ns, pod: db.metadata.name, container: "memhog", appmonitor: "narrow" })), "NotCovered");
    const scaled = await deliver(scaler().url, alertEvent({ namespace: ns, pod: web.metadata.name, container: "memhog", appmonitor: "narrow" }));
    assert.equal(scaled.outcome, "scaled", describeAnswer(scaled));
    assert.equal((await readDeployment(ns, "db")).metadata?.generation, 1);
  });

  it("a native sidecar is scaled in initContainers; an ordinary init container is skipped", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const migrate: ContainerSpec = { name: "migrate", limit: "256Mi", request: "128Mi" };
    const proxy: ContainerSpec = { name: "proxy", limit: "64Mi", request: "32Mi", restartPolicy: "Always" };
    await createDeployment(ns, "web", [memhog], true, [migrate, proxy]);
    const pod = await onlyRunningPod(ns, "app=web");

    const init = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "migrate", appmonitor: "m" }));
    assertSkipped(init, "InitContainer");
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);

    const sidecar = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "proxy", appmonitor: "m" }));
    assert.equal(sidecar.outcome, "scaled", describeAnswer(sidecar));
    const want = { memhog: res("384Mi", "256Mi"), migrate: res("256Mi", "128Mi"), proxy: res("128Mi", "64Mi") };
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), want);
    const next = await waitFor("the new Pod Running", async () => {
      const pods = await runningPods(ns, "app=web");
      return pods.length === 1 && pods[0]?.metadata?.uid !== pod.metadata.uid ? pods[0] : undefined;
    }, 60_000);
    assert.deepEqual(resourcesOf(next), want);
    assert.equal(next.spec?.initContainers?.[1]?.restartPolicy, "Always");
  });

  it("a container exactly at a LimitRange maxLimitRequestRatio is scaled within it", async (t) => {
    const ns = await freshNamespace(t);
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedLimitRange({ namespace: ns, body: { metadata: { name: "ratio" }, spec: { limits: [{ type: "Container", maxLimitRequestRatio: { memory: "1.5" } }] } } });
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 1.5 });
    await createDeployment(ns, "web", [{ name: "memhog", limit: "300000003", request: "200000002" }]);
    const pod = await onlyRunningPod(ns, "app=web");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    // 450000005 / 300000004 ≤ 1.5; rounding the request on its own (300000003) would exceed it.
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("450000005", "300000004") });
  });

  it("a limit that only a LimitRange default gives the Pod: not scaled, a Warning that says to set it in the Pod template", async (t) => {
    const ns = await freshNamespace(t);
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedLimitRange({
      namespace: ns,
      body: { metadata: { name: "defaults" }, spec: { limits: [{ type: "Container", _default: { memory: "384Mi" }, defaultRequest: { memory: "256Mi" } }] } },
    });
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "web", [{ name: "memhog" }]);
    const pod = await onlyRunningPod(ns, "app=web");
    assert.deepEqual(resourcesOf(pod), { memhog: res("384Mi", "256Mi") }, "the LimitRange defaulted the Pod");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assertSkipped(answer, "LimitNotInTemplate");
    const deployment = await readDeployment(ns, "web");
    assert.equal(deployment.metadata?.generation, 1);
    assert.deepEqual(resourcesOf(deployment.spec?.template), { memhog: {} });
    const [warning, ...more] = await eventsRegarding(ns, "Deployment", "web");
    assert.equal(more.length, 0);
    assert.deepEqual([warning?.type, warning?.reason], ["Warning", "LimitNotInTemplate"]);
    assert.match(warning?.note ?? "", /memory limit 384Mi is not in the workload's Pod template .*set the limit in the Pod template to let appmonitor scale it/);
    assert.equal((await eventsRegarding(ns, "AppMonitor", "m"))[0]?.reason, "LimitNotInTemplate");
  });

  it("DryRun: an Event and a status entry, no patch", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2, mode: "DryRun" }, (ns) => createDeployment(ns, "web"), "app=web");
    const event = alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" });
    const answer = await deliver(scaler().url, event);
    assert.equal(answer.outcome, "dry-run", describeAnswer(answer));
    assert.equal((await deliver(scaler().url, event)).outcome, "dry-run", "a re-delivery gets the same answer");
    const deployment = await readDeployment(ns, "web");
    assert.equal(deployment.metadata?.generation, 1);
    assert.deepEqual(resourcesOf(deployment.spec?.template), { memhog: res("384Mi", "256Mi") });
    assert.equal(deployment.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"], undefined);
    const [event1, ...more] = await eventsRegarding(ns, "Deployment", "web");
    assert.equal(more.length, 0, "one Event for both deliveries");
    assert.equal(event1?.reason, "DryRun");
    assert.match(event1?.note ?? "", /would scale Deployment web: memhog: limit 384Mi → 768Mi/);
    const status = await appMonitorStatus(ns, "m");
    assert.equal(status.scaleCount ?? 0, 0);
    assert.equal(status.recentScales?.length, 1);
    assert.equal(status.recentScales?.[0]?.dryRun, true);
  });

  it("a LimitRange whose max is below the new limit: not scaled, a Warning with the API server's message", async (t) => {
    const ns = await freshNamespace(t);
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedLimitRange({ namespace: ns, body: { metadata: { name: "max" }, spec: { limits: [{ type: "Container", max: { memory: "512Mi" } }] } } });
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 204);
    assert.equal(answer.outcome, "skipped");
    assert.equal(answer.reason, "AdmissionRefused");
    const deployment = await readDeployment(ns, "web");
    assert.equal(deployment.metadata?.generation, 1);
    assert.deepEqual(resourcesOf(deployment.spec?.template), { memhog: res("384Mi", "256Mi") });
    const [warning] = await eventsRegarding(ns, "Deployment", "web");
    assert.equal(warning?.type, "Warning");
    assert.equal(warning?.reason, "AdmissionRefused");
    assert.match(warning?.note ?? "", /maximum memory usage per Container is 512Mi, but limit is 768Mi/);
    assert.equal((await eventsRegarding(ns, "AppMonitor", "m"))[0]?.reason, "AdmissionRefused");
  });
});

describe("memory-scaler with PROMETHEUS_URL", () => {
  let scaler: ScalerUnderTest;
  let blind: ScalerUnderTest;

  before(async () => {
    await installMemoryScaler();
    scaler = await startScaler({ PROMETHEUS_URL: (await stack()).prometheusUrl });
    blind = await startScaler({ PROMETHEUS_URL: `http://127.0.0.1:${await freePort()}`, PROMETHEUS_TIMEOUT_MS: "500" });
  });
  after(async () => {
    await scaler?.stop();
    await blind?.stop();
  });

  it("skips an alert Prometheus does not confirm, scales one it does", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2 }, (ns) => createDeployment(ns, "web"), "app=web");
    const mi = 1024 * 1024;

    await setWorkingSet(ns, pod.metadata.name, "100Mi", 100 * mi);
    const stale = await deliver(scaler.url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(stale.status, 204);
    assert.equal(stale.reason, "BelowThreshold", describeAnswer(stale));
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);

    await setWorkingSet(ns, pod.metadata.name, "300Mi", 300 * mi);
    const real = await deliver(scaler.url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(real.outcome, "scaled", describeAnswer(real));
    assert.deepEqual(resourcesOf((await readDeployment(ns, "web")).spec?.template), { memhog: res("768Mi", "512Mi") });
  });

  it("Prometheus unreachable: 503 and no blind scale", async (t) => {
    const { ns, pod } = await monitoredCase(t, { memThresholdPercent: 75, memMultiplier: 2 }, (ns) => createDeployment(ns, "web"), "app=web");
    const answer = await deliver(blind.url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.match(answer.body.error ?? "", /Prometheus unavailable/);
    assert.equal((await readDeployment(ns, "web")).metadata?.generation, 1);
  });
});
