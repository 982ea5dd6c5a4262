/**
 * What memory-scaler makes visible, on the local stack's real API server: an honest DryRun (a
 * ResourceQuota that refuses the scaled Pod: DryRun records the refusal and changes nothing),
 * the install-wide pause (`PAUSE_SCALING=true`: a `Scale` AppMonitor's alert is a dry run that
 * says so), and `status.lastOutcome` with the common skips' Events (a cooldown skip, alert after
 * alert: one Event pair and one status write per window). The function runs with a token of
 * exactly its ServiceAccount.
 */
import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { installMemoryScaler } from "../support/install.ts";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, onlyRunningPod, scalerForSuite, startScaler, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

const MONITOR = { "app-monitor.kubedemo.com/monitor": "true" };

interface LastOutcome {
  time?: string;
  pod?: string;
  workload?: { kind?: string; name?: string };
  outcome?: string;
  reason?: string;
  message?: string;
}

/** A Deployment `name` of one memhog Pod (limit 384Mi, request 256Mi), its template annotated. */
async function createDeployment(ns: string, name: string, annotations: Record<string, string> = {}): Promise<void> {
  const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
  const container: k8s.V1Container = { name: "memhog", image: "registry.example/app:1", resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } };
  await apps.createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
      spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name }, annotations: MONITOR }, spec: { containers: [container] } } },
    },
  });
}

async function deployment(ns: string, name: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ namespace: ns, name });
}

const lastOutcome = async (ns: string): Promise<LastOutcome | undefined> => (await appMonitorStatus(ns, "m")).lastOutcome as LastOutcome | undefined;

/** A fresh namespace with AppMonitor `m` (`spec`) and Deployment `web`; its one Running Pod's name. */
async function monitoredWeb(t: TestContext, spec: Record<string, unknown>, deploymentAnnotations: Record<string, string> = {}): Promise<{ ns: string; pod: string }> {
  const ns = await freshNamespace(t);
  await createAppMonitor(ns, "m", spec);
  await createDeployment(ns, "web", deploymentAnnotations);
  return { ns, pod: (await onlyRunningPod(ns, "app=web")).metadata.name };
}

describe("memory-scaler: what it makes visible", { concurrency: 2 }, () => {
  const scaler = scalerForSuite();

  it("DryRun under a ResourceQuota the scaled Pod would pass: the refusal recorded (outcome, Warnings, lastOutcome), nothing changed", async (t) => {
    const { ns, pod } = await monitoredWeb(t, { memThresholdPercent: 75, memMultiplier: 2, mode: "DryRun" });
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedResourceQuota({ namespace: ns, body: { metadata: { name: "mem" }, spec: { hard: { "limits.memory": "600Mi" } } } });
    // Quota admission judges against the used amounts the quota controller computed.
    await waitFor("the quota's usage", async () => ((await core.readNamespacedResourceQuota({ namespace: ns, name: "mem" })).status?.used?.["limits.memory"] === "384Mi" ? true : undefined), 30_000);
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 204, describeAnswer(answer));
    assert.deepEqual([answer.outcome, answer.reason], ["dry-run", "AdmissionRefused"], describeAnswer(answer));
    const web = await deployment(ns, "web");
    assert.equal(web.metadata?.generation, 1, "not patched");
    assert.equal(web.spec?.template.spec?.containers[0]?.resources?.limits?.memory, "384Mi");
    const events = await eventsRegarding(ns, "Deployment", "web");
    assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Warning", "AdmissionRefused"]]);
    assert.match(events[0]?.note ?? "", /^DryRun: would not be scaled \(memhog: limit 384Mi → 768Mi.*exceeded quota: mem/);
    const last = await lastOutcome(ns);
    assert.deepEqual([last?.outcome, last?.reason, last?.workload], ["dry-run", "AdmissionRefused", { kind: "Deployment", name: "web" }]);
    assert.match(last?.message ?? "", /^would be refused: .*exceeded quota: mem/);
  });

  it("a cooldown skip, alert after alert: status.lastOutcome says it, and one Normal Event pair for the window", async (t) => {
    const { ns, pod } = await monitoredWeb(t, { memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 3600 }, { "app-monitor.kubedemo.com/last-scale": new Date().toISOString().replace(/\.\d+Z$/, "Z") });
    for (const id of ["c1", "c2", "c3"]) {
      const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m", id }));
      assert.deepEqual([answer.outcome, answer.reason], ["skipped", "Cooldown"], describeAnswer(answer));
    }
    const events = await eventsRegarding(ns, "Deployment", "web");
    assert.deepEqual(events.map((e) => [e.type, e.reason]), [["Normal", "Cooldown"]], "one per window, whatever the number of alerts");
    assert.deepEqual((await eventsRegarding(ns, "AppMonitor", "m")).map((e) => e.reason), ["Cooldown"]);
    const last = await lastOutcome(ns);
    assert.deepEqual([last?.outcome, last?.reason, last?.workload, last?.pod], ["skipped", "Cooldown", { kind: "Deployment", name: "web" }, `${ns}/${pod}`]);
    assert.match(last?.message ?? "", /cooldown of 3600s/);
  });
});

describe("memory-scaler with PAUSE_SCALING=true", () => {
  let paused: ScalerUnderTest | undefined;
  before(async () => {
    await installMemoryScaler();
    paused = await startScaler({ PAUSE_SCALING: "true" });
  });
  after(async () => {
    await paused?.stop();
  });

  it("a Scale AppMonitor's alert: a dry run saying the install is paused; the Deployment unchanged", async (t) => {
    const { ns, pod } = await monitoredWeb(t, { memThresholdPercent: 75, memMultiplier: 2 });
    if (paused === undefined) throw new Error("memory-scaler has not started");
    const answer = await deliver(paused.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["dry-run", "DryRun"], describeAnswer(answer));
    const web = await deployment(ns, "web");
    assert.equal(web.metadata?.generation, 1, "not patched");
    assert.equal(web.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"], undefined);
    const events = await eventsRegarding(ns, "Deployment", "web");
    assert.deepEqual(events.map((e) => e.reason), ["DryRun"]);
    assert.match(events[0]?.note ?? "", /^DryRun \(paused install-wide \(PAUSE_SCALING\)\): would scale Deployment web/);
    const status = await appMonitorStatus(ns, "m");
    assert.equal(status.scaleCount ?? 0, 0);
    assert.match((status.lastOutcome as LastOutcome | undefined)?.message ?? "", /^paused install-wide \(PAUSE_SCALING\): would scale: memhog: limit 384Mi → 768Mi/);
  });
});
