/**
 * memory-scaler beside the workload's other managers, on the local stack (kwok, the real API
 * server and controller manager): an Argo CD-tracked Deployment (held by default, patched with
 * `gitOpsManaged: Patch` and a Warning), a writer with its own field manager that reverts the
 * scale (reported, re-patched within the revert budget, never more patches than the budget in a
 * storm of 1,000 alerts), an HPA on memory (held) and one on CPU (scaled), the managedFields
 * entry of memory-scaler's field manager, and VerticalPodAutoscalers: the CRD absent (scaled, no
 * error), then installed (from the pinned VPA module, build.sh) with a VPA on the workload
 * (held); and a Deployment a custom resource controls, as an operator's (never patched:
 * `UnknownController` names that resource). The function runs with a token of exactly its
 * ServiceAccount.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { forEachLimit } from "../../functions/lib/worker-pool.ts";
import { explain } from "../../scripts/explain/cli.ts";
import { installCrdFiles, verticalPodAutoscalerCrdFile, waitForCrdEstablished } from "../support/crds.ts";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, onlyRunningPod, scalerForSuite, waitForWatchCache, type Answer } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

const VPA_CRD = "verticalpodautoscalers.autoscaling.k8s.io";
/** The field manager of the writer that puts the manifest's memory back, as a GitOps sync would. */
const REVERTER = "gitops-sync";
const ORIGINAL = { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } };

async function apps(): Promise<k8s.AppsV1Api> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
}

/** Deployment `name` of one annotated memhog Pod (384Mi/256Mi) with `metadata` added to its own. */
async function createDeployment(ns: string, name: string, metadata: Pick<k8s.V1ObjectMeta, "labels" | "annotations" | "ownerReferences"> = {}): Promise<void> {
  await (await apps()).createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name, ...metadata },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } },
          spec: { containers: [{ name: "memhog", image: "registry.example/app:1", resources: ORIGINAL }] },
        },
      },
    },
  });
}

async function templateResources(ns: string, name: string): Promise<unknown> {
  const d = await (await apps()).readNamespacedDeployment({ namespace: ns, name });
  return JSON.parse(JSON.stringify(d.spec?.template.spec?.containers[0]?.resources ?? null));
}

function assertAnswer(answer: Answer, outcome: string, reason: string): void {
  assert.equal(answer.status, 204, describeAnswer(answer));
  assert.deepEqual([answer.outcome, answer.reason], [outcome, reason], describeAnswer(answer));
}

const alertOf = (ns: string, pod: string, id?: string) => alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m", ...(id === undefined ? {} : { id }) });

describe("memory-scaler beside the workload's other managers", { concurrency: 4 }, () => {
  const scaler = scalerForSuite();

  it("an Argo CD-tracked Deployment: held by default with the manifest values to set; patched with gitOpsManaged Patch and a Warning", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "web", { annotations: { "argocd.argoproj.io/tracking-id": `shop:apps/Deployment:${ns}/web` } });
    const pod = await onlyRunningPod(ns, "app=web");

    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "skipped", "GitOpsManaged");
    assert.deepEqual(await templateResources(ns, "web"), ORIGINAL);
    const warnings = await eventsRegarding(ns, "Deployment", "web");
    assert.deepEqual(warnings.map((e) => [e.type, e.reason]), [["Warning", "GitOpsManaged"]]);
    assert.match(warnings[0]?.note ?? "", /managed by Argo CD \(Application shop, argocd\.argoproj\.io\/tracking-id=.*\).*set in its manifest: container memhog: resources\.limits\.memory 768Mi, resources\.requests\.memory 512Mi/);
    const held = await appMonitorStatus(ns, "m");
    assert.equal(held.scaleCount ?? 0, 0);
    assert.deepEqual(held.recentScales?.map((r) => [r.held, r.container, r.to]), [["GitOpsManaged", "memhog", { limit: "768Mi", request: "512Mi" }]]);

    const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
    await custom.patchNamespacedCustomObject(
      { group: "kubedemo.com", version: "v1", plural: "appmonitors", namespace: ns, name: "m", body: { spec: { gitOpsManaged: "Patch" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await waitForWatchCache({ group: "kubedemo.com", version: "v1", plural: "appmonitors" }, ns, "m", (o) => (o.spec as { gitOpsManaged?: string }).gitOpsManaged === "Patch");
    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "scaled", "Scaled");
    assert.deepEqual(await templateResources(ns, "web"), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    const events = await eventsRegarding(ns, "Deployment", "web");
    assert.deepEqual(events.map((e) => [e.type, e.reason]).sort(), [["Normal", "Scaled"], ["Warning", "GitOpsManaged"], ["Warning", "GitOpsManaged"], ["Warning", "PodsReplaced"]]);
    assert.ok(events.some((e) => /its next sync may put the manifest's memory back/.test(e.note ?? "")));
  });

  it("after a scale the Deployment's managedFields name appmonitor-memory-scaler as the manager of the container's memory", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "scaled", "Scaled");
    const d = await (await apps()).readNamespacedDeployment({ namespace: ns, name: "web" });
    const ours = (d.metadata?.managedFields ?? []).filter((f) => f.manager === "appmonitor-memory-scaler");
    assert.deepEqual(ours.map((f) => f.operation), ["Update"]);
    const fields = JSON.stringify(ours[0]?.fieldsV1 ?? {});
    for (const key of ['"f:limits"', '"f:requests"', '"f:memory"', '"f:app-monitor.kubedemo.com/last-scale"', '"f:app-monitor.kubedemo.com/last-scale-record"']) assert.ok(fields.includes(key), `${key} in ${fields}`);
  });

  it("a writer that reverts the scale: Reverted reported, re-patched within the budget, never more patches than the budget in a storm of 1,000 alerts", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 0 });
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    const client = await apps();
    // Paused: a template change starts no rollout, so the alerting Pod keeps the manifest's memory
    // and every revert makes the next alert a candidate for a scale.
    await client.patchNamespacedDeployment({ namespace: ns, name: "web", body: { spec: { paused: true } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const revert = async (): Promise<boolean> => {
      if (JSON.stringify(await templateResources(ns, "web")) === JSON.stringify(ORIGINAL)) return false;
      await client.patchNamespacedDeployment(
        { namespace: ns, name: "web", fieldManager: REVERTER, body: [{ op: "replace", path: "/spec/template/spec/containers/0/resources", value: ORIGINAL }] },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
      );
      return true;
    };

    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "scaled", "Scaled");
    assert.ok(await revert());
    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "scaled", "Scaled");
    const reverted = (await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.reason === "Reverted");
    assert.equal(reverted.length, 1);
    assert.match(reverted[0]?.note ?? "", /was lowered by another writer \(memhog: limit 768Mi → 384Mi, request 512Mi → 256Mi\); its metadata\.managedFields name the writer/);

    // The storm: 1,000 distinct alerts, 16 at a time, while the writer reverts every scale it sees.
    let storming = true;
    const reverter = (async () => {
      while (storming) {
        await revert();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const answers: Answer[] = [];
    await forEachLimit(Array.from({ length: 1000 }, (_, i) => i), 16, async (i) => {
      answers.push(await deliver(scaler().url, alertOf(ns, pod.metadata.name, `storm-${ns}-${i}`)));
    });
    storming = false;
    await reverter;

    const byReason = new Map<string, number>();
    for (const a of answers) byReason.set(`${a.status} ${a.reason ?? ""}`, (byReason.get(`${a.status} ${a.reason ?? ""}`) ?? 0) + 1);
    const summary = JSON.stringify([...byReason]);
    t.diagnostic(`storm answers (status reason → count): ${summary}`);
    assert.ok(answers.every((a) => a.status === 204 || a.status === 503), summary);
    const scaledInStorm = answers.filter((a) => a.reason === "Scaled").length;
    assert.ok(2 + scaledInStorm <= 3, `${2 + scaledInStorm} patches with a budget of 3: ${summary}`);
    assert.ok((byReason.get("204 Reverted") ?? 0) > 0, summary);
    const status = await waitFor("the status of every scale", async () => {
      const s = await appMonitorStatus(ns, "m");
      return s.scaleCount === 2 + scaledInStorm ? s : undefined;
    });
    assert.ok(status.recentScales?.some((r) => r.held === "Reverted"), JSON.stringify(status.recentScales));

    const metrics = await (await fetch(`${scaler().url}/metrics`)).text();
    assert.match(metrics, /appmonitor_memory_scaler_reverts_total\{[^}]*kind="Deployment"[^}]*result="Held"[^}]*\} [1-9]/);
    assert.match(metrics, /appmonitor_memory_scaler_reverts_total\{[^}]*kind="Deployment"[^}]*result="Repatched"[^}]*\} [1-9]/);
  });

  it("an HPA on memory: held as HPAOnMemory with a Warning; an HPA on CPU: scaled", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "mem");
    await createDeployment(ns, "cpu");
    const autoscaling = (await adminKubeConfig()).makeApiClient(k8s.AutoscalingV2Api);
    for (const [name, resource] of [["mem", "memory"], ["cpu", "cpu"]] as const) {
      await autoscaling.createNamespacedHorizontalPodAutoscaler({
        namespace: ns,
        body: {
          metadata: { name },
          spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name }, minReplicas: 1, maxReplicas: 3, metrics: [{ type: "Resource", resource: { name: resource, target: { type: "Utilization", averageUtilization: 80 } } }] },
        },
      });
    }
    for (const name of ["mem", "cpu"]) await waitForWatchCache({ group: "autoscaling", version: "v2", plural: "horizontalpodautoscalers" }, ns, name);
    const memPod = await onlyRunningPod(ns, "app=mem");
    assertAnswer(await deliver(scaler().url, alertOf(ns, memPod.metadata.name)), "skipped", "HPAOnMemory");
    assert.deepEqual(await templateResources(ns, "mem"), ORIGINAL);
    const [warning] = await eventsRegarding(ns, "Deployment", "mem");
    assert.equal(warning?.reason, "HPAOnMemory");
    assert.match(warning?.note ?? "", /HorizontalPodAutoscaler mem scales Deployment mem on Resource memory/);

    const cpuPod = await onlyRunningPod(ns, "app=cpu");
    assertAnswer(await deliver(scaler().url, alertOf(ns, cpuPod.metadata.name)), "scaled", "Scaled");
  });
});

describe("memory-scaler and VerticalPodAutoscalers", () => {
  const scaler = scalerForSuite();

  it("the VPA API absent: scaled, no error", async (t) => {
    const ext = (await adminKubeConfig()).makeApiClient(k8s.ApiextensionsV1Api);
    // Another run of this file on the same stack may have installed it.
    try {
      await ext.deleteCustomResourceDefinition({ name: VPA_CRD });
    } catch (error) {
      if ((error as { code?: number }).code !== 404) throw error;
    }
    await waitFor(`CRD ${VPA_CRD} gone`, async () => {
      try {
        await ext.readCustomResourceDefinition({ name: VPA_CRD });
        return false;
      } catch (error) {
        return (error as { code?: number }).code === 404;
      }
    });
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "web");
    const pod = await onlyRunningPod(ns, "app=web");
    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "scaled", "Scaled");
  });

  it("a VPA on the workload (updateMode Recreate): held as VPAControlled; one Off: scaled", async (t) => {
    await installCrdFiles(await verticalPodAutoscalerCrdFile());
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    await createDeployment(ns, "web");
    await createDeployment(ns, "off");
    const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
    for (const [name, updateMode] of [["web", "Recreate"], ["off", "Off"]] as const) {
      await custom.createNamespacedCustomObject({
        group: "autoscaling.k8s.io",
        version: "v1",
        plural: "verticalpodautoscalers",
        namespace: ns,
        body: { apiVersion: "autoscaling.k8s.io/v1", kind: "VerticalPodAutoscaler", metadata: { name }, spec: { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name }, updatePolicy: { updateMode } } },
      });
    }
    for (const name of ["web", "off"]) await waitForWatchCache({ group: "autoscaling.k8s.io", version: "v1", plural: "verticalpodautoscalers" }, ns, name);
    const pod = await onlyRunningPod(ns, "app=web");
    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "skipped", "VPAControlled");
    assert.deepEqual(await templateResources(ns, "web"), ORIGINAL);
    const [warning] = await eventsRegarding(ns, "Deployment", "web");
    assert.match(warning?.note ?? "", /VerticalPodAutoscaler web \(updateMode Recreate\)/);

    const offPod = await onlyRunningPod(ns, "app=off");
    assertAnswer(await deliver(scaler().url, alertOf(ns, offPod.metadata.name)), "scaled", "Scaled");
  });
});

/** A namespaced custom resource kind that stands for an operator's: its objects own Deployments. */
const WEBAPP = { group: "operators.example.com", version: "v1", plural: "webapps", kind: "WebApp" } as const;

describe("memory-scaler and a workload another controller owns", () => {
  const scaler = scalerForSuite();

  it("a Deployment a custom resource controls: no write, its Warning and lastOutcome name the resource to change instead, and so does explain", async (t) => {
    const kc = await adminKubeConfig();
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const crd = `${WEBAPP.plural}.${WEBAPP.group}`;
    try {
      await ext.createCustomResourceDefinition({
        body: {
          metadata: { name: crd },
          spec: {
            group: WEBAPP.group,
            scope: "Namespaced",
            names: { plural: WEBAPP.plural, singular: "webapp", kind: WEBAPP.kind },
            versions: [{ name: WEBAPP.version, served: true, storage: true, schema: { openAPIV3Schema: { type: "object", properties: { spec: { type: "object", properties: { memory: { type: "string" } } } } } } }],
          },
        },
      });
    } catch (error) {
      // Another run of this file on the same stack created it.
      if ((error as { code?: number }).code !== 409) throw error;
    }
    await waitForCrdEstablished(crd);
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2 });
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const owner = (await custom.createNamespacedCustomObject({
      group: WEBAPP.group,
      version: WEBAPP.version,
      plural: WEBAPP.plural,
      namespace: ns,
      body: { apiVersion: `${WEBAPP.group}/${WEBAPP.version}`, kind: WEBAPP.kind, metadata: { name: "shop" }, spec: { memory: "384Mi" } },
    })) as k8s.KubernetesObject;
    const uid = owner.metadata?.uid;
    assert.ok(uid !== undefined, "the WebApp has a uid");
    await createDeployment(ns, "web", { ownerReferences: [{ apiVersion: `${WEBAPP.group}/${WEBAPP.version}`, kind: WEBAPP.kind, name: "shop", uid, controller: true }] });
    const pod = await onlyRunningPod(ns, "app=web");

    assertAnswer(await deliver(scaler().url, alertOf(ns, pod.metadata.name)), "skipped", "UnknownController");
    assert.deepEqual(await templateResources(ns, "web"), ORIGINAL);
    const d = await (await apps()).readNamespacedDeployment({ namespace: ns, name: "web" });
    assert.deepEqual((d.metadata?.managedFields ?? []).filter((f) => f.manager === "appmonitor-memory-scaler"), [], "memory-scaler never wrote the Deployment");

    const names = /Pod web-\S+ belongs to Deployment web \(through ReplicaSet web-\S+\), which WebApp shop \(operators\.example\.com\/v1\) controls: .*change the memory in WebApp shop \(or in what controls it\) instead/;
    const warnings = await eventsRegarding(ns, "Deployment", "web");
    assert.deepEqual(warnings.map((e) => [e.type, e.reason, e.related?.kind]), [["Warning", "UnknownController", "AppMonitor"]]);
    assert.match(warnings[0]?.note ?? "", names);
    assert.deepEqual((await eventsRegarding(ns, "AppMonitor", "m")).map((e) => [e.type, e.reason, e.related?.kind, e.related?.name]), [["Warning", "UnknownController", "Deployment", "web"]]);
    const last = (await appMonitorStatus(ns, "m")).lastOutcome as Record<string, unknown> | undefined;
    assert.deepEqual([last?.outcome, last?.reason, last?.workload, last?.pod], ["skipped", "UnknownController", { kind: "Deployment", name: "web" }, `${ns}/${pod.metadata.name}`]);
    assert.match(String(last?.message), names);

    const lines = await explain({ kind: "Deployment", name: "web", namespace: ns, prometheusUrl: undefined, source: "cadvisor" }, kc);
    assert.match(lines[0] ?? "", /^controller: WebApp shop \(operators\.example\.com\/v1\): .*change the memory in WebApp shop .*skipped UnknownController/, lines.join("\n"));
    assert.ok(lines.some((l) => /^last outcome: skipped at .*: UnknownController: .*WebApp shop/.test(l)), lines.join("\n"));
  });
});
