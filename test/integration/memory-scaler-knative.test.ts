/**
 * memory-scaler and Knative Services, on a stack of its own (the real API server and
 * controller-manager, kwok running the Pods), with Knative Serving's own CRDs (Service,
 * Configuration, Revision, from the pinned knative.dev/serving module) and no Serving controller:
 * the test writes what Serving would (the Configuration and Revision a Service owns, the Revision's
 * Deployment with queue-proxy beside the user's container, the Revision's and the Service's status),
 * so each case is exact. The real Serving on the real node is
 * `memory-scaler-knative-real-node.test.ts`'s.
 *
 * - A Revision Pod's alert walks Pod → ReplicaSet → Deployment → Revision → Configuration →
 *   Service and patches the Service's `spec.template` alone (memory-scaler's RBAC and the writes
 *   policy of `knative/admission/`, with its token); the follow-up ends the rollout RolledOut when the
 *   new Revision is Ready and RolloutFailed with Serving's reason when it is not.
 * - Traffic pinned to an older Revision: the outcome says the new memory does not serve traffic.
 * - A Configuration no Service owns: skipped `UnsupportedOwner`, nothing written.
 * - The writes policy refuses memory-scaler's token any other change of a Service.
 * The file ticks the follow-up (a tick follows every namespace's rollouts), hence its own stack.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { servingModule } from "../harness/stack/serving-source.ts";
import { installCrdFiles } from "../support/crds.ts";
import { alertEvent, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, onlyRunningPod, ownStackForFile, pingTick, scalerForSuite, scalerKubeconfig } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

ownStackForFile("knative");

const SERVING = { group: "serving.knative.dev", version: "v1" } as const;
const KSVC = "serving.knative.dev/v1";
const ORIGINAL = { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } };
const MONITOR = { "app-monitor.kubedemo.com/monitor": "true" };
const merge = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

async function custom(): Promise<k8s.CustomObjectsApi> {
  return (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
}

/** Creates a Serving object of `plural` and returns its uid. */
async function create(ns: string, plural: string, body: Record<string, unknown>): Promise<string> {
  const created = (await (await custom()).createNamespacedCustomObject({ ...SERVING, plural, namespace: ns, body })) as k8s.KubernetesObject;
  const uid = created.metadata?.uid;
  if (uid === undefined) throw new Error(`${plural}: no uid`);
  return uid;
}

/** Writes the `status` of a Serving object, as Serving's controller would. */
async function setStatus(ns: string, plural: string, name: string, status: Record<string, unknown>): Promise<void> {
  await (await custom()).patchNamespacedCustomObjectStatus({ ...SERVING, plural, namespace: ns, name, body: { status } }, merge);
}

const owner = (apiVersion: string, kind: string, name: string, uid: string) => [{ apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true }];

/**
 * Knative Service `web` as Serving reconciles it, but for `withService: false` (a Configuration
 * no Service owns): its Configuration `web`, Revision `web-00001` and that Revision's Deployment
 * (user-container 384Mi/256Mi, queue-proxy), whose Pod kwok runs. Returns the Pod's name.
 */
async function knativeService(ns: string, over: { withService?: boolean; traffic?: unknown[] } = {}): Promise<string> {
  const user = { name: "user-container", image: "registry.example/app:1", resources: ORIGINAL };
  const template = { metadata: { annotations: MONITOR }, spec: { containers: [user] } };
  const withService = over.withService ?? true;
  const serviceUid = withService ? await create(ns, "services", { apiVersion: KSVC, kind: "Service", metadata: { name: "web" }, spec: { template, ...(over.traffic === undefined ? {} : { traffic: over.traffic }) } }) : "";
  const configurationUid = await create(ns, "configurations", { apiVersion: KSVC, kind: "Configuration", metadata: { name: "web", ...(withService ? { ownerReferences: owner(KSVC, "Service", "web", serviceUid) } : {}) }, spec: { template } });
  const revisionUid = await create(ns, "revisions", { apiVersion: KSVC, kind: "Revision", metadata: { name: "web-00001", ownerReferences: owner(KSVC, "Configuration", "web", configurationUid) }, spec: template.spec });
  if (withService) await setStatus(ns, "services", "web", { observedGeneration: 1, latestCreatedRevisionName: "web-00001", latestReadyRevisionName: "web-00001" });
  const labels = { "serving.knative.dev/service": "web", "serving.knative.dev/serviceUID": serviceUid, "serving.knative.dev/configuration": "web", "serving.knative.dev/revision": "web-00001" };
  const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
  await apps.createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name: "web-00001-deployment", labels, ownerReferences: owner(KSVC, "Revision", "web-00001", revisionUid) },
      spec: {
        replicas: 1,
        selector: { matchLabels: { "serving.knative.dev/revision": "web-00001" } },
        template: { metadata: { labels, annotations: MONITOR }, spec: { containers: [user, { name: "queue-proxy", image: "registry.example/queue:1", resources: { requests: { cpu: "25m" } } }] } },
      },
    },
  });
  return (await onlyRunningPod(ns, "serving.knative.dev/revision=web-00001")).metadata.name;
}

async function serviceObject(ns: string): Promise<{ metadata: k8s.V1ObjectMeta; spec: { template: { spec: { containers: k8s.V1Container[] } } } }> {
  return (await (await custom()).getNamespacedCustomObject({ ...SERVING, plural: "services", namespace: ns, name: "web" })) as never;
}

describe("memory-scaler and Knative Services", { concurrency: 1 }, () => {
  before(async () => {
    const dir = path.join((await servingModule()).dir, "config", "core", "300-resources");
    await installCrdFiles(...["service", "configuration", "revision"].map((f) => path.join(dir, `${f}.yaml`)));
  });
  const scaler = scalerForSuite();
  const alert = (ns: string, pod: string) => alertEvent({ namespace: ns, pod, container: "user-container", appmonitor: "m" });

  /** Ticks until the AppMonitor's RolledOut condition is no longer Unknown; returns it. */
  async function tickUntilEnded(ns: string): Promise<{ status: string; reason: string; message: string }> {
    return waitFor(`the rollout of AppMonitor ${ns}/m to end`, async () => {
      const answer = await deliver(scaler().url, pingTick());
      assert.ok(answer.status === 204 || answer.status === 429, describeAnswer(answer));
      const conditions = ((await appMonitorStatus(ns, "m")).conditions ?? []) as { type: string; status: string; reason: string; message: string }[];
      const condition = conditions.find((c) => c.type === "RolledOut");
      return condition !== undefined && condition.status !== "Unknown" ? condition : undefined;
    }, 60_000, 500);
  }

  /** Scales Service `web` of `ns` from its Revision Pod's alert; returns the Service as patched. */
  async function scaleService(ns: string): Promise<Awaited<ReturnType<typeof serviceObject>>> {
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const pod = await knativeService(ns);
    const answer = await deliver(scaler().url, alert(ns, pod));
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));
    return serviceObject(ns);
  }

  /** Serving's answer to the patch: Revision `web-00002` of the patched template with `ready`, named by the Service's status. */
  async function newRevision(ns: string, spec: unknown, ready: Record<string, string>): Promise<void> {
    const configurationUid = ((await (await custom()).getNamespacedCustomObject({ ...SERVING, plural: "configurations", namespace: ns, name: "web" })) as k8s.KubernetesObject).metadata?.uid ?? "";
    await create(ns, "revisions", { apiVersion: KSVC, kind: "Revision", metadata: { name: "web-00002", ownerReferences: owner(KSVC, "Configuration", "web", configurationUid) }, spec });
    await setStatus(ns, "revisions", "web-00002", { observedGeneration: 1, conditions: [{ type: "Ready", ...ready, lastTransitionTime: new Date().toISOString() }] });
    await setStatus(ns, "services", "web", { observedGeneration: 2, latestCreatedRevisionName: "web-00002", latestReadyRevisionName: ready.status === "True" ? "web-00002" : "web-00001" });
  }

  it("a Revision Pod's alert patches the Service's spec.template (never the Revision's Deployment); the new Revision Ready → RolledOut", async (t) => {
    const ns = await freshNamespace(t);
    const service = await scaleService(ns);
    assert.deepEqual(service.spec.template.spec.containers.map((c) => [c.name, c.resources]), [["user-container", { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } }]]);
    assert.equal(service.metadata.generation, 2);
    const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: "web-00001-deployment" });
    assert.deepEqual(deployment.spec?.template.spec?.containers.map((c) => c.resources?.limits?.memory), ["384Mi", undefined], "Serving's Deployment untouched, queue-proxy too");
    assert.deepEqual((deployment.metadata?.managedFields ?? []).filter((f) => f.manager === "appmonitor-memory-scaler"), []);
    assert.deepEqual((await eventsRegarding(ns, "Service", "web")).map((e) => [e.type, e.reason, e.regarding?.apiVersion]), [["Normal", "Scaled", KSVC]]);
    const last = (await appMonitorStatus(ns, "m")).lastOutcome as Record<string, unknown> | undefined;
    assert.deepEqual(last?.workload, { kind: "Service", name: "web" });

    await newRevision(ns, service.spec.template.spec, { status: "True" });
    const rolledOut = await tickUntilEnded(ns);
    assert.deepEqual([rolledOut.status, rolledOut.reason, rolledOut.message], ["True", "RolledOut", "Service web: Revision web-00002 is Ready with the new memory"]);
  });

  it("the new Revision not Ready → RolloutFailed with Serving's reason and message", async (t) => {
    const ns = await freshNamespace(t);
    const service = await scaleService(ns);
    await newRevision(ns, service.spec.template.spec, { status: "False", reason: "ExitCode137", message: "Container failed with: OOMKilled" });
    const failed = await tickUntilEnded(ns);
    assert.deepEqual([failed.status, failed.reason], ["False", "ExitCode137"]);
    assert.match(failed.message, /Revision web-00002 is not Ready \(ExitCode137\): Container failed with: OOMKilled/);
    assert.ok((await eventsRegarding(ns, "Service", "web")).some((e) => e.type === "Warning" && e.reason === "RolloutFailed"));
  });

  it("traffic pinned to the older Revision: scaled, and the outcome says the new memory does not serve traffic", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const pod = await knativeService(ns, { traffic: [{ revisionName: "web-00001", percent: 100 }] });
    const answer = await deliver(scaler().url, alert(ns, pod));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const last = (await appMonitorStatus(ns, "m")).lastOutcome as Record<string, unknown> | undefined;
    assert.match(String(last?.message), /the new memory does not serve traffic: Service web's spec\.traffic sends every request to Revision web-00001 and none with latestRevision: true/);
  });

  it("a Configuration no Service owns: skipped UnsupportedOwner naming it, nothing written", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const pod = await knativeService(ns, { withService: false });
    const answer = await deliver(scaler().url, alert(ns, pod));
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "skipped", "UnsupportedOwner"], describeAnswer(answer));
    const configuration = (await (await custom()).getNamespacedCustomObject({ ...SERVING, plural: "configurations", namespace: ns, name: "web" })) as { metadata: k8s.V1ObjectMeta };
    assert.equal(configuration.metadata.generation, 1);
    const last = (await appMonitorStatus(ns, "m")).lastOutcome as Record<string, unknown> | undefined;
    assert.match(String(last?.message), /belongs to Configuration web \(through ReplicaSet web-00001-deployment-\S+, Deployment web-00001-deployment, Revision web-00001\), which no Knative Service owns/);
  });

  it("the writes policy refuses memory-scaler's token any change of a Service but its containers' memory and its own annotations", async (t) => {
    const ns = await freshNamespace(t);
    await knativeService(ns);
    const kubeconfig = await scalerKubeconfig();
    t.after(kubeconfig.remove);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig.file);
    const asScaler = kc.makeApiClient(k8s.CustomObjectsApi);
    const patch = (body: unknown) => asScaler.patchNamespacedCustomObject({ ...SERVING, plural: "services", namespace: ns, name: "web", body }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
    await assert.rejects(patch([{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "registry.example/other:2" }]), (error: { code?: number; body?: string }) => {
      assert.equal(error.code, 403);
      assert.match(String(error.body), /memory-scaler may change only containers' memory requests and limits.*refused: spec\.template\.spec\.containers\[user-container\]\.image/);
      return true;
    });
    await assert.rejects(patch([{ op: "add", path: "/spec/traffic", value: [{ latestRevision: true, percent: 100 }] }]), /spec\.traffic/);
    await patch([{ op: "replace", path: "/spec/template/spec/containers/0/resources/limits/memory", value: "512Mi" }, { op: "add", path: "/metadata/annotations", value: { "app-monitor.kubedemo.com/last-scale": "2025-06-01T12:00:00Z" } }]);
    assert.equal((await serviceObject(ns)).spec.template.spec.containers[0]?.resources?.limits?.memory, "512Mi");
  });
});
