// spec.updateMode on the real node, for real: a Deployment's running memhog resized in place by
// memory-scaler (same container, no restart, the new limit in its real cgroup, the memory it holds
// still held, the Pod template unchanged), its next Pod given the raised memory at creation by the
// shipped MutatingAdmissionPolicy, a resize the node cannot hold falling back to a rollout under
// InPlaceOrRollout, and, in one run, the time from the crossing (the alert's delivery) to the raised
// cgroup limit in place against the time to a new Pod Running by rollout (printed, not asserted).
//
// The run's shared real node beside the run's other such files (real-node-alongside.ts; alone, the
// file's own), memory-scaler in this process as its ServiceAccount serving this file's namespace
// alone, the alerts delivered as Alertmanager's would be (no Prometheus check: the crossing is the
// delivery).
import { after, before, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { floor, parseQuantity } from "../../functions/lib/quantity.ts";
import { REAL_NODE, REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { applyFiles } from "../support/install.ts";
import { alertEvent, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, pingTick, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { cgroupLimit, containerId, memhogProcess } from "../support/real-node-memhog.ts";
import { type RealNodeFile } from "../support/real-node-file.ts";
import { startRealNodeFileAlongside, startScalerServing } from "../support/real-node-alongside.ts";
import { waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

const Mi = 1 << 20;
const NS = "in-place";
let stack: RealNodeFile | undefined;
let core: k8s.CoreV1Api;
let apps: k8s.AppsV1Api;
let scaler: ScalerUnderTest | undefined;

before(async () => {
  stack = await startRealNodeFileAlongside("appmonitor-in-place-");
  ({ core, apps } = stack);
  // The shipped policies that give a workload's later Pods its in-place memory (Kubernetes 1.36);
  // they stay for the shared stack's next files, as an install keeps them (they touch only the
  // Pods of workloads memory-scaler resized in place).
  await applyFiles("knative/admission/in-place-memory.yaml");
  await stack.namespace(NS);
  scaler = await startScalerServing([NS]);
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  await scaler?.stop();
  await stack?.stop();
});

/** memhog holding `target` in a Deployment `name` of `replicas`, limit = request = `memory`, placed by `placement`. */
function memhogDeployment(name: string, memory: string, target: string, placement: Partial<k8s.V1PodSpec> = REAL_NODE_PLACEMENT, replicas = 1): k8s.V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          ...placement,
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "memhog",
            image: "quay.io/metral/memhog:v0.0.1",
            imagePullPolicy: "IfNotPresent",
            env: [{ name: "MEMHOG_TARGET", value: target }, { name: "MEMHOG_RATE", value: "256Mi" }],
            resources: { limits: { memory }, requests: { memory } },
          }],
        },
      },
    },
  };
}

async function createDeployment(t: TestContext, deployment: k8s.V1Deployment): Promise<string> {
  const name = deployment.metadata?.name ?? "";
  await apps.createNamespacedDeployment({ namespace: NS, body: deployment });
  t.after(() => apps.deleteNamespacedDeployment({ namespace: NS, name, propagationPolicy: "Background" }).then(() => undefined, () => undefined));
  return name;
}

/** The Deployment's Pods, Running and Ready, not terminating. */
async function readyPods(name: string): Promise<k8s.V1Pod[]> {
  const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${name}` })).items;
  return pods.filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === "Running" && p.status.containerStatuses?.every((c) => c.ready));
}


/** The one Pod of `name`, once Running and Ready with memhog holding `target` bytes. */
async function holding(name: string, target: number): Promise<k8s.V1Pod> {
  return waitFor(`memhog of ${name} holding ${target / Mi}Mi`, async () => {
    const [pod] = await readyPods(name);
    return pod !== undefined && memhogProcess(pod).rss >= target ? pod : undefined;
  }, 120_000, 100);
}

/** A container's memory as plain data (the client's objects are class instances). */
const memoryOf = (r: k8s.V1ResourceRequirements | undefined) => ({ limit: r?.limits?.memory, request: r?.requests?.memory });

const alertFor = (pod: k8s.V1Pod, appmonitor: string) => alertEvent({ namespace: NS, pod: pod.metadata?.name ?? "", container: "memhog", appmonitor });

/** Ticks the follow-up until the AppMonitor's RolledOut condition is no longer Unknown. */
function rolloutEnded(appmonitor: string): Promise<{ status: string; reason: string; message: string }> {
  return waitFor(`the follow-up to end ${appmonitor}'s rollout`, async () => {
    await deliver(scaler?.url ?? "", pingTick());
    const status = (await appMonitorStatus(NS, appmonitor)) as { conditions?: { type: string; status: string; reason: string; message: string }[] };
    const condition = status.conditions?.find((c) => c.type === "RolledOut");
    return condition !== undefined && condition.status !== "Unknown" ? condition : undefined;
  }, 60_000, 500);
}

test("InPlace: a Deployment's memhog at the threshold is resized in place (same container, no restart, the new limit in its cgroup, its memory still held, the template unchanged), and its next Pod gets the raised memory at creation", { timeout: 300_000 }, async (t) => {
  await createAppMonitor(NS, "cache", { memThresholdPercent: 75, memMultiplier: 2, updateMode: "InPlace", selector: { matchLabels: { app: "cache" } } });
  const name = await createDeployment(t, memhogDeployment("cache", "64Mi", "48Mi"));
  const before = await holding(name, 48 * Mi);
  const held = memhogProcess(before);
  const [was] = before.status?.containerStatuses ?? [];
  const deploymentBefore = await apps.readNamespacedDeployment({ namespace: NS, name });

  const answer = await deliver(scaler?.url ?? "", alertFor(before, "cache"));
  assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Resized"], JSON.stringify(answer));
  await waitFor("the kubelet to raise the running container's cgroup limit", async () => cgroupLimit(before) === 128 * Mi, 60_000, 50);

  const after_ = await core.readNamespacedPod({ namespace: NS, name: before.metadata?.name ?? "" });
  const [now] = after_.status?.containerStatuses ?? [];
  assert.equal(now?.containerID, was?.containerID, "the same container");
  assert.equal(now?.restartCount, 0, "not restarted");
  assert.equal(cgroupLimit(after_), 128 * Mi, "memory.limit_in_bytes of the running container's cgroup");
  const still = memhogProcess(after_);
  assert.equal(still.pid, held.pid, "the same memhog process");
  assert.ok(still.rss >= 48 * Mi, `the memory it held is still held: VmRSS ${still.rss} bytes`);
  const deployment = await apps.readNamespacedDeployment({ namespace: NS, name });
  assert.deepEqual(memoryOf(deployment.spec?.template.spec?.containers[0]?.resources), memoryOf(deploymentBefore.spec?.template.spec?.containers[0]?.resources), "the Pod template is unchanged");
  // The API server moves a Deployment's generation with its annotations (they are copied to its
  // ReplicaSets); no rollout: still one ReplicaSet, the one that made the Pod, and no other Pod.
  const replicaSets = (await apps.listNamespacedReplicaSet({ namespace: NS, labelSelector: `app=${name}` })).items.map((r) => r.metadata?.name);
  assert.deepEqual(replicaSets, [before.metadata?.ownerReferences?.[0]?.name], "no new ReplicaSet");
  assert.deepEqual((await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${name}` })).items.map((p) => p.metadata?.name), [before.metadata?.name], "no new Pod");
  assert.equal(deployment.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], "memhog=64Mi>128Mi/64Mi>128Mi");
  assert.equal(deployment.metadata?.labels?.[IN_PLACE_LABEL], "true");
  t.diagnostic(`same container ${containerId(after_).slice(0, 12)}, restartCount ${now?.restartCount}, cgroup limit ${cgroupLimit(after_)}, memhog pid ${still.pid} VmRSS ${(still.rss / Mi).toFixed(1)}Mi, template ${JSON.stringify(deployment.spec?.template.spec?.containers[0]?.resources)}`);
  const ended = await rolloutEnded("cache");
  assert.deepEqual([ended.status, ended.reason], ["True", "RolledOut"], ended.message);
  assert.match(ended.message, /Deployment cache: 1 Pod resized in place: .*memhog: limit 128Mi, request 128Mi, 0 restarts/);

  // One more replica: created from the unchanged template, it gets the raised memory at creation.
  await apps.patchNamespacedDeploymentScale({ namespace: NS, name, body: { spec: { replicas: 2 } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  const fresh = await waitFor("the second replica Running", async () => (await readyPods(name)).find((p) => p.metadata?.name !== before.metadata?.name), 120_000, 100);
  assert.deepEqual(memoryOf(fresh.spec?.containers[0]?.resources), { limit: "128Mi", request: "128Mi" }, "the raised memory in its spec at creation");
  assert.equal(cgroupLimit(fresh), 128 * Mi, "and in its cgroup");
  assert.equal(fresh.status?.containerStatuses?.[0]?.restartCount, 0);
  const template = (await apps.readNamespacedDeployment({ namespace: NS, name })).spec?.template.spec?.containers[0]?.resources;
  assert.deepEqual(memoryOf(template), { limit: "64Mi", request: "64Mi" }, "still the template's own");
  t.diagnostic(`second replica ${fresh.metadata?.name}: spec ${JSON.stringify(fresh.spec?.containers[0]?.resources)}, cgroup limit ${cgroupLimit(fresh)}`);
});

test("InPlace: a leak past the raised limit inside the cooldown: the crossing the resize answered, delivered again, is held (Cooldown); the new crossing of the raised limit is resized again in place (same container, never OOM-killed), its Resized note saying why the cooldown did not hold it", { timeout: 300_000 }, async (t) => {
  await createAppMonitor(NS, "leak", { memThresholdPercent: 75, memMultiplier: 2, updateMode: "InPlace", selector: { matchLabels: { app: "leak" } } });
  // 48Mi of 64Mi (75 %), then, 45 s after its start, 100Mi: past 64Mi, 78 % of the raised 128Mi.
  const deployment = memhogDeployment("leak", "64Mi", "48Mi");
  deployment.spec?.template.spec?.containers[0]?.env?.push({ name: "MEMHOG_MODE", value: "step" }, { name: "MEMHOG_STEP_TARGET", value: "100Mi" }, { name: "MEMHOG_STEP_AFTER", value: "45s" });
  const name = await createDeployment(t, deployment);
  const pod = await holding(name, 48 * Mi);
  const [was] = pod.status?.containerStatuses ?? [];
  const url = scaler?.url ?? "";

  const first = await deliver(url, alertFor(pod, "leak"));
  assert.deepEqual([first.outcome, first.reason], ["scaled", "Resized"], JSON.stringify(first));
  await waitFor("the kubelet to raise the cgroup limit to 128Mi", async () => cgroupLimit(pod) === 128 * Mi, 60_000, 50);
  // The kubelet reports the resize in the Pod's status after the cgroup; until then memory-scaler answers ResizeUnderWay.
  await waitFor("the Pod's status to report the 128Mi limit", async () =>
    (await core.readNamespacedPod({ namespace: NS, name: pod.metadata?.name ?? "" })).status?.containerStatuses?.[0]?.resources?.limits?.memory === "128Mi", 60_000, 100);
  const again = await deliver(url, alertFor(pod, "leak"));
  assert.deepEqual([again.outcome, again.reason], ["skipped", "Cooldown"], "the alert that began before the resize is the crossing it answered");

  const stepped = await holding(name, 100 * Mi);
  const crossing = await deliver(url, alertEvent({ namespace: NS, pod: pod.metadata?.name ?? "", container: "memhog", appmonitor: "leak", startsAt: new Date().toISOString() }));
  assert.deepEqual([crossing.outcome, crossing.reason], ["scaled", "Resized"], JSON.stringify(crossing));
  await waitFor("the kubelet to raise the cgroup limit to 256Mi", async () => cgroupLimit(stepped) === 256 * Mi, 60_000, 50);

  const now = (await core.readNamespacedPod({ namespace: NS, name: pod.metadata?.name ?? "" })).status?.containerStatuses?.[0];
  assert.equal(now?.containerID, was?.containerID, "the same container");
  assert.deepEqual([now?.restartCount, now?.lastState?.terminated], [0, undefined], "never restarted, never OOM-killed");
  assert.ok(memhogProcess(stepped).rss >= 100 * Mi, "memhog still holds its 100Mi");
  const notes = (await eventsRegarding(NS, "Deployment", name)).filter((e) => e.reason === "Resized").map((e) => e.note ?? "");
  assert.equal(notes.length, 2, notes.join("\n"));
  const newCrossing = notes.find((n) => n.includes("128Mi → 256Mi"));
  assert.match(newCrossing ?? "", /; a new crossing: its alert began at \S+, after the last scale at \S+, so the cooldown of 300s \(\d+s left\) does not hold it$/);
  t.diagnostic(newCrossing ?? "");
});

test("InPlaceOrRollout with a resize the real node cannot hold: the API server refuses it, and the fallback rollout places a new Pod on a Node that can, the reason in an InPlaceFallback Event", { timeout: 300_000 }, async (t) => {
  const node = await core.readNode({ name: REAL_NODE.name });
  const allocatable = Number(floor(parseQuantity(node.status?.allocatable?.memory ?? "0")));
  const memory = `${Math.floor((allocatable * 0.6) / Mi)}Mi`;
  // A cap above the doubled memory: the install's default (8Gi) may be below it on a large host.
  await createAppMonitor(NS, "big", { memThresholdPercent: 75, memMultiplier: 2, maxMemory: "1Ti", updateMode: "InPlaceOrRollout", selector: { matchLabels: { app: "big" } } });
  // The real node preferred, a kwok Node allowed: the first Pod runs for real, the doubled one fits only a kwok Node.
  const placement: Partial<k8s.V1PodSpec> = {
    tolerations: REAL_NODE_PLACEMENT.tolerations,
    affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: { matchExpressions: [{ key: REAL_NODE.label.key, operator: "In", values: [REAL_NODE.label.value] }] } }] } },
  };
  const name = await createDeployment(t, memhogDeployment("big", memory, "8Mi", placement));
  const before = await holding(name, 8 * Mi);
  assert.equal(before.spec?.nodeName, REAL_NODE.name, "the first Pod runs on the real node");

  const answer = await deliver(scaler?.url ?? "", alertFor(before, "big"));
  assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], JSON.stringify(answer));
  const events = await eventsRegarding(NS, "Deployment", name);
  const fallback = events.find((e) => e.reason === "InPlaceFallback");
  t.diagnostic(`${memory} × 2 on allocatable ${(allocatable / Mi).toFixed(0)}Mi: ${fallback?.type} ${fallback?.reason}: ${fallback?.note}`);
  assert.equal(fallback?.type, "Warning");
  assert.match(fallback?.note ?? "", /refused the in-place resize of Pod .*node didn't have enough allocatable resources: memory, requested: \d+, allocatable: \d+; wrote the template instead/);
  const doubled = `${2 * Math.floor((allocatable * 0.6) / Mi)}Mi`;
  const template = (await apps.readNamespacedDeployment({ namespace: NS, name })).spec?.template.spec?.containers[0]?.resources?.limits?.memory;
  assert.equal(Number(floor(parseQuantity(template ?? "0"))), Number(floor(parseQuantity(doubled))), "the template carries the doubled memory");
  const replaced = await waitFor("the fallback rollout's Pod Running", async () => (await readyPods(name)).find((p) => p.metadata?.name !== before.metadata?.name), 120_000, 200);
  t.diagnostic(`the rollout's Pod ${replaced.metadata?.name} Running on ${replaced.spec?.nodeName} with limit ${replaced.spec?.containers[0]?.resources?.limits?.memory}`);
  assert.notEqual(replaced.spec?.nodeName, REAL_NODE.name, "on a Node that can hold it");
  const ended = await rolloutEnded("big");
  assert.deepEqual([ended.status, ended.reason], ["True", "RolledOut"], ended.message);
});

test("in one run, from the crossing (the alert's delivery): the raised cgroup limit in place, against a new Pod Running by rollout (figures, not asserted)", { timeout: 600_000 }, async (t) => {
  await createAppMonitor(NS, "fig-in-place", { memThresholdPercent: 75, memMultiplier: 2, updateMode: "InPlace", selector: { matchLabels: { figure: "in-place" } } });
  await createAppMonitor(NS, "fig-rollout", { memThresholdPercent: 75, memMultiplier: 2, updateMode: "Rollout", selector: { matchLabels: { figure: "rollout" } } });
  const labelled = (deployment: k8s.V1Deployment, figure: string): k8s.V1Deployment => {
    const template = deployment.spec?.template;
    if (template?.metadata === undefined) throw new Error("no template");
    template.metadata.labels = { ...template.metadata.labels, figure };
    return deployment;
  };
  const inPlace: number[] = [];
  const rollout: number[] = [];
  for (let round = 1; round <= 3; round++) {
    const a = await createDeployment(t, labelled(memhogDeployment(`fig-in-place-${round}`, "64Mi", "48Mi"), "in-place"));
    const podA = await holding(a, 48 * Mi);
    const t0 = performance.now();
    const answerA = await deliver(scaler?.url ?? "", alertFor(podA, "fig-in-place"));
    assert.equal(answerA.reason, "Resized");
    await waitFor("the raised cgroup limit", async () => cgroupLimit(podA) === 128 * Mi, 60_000, 10);
    inPlace.push(performance.now() - t0);

    const b = await createDeployment(t, labelled(memhogDeployment(`fig-rollout-${round}`, "64Mi", "48Mi"), "rollout"));
    const podB = await holding(b, 48 * Mi);
    const t1 = performance.now();
    const answerB = await deliver(scaler?.url ?? "", alertFor(podB, "fig-rollout"));
    assert.equal(answerB.reason, "Scaled");
    const fresh = await waitFor("the rollout's new Pod Running", async () => (await readyPods(b)).find((p) => p.metadata?.name !== podB.metadata?.name), 120_000, 10);
    rollout.push(performance.now() - t1);
    assert.equal(cgroupLimit(fresh), 128 * Mi);
  }
  const ms = (values: number[]) => values.map((v) => v.toFixed(0)).join(", ");
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]?.toFixed(0);
  t.diagnostic(`crossing → raised cgroup limit in place: ${ms(inPlace)} ms (median ${median(inPlace)})`);
  t.diagnostic(`crossing → new Pod Running by rollout: ${ms(rollout)} ms (median ${median(rollout)})`);
  process.stderr.write(`# figures: in place ${ms(inPlace)} ms (median ${median(inPlace)}); rollout ${ms(rollout)} ms (median ${median(rollout)})\n`);
});
