// memory-scaler's flow (functions/memory-scaler/scale/flow.ts) against an in-memory cluster
// that applies JSON Patches all-or-nothing like the API server, including `test` operations:
// concurrent deliveries, lost races, admission refusals and an unavailable API server, without
// a cluster. The same behaviours run against a real API server in
// test/integration/memory-scaler*.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import type { AlertEventData } from "../../../../functions/lib/alert-event.ts";
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../../../../functions/lib/appmonitor.ts";
import { HttpError } from "../../../../functions/lib/runtime/errors.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { createStatusWriter } from "../../../../functions/memory-scaler/kube/status-writer.ts";
import {
  alertData as data,
  apiError,
  editPod,
  FakeCluster,
  fakeVerifier,
  flowDeps as deps,
  memhogCluster,
  NS,
  ownedByJob,
  unannotateTemplate,
} from "../../../support/memory-scaler-fakes.ts";
import { NODE_VIEW_REFUSAL_AGE_MS } from "../../../../functions/memory-scaler/kube/node-memory.ts";

const silent = pino({ level: "silent" });

function templateMemory(cluster: FakeCluster, kind = "Deployment", name = "memhog"): unknown {
  return cluster.workloads.get(`${kind}/${NS}/${name}`)?.spec?.template?.spec?.containers[0]?.resources;
}

/**
 * Replaces the memhog Pod spec in the Deployment's and ReplicaSet's templates and in the live
 * Pod, as a Deployment created with `spec` would have them.
 */
function setPodSpec(cluster: FakeCluster, spec: k8s.V1PodSpec): void {
  for (const key of [`Deployment/${NS}/memhog`, `ReplicaSet/${NS}/memhog-5d8f`]) {
    const workload = cluster.workloads.get(key);
    const template = workload?.spec?.template;
    if (workload === undefined || template === undefined) throw new Error(`no ${key}`);
    cluster.workloads.set(key, { ...workload, spec: { ...workload.spec, template: { ...template, spec: structuredClone(spec) } } });
  }
  const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
  if (pod === undefined) throw new Error("no memhog Pod");
  cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, spec: structuredClone(spec) });
}

/** Adds an AppMonitor to the namespace of {@link memhogCluster}. */
function addAppMonitor(cluster: FakeCluster, name: string, spec: Record<string, unknown>): void {
  cluster.appMonitors.set(`${NS}/${name}`, { apiVersion: "kubedemo.com/v1", kind: "AppMonitor", metadata: { name, namespace: NS, uid: `uid-${name}`, resourceVersion: "1" }, spec });
}

/** The note of the PodsReplaced Warning on the memhog Deployment (one replica, no emptyDir). */
const MEMHOG_REPLACED =
  "the rollout of this scale replaces (restarts) its Pods, and what they hold in memory and in emptyDir volumes is lost: Deployment memhog has a single replica, so no other Pod holds what its Pod holds. " +
  "spec.updateMode: InPlace (or InPlaceOrRollout) on the AppMonitor resizes the running Pods instead, without replacing them";

/** A Knative Revision's controller reference. */
const webApp: k8s.V1OwnerReference = { apiVersion: "operators.example.com/v1", kind: "WebApp", name: "shop", uid: "op1", controller: true, blockOwnerDeletion: true };

/** Gives the memhog Deployment the controller `owner`, as Knative gives a Revision's Deployment. */
function controlledBy(cluster: FakeCluster, owner: k8s.V1OwnerReference): void {
  const deployment = cluster.workloads.get(`Deployment/${NS}/memhog`);
  if (deployment?.metadata === undefined) throw new Error("no memhog Deployment");
  deployment.metadata.ownerReferences = [owner];
}

const memhogContainer = (resources: k8s.V1ResourceRequirements): k8s.V1Container => ({ name: "memhog", image: "quay.io/metral/memhog:v0.0.1", resources });

describe("handleFiring", () => {
  describe("an OOM-kill alert that arrives before the kubelet has written the kill to the Pod's status", () => {
    const oom = () => data({ alertname: "AppMonitorOOMKilled", trigger: "oomKilled", labels: { alertname: "AppMonitorOOMKilled", namespace: NS, pod: "memhog-5d8f-x2", container: "memhog", appmonitor: "mymonitor" } });
    /** The memhog Pod's status: running, and OOM-killed at `killedAt` before that when given. */
    const memhogStatus = (cluster: FakeCluster, killedAt?: string): void => {
      const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
      assert.ok(pod);
      const lastState = killedAt === undefined ? {} : { lastState: { terminated: { reason: "OOMKilled", exitCode: 137, startedAt: new Date(Date.parse(killedAt) - 60_000), finishedAt: new Date(killedAt) } } };
      pod.status = { containerStatuses: [{ name: "memhog", image: "i", imageID: "", ready: true, restartCount: killedAt === undefined ? 0 : 1, state: { running: {} }, ...lastState }] };
    };

    it("reads the Pod again after each wait of the trigger, and scales once the status shows the kill", async () => {
      const cluster = memhogCluster();
      memhogStatus(cluster);
      const waits: number[] = [];
      const outcome = await handleFiring(deps(cluster, { wait: async (ms) => {
        waits.push(ms);
        if (waits.length === 2) memhogStatus(cluster, "2025-06-01T11:59:58Z");
      } }), "e1", oom(), silent);
      assert.deepEqual([outcome.outcome, outcome.reason, outcome.attempts], ["scaled", "Scaled", 3]);
      assert.deepEqual(waits, [2_000, 3_000]);
      assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    });

    it("answers NotOOMKilled after the last wait when the status never shows it (a child process killed, the container running on), having written nothing before", async () => {
      const cluster = memhogCluster();
      memhogStatus(cluster);
      const waits: number[] = [];
      const outcome = await handleFiring(deps(cluster, { wait: async (ms) => {
        waits.push(ms);
        assert.equal(cluster.events.length, 0, "nothing written while waiting");
      } }), "e1", oom(), silent);
      assert.deepEqual([outcome.outcome, outcome.reason, outcome.attempts], ["skipped", "NotOOMKilled", 4]);
      assert.match(outcome.message, /container memhog was not OOM-killed in the last \d+s: it has not terminated/);
      assert.deepEqual(waits, [2_000, 3_000, 5_000]);
      assert.deepEqual(templateMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
    });

    it("a threshold alert's skip is not read again: its evidence is Prometheus', asked now", async () => {
      const cluster = memhogCluster();
      const waits: number[] = [];
      const outcome = await handleFiring(deps(cluster, { verifier: fakeVerifier({ workingSets: new Map([["memhog", 100 * 2 ** 20]]) }), wait: async (ms) => void waits.push(ms) }), "e1", data(), silent);
      assert.deepEqual([outcome.outcome, outcome.reason, waits], ["skipped", "BelowThreshold", []]);
    });
  });

  it("skips an alert from a namespace outside WATCH_NAMESPACES as NamespaceNotWatched, reading and writing nothing", async () => {
    const cluster = memhogCluster();
    const outcome = await handleFiring(deps(cluster, { scope: { all: false, namespaces: ["elsewhere"] } }), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason, outcome.attempts], ["skipped", "NamespaceNotWatched", 0]);
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(cluster.events, []);
    const served = await handleFiring(deps(cluster, { scope: { all: false, namespaces: [NS] } }), "e1", data(), silent);
    assert.equal(served.outcome, "scaled", "its own namespace is served");
  });

  it("scales the original demo once: 384Mi/256Mi → 768Mi/512Mi, Events, status", async () => {
    const cluster = memhogCluster();
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.outcome, "scaled");
    assert.deepEqual(outcome.workload, { kind: "Deployment", name: "memhog" });
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.equal(cluster.writes.length, 1);
    assert.equal(cluster.dryRuns, 1, "the patch was dry-run first");
    assert.equal(cluster.workloads.get(`Deployment/${NS}/memhog`)?.metadata?.annotations?.[LAST_SCALE_ANNOTATION], "2025-06-01T12:00:00Z");
    // memhog has one replica: its rollout replaces its only Pod, which PodsReplaced says.
    assert.deepEqual(cluster.events.map((e) => [e.reason, e.regarding?.kind]).sort(), [["PodsReplaced", "AppMonitor"], ["PodsReplaced", "Deployment"], ["Scaled", "AppMonitor"], ["Scaled", "Deployment"]]);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount: number; lastScaleTime: string; recentScales: unknown[] };
    assert.equal(status.scaleCount, 1);
    assert.equal(status.lastScaleTime, "2025-06-01T12:00:00Z");
    assert.deepEqual(status.recentScales, [{ time: "2025-06-01T12:00:00Z", workload: { kind: "Deployment", name: "memhog" }, event: "e1", container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }]);
  });

  it("the install's ceilings hold an AppMonitor that asks for more: the scale, its Events, its record and lastOutcome say which bound held", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 10, maxMemory: "16Gi", cooldownSeconds: 0 });
    const ceilings = { maxMemMultiplier: 2, maxMemory: "640Mi", minCooldownSeconds: 600 };
    const outcome = await handleFiring(deps(cluster, { ceilings }), "e1", data(), silent);
    assert.equal(outcome.outcome, "scaled");
    // 384Mi × 2 (not × 10) = 768Mi, capped at 640Mi (not 16Gi); the request keeps the ratio.
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "640Mi" }, requests: { memory: "447392427" } });
    const bounds = "; the multiplier is the install's ceiling MAX_MEM_MULTIPLIER 2 over spec.memMultiplier 10; memhog capped by the install's ceiling MAX_MEMORY 640Mi (over spec.maxMemory 16Gi)";
    assert.ok(outcome.message.endsWith(bounds), outcome.message);
    assert.ok(outcome.message.startsWith("scaled Deployment memhog by 2: "), outcome.message);
    const scaled = cluster.events.filter((e) => e.reason === "Scaled").map((e) => e.note);
    assert.equal(scaled.length, 2);
    for (const note of scaled) assert.ok(note?.endsWith(bounds), note);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { lastOutcome?: { message?: string } } | undefined;
    assert.ok(status?.lastOutcome?.message?.endsWith(bounds), status?.lastOutcome?.message);
    const record = JSON.parse(cluster.workloads.get(`Deployment/${NS}/memhog`)?.metadata?.annotations?.[LAST_SCALE_RECORD_ANNOTATION] ?? "{}") as { multiplier?: number };
    assert.equal(record.multiplier, 2, "the record holds the multiplier applied");

    // The next alert: the ceiling's cooldown (600 s), not the spec's 0, and then the ceiling's cap.
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    const template = cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template;
    if (pod === undefined || template?.spec === undefined) throw new Error("no memhog");
    cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, spec: structuredClone(template.spec) });
    const again = await handleFiring(deps(cluster, { ceilings }), "e2", data(), silent);
    assert.deepEqual([again.outcome, again.reason], ["skipped", "Cooldown"]);
    assert.match(again.message, /cooldown of 600s \(the install's ceiling MIN_COOLDOWN_SECONDS 600 over spec\.cooldownSeconds 0\) has 600s left/);
    const later = await handleFiring(deps(cluster, { ceilings, now: () => new Date("2025-06-01T12:11:00Z") }), "e3", data(), silent);
    assert.deepEqual([later.outcome, later.reason], ["skipped", "AtCap"]);
    assert.match(later.message, /already at the install's ceiling MAX_MEMORY 640Mi \(over spec\.maxMemory 16Gi\)/);
  });

  it("50 concurrent deliveries of one event scale once, never ×4", async () => {
    // cooldown 0: the losers must be stopped by the compare-and-swap and RolloutUnderWay, not by the cooldown.
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0 });
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => handleFiring(deps(cluster), "e1", data(), silent)));
    assert.equal(cluster.writes.length, 1);
    assert.equal(outcomes.filter((o) => o.outcome === "scaled").length, 1);
    assert.ok(outcomes.every((o) => o.outcome === "scaled" || o.reason === "RolloutUnderWay"), JSON.stringify(outcomes.map((o) => o.reason)));
    assert.ok(outcomes.some((o) => o.attempts > 1), "some deliveries lost the race and decided again");
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.equal(cluster.events.length, 4, "one Event per object and reason (Scaled, PodsReplaced), not one per delivery");
    assert.equal((cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount: number }).scaleCount, 1, "counted once, though later rounds saw the record");
  });

  it("status and Event writes failing after the patch: the re-delivered event and a cooldown skip record the scale once", async () => {
    const cluster = memhogCluster();
    const down = apiError(503, "etcdserver: request timed out");
    cluster.replaceAppMonitorStatus = () => Promise.reject(down);
    cluster.createEvent = () => Promise.reject(down);
    const first = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(first.outcome, "scaled");
    assert.equal(first.warnings?.length, 5, JSON.stringify(first.warnings));
    assert.equal(cluster.appMonitors.get(`${NS}/mymonitor`)?.status, undefined);
    const record = JSON.parse(cluster.workloads.get(`Deployment/${NS}/memhog`)?.metadata?.annotations?.[LAST_SCALE_RECORD_ANNOTATION] ?? "{}") as unknown;
    assert.deepEqual(record, {
      time: "2025-06-01T12:00:00Z",
      appmonitor: "mymonitor",
      event: "e1",
      multiplier: 2,
      changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
      // The memory before the first scale: a down-step's floor (spec.scaleDown).
      original: { memhog: { request: "256Mi", limit: "384Mi" } },
    });

    delete (cluster as Partial<FakeCluster>).replaceAppMonitorStatus;
    delete (cluster as Partial<FakeCluster>).createEvent;
    const later = deps(cluster, { now: () => new Date("2025-06-01T12:01:00Z") });
    const again = await handleFiring(later, "e1", data(), silent);
    assert.equal(again.reason, "Cooldown");
    assert.equal(again.warnings, undefined);
    const other = await handleFiring(later, "e2", data(), silent);
    assert.equal(other.reason, "Cooldown");
    assert.equal(cluster.writes.length, 1);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount: number; lastScaleTime: string; recentScales: unknown[] };
    assert.equal(status.scaleCount, 1);
    assert.equal(status.lastScaleTime, "2025-06-01T12:00:00Z");
    assert.deepEqual(status.recentScales, [{ time: "2025-06-01T12:00:00Z", workload: { kind: "Deployment", name: "memhog" }, event: "e1", container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }]);
    assert.deepEqual((status as { rollouts?: unknown }).rollouts, [{ workload: { kind: "Deployment", name: "memhog" }, generation: 2, startedAt: "2025-06-01T12:00:00Z", event: "e1" }], "its rollout is followed too");
    assert.deepEqual(cluster.events.map((e) => [e.reason, e.regarding?.kind, e.note]).sort().slice(2), [
      ["PodsReplaced", "AppMonitor", `Deployment memhog: ${MEMHOG_REPLACED}`],
      ["PodsReplaced", "Deployment", MEMHOG_REPLACED],
      ["Scaled", "AppMonitor", "scaled Deployment memhog by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; the rollout replaces (restarts) its Pods"],
      ["Scaled", "Deployment", "scaled Deployment memhog by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; the rollout replaces (restarts) its Pods"],
    ]);
  });

  it("a status write that failed only in the answer (it landed): the next event does not count the scale again", async () => {
    const cluster = memhogCluster();
    const real = cluster.replaceAppMonitorStatus.bind(cluster);
    cluster.replaceAppMonitorStatus = async (...args) => {
      await real(...args);
      throw apiError(503, "the answer was lost");
    };
    await handleFiring(deps(cluster), "e1", data(), silent);
    delete (cluster as Partial<FakeCluster>).replaceAppMonitorStatus;
    await handleFiring(deps(cluster, { now: () => new Date("2025-06-01T12:01:00Z") }), "e1", data(), silent);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount: number; recentScales: unknown[] };
    assert.equal(status.scaleCount, 1);
    assert.equal(status.recentScales.length, 1);
  });

  it("an admission refusal of the scaled Pod: no write, a Warning with the API server's message", async () => {
    const cluster = memhogCluster();
    cluster.podRefusal = apiError(403, 'pods "memhog-abcde" is forbidden: maximum memory usage per Container is 512Mi, but limit is 768Mi');
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.outcome, "skipped");
    assert.equal(outcome.reason, "AdmissionRefused");
    assert.match(outcome.message, /maximum memory usage per Container is 512Mi/);
    assert.equal(cluster.writes.length, 0);
    assert.ok(cluster.events.every((e) => e.type === "Warning" && e.reason === "AdmissionRefused" && /512Mi/.test(e.note ?? "")));
    assert.equal(cluster.events.length, 2);
  });

  it("a scaled Pod no Node can hold: Unschedulable, no write, Warnings naming the request and the largest allocatable", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 1.5, maxMemory: "1Ti" });
    setPodSpec(cluster, { containers: [memhogContainer({ limits: { memory: "200Gi" }, requests: { memory: "200Gi" } })] });
    cluster.nodeMemory = ["256Gi", "128Gi"];
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "Unschedulable"]);
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "200Gi" }, requests: { memory: "200Gi" } });
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [["Warning", "Unschedulable", "AppMonitor"], ["Warning", "Unschedulable", "Deployment"]]);
    for (const e of cluster.events) assert.match(e.note ?? "", /limit 200Gi → 300Gi.*request 300Gi of memory, more than any Node can allocate \(the largest allocatable is 256Gi\)/);
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as Record<string, unknown> | undefined;
    assert.deepEqual(Object.keys(status ?? {}), ["lastOutcome"], "nothing recorded as scaled");
    assert.equal((status?.lastOutcome as { reason?: string } | undefined)?.reason, "Unschedulable");
  });

  it("a view of the Nodes that would refuse is read again first: a larger Node that joined since lets the scale through", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 1.5, maxMemory: "1Ti" });
    setPodSpec(cluster, { containers: [memhogContainer({ limits: { memory: "200Gi" }, requests: { memory: "200Gi" } })] });
    // The shared view (older than the refusal age) still has the small Nodes; a fresh read has the new one.
    const asked: (number | undefined)[] = [];
    cluster.listNodeAllocatableMemory = async (fresherThanMs?: number) => {
      asked.push(fresherThanMs);
      return fresherThanMs === undefined ? ["256Gi", "128Gi"] : ["256Gi", "128Gi", "512Gi"];
    };
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"], outcome.message);
    assert.deepEqual(asked, [undefined, NODE_VIEW_REFUSAL_AGE_MS]);
    assert.equal(cluster.writes.length, 1);
  });

  it("the Node list forbidden (RBAC of an older install) or empty: the scale goes on, with a warning", async () => {
    for (const setup of [(c: FakeCluster) => (c.nodeListFailure = apiError(403, 'nodes is forbidden: User "system:serviceaccount:appmonitor:memory-scaler" cannot list resource "nodes" in API group "" at the cluster scope')), (c: FakeCluster) => (c.nodeMemory = [])]) {
      const cluster = memhogCluster();
      setup(cluster);
      const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
      assert.equal(outcome.outcome, "scaled", outcome.message);
      assert.equal(cluster.writes.length, 1);
      assert.equal(outcome.warnings?.length, 1, JSON.stringify(outcome.warnings));
      assert.match(outcome.warnings?.[0] ?? "", /scaling anyway/);
    }
  });

  /** memhogCluster's objects as a StatefulSet `db` with `updateStrategy`, its Pod `db-0` on revision `db-5d8f`. */
  function statefulSetCluster(updateStrategy: string, spec?: Record<string, unknown>): FakeCluster {
    const cluster = memhogCluster(spec);
    const template = cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template;
    cluster.workloads.clear();
    cluster.pods.clear();
    cluster.workloads.set(`StatefulSet/${NS}/db`, { metadata: { name: "db", namespace: NS, uid: "s1" }, spec: { template, replicas: 2, updateStrategy: { type: updateStrategy } }, status: { updateRevision: "db-5d8f" } });
    cluster.pods.set(`${NS}/db-0`, {
      metadata: { name: "db-0", namespace: NS, uid: "p0", labels: { "controller-revision-hash": "db-5d8f" }, ownerReferences: [{ apiVersion: "apps/v1", kind: "StatefulSet", name: "db", uid: "s1", controller: true }] },
      spec: structuredClone(template?.spec),
    });
    return cluster;
  }

  it("a StatefulSet with updateStrategy OnDelete: patched, and Warnings that no Pod has the new memory until deleted", async () => {
    const cluster = statefulSetCluster("OnDelete");
    const outcome = await handleFiring(deps(cluster), "e1", data({ pod: "db-0" }), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"]);
    assert.equal(cluster.writes.length, 1);
    assert.deepEqual(templateMemory(cluster, "StatefulSet", "db"), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.match(outcome.message, /updateStrategy is OnDelete: .*Pod db-0 \(the alerting one\) and the 1 other Pod of StatefulSet db still run the old template; delete the Pods to apply it/);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [
      ["Normal", "Scaled", "AppMonitor"],
      ["Normal", "Scaled", "StatefulSet"],
      ["Warning", "PodsReplaced", "AppMonitor"],
      ["Warning", "PodsReplaced", "StatefulSet"],
      ["Warning", "RolloutWaitsForDelete", "AppMonitor"],
      ["Warning", "RolloutWaitsForDelete", "StatefulSet"],
    ]);

    // The controller records the new revision; db-0 is not replaced (OnDelete) and alerts again,
    // within the cooldown and after it: both say to delete it, neither is a Cooldown or RolloutUnderWay.
    const sts = cluster.workloads.get(`StatefulSet/${NS}/db`);
    if (sts !== undefined) sts.status = { updateRevision: "db-7c9a" };
    for (const now of ["2025-06-01T12:01:00Z", "2025-06-01T13:00:00Z"]) {
      const later = await handleFiring(deps(cluster, { now: () => new Date(now) }), "e2", data({ pod: "db-0" }), silent);
      assert.deepEqual([later.outcome, later.reason], ["skipped", "RolloutWaitsForDelete"], now);
      assert.match(later.message, /StatefulSet db has updateStrategy OnDelete: Pod db-0 still runs the old template \(revision db-5d8f; the template's is db-7c9a\) \(memhog: limit 384Mi, the template's 768Mi\).*delete Pod db-0/);
    }
    assert.equal(cluster.writes.length, 1);
  });

  it("a StatefulSet with RollingUpdate: no OnDelete Warning; a later alert of the old Pod is RolloutUnderWay", async () => {
    const cluster = statefulSetCluster("RollingUpdate", { memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0 });
    const outcome = await handleFiring(deps(cluster), "e1", data({ pod: "db-0" }), silent);
    assert.equal(outcome.outcome, "scaled");
    // A StatefulSet's Pods keep state: PodsReplaced beside Scaled, and no RolloutWaitsForDelete.
    assert.deepEqual(cluster.events.map((e) => e.reason).sort(), ["PodsReplaced", "PodsReplaced", "Scaled", "Scaled"]);
    assert.equal((await handleFiring(deps(cluster), "e2", data({ pod: "db-0" }), silent)).reason, "RolloutUnderWay");
  });

  it("at the cap, alert after alert: one AtCap Warning per object per window (the cooldown, at least an hour)", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi", cooldownSeconds: 300 });
    const at = (time: string) => deps(cluster, { now: () => new Date(time) });
    const warnings = () => cluster.events.filter((e) => e.type === "Warning" && e.reason === "AtCap").map((e) => e.regarding?.kind).sort();
    for (const [id, time] of [["e1", "2025-06-01T12:00:10Z"], ["e2", "2025-06-01T12:20:00Z"], ["e3", "2025-06-01T12:59:59Z"]] as const) {
      assert.equal((await handleFiring(at(time), id, data(), silent)).reason, "AtCap");
    }
    assert.deepEqual(warnings(), ["AppMonitor", "Deployment"], "three alerts in one window: one Warning on each");
    assert.match(cluster.events[0]?.note ?? "", /already at spec.maxMemory 384Mi \(this Warning is written at most once every 3600s\)/);
    assert.equal((await handleFiring(at("2025-06-01T13:00:00Z"), "e4", data(), silent)).reason, "AtCap");
    assert.deepEqual(warnings(), ["AppMonitor", "AppMonitor", "Deployment", "Deployment"], "the next window: one more on each");
    assert.equal(cluster.writes.length, 0);

    const uncooled = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi", cooldownSeconds: 0 });
    await handleFiring(deps(uncooled), "e1", data(), silent);
    await handleFiring(deps(uncooled), "e2", data(), silent);
    assert.equal(uncooled.events.length, 4, "cooldownSeconds 0: one pair per alert, as asked");
  });

  it("an unavailable API server: 503 and nothing written", async () => {
    const cluster = memhogCluster();
    cluster.down = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6443"), { code: "ECONNREFUSED" });
    await assert.rejects(handleFiring(deps(cluster), "e1", data(), silent), (error: unknown) => error instanceof HttpError && error.status === 503);
    assert.equal(cluster.writes.length, 0);
  });

  it("a workload that keeps changing: 503 after the allowed rounds", async () => {
    const cluster = memhogCluster();
    // Every real write loses: another writer changes the template right before it.
    const original = cluster.patchWorkload.bind(cluster);
    cluster.patchWorkload = async (kind, namespace, name, patch, dryRun) => {
      if (!dryRun) throw apiError(422, "testing value /spec/template/spec/containers/0/resources/limits/memory failed: test failed");
      return original(kind, namespace, name, patch, dryRun);
    };
    let conflicts = 0;
    await assert.rejects(handleFiring(deps(cluster, { maxAttempts: 3, onConflict: () => (conflicts += 1) }), "e1", data(), silent), (error: unknown) => error instanceof HttpError && error.status === 503);
    assert.equal(conflicts, 3);
  });

  it("Prometheus below the threshold: skipped; unavailable: 503", async () => {
    const mi = 1024 * 1024;
    const below = fakeVerifier({ workingSets: new Map([["memhog", 100 * mi]]) });
    const cluster = memhogCluster();
    const outcome = await handleFiring(deps(cluster, { verifier: below }), "e1", data(), silent);
    assert.equal(outcome.reason, "BelowThreshold");
    assert.equal(cluster.writes.length, 0);
    const down = fakeVerifier({ workingSets: new HttpError(503, "Prometheus unavailable") });
    await assert.rejects(handleFiring(deps(cluster, { verifier: down }), "e1", data(), silent), (error: unknown) => error instanceof HttpError && error.status === 503);
    const above = fakeVerifier({ workingSets: new Map([["memhog", 300 * mi]]) });
    assert.equal((await handleFiring(deps(cluster, { verifier: above }), "e1", data(), silent)).outcome, "scaled");
  });

  const skips: { name: string; setup: (c: FakeCluster) => void; input?: Partial<AlertEventData>; reason: string; warns?: string }[] = [
    { name: "an alert without the appmonitor label", setup: () => {}, input: { appmonitor: undefined }, reason: "NotAppMonitorAlert" },
    { name: "another rule's alert", setup: () => {}, input: { alertname: "KubeMemoryOvercommit" }, reason: "NotAppMonitorAlert" },
    {
      name: "a kube-state-metrics alert scraped without honor_labels, naming a covered Pod's namespace",
      setup: () => {},
      input: { alertname: "KubePodNotReady", appmonitor: undefined, labels: { alertname: "KubePodNotReady", namespace: NS, pod: "memhog-5d8f-x2", exported_namespace: "shop", exported_pod: "cart-0" } },
      reason: "NotAppMonitorAlert",
    },
    { name: "a Pod that is gone", setup: (c) => c.pods.clear(), reason: "PodGone" },
    { name: "a namespace without AppMonitor", setup: (c) => c.appMonitors.clear(), reason: "NoAppMonitor", warns: "Pod" },
    { name: "an alert naming an AppMonitor deleted since", setup: () => {}, input: { appmonitor: "deleted" }, reason: "NoAppMonitor", warns: "Pod" },
    {
      name: "an alert of an AppMonitor that selects other Pods, while another covers these",
      setup: (c) => {
        unannotateTemplate(c);
        c.appMonitors.clear();
        addAppMonitor(c, "db-mon", { memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { name: "db" } } });
        addAppMonitor(c, "memhog-mon", { memThresholdPercent: 90, memMultiplier: 2, selector: { matchLabels: { name: "memhog" } } });
      },
      input: { appmonitor: "db-mon" },
      reason: "AppMonitorNotGoverning",
    },
    {
      name: "an ordinary init container",
      setup: (c) => setPodSpec(c, { containers: [memhogContainer({ limits: { memory: "384Mi" } })], initContainers: [{ name: "migrate", image: "m", resources: { limits: { memory: "256Mi" } } }] }),
      input: { container: "migrate" },
      reason: "InitContainer",
    },
    {
      name: "a limit only a LimitRange default set on the Pod",
      setup: (c) => {
        setPodSpec(c, { containers: [memhogContainer({})] });
        // The LimitRanger admission plugin set the default on the Pod only.
        const pod = c.pods.get(`${NS}/memhog-5d8f-x2`);
        if (pod?.spec) pod.spec.containers = [memhogContainer({ limits: { memory: "384Mi" }, requests: { memory: "384Mi" } })];
      },
      reason: "LimitNotInTemplate",
      warns: "Deployment",
    },
    { name: "a Deployment whose Pod template is not annotated", setup: (c) => unannotateTemplate(c), reason: "NotCovered", warns: "Deployment" },
    { name: "a Pod owned by a Job", setup: ownedByJob, reason: "UnsupportedOwner", warns: "Pod" },
    { name: "a Deployment an operator's resource controls", setup: (c) => controlledBy(c, webApp), reason: "UnknownController", warns: "Deployment" },
    { name: "an owner deleted meanwhile", setup: (c) => c.workloads.delete(`Deployment/${NS}/memhog`), reason: "OwnerGone" },
    {
      name: "a limit at maxMemory",
      setup: (c) => {
        const am = c.appMonitors.get(`${NS}/mymonitor`);
        if (am) am.spec = { memThresholdPercent: 75, memMultiplier: 2, maxMemory: "384Mi" };
      },
      reason: "AtCap",
      warns: "Deployment",
    },
  ];
  for (const c of skips) {
    it(`skips ${c.name} (${c.reason}) and writes nothing`, async () => {
      const cluster = memhogCluster();
      c.setup(cluster);
      const outcome = await handleFiring(deps(cluster), "e1", data(c.input), silent);
      assert.equal(outcome.outcome, "skipped");
      assert.equal(outcome.reason, c.reason);
      assert.equal(cluster.writes.length, 0);
      if (c.warns === undefined) assert.equal(cluster.events.length, 0);
      else assert.ok(cluster.events.some((e) => e.type === "Warning" && e.reason === c.reason && e.regarding?.kind === c.warns), JSON.stringify(cluster.events));
    });
  }

  it("an alert no AppMonitor rule raised is skipped before anything is read", async () => {
    const cluster = memhogCluster();
    cluster.down = new Error("must not be called");
    const outcome = await handleFiring(deps(cluster), "e1", data({ alertname: "KubePodNotReady", appmonitor: undefined, namespace: "monitoring", pod: "kube-state-metrics-6f7d9c4b8-q2x7l", labels: { exported_namespace: NS, exported_pod: "memhog-5d8f-x2" } }), silent);
    assert.deepEqual([outcome.outcome, outcome.reason, outcome.attempts], ["skipped", "NotAppMonitorAlert", 0]);
    assert.match(outcome.message, /honor_labels: true/);
  });

  it("the AppMonitor that covers the Pod scales it on its own alert, with its own spec", async () => {
    const cluster = memhogCluster();
    unannotateTemplate(cluster);
    cluster.appMonitors.clear();
    addAppMonitor(cluster, "db-mon", { memThresholdPercent: 75, memMultiplier: 3, selector: { matchLabels: { name: "db" } } });
    addAppMonitor(cluster, "memhog-mon", { memThresholdPercent: 90, memMultiplier: 2, selector: { matchLabels: { name: "memhog" } } });
    const outcome = await handleFiring(deps(cluster), "e1", data({ appmonitor: "memhog-mon" }), silent);
    assert.equal(outcome.outcome, "scaled");
    assert.equal(outcome.appmonitor, "memhog-mon");
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
  });

  it("a limit that is not in the Pod template: Warnings on the workload and the AppMonitor that say to set it there", async () => {
    const cluster = memhogCluster();
    setPodSpec(cluster, { containers: [memhogContainer({})] });
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    if (pod?.spec) pod.spec.containers = [memhogContainer({ limits: { memory: "384Mi" }, requests: { memory: "384Mi" } })];
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.reason, "LimitNotInTemplate");
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [["Warning", "LimitNotInTemplate", "AppMonitor"], ["Warning", "LimitNotInTemplate", "Deployment"]]);
    for (const e of cluster.events) assert.match(e.note ?? "", /memory limit 384Mi is not in the workload's Pod template .*set the limit in the Pod template to let appmonitor scale it/);
    assert.equal(cluster.writes.length, 0);
  });

  it("a native sidecar the alert names is scaled in initContainers", async () => {
    const cluster = memhogCluster();
    const proxy: k8s.V1Container = { name: "proxy", image: "p", restartPolicy: "Always", resources: { limits: { memory: "64Mi" }, requests: { memory: "32Mi" } } };
    setPodSpec(cluster, { containers: [memhogContainer({ limits: { memory: "384Mi" }, requests: { memory: "256Mi" } })], initContainers: [{ name: "migrate", image: "m" }, proxy] });
    const outcome = await handleFiring(deps(cluster), "e1", data({ container: "proxy" }), silent);
    assert.equal(outcome.outcome, "scaled", outcome.message);
    const spec = cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template?.spec;
    assert.deepEqual(spec?.initContainers?.[1]?.resources, { limits: { memory: "128Mi" }, requests: { memory: "64Mi" } });
    assert.deepEqual(spec?.containers[0]?.resources, { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
    assert.deepEqual(cluster.writes[0]?.patch.filter((op) => op.op === "replace").map((op) => op.path), [
      "/spec/template/spec/initContainers/1/resources/limits/memory",
      "/spec/template/spec/initContainers/1/resources/requests/memory",
    ]);
  });

  it("a Pod annotated by hand whose template is not: NotCovered, nothing written", async () => {
    const cluster = memhogCluster();
    unannotateTemplate(cluster);
    // The Pod still carries the annotation, as `kubectl annotate pod` leaves it.
    assert.equal(cluster.pods.get(`${NS}/memhog-5d8f-x2`)?.metadata?.annotations?.["app-monitor.kubedemo.com/monitor"], "true");
    const outcome = await handleFiring(deps(cluster), "e1", data({ appmonitor: "mymonitor" }), silent);
    assert.equal(outcome.outcome, "skipped");
    assert.equal(outcome.reason, "NotCovered");
    assert.match(outcome.message, /Deployment memhog: its Pod template lacks the annotation/);
    assert.deepEqual(outcome.workload, { kind: "Deployment", name: "memhog" });
    assert.equal(outcome.appmonitor, undefined);
    assert.equal(cluster.writes.length, 0);
    assert.equal(cluster.dryRuns, 0);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]).sort(), [["Warning", "NotCovered", "AppMonitor"], ["Warning", "NotCovered", "Deployment"]]);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
  });

  it("a selector that matches only a label added by hand to the live Pod: NotCovered", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { tier: "hot" } } });
    unannotateTemplate(cluster);
    editPod(cluster, (meta) => ({ ...meta, labels: { ...meta.labels, tier: "hot" } }));
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.reason, "NotCovered");
    assert.equal(cluster.writes.length, 0);
  });

  it("the Deployment's template counts, not the ReplicaSet's older copy", async () => {
    // The ReplicaSet and its Pod still carry the annotation the Deployment's template dropped.
    const cluster = memhogCluster();
    unannotateTemplate(cluster);
    assert.equal(cluster.workloads.get(`ReplicaSet/${NS}/memhog-5d8f`)?.spec?.template?.metadata?.annotations?.["app-monitor.kubedemo.com/monitor"], "true");
    assert.equal((await handleFiring(deps(cluster), "e1", data(), silent)).reason, "NotCovered");
  });

  it("a covered template scales even when its live Pod lost the annotation by hand", async () => {
    const cluster = memhogCluster();
    editPod(cluster, (meta) => ({ ...meta, annotations: {} }));
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.outcome, "scaled");
    assert.equal(outcome.appmonitor, "mymonitor");
  });

  it("a selector matching the template's labels scales an unannotated template", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, selector: { matchLabels: { name: "memhog" } } });
    unannotateTemplate(cluster);
    editPod(cluster, (meta) => ({ ...meta, annotations: {} }));
    assert.equal((await handleFiring(deps(cluster), "e1", data(), silent)).outcome, "scaled");
  });

  it("a workload another controller owns is never written, in any updateMode: Warnings and status.lastOutcome name that controller and the workload", async () => {
    for (const updateMode of ["Rollout", "InPlace", "InPlaceOrRollout"]) {
      const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, updateMode });
      controlledBy(cluster, webApp);
      const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
      assert.deepEqual([outcome.outcome, outcome.reason, outcome.workload], ["skipped", "UnknownController", { kind: "Deployment", name: "memhog" }], updateMode);
      assert.deepEqual([cluster.writes.length, cluster.resizes.length, cluster.resizeDryRuns, cluster.dryRuns], [0, 0, 0, 0], `${updateMode}: nothing written, nothing even dry-run`);
      assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind, e.related?.kind]).sort(), [["Warning", "UnknownController", "AppMonitor", "Deployment"], ["Warning", "UnknownController", "Deployment", "AppMonitor"]]);
      for (const e of cluster.events) assert.match(e.note ?? "", /WebApp shop \(operators\.example\.com\/v1\) controls: .*change the memory in WebApp shop/);
      const last = (cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { lastOutcome?: Record<string, unknown> } | undefined)?.lastOutcome;
      assert.deepEqual([last?.reason, last?.workload], ["UnknownController", { kind: "Deployment", name: "memhog" }]);
      assert.match(String(last?.message), /WebApp shop \(operators\.example\.com\/v1\)/);
    }
  });

  it("a bare Pod is not UnsupportedOwner: resized in place when its own annotation opts it in, else NotCovered (test/unit/memory-scaler/scale/pod-resize-target.test.ts)", async () => {
    const cases: [Record<string, string>, string][] = [[{ "app-monitor.kubedemo.com/monitor": "true" }, "Resized"], [{}, "NotCovered"]];
    for (const [annotations, reason] of cases) {
      const cluster = memhogCluster();
      editPod(cluster, (meta) => ({ ...meta, annotations, ownerReferences: [] }));
      const outcome = await handleFiring(deps(cluster), "e1", data({ appmonitor: "mymonitor" }), silent);
      assert.equal(outcome.reason, reason);
      assert.equal(cluster.writes.length, 0, "no workload patched");
      assert.equal(cluster.events.some((e) => e.reason === "UnsupportedOwner"), false);
    }
  });

  it("DryRun: the write's dry runs, Events and a dryRun status entry, no write", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, mode: "DryRun" });
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.outcome, "dry-run");
    assert.equal(cluster.writes.length, 0);
    assert.ok(cluster.dryRuns > 0, "the patch and the Pod dry-run as a scale's would be");
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount: number; recentScales: { dryRun?: boolean }[] };
    assert.equal(status.scaleCount, 0);
    assert.equal(status.recentScales[0]?.dryRun, true);
    assert.ok(cluster.events.every((e) => e.reason === "DryRun" && e.type === "Normal"));
  });
});

describe("status writer", () => {
  it("coalesces concurrent entries and recovers from a stale listed object", async () => {
    const cluster = memhogCluster();
    let replaces = 0;
    const replace = cluster.replaceAppMonitorStatus.bind(cluster);
    cluster.replaceAppMonitorStatus = async (...args) => ((replaces += 1), replace(...args));
    const writer = createStatusWriter(cluster, 10, silent, { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 2 });
    const stale = { ...cluster.appMonitors.get(`${NS}/mymonitor`), metadata: { name: "mymonitor", namespace: NS, uid: "a1", resourceVersion: "0" } };
    const change = { container: "memhog", from: { limit: "1Mi" }, to: { limit: "2Mi" } };
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        writer.add({ namespace: NS, name: "mymonitor", uid: "a1" }, { time: `2025-06-01T12:00:${String(i).padStart(2, "0")}Z`, workload: { kind: "Deployment", name: `w${i}` }, changes: [change], dryRun: false }, stale),
      ),
    );
    const status = cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount: number; recentScales: unknown[] };
    assert.equal(status.scaleCount, 20);
    assert.equal(status.recentScales.length, 10);
    assert.ok(replaces <= 4, `${replaces} writes for 20 entries`);
  });
});


describe("handleFiring: who else manages the workload", () => {
  const deployment = (cluster: FakeCluster) => {
    const d = cluster.workloads.get(`Deployment/${NS}/memhog`);
    if (d?.metadata === undefined) throw new Error("no memhog Deployment");
    return d as typeof d & { metadata: k8s.V1ObjectMeta };
  };
  const statusOf = (cluster: FakeCluster) => cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { scaleCount?: number; recentScales?: Record<string, unknown>[] } | undefined;
  /** Another writer puts the original memory back in the template (and the ReplicaSet's Pod keeps it): what a GitOps sync does. */
  const revert = (cluster: FakeCluster): void => {
    const d = deployment(cluster);
    const template = structuredClone(d.spec?.template);
    const c = template?.spec?.containers[0];
    if (c === undefined || template === undefined) throw new Error("no container");
    c.resources = { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } };
    cluster.workloads.set(`Deployment/${NS}/memhog`, { ...d, spec: { ...d.spec, template } });
  };

  it("an Argo CD-tracked Deployment: GitOpsManaged by default, Warnings and a held entry naming the manifest values, no write", async () => {
    const cluster = memhogCluster();
    deployment(cluster).metadata.annotations = { "argocd.argoproj.io/tracking-id": "shop:apps/Deployment:team-a/memhog" };
    for (const id of ["e1", "e2"]) {
      const outcome = await handleFiring(deps(cluster), id, data(), silent);
      assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "GitOpsManaged"]);
    }
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason, e.regarding?.kind]), [["Warning", "GitOpsManaged", "Deployment"], ["Warning", "GitOpsManaged", "AppMonitor"]], "one pair per cooldown window");
    assert.match(cluster.events[0]?.note ?? "", /set in its manifest: container memhog: resources\.limits\.memory 768Mi, resources\.requests\.memory 512Mi/);
    const status = statusOf(cluster);
    assert.equal(status?.scaleCount ?? 0, 0);
    assert.deepEqual(status?.recentScales?.map((r) => [r.held, r.container, r.to]), [["GitOpsManaged", "memhog", { limit: "768Mi", request: "512Mi" }]], "listed once");
  });

  it("a Flux-managed Deployment with gitOpsManaged Patch: scaled, with GitOpsManaged Warnings saying it may be reverted", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, gitOpsManaged: "Patch" });
    deployment(cluster).metadata.labels = { "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" };
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["scaled", "Scaled"]);
    assert.equal(cluster.writes.length, 1);
    assert.deepEqual(cluster.events.map((e) => [e.type, e.reason]).sort(), [["Normal", "Scaled"], ["Normal", "Scaled"], ["Warning", "GitOpsManaged"], ["Warning", "GitOpsManaged"], ["Warning", "PodsReplaced"], ["Warning", "PodsReplaced"]]);
    assert.match(cluster.events.find((e) => e.type === "Warning")?.note ?? "", /Flux manages \(Kustomization flux-system\/apps.*may put the manifest's memory back.*appmonitor-memory-scaler/);
  });

  it("reverted by another writer: a Reverted Warning pair once, re-patched within the budget, then held", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0, revertBudgetPerHour: 2 });
    let clock = Date.parse("2025-06-01T12:00:00Z");
    const d = deps(cluster, { now: () => new Date(clock) });
    const answers: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      answers.push((await handleFiring(d, `e${i}`, data(), silent)).reason);
      revert(cluster);
      clock += 60_000;
    }
    assert.deepEqual(answers, ["Scaled", "Scaled", "Reverted", "Reverted", "Reverted"]);
    assert.equal(cluster.writes.length, 2, "two patches: the budget");
    const reverted = cluster.events.filter((e) => e.reason === "Reverted");
    assert.equal(reverted.length, 4, "a pair for each reverted scale (two), however many alerts see it");
    assert.match(reverted[0]?.note ?? "", /was lowered by another writer \(memhog: limit 768Mi → 384Mi, request 512Mi → 256Mi\); its metadata\.managedFields name the writer/);
    const status = statusOf(cluster);
    assert.equal(status?.scaleCount, 2);
    assert.deepEqual(status?.recentScales?.map((r) => [r.held ?? (r.reverted === true ? "reverted" : "scaled")]), [["Reverted"], ["reverted"], ["scaled"]]);
    // Past the hour the budget is free again.
    clock += 3_600_000;
    assert.equal((await handleFiring(d, "late", data(), silent)).reason, "Scaled");
  });

  it("reverted by a writer that also strips the workload's annotations (kubectl replace, a sync with Replace=true): the budget still holds, counted from status.recentScales", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0, revertBudgetPerHour: 2 });
    let clock = Date.parse("2025-06-01T12:00:00Z");
    const d = deps(cluster, { now: () => new Date(clock) });
    const answers: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      answers.push((await handleFiring(d, `e${i}`, data(), silent)).reason);
      revert(cluster);
      const reverted = deployment(cluster);
      cluster.workloads.set(`Deployment/${NS}/memhog`, { ...reverted, metadata: { ...reverted.metadata, annotations: {} } });
      clock += 60_000;
    }
    assert.deepEqual(answers, ["Scaled", "Scaled", "Reverted", "Reverted", "Reverted"]);
    assert.equal(cluster.writes.length, 2, "two patches: the budget");
    assert.equal(cluster.events.filter((e) => e.reason === "Reverted").length, 4, "a pair for each reverted scale");
  });

  it("reverted by re-applying a copy of the workload exported after an earlier scale (its annotations name that scale): the budget still holds", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0, revertBudgetPerHour: 2 });
    let clock = Date.parse("2025-06-01T12:00:00Z");
    const d = deps(cluster, { now: () => new Date(clock) });
    assert.equal((await handleFiring(d, "e0", data(), silent)).reason, "Scaled");
    // The rollout: the Pod runs the scaled memory; someone exports the Deployment as it is now.
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    assert.ok(pod?.spec);
    cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, spec: { ...pod.spec, containers: [{ ...pod.spec.containers[0], name: "memhog", resources: { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } } }] } });
    const exported = structuredClone(deployment(cluster));
    const answers: string[] = [];
    for (let i = 1; i < 5; i += 1) {
      clock += 600_000;
      answers.push((await handleFiring(d, `e${i}`, data(), silent)).reason);
      cluster.workloads.set(`Deployment/${NS}/memhog`, structuredClone(exported));
    }
    assert.deepEqual(answers, ["Scaled", "Reverted", "Reverted", "Reverted"]);
    assert.equal(cluster.writes.length, 2, "two patches: the budget");
  });

  it("a storm of concurrent alerts while a writer keeps reverting: never more patches than the budget", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0 });
    const d = deps(cluster);
    let stop = false;
    const reverter = (async () => {
      while (!stop) {
        if (templateMemory(cluster) !== undefined && JSON.stringify(templateMemory(cluster)).includes("768Mi")) revert(cluster);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => handleFiring(d, `s${i}`, data(), silent).catch((error: unknown) => ({ reason: String((error as HttpError).status) }))));
    stop = true;
    await reverter;
    assert.ok(cluster.writes.length <= 3, `${cluster.writes.length} patches`);
    assert.ok(outcomes.some((o) => o.reason === "Reverted"));
  });

  it("an HPA on memory: HPAOnMemory, Warnings; an HPA on CPU: scaled", async () => {
    const cluster = memhogCluster();
    const hpa = (metric: string): k8s.V2HorizontalPodAutoscaler => ({
      metadata: { name: "memhog", namespace: NS },
      spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "memhog" }, maxReplicas: 4, metrics: [{ type: "Resource", resource: { name: metric, target: { type: "Utilization", averageUtilization: 70 } } }] },
    });
    cluster.hpas = [hpa("memory")];
    const skipped = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([skipped.outcome, skipped.reason], ["skipped", "HPAOnMemory"]);
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(cluster.events.map((e) => e.reason), ["HPAOnMemory", "HPAOnMemory"]);
    cluster.hpas = [hpa("cpu")];
    assert.equal((await handleFiring(deps(cluster), "e2", data(), silent)).reason, "Scaled");
  });

  it("a VPA not Off: VPAControlled; the VPA API not served: scaled; another failure of its list: the event fails", async () => {
    const cluster = memhogCluster();
    cluster.vpas = [{ metadata: { name: "memhog", namespace: NS }, spec: { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "memhog" }, updatePolicy: { updateMode: "Recreate" } } }];
    assert.equal((await handleFiring(deps(cluster), "e1", data(), silent)).reason, "VPAControlled");
    cluster.vpas = undefined;
    assert.equal((await handleFiring(deps(cluster), "e2", data(), silent)).reason, "Scaled");
    const failing = memhogCluster();
    failing.listVerticalPodAutoscalers = () => Promise.reject(apiError(403, 'verticalpodautoscalers.autoscaling.k8s.io is forbidden: User "system:serviceaccount:appmonitor:memory-scaler" cannot list resource "verticalpodautoscalers" in API group "autoscaling.k8s.io" in the namespace "team-a"'));
    await assert.rejects(handleFiring(deps(failing), "e3", data(), silent), (error: unknown) => error instanceof HttpError && error.status === 500);
    assert.equal(failing.writes.length, 0);
  });
});

describe("handleFiring: a heap a flag fixes", () => {
  const jvm = (env: k8s.V1EnvVar[]): k8s.V1PodSpec => ({ containers: [{ ...memhogContainer({ limits: { memory: "384Mi" }, requests: { memory: "256Mi" } }), env }] });
  const templateEnv = (cluster: FakeCluster) => cluster.workloads.get(`Deployment/${NS}/memhog`)?.spec?.template?.spec?.containers[0]?.env;

  it("Hold (the default): -Xmx within the limit is not raised; FixedHeap Warnings name the flag and its value, and the heap failure", async () => {
    const cluster = memhogCluster();
    setPodSpec(cluster, jvm([{ name: "JAVA_TOOL_OPTIONS", value: "-XX:+UseG1GC -Xmx256m" }]));
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    if (pod === undefined) throw new Error("no memhog Pod");
    cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, status: { containerStatuses: [{ name: "memhog", image: "", imageID: "", ready: true, restartCount: 2, lastState: { terminated: { exitCode: 134, reason: "Error" } } }] } });
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.outcome, "skipped");
    assert.equal(outcome.reason, "FixedHeap");
    assert.equal(cluster.writes.length, 0);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } });
    const warnings = cluster.events.filter((e) => e.type === "Warning" && e.reason === "FixedHeap");
    assert.deepEqual(warnings.map((e) => e.regarding?.kind).sort(), ["AppMonitor", "Deployment"]);
    assert.match(warnings[0]?.note ?? "", /heap is fixed by -Xmx256m in env JAVA_TOOL_OPTIONS \(256m\), within its memory limit 384Mi/);
    assert.match(warnings[0]?.note ?? "", /exit code 134 \(Error\), an in-process heap failure, not an OOM kill/);
  });

  it("no flag read, but the last run was an in-process heap failure: scaled, with HeapFailure Warnings", async () => {
    const cluster = memhogCluster();
    const pod = cluster.pods.get(`${NS}/memhog-5d8f-x2`);
    if (pod === undefined) throw new Error("no memhog Pod");
    cluster.pods.set(`${NS}/memhog-5d8f-x2`, { ...pod, status: { containerStatuses: [{ name: "memhog", image: "", imageID: "", ready: true, restartCount: 1, lastState: { terminated: { exitCode: 134, reason: "Error" } } }] } });
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.reason, "Scaled");
    const failures = cluster.events.filter((e) => e.type === "Warning" && e.reason === "HeapFailure");
    assert.deepEqual(failures.map((e) => e.regarding?.kind).sort(), ["AppMonitor", "Deployment"]);
    assert.match(failures[0]?.note ?? "", /container memhog's last run ended in exit code 134 \(Error\), an in-process heap failure/);
  });

  it("Scale: the limit and the flag raised together in one compare-and-swap patch", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, heapFlags: "Scale" });
    setPodSpec(cluster, jvm([{ name: "NODE_OPTIONS", value: "--max-old-space-size=256" }]));
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.reason, "Scaled");
    assert.equal(cluster.writes.length, 1);
    assert.deepEqual(templateMemory(cluster), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.deepEqual(templateEnv(cluster), [{ name: "NODE_OPTIONS", value: "--max-old-space-size=512" }]);
    assert.match(outcome.message, /heap flags raised with the limits: container memhog: --max-old-space-size=256 → --max-old-space-size=512 in env NODE_OPTIONS/);
    assert.match(cluster.events.find((e) => e.reason === "Scaled")?.note ?? "", /--max-old-space-size=256 → --max-old-space-size=512/);
  });

  it("Scale: a flag changed since it was read fails the patch as a whole, and the next round scales from the new flag", async () => {
    const cluster = memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, heapFlags: "Scale" });
    setPodSpec(cluster, jvm([{ name: "GOMEMLIMIT", value: "300MiB" }]));
    let changed = false;
    const inner = cluster.patchWorkload.bind(cluster);
    cluster.patchWorkload = async (...args: Parameters<FakeCluster["patchWorkload"]>) => {
      if (!changed && args[4] !== true) {
        changed = true;
        setPodSpec(cluster, jvm([{ name: "GOMEMLIMIT", value: "320MiB" }]));
      }
      return inner(...args);
    };
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.reason, "Scaled");
    assert.equal(outcome.attempts, 2);
    assert.deepEqual(templateEnv(cluster), [{ name: "GOMEMLIMIT", value: "640MiB" }]);
  });
});
