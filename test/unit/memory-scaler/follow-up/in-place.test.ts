// The follow-up of a workload's Pods resized in place, as a table: each Pod as a bare Pod's
// resize, the Deferred deadline, and what InPlaceOrRollout makes of a failure.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decideInPlaceFollowUp, IN_PLACE_DEFERRED_SECONDS } from "../../../../functions/memory-scaler/follow-up/in-place.ts";
import type { PodResizeView } from "../../../../functions/memory-scaler/kube/views.ts";
import type { PendingRollout } from "../../../../functions/memory-scaler/status/rollouts.ts";

const rollout: PendingRollout = {
  workload: { kind: "Deployment", name: "cache" },
  generation: 1,
  startedAt: "2025-06-01T12:00:00Z",
  event: "e1",
  inPlace: { pods: [{ name: "cache-a", generation: 2 }, { name: "cache-b", generation: 2 }] },
};
const at = (seconds: number) => new Date(Date.parse(rollout.startedAt) + seconds * 1000);
const done = (name: string): PodResizeView => ({ name, generation: 2, observedGeneration: 2, conditions: [], containers: [{ name: "redis", desired: { limit: "768Mi" }, actual: { limit: "768Mi" }, restartCount: 0 }] });
const pending = (name: string, reason: string, message = "Node didn't have enough resource: memory"): PodResizeView => ({
  ...done(name),
  conditions: [{ type: "PodResizePending", status: "True", reason, message }],
  containers: [{ name: "redis", desired: { limit: "768Mi" }, actual: { limit: "384Mi" }, restartCount: 0 }],
});

describe("decideInPlaceFollowUp", () => {
  const cases: { name: string; pods: [string, PodResizeView | undefined][]; mode?: "InPlace" | "InPlaceOrRollout"; now?: Date; want: [string, string?]; message?: RegExp }[] = [
    { name: "every Pod resized: rolledOut, each named with its memory and restarts", pods: [["cache-a", done("cache-a")], ["cache-b", done("cache-b")]], want: ["rolledOut"], message: /^Deployment cache: 2 Pods resized in place: Pod cache-a resized in place .*redis: limit 768Mi, 0 restarts; Pod cache-b/ },
    { name: "a Pod deleted since counts for nothing", pods: [["cache-a", done("cache-a")], ["cache-b", undefined]], want: ["rolledOut"], message: /1 Pod resized in place/ },
    { name: "every Pod gone: gone", pods: [["cache-a", undefined], ["cache-b", undefined]], want: ["gone"] },
    { name: "one Pod Deferred a while: progressing, naming it", pods: [["cache-a", done("cache-a")], ["cache-b", pending("cache-b", "Deferred")]], now: at(60), want: ["progressing"], message: /Pod cache-b: resize pending \(Deferred\)/ },
    { name: `Deferred past ${IN_PLACE_DEFERRED_SECONDS} s under InPlace: failed Deferred`, pods: [["cache-a", pending("cache-a", "Deferred")], ["cache-b", done("cache-b")]], mode: "InPlace", now: at(IN_PLACE_DEFERRED_SECONDS + 1), want: ["failed", "Deferred"], message: /deferred the resize for more than 300s: Node didn't have enough resource/ },
    { name: "Deferred past the deadline under InPlaceOrRollout: fall back", pods: [["cache-a", pending("cache-a", "Deferred")], ["cache-b", done("cache-b")]], mode: "InPlaceOrRollout", now: at(IN_PLACE_DEFERRED_SECONDS + 1), want: ["fallBack", "Deferred"] },
    { name: "Infeasible under InPlaceOrRollout: fall back at once", pods: [["cache-a", pending("cache-a", "Infeasible", "Node didn't have enough capacity")], ["cache-b", pending("cache-b", "Deferred")]], mode: "InPlaceOrRollout", want: ["fallBack", "Infeasible"], message: /^Deployment cache: Pod cache-a: the kubelet cannot resize it \(Infeasible\): Node didn't have enough capacity/ },
    { name: "Infeasible under InPlace: failed, no fallback", pods: [["cache-a", pending("cache-a", "Infeasible")], ["cache-b", done("cache-b")]], mode: "InPlace", want: ["failed", "Infeasible"] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const follow = decideInPlaceFollowUp({ rollout, pods: new Map(c.pods), updateMode: c.mode, now: c.now ?? at(10) });
      assert.deepEqual([follow.result, "reason" in follow ? follow.reason : undefined].slice(0, c.want.length), c.want);
      if (c.message !== undefined) assert.match(follow.message, c.message);
    });
  }

  it("with no Pod listed (nothing resized): gone", () => {
    const { inPlace: _, ...none } = rollout;
    assert.equal(decideInPlaceFollowUp({ rollout: none, pods: new Map(), updateMode: "InPlace", now: at(1) }).result, "gone");
  });
});
