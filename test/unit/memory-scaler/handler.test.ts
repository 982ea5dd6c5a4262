// A PingSource tick's answer (`tickAnswer`): idle or followed, and the reason of the most telling
// thing the follow-up did, one row per reason.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { FollowSummary } from "../../../functions/memory-scaler/follow-up/flow.ts";
import { tickAnswer } from "../../../functions/memory-scaler/handler.ts";

const none: FollowSummary = { checked: 0, ended: 0, pending: 0 };

describe("a tick's answer", () => {
  const cases: readonly { readonly name: string; readonly summary: FollowSummary; readonly outcome: "idle" | "followed"; readonly reason: string }[] = [
    { name: "nothing pending", summary: none, outcome: "idle", reason: "NoPendingRollout" },
    { name: "a rollout still pending", summary: { checked: 1, ended: 0, pending: 1 }, outcome: "followed", reason: "RolloutsPending" },
    { name: "every rollout looked at ended", summary: { checked: 2, ended: 2, pending: 0 }, outcome: "followed", reason: "RolloutsEnded" },
    { name: "a scale recorded, with a rollout pending", summary: { checked: 1, ended: 0, pending: 1, scales: 1, recorded: 1 }, outcome: "followed", reason: "ScalesRecorded" },
    { name: "a pending scale looked at, none recorded", summary: { ...none, scales: 1, recorded: 0 }, outcome: "followed", reason: "NoPendingRollout" },
    { name: "a down-step, over a recorded scale and a pending rollout", summary: { checked: 1, ended: 0, pending: 1, recorded: 1, scaleDowns: { asked: 1, stepped: 1 } }, outcome: "followed", reason: "ScaledDown" },
    { name: "a workload due for a down-step, not lowered", summary: { ...none, scaleDowns: { asked: 1, stepped: 0 } }, outcome: "followed", reason: "ScaleDownsChecked" },
    { name: "a rollout ended beats a down-step not taken", summary: { checked: 1, ended: 1, pending: 0, scaleDowns: { asked: 1, stepped: 0 } }, outcome: "followed", reason: "RolloutsEnded" },
  ];
  for (const { name, summary, outcome, reason } of cases) {
    it(`${name}: ${outcome}, ${reason}`, () => {
      assert.deepEqual(tickAnswer(summary), { outcome, reason });
    });
  }
});
