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
import type { AppMonitorStatus, ScaleRecord } from "../lib/appmonitor.ts";
import type { ContainerChange } from "./decide.ts";

/** A `status.recentScales` entry; `dryRun` marks what a `DryRun` AppMonitor would have done (CRD field). */
export interface RecordedScale extends ScaleRecord {
  dryRun?: boolean;
}

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
}

/** Whether `entry` is a scale memory-scaler applied (not a dry run, not held). */
export function isApplied(entry: { readonly dryRun?: boolean | undefined; readonly held?: string | undefined }): boolean {
  return entry.dryRun !== true && entry.held === undefined;
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
    }));
    // What was not applied is listed once however often it is decided again (re-sent alerts).
    const fresh = isApplied(entry) ? records : records.filter((r) => !recent.some((old) => old.dryRun === r.dryRun && old.held === r.held && sameScale(old, r)));
    recent = inserted(recent, fresh, entry.time);
  }
  const next: AppMonitorStatus = { ...current, scaleCount, recentScales: recent.slice(0, limit) };
  if (lastScaleTime !== undefined) next.lastScaleTime = lastScaleTime;
  return next;
}

/** What the last-scale-record annotation holds: enough to write the status entry and the `Scaled` Events again. */
export interface ScaleRecordAnnotation {
  /** RFC 3339, equal to the last-scale annotation written with it. */
  readonly time: string;
  /** The AppMonitor that scaled the workload. */
  readonly appmonitor: string;
  /** The CloudEvent id the `Scaled` Events are named after (`kube-events.ts`). */
  readonly event: string;
  /** `spec.memMultiplier` at the time, for the Events' note. */
  readonly multiplier: number;
  readonly changes: readonly ContainerChange[];
  /** `oomKilled` when an OOM-kill alert caused the scale, for the Events' note; absent: a threshold alert. */
  readonly trigger?: "oomKilled";
  /**
   * memory-scaler's earlier scales of this workload within the hour before this one (newest
   * first, at most {@link MAX_EARLIER}): written in the same compare-and-swap as the scale, so
   * the revert budget (`reverts.ts`) counts every patch even while a status write lags.
   */
  readonly earlier?: readonly ScaleMark[];
}

/** One scale's identity in the last-scale record's `earlier`: its time (RFC 3339) and event id. */
export interface ScaleMark {
  readonly time: string;
  readonly event?: string;
}

/** At most this many `earlier` scales are kept in the record: the largest `spec.revertBudgetPerHour`. */
export const MAX_EARLIER = 10;

/** The annotation's value for `record`. */
export function formatScaleRecord(record: ScaleRecordAnnotation): string {
  // A threshold scale's record stays exactly what it was before OOM kills were a trigger.
  const trigger = record.trigger === "oomKilled" ? { trigger: record.trigger } : {};
  const earlier = record.earlier === undefined || record.earlier.length === 0 ? {} : { earlier: record.earlier.slice(0, MAX_EARLIER) };
  return JSON.stringify({ time: record.time, appmonitor: record.appmonitor, event: record.event, multiplier: record.multiplier, changes: record.changes, ...trigger, ...earlier });
}

const isString = (v: unknown): v is string => typeof v === "string";

function parseResources(value: unknown): ContainerChange["from"] | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { limit, request } = value as { limit?: unknown; request?: unknown };
  if (!isString(limit) || !(request === undefined || isString(request))) return undefined;
  return request === undefined ? { limit } : { limit, request };
}

/** The annotation's record, or undefined when it is absent or not one (edited by hand, another version's). */
export function parseScaleRecord(value: string | undefined): ScaleRecordAnnotation | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { time, appmonitor, event, multiplier, changes, trigger, earlier } = parsed as Record<string, unknown>;
  if (!isString(time) || Number.isNaN(Date.parse(time)) || !isString(appmonitor) || !isString(event) || typeof multiplier !== "number" || !Array.isArray(changes)) return undefined;
  const parsedChanges: ContainerChange[] = [];
  for (const change of changes as unknown[]) {
    const { container, from, to } = (typeof change === "object" && change !== null ? change : {}) as Record<string, unknown>;
    const f = parseResources(from);
    const t = parseResources(to);
    if (!isString(container) || f === undefined || t === undefined) return undefined;
    parsedChanges.push({ container, from: f, to: t });
  }
  if (parsedChanges.length === 0) return undefined;
  // `earlier` is a hint for the revert budget: entries that do not read are left out, not fatal.
  const marks: ScaleMark[] = (Array.isArray(earlier) ? (earlier as unknown[]) : []).flatMap((m) => {
    const { time: t, event: e } = (typeof m === "object" && m !== null ? m : {}) as Record<string, unknown>;
    return isString(t) && !Number.isNaN(Date.parse(t)) ? [isString(e) ? { time: t, event: e } : { time: t }] : [];
  });
  return { time, appmonitor, event, multiplier, changes: parsedChanges, ...(trigger === "oomKilled" ? { trigger } : {}), ...(marks.length > 0 ? { earlier: marks } : {}) };
}

/** What a later event for a workload does about its last scale's status entry and Events. */
export type Repair =
  | { readonly action: "none"; readonly why: string }
  | {
      readonly action: "repair";
      /** The record, for the `Scaled` Events (written again: they are named deterministically, so a second create is a no-op). */
      readonly record: ScaleRecordAnnotation;
      /** The status entry to add, when {@link recordState} says `missing`; else the status is left alone. */
      readonly entry: ScaleEntry | undefined;
    };

/**
 * The repair a later event makes for the last scale of `workload` (pure: the workload's two
 * annotations and the AppMonitor's status in, a decision out):
 * - no record, an unreadable one, one whose time is not the last-scale annotation's (written by
 *   something else), or another AppMonitor's → `none`;
 * - otherwise `repair`: the Events always, and the status entry when it is `missing` (when it is
 *   `unknown` the scale may be counted already, and counting it twice is worse than not at all).
 */
export function repairOf(input: {
  readonly lastScale: string | undefined;
  readonly record: string | undefined;
  readonly workload: { readonly kind: string; readonly name: string };
  readonly appmonitor: string;
  readonly status: AppMonitorStatus | undefined;
  /** Entries kept in `recentScales`. */
  readonly limit: number;
}): Repair {
  const record = parseScaleRecord(input.record);
  if (record === undefined) return { action: "none", why: input.record === undefined ? "no last-scale record" : "the last-scale record is unreadable" };
  if (input.lastScale === undefined || Date.parse(input.lastScale) !== Date.parse(record.time)) return { action: "none", why: "the last-scale record is not the last scale's" };
  if (record.appmonitor !== input.appmonitor) return { action: "none", why: `the last scale was AppMonitor ${record.appmonitor}'s` };
  const workload = { kind: input.workload.kind, name: input.workload.name };
  const state = recordState((input.status?.recentScales ?? []) as RecordedScale[], { time: record.time, workload, event: record.event }, input.limit);
  const entry: ScaleEntry | undefined =
    state === "missing" ? { time: record.time, workload, event: record.event, changes: record.changes, dryRun: false, repair: true } : undefined;
  return { action: "repair", record, entry };
}
