/**
 * The record of a scale converges without a later alert, on the stack: the API server is cut
 * (a TCP proxy between memory-scaler and it, `tcp-proxy.ts`) after the patch of the Deployment
 * landed and before the status write that records the scale reached it; the scale is answered
 * (204, the status and Event writes failed), and one follow-up tick (a PingSource tick, posted as
 * Knative's PingSource sends it) records it from the Deployment's last-scale record: `scaleCount`,
 * `recentScales`, the rollout, the Events. The file has a stack of its own: a tick follows the
 * pending rollouts and scales of every namespace.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { installMemoryScaler } from "../support/install.ts";
import { describeAnswer } from "../support/post-event.ts";
import {
  alertEvent,
  appMonitorStatus,
  deliver,
  eventsRegarding,
  monitoredDeployment,
  ownStackForFile,
  pingTick,
  scalerBehindProxy,
} from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

ownStackForFile("record");

/**
 * How long the proxy holds each chunk from memory-scaler: the status write the flow sends right
 * after the patch's answer is still held when the test, watching the Deployment directly, drains.
 */
const HOLD_MS = 2_500;

describe("the record of a scale converges after a fault", () => {
  before(() => installMemoryScaler());

  it("the API server cut after the patch and before the status write: one follow-up tick records the scale, once", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
    const dir = await mkdtemp(path.join(tmpdir(), "appmonitor-record-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const { proxy, server: scaler } = await scalerBehindProxy(t, dir, "kubeconfig");

    // Every request held on its way in; the Deployment watched directly. The moment the patch is on
    // it, the proxy drops what memory-scaler sends next (the records' writes, sent after the
    // patch's answer, still held) and is cut once the patch's answer has passed back.
    proxy.setLatency(HOLD_MS);
    const event = alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" });
    const answering = deliver(scaler.url, event);
    const patched = await waitFor("the patch on the Deployment", async () => {
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: "web" });
      return d.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"] === undefined ? undefined : d;
    }, 120_000, 20);
    await proxy.drain();
    await proxy.cut();
    const answer = await answering;
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));
    const time = patched.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"];
    const cut = await appMonitorStatus(ns, "m");
    assert.equal(cut.scaleCount, undefined, "the status write after the patch did not reach the API server");
    assert.deepEqual(cut.pendingScales, [{ workload: { kind: "Deployment", name: "web" }, time, event: event.id }], "listed before the patch");
    assert.deepEqual(await eventsRegarding(ns, "Deployment", "web"), []);

    proxy.setLatency(0);
    await proxy.resume();
    const tick = await deliver(scaler.url, pingTick());
    assert.deepEqual([tick.status, tick.outcome, tick.reason], [204, "followed", "ScalesRecorded"], describeAnswer(tick));

    const status = await appMonitorStatus(ns, "m");
    assert.equal(status.scaleCount, 1);
    assert.equal(status.lastScaleTime, time);
    assert.deepEqual(status.recentScales, [
      { time, workload: { kind: "Deployment", name: "web" }, event: event.id, container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } },
    ]);
    assert.deepEqual((status.rollouts as { workload: unknown; generation: number }[] | undefined)?.map((r) => [r.workload, r.generation]), [[{ kind: "Deployment", name: "web" }, patched.metadata?.generation]]);
    assert.equal(status.pendingScales, undefined);
    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      assert.deepEqual((await eventsRegarding(ns, kind, name)).map((e) => e.reason).sort(), ["PodsReplaced", "Scaled"], `${kind} ${name}`);
    }

    // The next tick records nothing twice.
    const again = await deliver(scaler.url, pingTick());
    assert.equal(again.status, 204, describeAnswer(again));
    assert.notEqual(again.reason, "ScalesRecorded");
    assert.equal((await appMonitorStatus(ns, "m")).scaleCount, 1);
    assert.equal((await apps.readNamespacedDeployment({ namespace: ns, name: "web" })).metadata?.generation, patched.metadata?.generation, "patched once");
  });
});
