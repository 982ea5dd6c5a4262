/**
 * memory-scaler under the install's ceilings on the local stack (its own ServiceAccount's token,
 * the real CRD and write policy): AppMonitors that ask for more than the ceilings, written where the
 * ceilings policy holds nothing (the shipped ConfigMap is empty, as an AppMonitor written before a
 * ceiling was set), are held by memory-scaler itself. The multiplier and the cap are the ceilings',
 * and the answer, the `Scaled` Events and `status.lastOutcome` say which bound held; the next alert
 * waits the ceiling's cooldown; a workload at the ceiling is skipped `AtCap`, listed in
 * `status.capped` with source `ceiling` (which the CRD accepts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, monitoredDeployment, onlyRunningPod, runningPods, scalerForSuite } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

/** The clause every note of the first scale ends with. */
const BOUNDS = "; the multiplier is the install's ceiling MAX_MEM_MULTIPLIER 2 over spec.memMultiplier 10; memhog capped by the install's ceiling MAX_MEMORY 640Mi (over spec.maxMemory 16Gi)";

describe("memory-scaler under the install's ceilings", { concurrency: 2 }, () => {
  const scaler = scalerForSuite({ MAX_MEMORY: "640Mi", MAX_MEM_MULTIPLIER: "2", MIN_COOLDOWN_SECONDS: "600" });

  it("an AppMonitor asking ×10 up to 16Gi without a cooldown: scaled ×2 to 640Mi, saying so; its next alert waits the ceiling's cooldown", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, { memMultiplier: 10, maxMemory: "16Gi", cooldownSeconds: 0 });
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
    const resources = (await apps.readNamespacedDeployment({ namespace: ns, name: "web" })).spec?.template.spec?.containers[0]?.resources;
    // 384Mi × 2 = 768Mi, capped at 640Mi; the request keeps its ratio (256/384).
    assert.deepEqual(JSON.parse(JSON.stringify(resources)), { limits: { memory: "640Mi" }, requests: { memory: "447392427" } });
    const status = await appMonitorStatus(ns, "m");
    const lastOutcome = status.lastOutcome as { message?: string } | undefined;
    assert.ok(lastOutcome?.message?.endsWith(BOUNDS), lastOutcome?.message);
    assert.match(lastOutcome?.message ?? "", /^scaled Deployment web by 2: memhog: limit 384Mi → 640Mi/);
    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      const scaled = (await eventsRegarding(ns, kind, name)).filter((e) => e.reason === "Scaled");
      assert.equal(scaled.length, 1, kind);
      assert.ok(scaled[0]?.note?.endsWith(BOUNDS), scaled[0]?.note);
      t.diagnostic(`${kind} Scaled: ${scaled[0]?.note ?? ""}`);
    }

    // The rollout's Pod, running 640Mi, alerts in turn: the AppMonitor asks no cooldown, the ceiling's holds it.
    const raised = await waitFor("the rollout's Pod", async () => (await runningPods(ns, "app=web")).find((p) => p.metadata?.name !== pod && p.spec?.containers[0]?.resources?.limits?.memory === "640Mi"));
    const again = await deliver(scaler().url, alertEvent({ namespace: ns, pod: raised.metadata?.name ?? "", container: "memhog", appmonitor: "m" }));
    assert.deepEqual([again.outcome, again.reason], ["skipped", "Cooldown"], describeAnswer(again));
    const held = (await appMonitorStatus(ns, "m")).lastOutcome as { message?: string } | undefined;
    assert.match(held?.message ?? "", /cooldown of 600s \(the install's ceiling MIN_COOLDOWN_SECONDS 600 over spec\.cooldownSeconds 0\) has \d+s left/);
  });

  it("a workload at the ceiling: AtCap naming it over the AppMonitor's cap, and listed in status.capped with source ceiling", async (t) => {
    const ns = await freshNamespace(t);
    await createAppMonitor(ns, "m", { memThresholdPercent: 75, memMultiplier: 2, maxMemory: "16Gi" });
    const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
    const template = { metadata: { labels: { app: "full" }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } }, spec: { containers: [{ name: "memhog", image: "registry.example/app:1", resources: { limits: { memory: "640Mi" }, requests: { memory: "512Mi" } } }] } };
    await apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: "full" }, spec: { replicas: 1, selector: { matchLabels: { app: "full" } }, template } } });
    const pod = await onlyRunningPod(ns, "app=full");
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod: pod.metadata.name, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["skipped", "AtCap"], describeAnswer(answer));
    const status = await appMonitorStatus(ns, "m");
    const said = (status.lastOutcome as { message?: string } | undefined)?.message ?? "";
    assert.match(said, /memory limit 640Mi is already at the install's ceiling MAX_MEMORY 640Mi \(over spec\.maxMemory 16Gi\)/);
    const capped = status.capped as { workload: unknown; maxMemory: string; source: string }[] | undefined;
    assert.deepEqual(capped?.map(({ workload, maxMemory, source }) => ({ workload, maxMemory, source })), [{ workload: { kind: "Deployment", name: "full" }, maxMemory: "640Mi", source: "ceiling" }]);
    const condition = (status.conditions as { type: string; message?: string }[] | undefined)?.find((c) => c.type === "AtMaxMemory");
    assert.match(condition?.message ?? "", /Deployment full \(memhog at 640Mi, the install's ceiling MAX_MEMORY\)/);
    t.diagnostic(`AtCap: ${said}`);
  });
});
