/**
 * The rollouts in an AppMonitor's status (CRD fields, DESIGN.md "The API", Status): the pending
 * ones in `status.rollouts`, and the condition `RolledOut` that says how the last one stands
 * (`Unknown`/`RolloutProgressing` while it runs, `True`/`RolledOut`, `False` with the failure's
 * reason), which `kubectl get appmonitors` shows in its Rollout column. Pure: the status writer
 * applies these to the object it read.
 */
import { withCondition, type AppMonitorCondition, type AppMonitorStatus } from "../../lib/appmonitor.ts";

/** A rollout memory-scaler started and has not yet seen end: an entry of the AppMonitor's `status.rollouts` (CRD field). */
export interface PendingRollout {
  readonly workload: { readonly kind: string; readonly name: string };
  /** `metadata.generation` the patch gave the workload: its controller must observe at least this one. */
  readonly generation: number;
  /** RFC 3339: the time of the scale that started it. */
  readonly startedAt: string;
  /** The id of the CloudEvent that caused the scale. */
  readonly event?: string;
  /** OnDelete: the Pods still on the old revision, as last seen. */
  readonly waitingPods?: readonly string[];
  /**
   * A workload's Pods resized in place (`spec.updateMode` `InPlace`, `InPlaceOrRollout`): each Pod
   * written and the `metadata.generation` its resize gave it, followed as a bare Pod's resize is
   * (`follow-up/in-place.ts`); `generation` above is then the workload's, unchanged.
   */
  readonly inPlace?: { readonly pods: readonly { readonly name: string; readonly generation: number }[] };
}

/**
 * `status` with the message of its `RolledOut` condition set to where the pending resize of
 * `rollout` stands (`message`, from {@link decideResizeFollowUp}: the kubelet's `Deferred`
 * reason, say), so that `kubectl describe appmonitor` shows it while it waits: a bare Pod's, or a
 * workload's Pods resized in place. Only while that resize is pending and the condition, `Unknown`,
 * is about its object (its message starts with `<kind> <name>:`, `Pod <name>:` for a bare Pod; a
 * later rollout of another workload keeps its own). Returns `status` itself when nothing changes,
 * so the writer skips the write.
 */
export function withResizeProgress(status: AppMonitorStatus | undefined, rollout: PendingRollout, message: string): AppMonitorStatus | undefined {
  const pending = pendingRollouts(status).some((r) => sameWorkload(r.workload, rollout.workload) && r.generation === rollout.generation);
  const conditions = status?.conditions ?? [];
  const current = conditions.find((c) => c.type === ROLLOUT_CONDITION);
  if (!pending || current === undefined || current.status !== "Unknown" || current.message === message || !(current.message ?? "").startsWith(`${rollout.workload.kind} ${rollout.workload.name}:`)) return status;
  return { ...status, conditions: conditions.map((c) => (c === current ? { ...c, message } : c)) };
}

/** `type` of the AppMonitor condition about rollouts. */
export const ROLLOUT_CONDITION = "RolledOut";

/** Pending rollouts kept per AppMonitor; the oldest is forgotten beyond this (the CRD's `maxItems`). */
export const MAX_PENDING_ROLLOUTS = 50;

/** How a rollout's condition is set: its status, reason and message. */
export interface RolloutConditionChange {
  readonly status: AppMonitorCondition["status"];
  readonly reason: string;
  readonly message: string;
}

type WithRollouts = AppMonitorStatus & { rollouts?: PendingRollout[] };

const sameWorkload = (a: PendingRollout["workload"], b: PendingRollout["workload"]): boolean => a.kind === b.kind && a.name === b.name;

/** The pending rollouts listed in `status` (none when absent or not a list). */
export function pendingRollouts(status: unknown): PendingRollout[] {
  const rollouts = (status as WithRollouts | undefined)?.rollouts;
  return Array.isArray(rollouts) ? rollouts : [];
}

/**
 * `status` with `rollout` pending (replacing any earlier pending rollout of the same workload:
 * the newer patch is the one to follow) and the condition `Unknown`/`RolloutProgressing`.
 */
export function withRolloutStarted(status: AppMonitorStatus | undefined, rollout: PendingRollout, message: string, now: string): AppMonitorStatus {
  const current: WithRollouts = status ?? {};
  const others = pendingRollouts(current).filter((r) => !sameWorkload(r.workload, rollout.workload));
  const rollouts = [...others, rollout].slice(-MAX_PENDING_ROLLOUTS);
  return withCondition({ ...current, rollouts }, { type: ROLLOUT_CONDITION, status: "Unknown", reason: "RolloutProgressing", message }, now);
}

/**
 * `status` after a follow-up of `rollout`:
 * - `end` given: the rollout is no longer pending and the condition takes `end`;
 * - else `waitingPods` given: the pending entry names them (OnDelete); unchanged otherwise.
 * Only the entry of the same workload and generation is touched: a newer scale's rollout, recorded
 * meanwhile, stays pending. Returns `status` itself when nothing changes, so the writer can skip the write.
 */
export function withRolloutFollowedUp(
  status: AppMonitorStatus | undefined,
  rollout: PendingRollout,
  update: { readonly end?: RolloutConditionChange; readonly waitingPods?: readonly string[] },
  now: string,
): AppMonitorStatus | undefined {
  const current: WithRollouts = status ?? {};
  const pending = pendingRollouts(current);
  const index = pending.findIndex((r) => sameWorkload(r.workload, rollout.workload) && r.generation === rollout.generation);
  if (index === -1) return status;
  if (update.end !== undefined) {
    return withCondition({ ...current, rollouts: pending.filter((_, i) => i !== index) }, { type: ROLLOUT_CONDITION, ...update.end }, now);
  }
  const waiting = update.waitingPods;
  const entry = pending[index];
  if (waiting === undefined || entry === undefined || JSON.stringify(entry.waitingPods ?? []) === JSON.stringify(waiting)) return status;
  const next: WithRollouts = { ...current, rollouts: pending.map((r, i) => (i === index ? { ...r, waitingPods: [...waiting] } : r)) };
  return next;
}
