// A Knative Service as a workload (functions/memory-scaler/knative.ts and the targets): a Revision
// Pod's alert scales the Service's spec.template (one compare-and-swap patch, queue-proxy never in
// it), says when pinned traffic keeps the new memory from serving, resizes the Revision's Pods in
// place leaving queue-proxy alone, and skips a Configuration no Service owns.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { IN_PLACE_MEMORY_ANNOTATION } from "../../../../functions/lib/appmonitor.ts";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, flowDeps as deps, KNATIVE, knativeCluster, NS } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });
const data = () => alertData({ pod: KNATIVE.pod, container: "user-container", labels: { alertname: "AppMonitorMemoryHigh", namespace: NS, pod: KNATIVE.pod, container: "user-container", appmonitor: "mymonitor" } });

describe("a Knative Service: Rollout", () => {
  it("patches the Service's spec.template in one compare-and-swap (resourceVersion and values tested), never the Revision's Deployment", async () => {
    const cluster = knativeCluster();
    const service = cluster.workloads.get(`Service/${NS}/web`);
    if (service?.metadata) service.metadata.resourceVersion = "7";
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason, outcome.workload], ["scaled", "Scaled", { kind: "Service", name: "web" }], outcome.message);
    assert.deepEqual(cluster.writes.map((w) => [w.kind, w.name]), [["Service", "web"]]);
    const patch = cluster.writes[0]?.patch ?? [];
    assert.ok(patch.some((op) => op.op === "test" && op.path === "/metadata/resourceVersion" && op.value === "7"), JSON.stringify(patch));
    assert.ok(patch.every((op) => !String(op.value).includes("queue-proxy")));
    const user = cluster.workloads.get(`Service/${NS}/web`)?.spec?.template?.spec?.containers[0];
    assert.deepEqual([user?.name, user?.resources], ["user-container", { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } }]);
    assert.doesNotMatch(outcome.message, /does not serve traffic/);
    const rollouts = (cluster.appMonitors.get(`${NS}/mymonitor`)?.status as { rollouts?: { workload: unknown }[] } | undefined)?.rollouts;
    assert.deepEqual(rollouts?.map((r) => r.workload), [{ kind: "Service", name: "web" }], "the new Revision is followed");
    assert.deepEqual(cluster.events.filter((e) => e.reason === "Scaled").map((e) => [e.regarding?.apiVersion, e.regarding?.kind]).sort(), [["kubedemo.com/v1", "AppMonitor"], ["serving.knative.dev/v1", "Service"]]);
  });

  it("traffic pinned to an older Revision: scaled, and the outcome says the new memory does not serve traffic", async () => {
    const cluster = knativeCluster();
    const service = cluster.workloads.get(`Service/${NS}/web`);
    if (service?.spec) service.spec.traffic = [{ revisionName: KNATIVE.revision, percent: 100 }];
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.equal(outcome.reason, "Scaled");
    assert.match(outcome.message, /the new memory does not serve traffic: Service web's spec\.traffic sends every request to Revision web-00001 and none with latestRevision: true/);
  });

  it("traffic with a latestRevision entry: nothing said", async () => {
    const cluster = knativeCluster();
    const service = cluster.workloads.get(`Service/${NS}/web`);
    if (service?.spec) service.spec.traffic = [{ revisionName: KNATIVE.revision, percent: 50 }, { latestRevision: true, percent: 50 }];
    assert.doesNotMatch((await handleFiring(deps(cluster), "e1", data(), silent)).message, /does not serve traffic/);
  });

  it("an alert of queue-proxy scales nothing: no template of the Service sets it", async () => {
    const cluster = knativeCluster();
    const outcome = await handleFiring(deps(cluster), "e1", alertData({ pod: KNATIVE.pod, container: "queue-proxy" }), silent);
    assert.notEqual(outcome.outcome, "scaled", outcome.message);
    assert.equal(cluster.writes.length, 0);
  });

  it("a Configuration no Service owns: UnsupportedOwner naming it, nothing written", async () => {
    const cluster = knativeCluster();
    const configuration = cluster.knative.get(`Configuration/${NS}/web`);
    if (configuration?.metadata) configuration.metadata.ownerReferences = [];
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "UnsupportedOwner"]);
    assert.match(outcome.message, /belongs to Configuration web .*which no Knative Service owns: .*change the memory in Configuration web's spec\.template/);
    assert.deepEqual([cluster.writes.length, cluster.dryRuns], [0, 0]);
  });
});

describe("a Knative Service: InPlace", () => {
  it("resizes the Revision's Pod in place (user-container only), records the memory on the Service, leaves its template", async () => {
    const cluster = knativeCluster({ memThresholdPercent: 75, memMultiplier: 2, updateMode: "InPlace" });
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason, outcome.workload], ["scaled", "Resized", { kind: "Service", name: "web" }], outcome.message);
    assert.deepEqual(cluster.resizes.map((r) => r.name), [KNATIVE.pod]);
    const resize = cluster.resizes[0]?.patch ?? [];
    assert.ok(resize.filter((op) => op.op !== "test").every((op) => op.path.startsWith("/spec/containers/0/")), JSON.stringify(resize));
    const pod = cluster.pods.get(`${NS}/${KNATIVE.pod}`);
    assert.deepEqual(pod?.spec?.containers.map((c) => [c.name, c.resources?.limits?.memory]), [["user-container", "768Mi"], ["queue-proxy", "128Mi"]]);
    const service = cluster.workloads.get(`Service/${NS}/web`);
    assert.equal(service?.metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION], "user-container=384Mi>768Mi/256Mi>512Mi");
    assert.equal(service?.spec?.template?.spec?.containers[0]?.resources?.limits?.memory, "384Mi", "the template is left alone: no new Revision");
  });

  it("a Pod of another Service (same labels but uid) is not resized", async () => {
    const cluster = knativeCluster({ memThresholdPercent: 75, memMultiplier: 2, updateMode: "InPlace" });
    const other = structuredClone(cluster.pods.get(`${NS}/${KNATIVE.pod}`));
    if (other?.metadata?.labels) {
      other.metadata.name = "web-00001-deployment-7b9c-y3";
      other.metadata.labels["serving.knative.dev/serviceUID"] = "another";
      cluster.pods.set(`${NS}/${other.metadata.name}`, other);
    }
    await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual(cluster.resizes.map((r) => r.name), [KNATIVE.pod]);
  });
});

describe("a Knative Service: coverage", () => {
  it("a targetRef naming the Service covers its Revision Pods, its template annotated or not", async () => {
    const cluster = knativeCluster({ memThresholdPercent: 75, memMultiplier: 2, targetRef: { apiVersion: "serving.knative.dev/v1", kind: "Service", name: "web" } });
    const template = cluster.workloads.get(`Service/${NS}/web`)?.spec?.template;
    if (template?.metadata) template.metadata.annotations = {};
    assert.equal((await handleFiring(deps(cluster), "e1", data(), silent)).reason, "Scaled");
  });

  it("a targetRef naming the Revision's Deployment covers nothing: the Service is the workload", async () => {
    const cluster = knativeCluster({ memThresholdPercent: 75, memMultiplier: 2, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web-00001-deployment" } });
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.notEqual(outcome.outcome, "scaled", outcome.message);
    assert.equal(cluster.writes.length, 0);
  });

  it("the annotation is read from the Service's spec.template.metadata.annotations, not the Pod's nor the Deployment's", async () => {
    const cluster = knativeCluster();
    const template = cluster.workloads.get(`Service/${NS}/web`)?.spec?.template;
    if (template?.metadata) template.metadata.annotations = { "autoscaling.knative.dev/min-scale": "1" };
    const outcome = await handleFiring(deps(cluster), "e1", data(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "NotCovered"], outcome.message);
    assert.equal(cluster.writes.length, 0);
  });
});
