/**
 * How a firing alert's flow ended, and what that ending writes, as one table (pure): the Events
 * (`../events.ts` says each reason's Events), the one AppMonitor status change, and the outcome
 * the sender is answered with. The flow (`flow.ts`) applies it once; nothing else in the flow
 * writes Events or status. The same for every {@link WriteTarget}: where they differ, the target's
 * writer says so (`scaledReason`, `wouldDo`, `written`).
 *
 * | ending | Events | status | outcome |
 * | --- | --- | --- | --- |
 * | `ended` (the read found nothing to scale: the Pod, its owner or the named AppMonitor gone) | `NoAppMonitor` on the Pod, when it was read | — | skipped |
 * | `unsupported` (the owner walk stopped: no template to judge, or one another controller owns) | its reason: `UnsupportedOwner` or `UnknownController` | — | skipped |
 * | `notGoverned` (the named AppMonitor does not govern the target) | `NotCovered` | — | skipped |
 * | `decided` (the decision's skip) | the skip's reason (Events only for the reasons that have them) | `AtCap`: listed in `status.capped` (`AtMaxMemory`); `ProbableLeak`: listed in `status.probableLeaks` (`ProbableLeak`) | skipped, with the containers left out |
 * | `unconfirmed` (the evidence's skip) | the skip's reason (`BelowThreshold` has them) | — | skipped |
 * | `held` (another manager: `coexist/gate.ts`) | the gate's reason, but `Reverted` (its Warnings came with the revert) | `GitOpsManaged`, `Reverted`: a `held` `recentScales` entry | skipped, with the changes; `revert: Held` |
 * | `dryRun` (every check of the write passed; `note`: the install is paused) | `DryRun` (and `FixedHeap` for containers a heap flag held, `HeapFailure` for raised ones whose heap failed in-process) | a `dryRun` `recentScales` entry | dry-run |
 * | `refused` (admission, quota, Nodes) | the refusal's reason | — | skipped, with the changes; for a dry run, dry-run: `would be refused: <message>` |
 * | `written` | the target's (`Scaled`…, `Resized`…), and `FixedHeap` / `HeapFailure` as for `dryRun` | the scale's `recentScales` entry, its rollout pending, out of `status.capped` and `status.pendingScales` | scaled; `revert: Repatched` when it re-applied a reverted value |
 *
 * Every ending but `ended` also records its outcome in `status.lastOutcome` of the governing
 * AppMonitor (else the named one), in the same status write (`flow.ts`).
 *
 * And before any of these, whatever the alert comes to:
 *
 * | before | Events | status |
 * | --- | --- | --- |
 * | {@link conflictReports}: several AppMonitors cover the target, or the named one last did | — | the `Conflict` condition on each (`decide/conflict-condition.ts`) |
 * | {@link repairReport}: the target's last scale to make sure of, or reverted | its `Scaled` Events again; `Reverted` | its `recentScales` entry, when missing |
 * | {@link releaseReport}: a hold of the leak guard ended | — | its `status.probableLeaks` entry cleared or dropped |
 */
import type { AlertTrigger } from "../../lib/alert-event.ts";
import { formatTimestamp } from "../../lib/rfc3339.ts";
import type { Gate } from "../coexist/gate.ts";
import { revertNote } from "../coexist/reverts.ts";
import { boundsClause, type Reported } from "../events.ts";
import type { AppMonitorRef, StatusChange } from "../kube/status-writer.ts";
import { describeChanges } from "../model.ts";
import type { NoneGoverns, Outcome, OutcomeReason, Scale, Skip } from "../outcome.ts";
import { cappedStatus, scaledStatus } from "../status/changes.ts";
import { type ProbableLeak, withLeak } from "../status/leaks.ts";
import type { ScaleEntry } from "../status/recent-scales.ts";
import { withConflict } from "./decide/conflict-condition.ts";
import type { CoverageConflict, ValidAppMonitor } from "./decide/governing.ts";
import type { OwnerSkipReason } from "./decide/owner-chain.ts";
import { heapFailureNote } from "./decide/fixed-heap.ts";
import type { History } from "./decide/target-view.ts";
import type { WriteTarget, Written } from "./targets/target.ts";

/** How the flow ended (module table). */
export type Ending =
  /** `podRead`: the Pod was read (a `NoAppMonitor` Warning regards it). */
  | { readonly step: "ended"; readonly reason: Extract<OutcomeReason, "PodGone" | "OwnerGone" | NoneGoverns["reason"]>; readonly message: string; readonly podRead: boolean }
  | { readonly step: "unsupported"; readonly reason: OwnerSkipReason; readonly message: string }
  | { readonly step: "notGoverned"; readonly reason: NoneGoverns["reason"]; readonly message: string }
  | { readonly step: "decided"; readonly skip: Skip }
  | { readonly step: "unconfirmed"; readonly skip: Skip }
  | { readonly step: "held"; readonly gate: Extract<Gate, { action: "skip" }>; readonly scale: Scale }
  /** `note`: why this is a dry run when the AppMonitor's mode is not (`PAUSED_NOTE`). */
  | { readonly step: "dryRun"; readonly scale: Scale; readonly note?: string }
  | { readonly step: "refused"; readonly reason: "AdmissionRefused" | "RolloutExceedsQuota" | "Unschedulable"; readonly message: string; readonly scale: Scale; readonly note?: string }
  | { readonly step: "written"; readonly written: Written; readonly scale: Scale; readonly reverted: boolean; readonly statusFrom: Record<string, unknown> | undefined };

/**
 * One status write: a change of the status as read, or a `recentScales` entry
 * (`StatusWriter.update` / `add`); `from` is the AppMonitor object it starts from (undefined: the
 * writer's last answer, or a fresh read).
 */
export type StatusWrite =
  | { readonly change: StatusChange; readonly from: Record<string, unknown> | undefined }
  | { readonly entry: ScaleEntry; readonly from: Record<string, unknown> | undefined };

/** What an ending writes and answers. */
export interface Report {
  readonly reported: readonly Reported[];
  readonly status?: StatusWrite | undefined;
  /** The outcome's own fields; the flow adds the Pod, the workload, the AppMonitor, the attempts and the warnings. */
  readonly outcome: Pick<Outcome, "outcome" | "reason" | "message" | "changes" | "skipped" | "revert">;
}

/** What the table reads besides the ending. */
export interface ReportContext {
  /** Absent for `unsupported` (no target: the owner walk stopped short of one). */
  readonly target?: WriteTarget;
  /** The governing AppMonitor; absent for `unsupported` (nothing to govern: no target). */
  readonly appMonitor?: ValidAppMonitor;
  readonly eventId: string;
  readonly now: Date;
  /** Entries kept in `status.recentScales`. */
  readonly statusLimit: number;
  readonly trigger: AlertTrigger;
}

const skipped = (skip: Skip): Report["outcome"] => ({ outcome: "skipped", reason: skip.reason, message: skip.message, ...(skip.skipped === undefined ? {} : { skipped: skip.skipped }) });

/**
 * A scale's heap Warnings (`decide/fixed-heap.ts`): `FixedHeap` for the containers it left out because a
 * heap flag fixes their heap, `HeapFailure` for those it raised whose last run was an in-process
 * heap failure.
 */
function heldHeaps(scale: Scale): Reported[] {
  const held = scale.skipped.filter((s) => s.reason === "FixedHeap");
  const failed = scale.heapFailed ?? [];
  return [
    ...(held.length === 0 ? [] : [{ reason: "FixedHeap", message: held.map((s) => s.message).join("; ") } as const]),
    ...(failed.length === 0 ? [] : [{ reason: "HeapFailure", message: heapFailureNote(failed) } as const]),
  ];
}

/**
 * The row of `ending` (module table).
 * @throws Error when an ending comes without the AppMonitor or target its row reads (a bug of the caller).
 */
export function reportOf(ending: Ending, context: ReportContext): Report {
  const { eventId, now } = context;
  const needed = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the ${ending.step} ending is reported with its ${what}, and none was given`);
    return value;
  };
  const am = (): ValidAppMonitor => needed(context.appMonitor, "AppMonitor");
  const target = (): WriteTarget => needed(context.target, "target");
  const trigger = context.trigger === "threshold" ? {} : { trigger: context.trigger };
  // A down-step's entries say so (and whether it reached the floor); an alert's trigger is no part of one.
  const entryOf = (scale: Scale) => ({
    time: formatTimestamp(now),
    workload: target().view.workload,
    event: eventId,
    changes: scale.changes,
    ...(scale.direction === "down" ? { direction: "down" as const, ...(scale.floored === true ? { floored: true } : {}) } : trigger),
  });
  switch (ending.step) {
    case "ended": {
      const { reason, message } = ending;
      return { reported: reason === "NoAppMonitor" && ending.podRead ? [{ reason, message }] : [], outcome: { outcome: "skipped", reason, message } };
    }
    case "notGoverned": {
      const { reason, message } = ending;
      return { reported: reason === "NotCovered" ? [{ reason, message }] : [], outcome: { outcome: "skipped", reason, message } };
    }
    case "unsupported": {
      const { reason, message } = ending;
      return { reported: [{ reason, message }], outcome: { outcome: "skipped", reason, message } };
    }
    case "decided": {
      const { skip } = ending;
      const time = formatTimestamp(now);
      const { leak } = skip;
      if (leak !== undefined) {
        return {
          reported: [{ reason: "ProbableLeak", message: skip.message, key: `ProbableLeak/${leak.workload.kind}/${leak.workload.name}/${leak.since}` }],
          status: { change: (status) => withLeak(status, leak, false, time), from: am().raw },
          outcome: skipped(skip),
        };
      }
      const capped = skip.reason === "AtCap" ? { change: cappedStatus(target().view.workload, skip.skipped ?? [], time), from: am().raw } : undefined;
      return { reported: [{ reason: skip.reason, message: skip.message }], status: capped, outcome: skipped(ending.skip) };
    }
    case "unconfirmed":
      return { reported: [{ reason: ending.skip.reason, message: ending.skip.message }], outcome: skipped(ending.skip) };
    case "held": {
      const { gate, scale } = ending;
      return {
        // A held revert's Events were written when it was first seen (repairReport).
        reported: gate.reason === "Reverted" ? [] : [{ reason: gate.reason, message: gate.message }],
        status: gate.held === undefined ? undefined : { entry: { ...entryOf(scale), dryRun: scale.dryRun, held: gate.held }, from: am().raw },
        outcome: { outcome: "skipped", reason: gate.reason, message: gate.message, changes: scale.changes, skipped: scale.skipped, ...(gate.reason === "Reverted" ? { revert: "Held" as const } : {}) },
      };
    }
    case "dryRun": {
      const { scale, note } = ending;
      const bounds = boundsClause(scale.bounds, scale.changes, scale.newCrossing);
      return {
        reported: [{ reason: "DryRun", changes: scale.changes, trigger: context.trigger, ...(note === undefined ? {} : { note }), ...(scale.direction === "down" ? { down: true } : {}), ...(bounds === "" ? {} : { bounds }) }, ...heldHeaps(scale)],
        status: { entry: { ...entryOf(scale), dryRun: true }, from: am().raw },
        outcome: { outcome: "dry-run", reason: "DryRun", message: `${note === undefined ? "" : `${note}: `}${scale.direction === "down" ? "would scale down" : target().writer.wouldDo}: ${describeChanges(scale.changes)}${bounds}`, changes: scale.changes, skipped: scale.skipped },
      };
    }
    case "refused": {
      const { reason, message, scale, note } = ending;
      // A dry run says what would have refused the write: the same reason, as a dry run's outcome.
      if (scale.dryRun) {
        const said = `${note === undefined ? "" : `${note}: `}would be refused: ${message}`;
        return { reported: [{ reason, message, changes: scale.changes, dryRun: true }], outcome: { outcome: "dry-run", reason, message: said, changes: scale.changes, skipped: scale.skipped } };
      }
      return { reported: [{ reason, message, changes: scale.changes }], outcome: { outcome: "skipped", reason, message, changes: scale.changes, skipped: scale.skipped } };
    }
    case "written": {
      const { written, scale, reverted } = ending;
      const entry = { ...entryOf(scale), dryRun: false, ...(reverted ? { reverted: true } : {}) };
      // The caps and ceilings that held the raise, and a cooldown it passed, end its note and its outcome's message.
      const bounds = boundsClause(scale.bounds, scale.changes, scale.newCrossing);
      const reported = bounds === "" ? written.reported : written.reported.map((r) => (r.reason === "Scaled" || r.reason === "Resized" ? { ...r, bounds } : r));
      return {
        reported: [...reported, ...heldHeaps(scale)],
        status: { change: scaledStatus(entry, written.rollout, context.statusLimit), from: ending.statusFrom },
        outcome: { outcome: "scaled", reason: written.reason ?? target().writer.scaledReason, message: `${written.message}${bounds}`, changes: scale.changes, skipped: scale.skipped, ...(reverted ? { revert: "Repatched" as const } : {}) },
      };
    }
  }
}

/**
 * What the target's last scale still needs, whatever this alert comes to (pure): its `Scaled`
 * Events written again and its status entry when `recentScales` does not list it (`status/repair.ts`),
 * and, when something lowered what it set (`coexist/reverts.ts`), `Reverted` Warnings, once per
 * reverted scale (keyed by the id of the event that made it). Undefined: nothing to write.
 */
export function repairReport(history: History, target: WriteTarget, appMonitor: ValidAppMonitor): Omit<Report, "outcome"> | undefined {
  const { repair, revert } = history;
  if (repair === undefined && revert === undefined) return undefined;
  const reported: Reported[] = [];
  if (repair !== undefined) reported.push(repair.reported);
  if (revert !== undefined) reported.push({ reason: "Reverted", message: revertNote(target.view.workload, revert, history.budget), key: revert.record.event });
  return { reported, status: repair?.status === undefined ? undefined : { change: repair.status, from: appMonitor.raw } };
}

/** The reference of `am` its status writes take. */
export const statusRef = (am: ValidAppMonitor): AppMonitorRef => ({ namespace: am.metadata.namespace, name: am.metadata.name, uid: am.metadata.uid });

/** A report written on an AppMonitor other than the ending's. */
export interface Addressed {
  readonly amRef: AppMonitorRef;
  readonly report: Omit<Report, "outcome">;
}

/**
 * The `Conflict` condition (`decide/conflict-condition.ts`) on every AppMonitor that covers the
 * target when several do (`conflict`), else on the alert's own (`named`), which clears it when it
 * last conflicted over this target (pure). One status write each, from the AppMonitor as listed.
 */
export function conflictReports(conflict: CoverageConflict | undefined, named: ValidAppMonitor, workload: { readonly kind: string; readonly name: string }, now: Date): Addressed[] {
  const time = formatTimestamp(now);
  const monitors = conflict?.contenders.map((c) => c.appMonitor) ?? [named];
  return monitors.map((am) => ({
    amRef: statusRef(am),
    report: { reported: [], status: { change: (status) => withConflict(status, am.metadata.name, workload, conflict, time), from: am.raw } },
  }));
}

/** A hold of the leak guard that ended: its `status.probableLeaks` entry cleared (the alert resolved), or dropped after its window (pure). */
export function releaseReport(released: { readonly entry: ProbableLeak; readonly drop: boolean }, appMonitor: ValidAppMonitor, now: Date): Omit<Report, "outcome"> {
  const time = formatTimestamp(now);
  return { reported: [], status: { change: (status) => withLeak(status, released.entry, released.drop, time), from: appMonitor.raw } };
}
