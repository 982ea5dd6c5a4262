/**
 * The AppMonitor status memory-scaler maintains (DESIGN.md "The API", Status): `lastScaleTime`,
 * `scaleCount` and a bounded `recentScales`, newest first. Pure: the writer reads and writes.
 * Other status fields (`conditions`, `observedGeneration`) belong to rule-sync and are kept as is.
 *
 * A scale is identified by its workload (kind, name), its time (the value of the workload's
 * last-scale annotation written in the same compare-and-swap patch as the new resources, whole
 * seconds) and the id of the CloudEvent that caused it, so two scales of one workload within one
 * second (cooldown 0 and a fast rollout) are two. Entries written without an event id (older
 * versions) match on workload and time alone.
 * `scaleCount` grows only for a scale whose identity is not yet in `recentScales`, so writing
 * the same scale twice — the flow's own write racing a repair, a repair repeated — counts it
 * once. The workload's last-scale-record annotation, written in that same patch, is the
 * authority a failed status or Event write is repaired from: {@link repairOf}.
 */
import type { AlertTrigger } from "../../lib/alert-event.ts";
import type { AppMonitorStatus } from "../../lib/appmonitor.ts";
import { type ContainerChange, isApplied, type RecordedScale } from "../model.ts";

/** One workload scale (or dry-run decision), as the flow reports it to the status writer. */
export interface ScaleEntry {
  /** RFC 3339. */
  readonly time: string;
  readonly workload: { readonly kind: string; readonly name: string };
  /** Id of the CloudEvent that caused the scale; part of its identity ({@link recordState}). */
  readonly event?: string;
  readonly changes: readonly ContainerChange[];
  /** True for a `DryRun` AppMonitor: listed in `recentScales`, not counted in `scaleCount`. */
  readonly dryRun: boolean;
  /**
   * True when the entry comes from a workload's last-scale record, not from the patch just
   * written: added only when {@link recordState} says `missing`, never when it is `unknown`.
   */
  readonly repair?: boolean;
  /**
   * Set for a scale memory-scaler did not apply (`GitOpsManaged`: a GitOps tool manages the
   * workload and `spec.gitOpsManaged` is `Skip`; `Reverted`: the revert budget is used): listed
   * with the values it would set, like a dry run, and not counted in `scaleCount`.
   */
  readonly held?: "GitOpsManaged" | "Reverted";
  /** True for a scale that applied again memory another writer had lowered. */
  readonly reverted?: boolean;
  /** The alert that caused it when not the threshold alert (absent in a repair from a record that does not say). */
  readonly trigger?: Exclude<AlertTrigger, "threshold">;
  /** `down`: a down-step of `spec.scaleDown` (`../scale/decide/scale-down.ts`); absent: a raise. */
  readonly direction?: "down";
  /** A down-step that reached the workload's floor: the follow-up asks for no further one (`scale-down.ts`). */
  readonly floored?: boolean;
}

/** The status fields this module writes. */
export type ScaleStatus = Pick<AppMonitorStatus, "lastScaleTime" | "scaleCount"> & { recentScales?: RecordedScale[] };

function sameScale(a: RecordedScale, b: RecordedScale): boolean {
  return (
    a.workload.kind === b.workload.kind &&
    a.workload.name === b.workload.name &&
    a.container === b.container &&
    a.from.limit === b.from.limit &&
    a.from.request === b.from.request &&
    a.to.limit === b.to.limit &&
    a.to.request === b.to.request
  );
}

/**
 * Whether `recentScales` records the real scale of `workload` at `time` caused by `event`:
 * - `recorded`: an entry of that workload with that time, and that event id when both have one, is listed;
 * - `missing`: none is, and none can have been dropped: the list is shorter than `limit`, or
 *   `time` is later than its oldest entry (entries are kept newest first and the oldest are
 *   dropped first);
 * - `unknown`: none is, but one may have been dropped from the full list.
 * (A list written under a smaller `RECENT_SCALES_LIMIT` than today's may have dropped entries
 * while shorter than `limit`; the limit is a deployment setting, rarely changed.)
 */
export type RecordState = "recorded" | "missing" | "unknown";

/** {@link RecordState} of one scale in `recent`. */
export function recordState(
  recent: readonly RecordedScale[],
  scale: { readonly time: string; readonly workload: { readonly kind: string; readonly name: string }; readonly event?: string | undefined },
  limit: number,
): RecordState {
  const at = Date.parse(scale.time);
  const listed = recent.some(
    (r) =>
      isApplied(r) &&
      r.workload.kind === scale.workload.kind &&
      r.workload.name === scale.workload.name &&
      Date.parse(r.time) === at &&
      (r.event === undefined || scale.event === undefined || r.event === scale.event),
  );
  if (listed) return "recorded";
  if (recent.length < limit) return "missing";
  const oldest = Math.min(...recent.map((r) => Date.parse(r.time)));
  return at > oldest ? "missing" : "unknown";
}

/** Inserts `records` (one scale's, all of one time) into `recent`, newest first, before any entry of the same time. */
function inserted(recent: readonly RecordedScale[], records: readonly RecordedScale[], time: string): RecordedScale[] {
  const at = Date.parse(time);
  const index = recent.findIndex((r) => !(Date.parse(r.time) > at));
  const cut = index === -1 ? recent.length : index;
  return [...recent.slice(0, cut), ...records, ...recent.slice(cut)];
}

/**
 * `status` with `entries` added:
 * - a real (not dry-run) entry whose scale `recentScales` already records ({@link recordState})
 *   changes nothing; nor does a `repair` entry whose state is `unknown`;
 * - otherwise `scaleCount` grows by one per real entry: one per workload patch, whatever the
 *   number of containers it changed;
 * - `lastScaleTime` becomes the latest real entry's time, if later than the current one;
 * - `recentScales` gets one record per changed container, ordered by time, newest first (a
 *   repaired scale goes where its time puts it), at most `limit` long. A dry-run or held record
 *   equal (workload, container, from, to, and the same `dryRun` and `held`) to one already listed
 *   is left out: re-sent alerts report the same decision once.
 * Returns the whole new status (other fields unchanged); the input is not modified.
 */
export function withScales(status: AppMonitorStatus | undefined, entries: readonly ScaleEntry[], limit: number): AppMonitorStatus {
  const current = status ?? {};
  let recent: RecordedScale[] = [...((current.recentScales ?? []) as RecordedScale[])];
  let scaleCount = current.scaleCount ?? 0;
  let lastScaleTime = current.lastScaleTime;
  const ordered = [...entries].sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
  for (const entry of ordered) {
    if (isApplied(entry)) {
      const state = recordState(recent, entry, limit);
      if (state === "recorded" || (entry.repair === true && state === "unknown")) continue;
      scaleCount += 1;
      if (lastScaleTime === undefined || !(Date.parse(lastScaleTime) > Date.parse(entry.time))) lastScaleTime = entry.time;
    }
    const records: RecordedScale[] = entry.changes.map((change) => ({
      time: entry.time,
      workload: { kind: entry.workload.kind, name: entry.workload.name },
      ...(entry.event !== undefined ? { event: entry.event } : {}),
      container: change.container,
      from: { ...change.from },
      to: { ...change.to },
      ...(entry.dryRun ? { dryRun: true } : {}),
      ...(entry.held === undefined ? {} : { held: entry.held }),
      ...(entry.reverted === true ? { reverted: true } : {}),
      ...(entry.trigger === undefined ? {} : { trigger: entry.trigger }),
      ...(entry.direction === "down" ? { direction: "down" as const } : {}),
      ...(entry.floored === true ? { floored: true } : {}),
    }));
    // What was not applied is listed once however often it is decided again (re-sent alerts).
    const fresh = isApplied(entry) ? records : records.filter((r) => !recent.some((old) => old.dryRun === r.dryRun && old.held === r.held && sameScale(old, r)));
    recent = inserted(recent, fresh, entry.time);
  }
  const next: AppMonitorStatus = { ...current, scaleCount, recentScales: recent.slice(0, limit) };
  if (lastScaleTime !== undefined) next.lastScaleTime = lastScaleTime;
  return next;
}
