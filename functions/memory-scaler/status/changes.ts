/**
 * The AppMonitor status change of each outcome that writes one (pure): a scale's, an `AtCap`
 * skip's, a repair's. Each is a function of the status as read, for the status writer's
 * compare-and-swap.
 */
import type { AppMonitorStatus } from "../../lib/appmonitor.ts";
import { type ContainerChange, describeChanges, type SkippedContainer } from "../model.ts";
import { withCapped, withoutCapped } from "./capped.ts";
import { withoutPendingScale } from "./pending-scales.ts";
import { type ScaleEntry, withScales } from "./recent-scales.ts";
import { type PendingRollout, withRolloutStarted } from "./rollouts.ts";

/** The message of a started rollout's `RolledOut` condition: a rollout, a bare Pod's resize, or a workload's Pods resized in place. */
function rolloutMessage(workload: { readonly kind: string; readonly name: string }, generation: number, changes: readonly ContainerChange[], inPlace?: PendingRollout["inPlace"]): string {
  if (workload.kind === "Pod") return `Pod ${workload.name}: resizing in place to generation ${generation} (${describeChanges(changes)})`;
  if (inPlace !== undefined) return `${workload.kind} ${workload.name}: resizing ${inPlace.pods.length} Pod${inPlace.pods.length === 1 ? "" : "s"} in place (${describeChanges(changes)})`;
  return `${workload.kind} ${workload.name}: rolling out generation ${generation} (${describeChanges(changes)})`;
}

/**
 * The status change of a scale (step 9): its `recentScales` entry, the rollout the patch
 * started pending in `status.rollouts` (none for a bare ReplicaSet, which replaces no Pod), the
 * workload out of `status.capped` (`status/capped.ts`): scaled, it is below the cap, and the
 * scale out of `status.pendingScales` (`status/pending-scales.ts`): recorded, no tick needs to.
 */
export function scaledStatus(entry: ScaleEntry, rollout: PendingRollout | undefined, limit: number): (status: AppMonitorStatus | undefined) => AppMonitorStatus {
  return (status) => {
    const scaled = withScales(status, [entry], limit);
    const started = rollout === undefined ? scaled : withRolloutStarted(scaled, rollout, rolloutMessage(rollout.workload, rollout.generation, entry.changes, rollout.inPlace), entry.time);
    const uncapped = withoutCapped(started, entry.workload, entry.time) ?? started;
    // Never undefined: withScales set scaleCount.
    return entry.event === undefined ? uncapped : (withoutPendingScale(uncapped, { workload: entry.workload, event: entry.event }) ?? uncapped);
  };
}

/**
 * The status change of an `AtCap` skip (step 4): the workload listed in `status.capped` with the
 * containers skipped at the cap, and the `AtMaxMemory` condition `True`. Unchanged (nothing
 * written) when it is already listed so, however often it alerts.
 * The cap listed is the first capped container's (`SkippedContainer.cap`, `caps.ts`).
 * @param now RFC 3339.
 */
export function cappedStatus(
  workload: { readonly kind: string; readonly name: string },
  skipped: readonly SkippedContainer[],
  now: string,
): (status: AppMonitorStatus | undefined) => AppMonitorStatus | undefined {
  const atCap = skipped.filter((s) => s.reason === "AtCap");
  const containers = [...new Set(atCap.map((s) => s.container))].sort();
  const cap = atCap.find((s) => s.cap !== undefined)?.cap;
  const source = cap === undefined ? {} : { source: cap.source };
  return (status) => withCapped(status, { workload: { kind: workload.kind, name: workload.name }, containers, maxMemory: cap?.maxMemory ?? "", ...source, since: now }, now);
}

/**
 * The status change of a repair (step 3a, or a follow-up tick's from `status.pendingScales`): the
 * scale's missing `recentScales` entry and, when that counted it only now, its rollout too,
 * followed from the generation the workload has now (which includes the patch). A bare
 * ReplicaSet, or a workload without a generation, has none. The scale (`entry.workload`, `event`)
 * leaves `status.pendingScales` either way: it is recorded now.
 */
export function repairedStatus(
  entry: ScaleEntry,
  workload: { readonly kind: string; readonly generation: number | undefined },
  event: string,
  limit: number,
): (status: AppMonitorStatus | undefined) => AppMonitorStatus {
  return (status) => {
    const counting = withScales(status, [entry], limit);
    // Never undefined: withScales set scaleCount.
    const scaled = withoutPendingScale(counting, { workload: entry.workload, event }) ?? counting;
    const counted = (scaled.scaleCount ?? 0) > (status?.scaleCount ?? 0);
    if (!counted || workload.kind === "ReplicaSet" || workload.generation === undefined) return scaled;
    const rollout = { workload: entry.workload, generation: workload.generation, startedAt: entry.time, event };
    return withRolloutStarted(scaled, rollout, rolloutMessage(entry.workload, workload.generation, entry.changes), entry.time);
  };
}
