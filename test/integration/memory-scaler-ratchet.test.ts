/**
 * The bounded ratchet on the stack's real API server: a cap that holds (1Gi, multiplier 1.5,
 * maxMemory 2Gi: 1Gi → 1.5Gi → 2Gi, never 2.25Gi, then AtMaxMemory, one Warning, and alerts
 * answered with no patch, also after memory-scaler restarted), and the leak guard (the alert after
 * spec.leakGuard.maxScales scales held ProbableLeak, one Warning with the scales, the
 * AppMonitorProbableLeak alert delivered by a real Alertmanager to a webhook receiver of this
 * test's own, the hold kept across a restart, and released by a change of the spec).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { startAlertmanager, type TestAlertmanager } from "../support/alertmanager.ts";
import { installMemoryScaler } from "../support/install.ts";
import { describeAnswer } from "../support/post-event.ts";
import {
  alertEvent,
  appMonitorStatus,
  deliver,
  eventsRegarding,
  monitoredDeployment,
  patchAppMonitorSpec,
  runningPods,
  startScaler,
  waitForWatchCache,
  type Answer,
  type ScalerUnderTest,
} from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

/** What the webhook receiver got: each notification's alerts' labels and status. */
interface Notified {
  readonly status: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
}

async function readDeployment(ns: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ namespace: ns, name: "web" });
}

const limitOf = (d: k8s.V1Deployment): string | undefined => d.spec?.template.spec?.containers[0]?.resources?.limits?.memory;

function conditionOf(status: Record<string, unknown>, type: string): { status?: string; reason?: string; message?: string } | undefined {
  return (status.conditions as { type?: string; status?: string; reason?: string; message?: string }[] | undefined)?.find((c) => c.type === type);
}

/** The one Running Pod of `web` that runs the Deployment's current generation's memory limit. */
async function currentPod(ns: string): Promise<string> {
  const limit = limitOf(await readDeployment(ns));
  const pod = await waitFor(`web's Pod with limit ${limit ?? ""}`, async () => {
    const pods = await runningPods(ns, "app=web");
    return pods.length === 1 && pods[0]?.spec?.containers[0]?.resources?.limits?.memory === limit ? pods[0] : undefined;
  }, 60_000);
  return pod.metadata?.name ?? "";
}

/** Delivers the alert of the current Pod until its answer is no `Cooldown` (a firing alert after each cooldown). */
async function alertAfterCooldown(scaler: ScalerUnderTest, ns: string): Promise<Answer> {
  const pod = await currentPod(ns);
  return waitFor("an answer other than Cooldown", async () => {
    const answer = await deliver(scaler.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    return answer.reason === "Cooldown" ? undefined : answer;
  }, 30_000, 500);
}

describe("memory-scaler's bounded ratchet", () => {
  let alertmanager: TestAlertmanager | undefined;
  let receiver: Server | undefined;
  let scaler: ScalerUnderTest | undefined;
  const notified: Notified[] = [];
  const running = (): ScalerUnderTest => {
    if (scaler === undefined) throw new Error("memory-scaler has not started");
    return scaler;
  };
  const restart = async (): Promise<void> => {
    await running().stop();
    scaler = await startScaler({ ALERTMANAGER_URL: alertmanager?.url ?? "" });
  };

  before(async () => {
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const payload = JSON.parse(body) as { alerts?: Notified[] };
        for (const a of payload.alerts ?? []) notified.push({ status: a.status, labels: a.labels, annotations: a.annotations });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver?.listen(0, "127.0.0.1", resolve));
    const port = (receiver.address() as AddressInfo).port;
    alertmanager = await startAlertmanager({
      route: { receiver: "leaks", group_by: ["alertname", "namespace", "workload"], group_wait: "100ms", group_interval: "500ms", repeat_interval: "1h", routes: [{ receiver: "leaks", matchers: ['alertname="AppMonitorProbableLeak"'] }] },
      receivers: [{ name: "leaks", webhook_configs: [{ url: `http://127.0.0.1:${port}/`, send_resolved: true }] }],
    });
    await installMemoryScaler();
    scaler = await startScaler({ ALERTMANAGER_URL: alertmanager.url });
  });

  after(async () => {
    await scaler?.stop();
    await alertmanager?.stop();
    await new Promise<void>((resolve) => (receiver === undefined ? resolve() : receiver.close(() => resolve())));
  });

  it("1Gi, multiplier 1.5, maxMemory 2Gi, cooldown 5 s: 1Gi → 1.5Gi → 2Gi, then AtMaxMemory, one Warning, no patch, also after a restart", async (t) => {
    const ns = await freshNamespace(t);
    await monitoredDeployment(ns, { memMultiplier: 1.5, maxMemory: "2Gi", cooldownSeconds: 5 });
    await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).patchNamespacedDeployment(
      { namespace: ns, name: "web", body: { spec: { template: { spec: { containers: [{ name: "memhog", resources: { limits: { memory: "1Gi" }, requests: { memory: "1Gi" } } }] } } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
    );
    const limits = [limitOf(await readDeployment(ns))];
    for (let i = 0; i < 2; i += 1) {
      const answer = await alertAfterCooldown(running(), ns);
      assert.equal(answer.outcome, "scaled", describeAnswer(answer));
      limits.push(limitOf(await readDeployment(ns)));
    }
    assert.deepEqual(limits, ["1Gi", "1536Mi", "2Gi"]);
    const generation = (await readDeployment(ns)).metadata?.generation;

    for (const restarted of [false, false, true]) {
      if (restarted) await restart();
      const answer = await alertAfterCooldown(running(), ns);
      assert.equal(answer.status, 204, describeAnswer(answer));
      assert.deepEqual([answer.outcome, answer.reason], ["skipped", "AtCap"], describeAnswer(answer));
    }
    const deployment = await readDeployment(ns);
    assert.equal(deployment.metadata?.generation, generation, "no patch, no rollout");
    assert.equal(limitOf(deployment), "2Gi");
    const status = await appMonitorStatus(ns, "m");
    assert.equal(conditionOf(status, "AtMaxMemory")?.status, "True");
    assert.match(conditionOf(status, "AtMaxMemory")?.message ?? "", /Deployment web \(memhog at 2Gi, spec\.maxMemory\)/);
    assert.deepEqual((status.capped as { maxMemory?: string; source?: string }[] | undefined)?.map((c) => [c.maxMemory, c.source]), [["2Gi", "spec"]]);
    const warnings = (await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.type === "Warning" && e.reason === "AtCap");
    assert.equal(warnings.length, 1, "one AtCap Warning on the workload");
  });

  it("the leak guard: the alert after maxScales scales is held ProbableLeak, the alert reaches the receiver through Alertmanager, the hold survives a restart, a spec change releases it", async (t) => {
    const ns = await freshNamespace(t);
    await monitoredDeployment(ns, { cooldownSeconds: 0, leakGuard: { maxScales: 2, windowSeconds: 3600 } });
    for (let i = 0; i < 2; i += 1) assert.equal((await alertAfterCooldown(running(), ns)).outcome, "scaled");
    const generation = (await readDeployment(ns)).metadata?.generation;

    const held = await alertAfterCooldown(running(), ns);
    assert.deepEqual([held.status, held.outcome, held.reason], [204, "skipped", "ProbableLeak"], describeAnswer(held));
    const status = await appMonitorStatus(ns, "m");
    assert.equal(conditionOf(status, "ProbableLeak")?.status, "True");
    const leaks = status.probableLeaks as { workload: unknown; scales: string[]; cleared?: string }[] | undefined;
    assert.deepEqual(leaks?.map((l) => [l.workload, l.scales.map((s) => s.replace(/^\S+ /, ""))]), [[{ kind: "Deployment", name: "web" }, ["memhog 384Mi → 768Mi", "memhog 768Mi → 1536Mi"]]]);

    const alert = await waitFor("the AppMonitorProbableLeak notification", async () => notified.find((n) => n.labels.namespace === ns && n.status === "firing"), 30_000);
    assert.deepEqual([alert.labels.alertname, alert.labels.kind, alert.labels.workload, alert.labels.appmonitor], ["AppMonitorProbableLeak", "Deployment", "web", "m"]);
    assert.match(alert.annotations.description ?? "", /memhog 384Mi → 768Mi; .* memhog 768Mi → 1536Mi/);

    await restart();
    const still = await alertAfterCooldown(running(), ns);
    assert.deepEqual([still.outcome, still.reason], ["skipped", "ProbableLeak"], describeAnswer(still));
    assert.equal((await readDeployment(ns)).metadata?.generation, generation, "no patch while held");
    const warnings = (await eventsRegarding(ns, "Deployment", "web")).filter((e) => e.reason === "ProbableLeak");
    assert.equal(warnings.length, 1, "one ProbableLeak Warning on the workload");
    assert.match(warnings[0]?.note ?? "", /scaled 2 times within 3600s/);

    // A change of the spec releases it: the next alert scales, the alert resolves.
    await patchAppMonitorSpec(ns, "m", { memThresholdPercent: 80 });
    await waitForWatchCache({ group: "kubedemo.com", version: "v1", plural: "appmonitors" }, ns, "m", (o) => (o.spec as { memThresholdPercent?: number }).memThresholdPercent === 80);
    const released = await alertAfterCooldown(running(), ns);
    assert.equal(released.outcome, "scaled", describeAnswer(released));
    const after = await appMonitorStatus(ns, "m");
    assert.equal(conditionOf(after, "ProbableLeak")?.status, "False");
    assert.equal((after.probableLeaks as { cleared?: string }[] | undefined)?.[0]?.cleared, "the AppMonitor's spec changed");
    await waitFor("the resolved notification", async () => notified.find((n) => n.labels.namespace === ns && n.status === "resolved"), 30_000);
  });
});
