// The sequential API round trips of memory-scaler's flow (scale/flow.ts): calls made while
// another is pending belong to the same round trip, so the count is the latency floor of one
// event in API server answers. A scale takes four: read, checks, write, records. The
// HorizontalPodAutoscaler and VerticalPodAutoscaler lists and the owners the Pod's name points to
// join the first, and the scale's listing in the AppMonitor's status.pendingScales (written before
// the patch) joins the checks: more requests, no more round trips. Only a Pod whose name misleads
// (a DaemonSet's) costs the owners' round trip of its own.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { handleFiring } from "../../../../functions/memory-scaler/scale/flow.ts";
import { alertData, editPod, flowDeps, KNATIVE, knativeCluster, memhogCluster, NS, type FakeCluster } from "../../../support/memory-scaler-fakes.ts";

const silent = pino({ level: "silent" });

/** Wraps `cluster` so each call is filed under the round trip it starts or joins. */
function countingRoundTrips(cluster: FakeCluster): { cluster: FakeCluster; roundTrips: string[][] } {
  const roundTrips: string[][] = [];
  let pending = 0;
  const counted = new Proxy(cluster, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        if (pending === 0) roundTrips.push([]);
        const name = property === "patchWorkload" && args[4] === true ? "patchWorkload (dry run)" : property === "readWorkload" ? `readWorkload ${String(args[0])}` : String(property);
        roundTrips.at(-1)?.push(name);
        pending += 1;
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          pending -= 1;
        }
      };
    },
  });
  return { cluster: counted, roundTrips };
}

describe("sequential API round trips of one event", () => {
  test("a scale: four (the Pod, the AppMonitors, the HPAs and the VPAs, and the owners its name points to; the dry runs and lists, and the pendingScales listing; the compare-and-swap patch; the Events and the status)", async () => {
    const { cluster, roundTrips } = countingRoundTrips(memhogCluster());
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), silent);
    assert.equal(outcome.outcome, "scaled");
    assert.deepEqual(roundTrips.map((r) => [...r].sort()), [
      ["listAppMonitors", "listHorizontalPodAutoscalers", "listVerticalPodAutoscalers", "readPod", "readWorkload Deployment", "readWorkload ReplicaSet"],
      ["dryRunCreatePod", "listNodeAllocatableMemory", "listResourceQuotas", "patchWorkload (dry run)", "replaceAppMonitorStatus"],
      ["patchWorkload"],
      ["createEvent", "createEvent", "createEvent", "createEvent", "replaceAppMonitorStatus"],
    ]);
  });

  test("a Knative Revision's Pod: the same four; its name points to the whole chain up to the Service, read beside the Pod", async () => {
    const { cluster, roundTrips } = countingRoundTrips(knativeCluster());
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData({ pod: KNATIVE.pod, container: "user-container" }), silent);
    assert.deepEqual([outcome.outcome, outcome.workload], ["scaled", { kind: "Service", name: "web" }]);
    assert.deepEqual(roundTrips.map((r) => [...r].sort()), [
      ["listAppMonitors", "listHorizontalPodAutoscalers", "listVerticalPodAutoscalers", "readKnative", "readKnative", "readPod", "readWorkload Deployment", "readWorkload ReplicaSet", "readWorkload Service"],
      ["dryRunCreatePod", "listNodeAllocatableMemory", "listResourceQuotas", "patchWorkload (dry run)", "replaceAppMonitorStatus"],
      ["patchWorkload"],
      ["createEvent", "createEvent", "replaceAppMonitorStatus"],
    ]);
  });

  test("a skip in the cooldown: one read (the Pod, the AppMonitors, the HPAs and the VPAs, and the owners), then its Events and status.lastOutcome once per window", async () => {
    const fake = memhogCluster();
    const deployment = fake.workloads.get(`Deployment/${NS}/memhog`);
    if (deployment?.metadata === undefined) throw new Error("no memhog Deployment");
    deployment.metadata.annotations = { "app-monitor.kubedemo.com/last-scale": "2025-06-01T11:59:30Z" };
    const { cluster, roundTrips } = countingRoundTrips(fake);
    const deps = flowDeps(cluster);
    const outcome = await handleFiring(deps, "e1", alertData(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "Cooldown"]);
    assert.deepEqual(roundTrips.map((r) => [...r].sort()), [["listAppMonitors", "listHorizontalPodAutoscalers", "listVerticalPodAutoscalers", "readPod", "readWorkload Deployment", "readWorkload ReplicaSet"], ["createEvent", "createEvent", "replaceAppMonitorStatus"]]);
    // The next alert in the window: its Events known written, status.lastOutcome already saying it.
    roundTrips.length = 0;
    assert.equal((await handleFiring(deps, "e2", alertData(), silent)).reason, "Cooldown");
    assert.deepEqual(roundTrips.map((r) => [...r].sort()), [["listAppMonitors", "listHorizontalPodAutoscalers", "listVerticalPodAutoscalers", "readPod", "readWorkload Deployment", "readWorkload ReplicaSet"]]);
  });

  test("a new event in the cooldown after this instance's scale: one; the scale's Events, known written, are not created again", async () => {
    const { cluster, roundTrips } = countingRoundTrips(memhogCluster({ memThresholdPercent: 75, memMultiplier: 2, cooldownSeconds: 3600 }));
    const deps = flowDeps(cluster);
    assert.equal((await handleFiring(deps, "e1", alertData(), silent)).outcome, "scaled");
    roundTrips.length = 0;
    // Another alert of the same Pod: the record's repair finds the Scaled Events known and the status listing the scale.
    const outcome = await handleFiring(deps, "e2", alertData(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason], ["skipped", "Cooldown"]);
    assert.deepEqual(roundTrips.map((r) => [...r].sort()), [["listAppMonitors", "listHorizontalPodAutoscalers", "listVerticalPodAutoscalers", "readPod", "readWorkload Deployment", "readWorkload ReplicaSet"], ["createEvent", "createEvent", "replaceAppMonitorStatus"]]);
  });

  test("a DaemonSet's Pod, whose name reads as a ReplicaSet's: the guesses miss, and the owner costs a round trip of its own", async () => {
    const fake = memhogCluster();
    const rs = fake.workloads.get(`ReplicaSet/${NS}/memhog-5d8f`);
    const template = rs?.spec?.template;
    if (template === undefined) throw new Error("no memhog ReplicaSet");
    fake.workloads.clear();
    fake.workloads.set(`DaemonSet/${NS}/agent`, { metadata: { name: "agent", namespace: NS, uid: "ds1", annotations: { "app-monitor.kubedemo.com/last-scale": "2025-06-01T11:59:30Z" } }, spec: { template } });
    editPod(fake, (meta) => ({ ...meta, ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "agent", uid: "ds1", controller: true }] }));
    const { cluster, roundTrips } = countingRoundTrips(fake);
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData(), silent);
    assert.deepEqual([outcome.outcome, outcome.reason, outcome.workload], ["skipped", "Cooldown", { kind: "DaemonSet", name: "agent" }]);
    assert.deepEqual(roundTrips.map((r) => [...r].sort()), [["listAppMonitors", "listHorizontalPodAutoscalers", "listVerticalPodAutoscalers", "readPod", "readWorkload Deployment", "readWorkload ReplicaSet"], ["readWorkload DaemonSet"], ["createEvent", "createEvent", "replaceAppMonitorStatus"]]);
  });

  test("an alert no AppMonitor rule raised: none", async () => {
    const { cluster, roundTrips } = countingRoundTrips(memhogCluster());
    const outcome = await handleFiring(flowDeps(cluster), "e1", alertData({ alertname: "SomethingElse" }), silent);
    assert.equal(outcome.reason, "NotAppMonitorAlert");
    assert.deepEqual(roundTrips, []);
  });
});
