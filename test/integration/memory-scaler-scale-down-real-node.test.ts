// spec.scaleDown on the real node, for real (issue 27): the original demo's memhog held at 320Mi
// (limits 384Mi / requests 256Mi, threshold 75, multiplier 2) is raised to 768Mi/512Mi; its held
// memory is then lowered to 120Mi, and after a shortened quiet period (QUIET_SECONDS) the follow-up's ticks
// (the shipped handler, PingSource events delivered directly) bring it back to 384Mi/256Mi, not
// below, the new limit read back from its cgroup; raising memhog again raises it again, and the next
// down-step waits (its peak over the period is near the threshold: PeakNearThreshold); DryRun
// records the step and changes nothing. The peak comes from the stack's real Prometheus scraping
// the real node's cAdvisor.
//
// The run's shared real node beside the run's other such files (real-node-alongside.ts; alone, the
// file's own), memory-scaler in this process as its ServiceAccount serving this file's namespace alone.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { type StackState } from "../harness/stack/state.ts";
import { alertEvent, appMonitorStatus, createAppMonitor, deliver, eventsRegarding, memhogManifest, patchAppMonitorSpec, pingTick, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { cgroupLimit, memhogProcess } from "../support/real-node-memhog.ts";
import { type RealNodeFile } from "../support/real-node-file.ts";
import { startRealNodeFileAlongside, startScalerServing } from "../support/real-node-alongside.ts";
import { waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

const Mi = 1 << 20;
const NS = "scale-down";
/** The quiet period: seconds, not the default day; still 15 of the stack's 1 s scrapes of the real node, so the peak read over it has samples. */
const QUIET_SECONDS = 15;
let stack: RealNodeFile | undefined;
let state: StackState;
let core: k8s.CoreV1Api;
let apps: k8s.AppsV1Api;
let scaler: ScalerUnderTest | undefined;

before(async () => {
  stack = await startRealNodeFileAlongside("appmonitor-scale-down-");
  ({ state, core, apps } = stack);
  await stack.namespace(NS);
  scaler = await startScalerServing([NS], { PROMETHEUS_URL: state.prometheusUrl });
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  await scaler?.stop();
  await stack?.stop();
});

/** The one Running, Ready, not terminating Pod of memhog with `limit` in its spec and memhog holding at least `held` bytes. */
async function holding(limit: string, held: number, timeoutMs = 180_000): Promise<k8s.V1Pod> {
  return waitFor(`memhog at ${limit} holding ${held / Mi}Mi`, async () => {
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: "name=memhog" })).items.filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === "Running" && p.status.containerStatuses?.every((c) => c.ready));
    const [pod] = pods;
    if (pods.length !== 1 || pod === undefined || pod.spec?.containers[0]?.resources?.limits?.memory !== limit) return undefined;
    try {
      const { rss } = memhogProcess(pod);
      return rss >= held && rss < held + 64 * Mi ? pod : undefined;
    } catch {
      return undefined;
    }
  }, timeoutMs, 500);
}

/** Sets how much memhog holds (its env: a rollout of the same memory). */
async function hold(target: string): Promise<void> {
  await apps.patchNamespacedDeployment(
    { namespace: NS, name: "memhog", body: { spec: { template: { spec: { containers: [{ name: "memhog", env: [{ name: "MEMHOG_TARGET", value: target }, { name: "MEMHOG_RATE", value: "256Mi" }] }] } } } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
  );
}

const templateMemory = async () => {
  const resources = (await apps.readNamespacedDeployment({ namespace: NS, name: "memhog" })).spec?.template.spec?.containers[0]?.resources;
  return { limit: resources?.limits?.memory, request: resources?.requests?.memory };
};

/** Alerts for `pod` until memory-scaler scales it (a Cooldown skip is tried again). */
async function raised(pod: k8s.V1Pod): Promise<string> {
  return waitFor("a Scaled answer", async () => {
    const answer = await deliver(scaler?.url ?? "", alertEvent({ namespace: NS, pod: pod.metadata?.name ?? "", container: "memhog", appmonitor: "mymonitor" }));
    assert.equal(answer.status, 204, describeAnswer(answer));
    return answer.reason === "Scaled" ? describeAnswer(answer) : undefined;
  }, 120_000, 2000);
}

/** Ticks the follow-up (the shipped PingSource path) every 3 s until `done` says so; the tick answers seen. */
async function tickUntil<T>(what: string, done: () => Promise<T | undefined>, timeoutMs: number): Promise<{ value: T; answers: Set<string> }> {
  const answers = new Set<string>();
  const value = await waitFor(what, async () => {
    const answer = await deliver(scaler?.url ?? "", pingTick());
    assert.equal(answer.status, 204, describeAnswer(answer));
    answers.add(answer.reason ?? "");
    return done();
  }, timeoutMs, 3000);
  return { value, answers };
}

type Status = { recentScales?: { direction?: string; floored?: boolean; dryRun?: boolean; to?: { limit?: string; request?: string }; time?: string }[]; lastOutcome?: { reason: string; message: string } };

test("the original demo raised to 768Mi/512Mi comes back to 384Mi/256Mi (not below) after a quiet period with memhog at 120Mi; raised again; held near the threshold; DryRun changes nothing", { timeout: 40 * 60_000 }, async (t) => {
  const manifest = await memhogManifest();
  const container = manifest.spec?.template.spec?.containers[0];
  assert.ok(container !== undefined && manifest.spec !== undefined && manifest.spec.template.spec !== undefined);
  container.env = [{ name: "MEMHOG_TARGET", value: "320Mi" }, { name: "MEMHOG_RATE", value: "256Mi" }];
  container.imagePullPolicy = "IfNotPresent";
  Object.assign(manifest.spec.template.spec, REAL_NODE_PLACEMENT, { terminationGracePeriodSeconds: 1 });
  await apps.createNamespacedDeployment({ namespace: NS, body: { ...manifest, metadata: { ...manifest.metadata, namespace: NS } } });
  await createAppMonitor(NS, "mymonitor", { memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 10, scaleDown: { quietPeriodSeconds: QUIET_SECONDS } });

  // 1. The raise: 320Mi is 83% of 384Mi.
  const first = await holding("384Mi", 320 * Mi);
  t.diagnostic(`raise: ${await raised(first)}`);
  assert.deepEqual(await templateMemory(), { limit: "768Mi", request: "512Mi" });
  const big = await holding("768Mi", 320 * Mi);
  assert.equal(cgroupLimit(big), 768 * Mi);

  // 2. memhog holds 120Mi; after the quiet period the ticks step it down to where it started.
  await hold("120Mi");
  await holding("768Mi", 120 * Mi);
  const stepped = await tickUntil("the down-step", async () => ((await templateMemory()).limit === "384Mi" ? templateMemory() : undefined), 8 * 60_000);
  t.diagnostic(`tick answers before the step: ${[...stepped.answers].join(", ")}; last outcome ${JSON.stringify((await appMonitorStatus(NS, "mymonitor") as Status).lastOutcome)}`);
  assert.deepEqual(stepped.value, { limit: "384Mi", request: "256Mi" }, "back to the original demo's memory, not below");
  const small = await holding("384Mi", 120 * Mi);
  assert.equal(cgroupLimit(small), 384 * Mi, "the new limit in the real cgroup");
  t.diagnostic(`request returned: ${(512 - 256) * Mi} bytes (512Mi → 256Mi); cgroup limit ${cgroupLimit(small)} bytes`);
  const afterDown = (await appMonitorStatus(NS, "mymonitor")) as Status;
  const [down] = afterDown.recentScales ?? [];
  assert.deepEqual([down?.direction, down?.floored, down?.to], ["down", true, { limit: "384Mi", request: "256Mi" }]);
  const events = (await eventsRegarding(NS, "Deployment", "memhog")).filter((e) => e.reason === "ScaledDown");
  assert.equal(events.length, 1, "one ScaledDown Event on the workload");
  t.diagnostic(`ScaledDown: ${events[0]?.note}`);
  // Floored: further ticks change nothing.
  await deliver(scaler?.url ?? "", pingTick());
  assert.deepEqual(await templateMemory(), { limit: "384Mi", request: "256Mi" });

  // 3. memhog back at 320Mi: raised again (after the cooldown of the down-step).
  await hold("320Mi");
  const again = await holding("384Mi", 320 * Mi);
  t.diagnostic(`raise again: ${await raised(again)}`);
  assert.deepEqual(await templateMemory(), { limit: "768Mi", request: "512Mi" });
  const bigAgain = await holding("768Mi", 320 * Mi);
  assert.equal(cgroupLimit(bigAgain), 768 * Mi);

  // 4. Its peak over the (doubled: 2 × QUIET_SECONDS) period is 320Mi, 83% of 384Mi: held, PeakNearThreshold, not stepped.
  const held = await tickUntil("PeakNearThreshold", async () => {
    const status = (await appMonitorStatus(NS, "mymonitor")) as Status;
    return status.lastOutcome?.reason === "PeakNearThreshold" ? status.lastOutcome : undefined;
  }, 6 * 60_000);
  t.diagnostic(`held: ${held.value.message}`);
  assert.deepEqual(await templateMemory(), { limit: "768Mi", request: "512Mi" }, "not stepped down near the threshold");

  // 5. DryRun: memhog at 120Mi again; the step is recorded, nothing changes.
  await patchAppMonitorSpec(NS, "mymonitor", { mode: "DryRun" });
  await hold("120Mi");
  const pod = await holding("768Mi", 120 * Mi);
  const dry = await tickUntil("the DryRun down-step", async () => {
    const status = (await appMonitorStatus(NS, "mymonitor")) as Status;
    const entry = status.recentScales?.find((r) => r.direction === "down" && r.dryRun === true);
    return entry;
  }, 10 * 60_000);
  assert.deepEqual(dry.value.to, { limit: "384Mi", request: "256Mi" });
  assert.deepEqual(await templateMemory(), { limit: "768Mi", request: "512Mi" }, "DryRun changes nothing");
  const still = await holding("768Mi", 120 * Mi);
  assert.equal(still.metadata?.uid, pod.metadata?.uid, "the same Pod");
  assert.equal(cgroupLimit(still), 768 * Mi);
});
