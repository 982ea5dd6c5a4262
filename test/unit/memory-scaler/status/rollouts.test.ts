// The rollouts in an AppMonitor's status and its RolledOut condition (functions/memory-scaler/status/rollouts.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type PendingRollout, pendingRollouts, withRolloutFollowedUp, withRolloutStarted } from "../../../../functions/memory-scaler/status/rollouts.ts";

const START = "2026-12-01T10:00:00Z";
const rollout: PendingRollout = { workload: { kind: "Deployment", name: "web" }, generation: 2, startedAt: START, event: "e1" };
const sts: PendingRollout = { ...rollout, workload: { kind: "StatefulSet", name: "db" } };

describe("the rollouts in the AppMonitor status", () => {
  const t0 = "2026-12-01T10:00:00Z";
  const t1 = "2026-12-01T10:05:00Z";
  it("a start lists the rollout (replacing the workload's earlier one) and sets the condition Unknown", () => {
    const first = withRolloutStarted({ scaleCount: 1 }, rollout, "rolling", t0);
    const again = withRolloutStarted(first, { ...rollout, generation: 3 }, "rolling again", t1);
    assert.deepEqual(pendingRollouts(again).map((r) => r.generation), [3]);
    assert.deepEqual(again.conditions, [{ type: "RolledOut", status: "Unknown", reason: "RolloutProgressing", message: "rolling again", lastTransitionTime: t0 }]);
    assert.equal(again.scaleCount, 1);
  });
  it("an end removes only its own generation's entry and sets the condition; the transition time moves with the status", () => {
    const started = withRolloutStarted({ conditions: [{ type: "RuleReady", status: "True", reason: "Ok", message: "", lastTransitionTime: t0 }] }, rollout, "rolling", t0);
    assert.equal(withRolloutFollowedUp(started, { ...rollout, generation: 1 }, { end: { status: "True", reason: "RolledOut", message: "done" } }, t1), started, "another generation: unchanged");
    const ended = withRolloutFollowedUp(started, rollout, { end: { status: "False", reason: "FailedCreate", message: "quota" } }, t1);
    assert.deepEqual(pendingRollouts(ended), []);
    assert.deepEqual(ended?.conditions?.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime]), [
      ["RuleReady", "True", "Ok", t0],
      ["RolledOut", "False", "FailedCreate", t1],
    ]);
  });
  it("waiting Pods are written only when they change", () => {
    const started = withRolloutStarted(undefined, sts, "rolling", t0);
    const waiting = withRolloutFollowedUp(started, sts, { waitingPods: ["db-0"] }, t1);
    assert.deepEqual(pendingRollouts(waiting)[0]?.waitingPods, ["db-0"]);
    assert.equal(withRolloutFollowedUp(waiting, sts, { waitingPods: ["db-0"] }, t1), waiting);
  });
});
