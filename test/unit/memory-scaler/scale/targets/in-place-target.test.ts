// A workload's Pods resized in place (spec.updateMode InPlace / InPlaceOrRollout), through the one
// flow against the in-memory cluster: the claim on the workload's metadata, the resizes, the
// fallbacks, a Pod behind the workload's memory, a template patch folding the record in, and the
// follow-up's fallback through the flow.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION, LAST_SCALE_ANNOTATION } from "../../../../../functions/lib/appmonitor.ts";
import { followRollouts } from "../../../../../functions/memory-scaler/follow-up/flow.ts";
import { handleFallback, handleFiring, handleScaleDown } from "../../../../../functions/memory-scaler/scale/flow.ts";
import { buildInPlaceClaimPatch } from "../../../../../functions/memory-scaler/scale/targets/in-place-patch.ts";
import { isPodOf } from "../../../../../functions/memory-scaler/scale/targets/in-place-target.ts";
import type { Workload } from "../../../../../functions/memory-scaler/model.ts";
import { alertData, apiError, type FakeCluster, fakeVerifier, flowDeps, memhogCluster, NS } from "../../../../support/memory-scaler-fakes.ts";

const log = pino({ level: "silent" });
const POD = "memhog-5d8f-x2";

/** memhog's cluster under `updateMode`, the Deployment with its selector and the Pod on a node. */
function inPlaceCluster(updateMode: string, spec: Record<string, unknown> = {}): FakeCluster {
  const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, updateMode, ...spec });
  const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
  if (deployment?.spec === undefined) throw new Error("no memhog Deployment");
  deployment.spec.selector = { matchLabels: { name: "memhog" } };
  const pod = cluster.pods.get(`${NS}/${POD}`);
  if (pod?.spec === undefined) throw new Error("no memhog Pod");
  pod.spec = { ...pod.spec, nodeName: "node-1" };
  return cluster;
}

const deployment = (cluster: FakeCluster) => cluster.workloads.get(`Deployment/${NS}/memhog`);
const podMemory = (cluster: FakeCluster, name = POD) => cluster.pods.get(`${NS}/${name}`)?.spec?.containers[0]?.resources;
const templateMemory = (cluster: FakeCluster) => deployment(cluster)?.spec?.template?.spec?.containers[0]?.resources;
const reasons = (cluster: FakeCluster) => cluster.events.map((e) => e.reason);
const status = (cluster: FakeCluster) => cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { rollouts?: { workload: { kind: string }; inPlace?: { pods: { name: string }[] } }[]; recentScales?: unknown[] } | undefined;

/** The kubelet applied what the Pod's spec asks: the container statuses show it. */
function kubeletApplied(cluster: FakeCluster, name = POD): void {
  const pod = cluster.pods.get(`${NS}/${name}`);
  if (pod?.spec === undefined) throw new Error(`no Pod ${name}`);
  const [container] = pod.spec.containers;
  pod.status = { ...pod.status, containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: 0, resources: container?.resources }] };
}

describe("updateMode InPlace", () => {
  it("resizes the running Pod and claims the scale on the workload's metadata: the template, and so its generation, stay as they were", async () => {
    const cluster = inPlaceCluster("InPlace");
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Resized"], outcome.message);
    assert.match(outcome.message, /resized Deployment memhog in place by 2 \(Pod memhog-5d8f-x2\): memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi/);
    assert.deepEqual(podMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } }, "the template is unchanged");
    const meta = deployment(cluster)?.metadata;
    assert.equal(meta?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], "memhog=384Mi>768Mi/256Mi>512Mi");
    assert.equal(meta?.labels?.[IN_PLACE_LABEL], "true");
    assert.equal(meta?.annotations?.[LAST_SCALE_ANNOTATION], "2025-06-01T12:00:00Z");
    assert.equal(cluster.resizeDryRuns, 1, "the resize was dry-run first");
    assert.deepEqual(cluster.writes.map((w) => w.patch.some((op) => op.path.startsWith("/spec/") && op.op !== "test")), [false], "one patch of the workload, none of its spec");
    assert.ok(reasons(cluster).includes("Resized"));
    const [rollout] = status(cluster)?.rollouts ?? [];
    assert.deepEqual([rollout?.workload.kind, rollout?.inPlace?.pods.map((p) => p.name)], ["Deployment", [POD]]);
  });

  it("a re-delivery while the kubelet applies the resize is ResizeUnderWay; once applied, Cooldown: one crossing, one scale", async () => {
    const cluster = inPlaceCluster("InPlace");
    await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    const pod = cluster.pods.get(`${NS}/${POD}`);
    if (pod === undefined) throw new Error("no Pod");
    pod.status = { containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: 0, resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }] };
    assert.equal((await handleFiring(flowDeps(cluster), "e1", alertData(), log)).reason, "ResizeUnderWay");
    kubeletApplied(cluster);
    assert.equal((await handleFiring(flowDeps(cluster), "e2", alertData(), log)).reason, "Cooldown");
    assert.equal(cluster.resizes.length, 1);
  });

  it("two concurrent deliveries resize once: the claim is a compare-and-swap", async () => {
    const cluster = inPlaceCluster("InPlace");
    const workload = deployment(cluster);
    if (workload?.metadata === undefined) throw new Error("no Deployment");
    workload.metadata.resourceVersion = "7";
    const bump = cluster.patchWorkload.bind(cluster);
    cluster.patchWorkload = async (kind, namespace, name, patch, dryRun) => {
      const result = await bump(kind, namespace, name, patch, dryRun);
      const now = cluster.workloads.get(`${kind}/${namespace}/${name}`);
      if (!dryRun && now?.metadata !== undefined) now.metadata.resourceVersion = String(Number(now.metadata.resourceVersion) + 1);
      return result;
    };
    const outcomes = await Promise.all([handleFiring(flowDeps(cluster), "e1", alertData(), log), handleFiring(flowDeps(cluster), "e2", alertData(), log)]);
    assert.deepEqual(outcomes.map((o) => o.reason).sort(), ["Cooldown", "Resized"].sort());
    assert.deepEqual(podMemory(cluster)?.limits, { memory: "768Mi" }, "not ×4");
  });

  it("a resize the API server refuses writes nothing: AdmissionRefused, naming the Pod", async () => {
    const cluster = inPlaceCluster("InPlace");
    cluster.resizeRefusal = apiError(422, "Pod running on node without support for resize");
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "AdmissionRefused"]);
    assert.match(outcome.message, /Pod memhog-5d8f-x2: Pod running on node without support for resize/);
    assert.deepEqual(cluster.writes, []);
    assert.equal(deployment(cluster)?.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], undefined);
  });

  it("a Pod behind the workload's memory (created without the admission policy) is brought up to it: no new scale, no multiplier, no cooldown", async () => {
    const cluster = inPlaceCluster("InPlace");
    await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    kubeletApplied(cluster);
    const template = deployment(cluster)?.spec?.template;
    cluster.pods.set(`${NS}/memhog-5d8f-y3`, {
      metadata: { name: "memhog-5d8f-y3", namespace: NS, uid: "p2", labels: { name: "memhog", "pod-template-hash": "5d8f" }, ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "memhog-5d8f", uid: "r1", controller: true }] },
      spec: { ...template?.spec, containers: template?.spec?.containers ?? [], nodeName: "node-1" },
    });
    const record = deployment(cluster)?.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION];
    const outcome = await handleFiring(flowDeps(cluster), "e2", alertData({ pod: "memhog-5d8f-y3" }), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Resized"], outcome.message);
    assert.deepEqual(podMemory(cluster, "memhog-5d8f-y3"), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } }, "the workload's memory, not twice it");
    assert.equal(deployment(cluster)?.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], record, "the record is unchanged");
    assert.deepEqual(podMemory(cluster)?.limits, { memory: "768Mi" }, "the other Pod is untouched");
  });
});

describe("a container whose declared runtime sizes its heap at start: rolled out in either in-place mode, never Resized", () => {
  for (const mode of ["InPlace", "InPlaceOrRollout"]) {
    it(`${mode}: the template raised with the heap setting in one patch, Scaled with InPlaceFallback Warnings naming the runtime; no Pod resized`, async () => {
      const cluster = inPlaceCluster(mode, { containerPolicies: [{ containerName: "memhog", runtime: "Node.js" }] });
      const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
      assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"], outcome.message);
      assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
      assert.deepEqual(deployment(cluster)?.spec?.template?.spec?.containers[0]?.env, [{ name: "NODE_OPTIONS", value: "--max-old-space-size=576" }]);
      assert.equal(cluster.writes.length, 1, "one compare-and-swap patch");
      assert.deepEqual([cluster.resizes.length, cluster.resizeDryRuns], [0, 0], "no resize, not even tried");
      assert.deepEqual(podMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
      assert.ok(!reasons(cluster).includes("Resized"));
      const fallbacks = cluster.events.filter((e) => e.reason === "InPlaceFallback");
      assert.deepEqual(fallbacks.map((e) => [e.type, e.regarding?.kind]).sort(), [["Warning", "AppMonitor"], ["Warning", "Deployment"]]);
      assert.match(fallbacks[0]?.note ?? "", /resizing in place cannot reach Node\.js's heap, sized when it starts \(container memhog\); wrote the template instead, so the Pods are replaced/);
      assert.match(outcome.message, /NODE_OPTIONS \+= --max-old-space-size=576/);
    });
  }
});

describe("updateMode InPlaceOrRollout", () => {
  it("a resize the API server refuses falls back to the template patch, with InPlaceFallback Warnings saying why", async () => {
    const cluster = inPlaceCluster("InPlaceOrRollout");
    cluster.resizeRefusal = apiError(422, "Pod resize: node didn't have enough allocatable resources: memory");
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"], outcome.message);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    const fallback = cluster.events.find((e) => e.reason === "InPlaceFallback");
    assert.match(fallback?.note ?? "", /refused the in-place resize of Pod memhog-5d8f-x2: Pod resize: node didn't have enough allocatable resources: memory; wrote the template instead/);
    assert.equal(fallback?.type, "Warning");
  });

  it("under GitOps with gitOpsManaged Skip, falls back to nothing: reported as InPlace", async () => {
    const cluster = inPlaceCluster("InPlaceOrRollout");
    const meta = deployment(cluster)?.metadata;
    if (meta === undefined) throw new Error("no Deployment");
    meta.labels = { "argocd.argoproj.io/instance": "shop" };
    cluster.resizeRefusal = apiError(422, "Infeasible");
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.equal(outcome.reason, "AdmissionRefused");
    assert.match(outcome.message, /not rolled out instead: a GitOps tool applies Deployment memhog/);
    assert.deepEqual(cluster.writes, []);
  });

  it("the follow-up's fallback (the kubelet said Infeasible) writes the recorded memory into the template once, through the flow", async () => {
    const cluster = inPlaceCluster("InPlaceOrRollout");
    const deps = flowDeps(cluster);
    await handleFiring(deps, "e1", alertData(), log);
    const pod = cluster.pods.get(`${NS}/${POD}`);
    if (pod === undefined) throw new Error("no Pod");
    pod.status = {
      conditions: [{ type: "PodResizePending", status: "True", reason: "Infeasible", message: "Node didn't have enough capacity: memory" }],
      containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: 0, resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }],
    };
    const fellBack: string[] = [];
    const follow = { cluster, events: deps.events, status: deps.status, now: deps.now, fallBack: async (request: Parameters<typeof handleFallback>[1], l: typeof log) => {
      const outcome = await handleFallback(deps, request, l);
      fellBack.push(`${outcome.reason}: ${outcome.message}`);
      return outcome;
    } };
    const summary = await followRollouts(follow, log);
    assert.equal(summary.ended, 1);
    assert.equal(fellBack.length, 1, fellBack.join("\n"));
    assert.match(fellBack[0] ?? "", /^Scaled: scaled Deployment memhog by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi/);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } }, "the recorded memory, not twice it");
    const meta = deployment(cluster)?.metadata;
    assert.deepEqual([meta?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], meta?.labels?.[IN_PLACE_LABEL]], [undefined, undefined], "the record folded into the template");
    const failed = cluster.events.find((e) => e.reason === "RolloutFailed");
    assert.match(failed?.note ?? "", /in-place resize failed \(Infeasible\): Deployment memhog: Pod memhog-5d8f-x2: the kubelet cannot resize it .*InPlaceOrRollout: writing the memory into the Pod template instead/);
    assert.ok(reasons(cluster).includes("InPlaceFallback"));
    const [rollout] = status(cluster)?.rollouts ?? [];
    assert.deepEqual([rollout?.workload.kind, rollout?.inPlace], ["Deployment", undefined], "the template's rollout is followed now");
    await followRollouts(follow, log);
    assert.equal(fellBack.length, 1, "once");
  });
});

describe("a template patch of a workload resized in place", () => {
  it("decides from the workload's memory and writes the whole raise into the template, the record removed in the same compare-and-swap", async () => {
    const cluster = inPlaceCluster("InPlace");
    await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    kubeletApplied(cluster);
    const am = cluster.appMonitors.get(`${NS}/mymonitor`);
    (am?.spec as Record<string, unknown>).updateMode = "Rollout";
    const outcome = await handleFiring(flowDeps(cluster, { now: () => new Date("2025-06-01T12:10:00Z") }), "e2", alertData(), log);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"], outcome.message);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "1536Mi" }, requests: { memory: "1Gi" } });
    assert.match(outcome.message, /limit 384Mi → 1536Mi/);
    assert.equal(deployment(cluster)?.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], undefined);
  });
});

describe("the claim and the Pods of a workload", () => {
  it("tests the resourceVersion and the template's memory, writes the annotations and the label, and nothing of the spec", () => {
    const ops = buildInPlaceClaimPatch({
      template: [{ name: "memhog", kind: "container", limit: "384Mi", request: "256Mi" }],
      resourceVersion: "7",
      annotations: { [LAST_SCALE_ANNOTATION]: "2025-06-01T11:00:00Z" },
      labels: { app: "x" },
      time: "2025-06-01T12:00:00Z",
      record: "{}",
      inPlace: "memhog=384Mi>768Mi/256Mi>512Mi",
    });
    assert.deepEqual(ops.filter((o) => o.op === "test").map((o) => o.path), ["/metadata/resourceVersion", "/spec/template/spec/containers/0/name", "/spec/template/spec/containers/0/resources/limits/memory", "/spec/template/spec/containers/0/resources/requests/memory", "/metadata/annotations/app-monitor.kubedemo.com~1last-scale"]);
    assert.ok(ops.filter((o) => o.op !== "test").every((o) => o.path.startsWith("/metadata/")));
    assert.ok(ops.some((o) => o.path === "/metadata/labels/app-monitor.kubedemo.com~1in-place" && o.value === "true"));
  });

  const workload = (kind: Workload["kind"]): Workload => ({ kind, name: "web", namespace: NS, object: { metadata: { uid: "w1" }, spec: { template: {} } } });
  const pod = (owner: k8s.V1OwnerReference, hash?: string): k8s.V1Pod => ({ metadata: { ownerReferences: [owner], ...(hash === undefined ? {} : { labels: { "pod-template-hash": hash } }) } });
  const cases: [string, Workload, k8s.V1Pod, boolean][] = [
    ["a Deployment's, through its ReplicaSet <name>-<hash>", workload("Deployment"), pod({ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-abc", uid: "r", controller: true }, "abc"), true],
    ["not another Deployment's", workload("Deployment"), pod({ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-api-abc", uid: "r", controller: true }, "abc"), false],
    ["a StatefulSet's, by uid", workload("StatefulSet"), pod({ apiVersion: "apps/v1", kind: "StatefulSet", name: "web", uid: "w1", controller: true }), true],
    ["not a namesake's", workload("StatefulSet"), pod({ apiVersion: "apps/v1", kind: "StatefulSet", name: "web", uid: "w2", controller: true }), false],
    ["not an owner that is no controller", workload("DaemonSet"), pod({ apiVersion: "apps/v1", kind: "DaemonSet", name: "web", uid: "w1" }), false],
  ];
  for (const [name, w, p, want] of cases) it(`a Pod is ${name}`, () => assert.equal(isPodOf(w, p), want));
});

describe("updateMode InPlace: a down-step of spec.scaleDown", () => {
  it("resizes the running Pod down to the memory before the raise through the same in-place target, records it on the workload, and follows the resize", async () => {
    const cluster = inPlaceCluster("InPlace", { scaleDown: {} });
    const raised = await handleFiring(flowDeps(cluster), "e1", alertData(), log);
    assert.equal(raised.reason, "Resized");
    kubeletApplied(cluster);
    // The follow-up ends the raise's resize.
    const am = cluster.appMonitors.get(`${NS}/mymonitor`);
    if (am !== undefined) cluster.appMonitors.set(`${NS}/mymonitor`, { ...am, status: { ...(am.status as object), rollouts: [] } });
    const pod = cluster.pods.get(`${NS}/${POD}`);
    if (pod !== undefined) pod.status = { ...pod.status, phase: "Running" };
    const now = new Date("2025-06-02T12:01:00Z");
    const flow = flowDeps(cluster, { now: () => now, verifier: fakeVerifier({ peaks: new Map([["memhog", 120 * 1024 * 1024]]) }) });
    const summary = await followRollouts({ cluster, events: flow.events, status: flow.status, now: () => now, scaleDown: (request, l) => handleScaleDown(flow, request, l) }, log);
    assert.deepEqual(summary.scaleDowns, { asked: 1, stepped: 1 });
    assert.deepEqual(podMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } }, "the running Pod resized down in place");
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } }, "the template is unchanged");
    assert.equal(deployment(cluster)?.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], "memhog=384Mi>384Mi/256Mi>256Mi", "new Pods get the lowered memory");
    assert.ok(reasons(cluster).includes("ScaledDown"));
    assert.equal(status(cluster)?.rollouts?.[0]?.inPlace?.pods[0]?.name, POD, "the resize followed to its end");
  });
});
