// The heap-threshold alert's evidence: whose heap is watched, at what threshold, and what
// Prometheus' heap percent confirms (functions/memory-scaler/scale/decide/heap-threshold.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ContainerChange } from "../../../../../functions/memory-scaler/model.ts";
import type { Scale } from "../../../../../functions/memory-scaler/outcome.ts";
import { afterHeapThresholdCheck, checkHeapThreshold, heapWatched } from "../../../../../functions/memory-scaler/scale/decide/heap-threshold.ts";

const change = (container: string): ContainerChange => ({ container, from: { limit: "1Gi" }, to: { limit: "2Gi" } });
const spec = {
  memThresholdPercent: 75,
  containerPolicies: [
    { containerName: "api", runtime: "JVM" as const, heapMetrics: "Watch" as const, heapThresholdPercent: 85 },
    { containerName: "sidecar", maxMemory: "1Gi" },
    { containerName: "*", runtime: "Node.js" as const, heapMetrics: "Watch" as const },
  ],
};

describe("heapWatched", () => {
  it("a container's own entry, else *'s; a named entry takes nothing from *; the threshold defaults to memThresholdPercent", () => {
    assert.deepEqual(heapWatched(["api", "sidecar", "worker"], spec), [
      { container: "api", runtime: "JVM", thresholdPercent: 85 },
      { container: "worker", runtime: "Node.js", thresholdPercent: 75 },
    ]);
  });

  it("nothing without heapMetrics: Watch, or without a runtime", () => {
    assert.deepEqual(heapWatched(["api"], { memThresholdPercent: 75, containerPolicies: [{ containerName: "api", runtime: "Go", heapMetrics: "Off" }] }), []);
    assert.deepEqual(heapWatched(["api"], { memThresholdPercent: 75, containerPolicies: [{ containerName: "api", heapMetrics: "Watch" }] }), []);
    assert.deepEqual(heapWatched(["api"], { memThresholdPercent: 75 }), []);
  });
});

describe("checkHeapThreshold", () => {
  const watched = heapWatched(["api", "worker"], spec);

  it("keeps a heap at or above its own threshold; below it is BelowThreshold with the percent", () => {
    const { keep, skipped } = checkHeapThreshold([change("api"), change("worker")], watched, new Map([["api", 85], ["worker", 74.996]]));
    assert.deepEqual(keep.map((c) => c.container), ["api"]);
    assert.equal(skipped[0]?.reason, "BelowThreshold");
    assert.equal(skipped[0]?.percent, 75);
    assert.match(skipped[0]?.message ?? "", /container worker's Node\.js heap is at 75% of its heap limit, below the heap threshold of 75%/);
  });

  it("NotMeasured without a heap series, and for a container no longer watched", () => {
    const { keep, skipped } = checkHeapThreshold([change("api"), change("sidecar")], watched, new Map([["sidecar", 99]]));
    assert.deepEqual(keep, []);
    assert.deepEqual(skipped.map((s) => s.reason), ["NotMeasured", "NotMeasured"]);
    assert.match(skipped[0]?.message ?? "", /no JVM heap series for container api/);
    assert.match(skipped[1]?.message ?? "", /no longer watches container sidecar's heap/);
  });
});

describe("afterHeapThresholdCheck", () => {
  const scale: Scale = { action: "scale", changes: [change("api")], skipped: [], dryRun: false };
  const watched = heapWatched(["api"], spec);

  it("confirmed: the scale by a rollout; a target that resizes in place (a bare Pod) is HeapNeedsRollout, saying what would help", () => {
    const checked = checkHeapThreshold(scale.changes, watched, new Map([["api", 90]]));
    assert.deepEqual(afterHeapThresholdCheck(scale, checked, watched, true), { ...scale, changes: [change("api")], skipped: [] });
    const inPlace = afterHeapThresholdCheck(scale, checked, watched, false);
    assert.equal(inPlace.action === "skip" ? inPlace.reason : inPlace.action, "HeapNeedsRollout");
    assert.match(inPlace.action === "skip" ? inPlace.message : "", /container api's JVM heap is above its heap threshold: a resize in place cannot reach.*a bare Pod has no Pod template.*run it under a Deployment/);
  });

  it("refuted: the check's skip, in place or not", () => {
    const checked = checkHeapThreshold(scale.changes, watched, new Map([["api", 50]]));
    for (const rollsOut of [true, false]) {
      const after = afterHeapThresholdCheck(scale, checked, watched, rollsOut);
      assert.equal(after.action === "skip" ? after.reason : after.action, "BelowThreshold");
    }
  });
});
