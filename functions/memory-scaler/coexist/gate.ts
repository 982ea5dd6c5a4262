/**
 * The last gate before a checked scale is written: who else sets the workload's memory (an
 * autoscaler, a GitOps tool, a writer that reverts), from plain data. Pure.
 */
import type { ContainerChange } from "../model.ts";
import { type Autoscalers, classifyAutoscalers } from "./autoscalers.ts";
import { type GitOpsOwner, manifestValues } from "./gitops.ts";
import { type BudgetUse, describeRevert, type Revert } from "./reverts.ts";

/** Why a scale decided and checked is not written: another manager of the workload (`gateScale`). */
export type GateReason = "HPAOnMemory" | "VPAControlled" | "GitOpsManaged" | "Reverted";

/** What `gateScale` lets through, or holds and why. */
export type Gate =
  | {
      readonly action: "skip";
      readonly reason: GateReason;
      readonly message: string;
      /** Listed in `status.recentScales` with the values it would set (`GitOpsManaged`, `Reverted`); an autoscaler conflict is not. */
      readonly held?: "GitOpsManaged" | "Reverted";
    }
  | {
      readonly action: "scale";
      /** Set with `spec.gitOpsManaged: Patch`: the tool to warn about. */
      readonly gitOps?: GitOpsOwner;
      /** True when the scale applies again what a revert lowered. */
      readonly reverted: boolean;
    };

/**
 * The last gate before a checked scale is written (the README's "What it does", step 5a): who else manages
 * the workload. In order:
 * 1. an HPA scaling it on memory → `HPAOnMemory`, a VPA not `Off` → `VPAControlled`
 *    (`coexist/autoscalers.ts`; these fight every scale, whatever the spec says);
 * 2. a GitOps tool manages it (`coexist/gitops.ts`) and `spec.gitOpsManaged` is `Skip` or absent →
 *    `GitOpsManaged`, held: the values to set in the manifest are reported instead;
 * 3. its last scale was reverted and the last hour's scales reach `spec.revertBudgetPerHour` →
 *    `Reverted`, held (`coexist/reverts.ts`).
 * Otherwise the scale goes on, with the GitOps tool to warn about under `Patch` and whether it
 * re-applies a reverted value.
 */
export function gateScale(input: {
  readonly workload: { readonly kind: string; readonly name: string };
  readonly changes: readonly ContainerChange[];
  readonly gitOpsManaged: "Skip" | "Patch" | undefined;
  readonly gitOps: GitOpsOwner | undefined;
  readonly revert: Revert | undefined;
  readonly budget: BudgetUse;
  readonly autoscalers: Autoscalers;
}): Gate {
  const { workload, changes, gitOps, revert, budget } = input;
  const autoscaler = classifyAutoscalers(workload, changes.map((c) => c.container), input.autoscalers.hpas, input.autoscalers.vpas);
  if (autoscaler.result === "conflict") return { action: "skip", reason: autoscaler.reason, message: `not scaled: ${autoscaler.message}` };
  if (gitOps !== undefined && input.gitOpsManaged !== "Patch") {
    return {
      action: "skip",
      reason: "GitOpsManaged",
      held: "GitOpsManaged",
      message: `not scaled: ${workload.kind} ${workload.name} is managed by ${gitOps.tool} (${gitOps.owner}, ${gitOps.signal}) and spec.gitOpsManaged is Skip; set in its manifest: ${manifestValues(changes)}`,
    };
  }
  if (revert !== undefined && budget.exhausted) {
    const oldest = budget.scales.at(-1)?.time;
    return {
      action: "skip",
      reason: "Reverted",
      held: "Reverted",
      message: `not scaled: the memory memory-scaler set on ${workload.kind} ${workload.name} at ${revert.record.time} was lowered (${describeRevert(revert)}) and the revert budget of ${budget.budget} patches per hour is used (${budget.scales.length} since ${oldest ?? "–"}); the workload's managedFields name the writer: set in its source: ${manifestValues(changes)}`,
    };
  }
  return { action: "scale", ...(gitOps === undefined ? {} : { gitOps }), reverted: revert !== undefined };
}
