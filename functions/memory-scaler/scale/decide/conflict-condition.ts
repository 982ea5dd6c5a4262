/**
 * The `Conflict` condition of an AppMonitor (DESIGN.md "Which AppMonitor acts"): `True` while it
 * and another AppMonitor both cover a workload, on each of them, naming the others, the one that
 * acts and why; `False` (`NoConflict`) once an alert for that workload finds it the only one.
 * memory-scaler writes it, not rule-sync: coverage is judged on the workload's Pod template, which
 * memory-scaler reads for every alert together with all the AppMonitors of the namespace, and
 * rule-sync reads no workload. So a conflict shows from the first alert for the contested workload
 * on. Pure: the status writer applies it to the object it read and writes nothing when it returns
 * that object unchanged.
 */
import { withCondition, type AppMonitorCondition, type AppMonitorStatus } from "../../../lib/appmonitor.ts";
import { type CoverageConflict, precedenceRule, type WorkloadIdentity } from "./governing.ts";

/** `type` of the condition. */
export const CONFLICT_CONDITION = "Conflict";

/** Reasons of {@link CONFLICT_CONDITION}. */
export const CONFLICT_REASONS = {
  /** True: this AppMonitor covers the workload with others, and acts on it. */
  precedes: "TakesPrecedence",
  /** True: this AppMonitor covers the workload with others, and one of them acts on it. */
  outranked: "Outranked",
  /** False: the last workload it conflicted over is no longer covered by several AppMonitors. */
  none: "NoConflict",
} as const;

const subjectOf = (w: WorkloadIdentity): string => `${w.kind} ${w.name}`;

/** The condition `name` should carry for `conflict`, which lists it among the contenders. */
export function conflictCondition(name: string, conflict: CoverageConflict): Omit<AppMonitorCondition, "lastTransitionTime"> {
  const subject = subjectOf(conflict.workload);
  const [winner] = conflict.contenders;
  const others = conflict.contenders.filter((c) => c.appMonitor.metadata.name !== name).map((c) => `AppMonitor ${c.appMonitor.metadata.name} (${c.coverage})`);
  const self = conflict.contenders.find((c) => c.appMonitor.metadata.name === name);
  const acts = winner?.appMonitor.metadata.name === name;
  const who = acts ? "this AppMonitor acts on it" : `AppMonitor ${winner?.appMonitor.metadata.name ?? ""} acts on it, this one's alerts for it are skipped (AppMonitorConflict)`;
  return {
    type: CONFLICT_CONDITION,
    status: "True",
    reason: acts ? CONFLICT_REASONS.precedes : CONFLICT_REASONS.outranked,
    message: `${subject} is covered by this AppMonitor (${self?.coverage ?? "unknown"}) and by ${others.join(", ")}: ${who} (precedence: ${precedenceRule})`,
  };
}

/**
 * `status` with the `Conflict` condition of AppMonitor `name` after an alert for `workload`:
 * `conflict` (which lists `name`) sets it `True`; no conflict sets it `False` only when it was
 * `True` about that same workload (a conflict over another workload stands until an alert for
 * that one says otherwise). Returns `status` itself when nothing changes.
 * @param now RFC 3339, for `lastTransitionTime`.
 */
export function withConflict(status: AppMonitorStatus | undefined, name: string, workload: WorkloadIdentity, conflict: CoverageConflict | undefined, now: string): AppMonitorStatus | undefined {
  const old = status?.conditions?.find((c) => c.type === CONFLICT_CONDITION);
  let change: Omit<AppMonitorCondition, "lastTransitionTime">;
  if (conflict !== undefined) {
    change = conflictCondition(name, conflict);
  } else {
    if (old?.status !== "True" || !old.message.startsWith(`${subjectOf(workload)} is covered`)) return status;
    change = { type: CONFLICT_CONDITION, status: "False", reason: CONFLICT_REASONS.none, message: `${subjectOf(workload)} is no longer covered by more than one AppMonitor` };
  }
  if (old !== undefined && old.status === change.status && old.reason === change.reason && old.message === change.message) return status;
  return withCondition(status ?? {}, change, now);
}
