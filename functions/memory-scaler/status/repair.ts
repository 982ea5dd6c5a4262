/**
 * What a later event does about a workload's last scale (pure): its `Scaled` Events written again
 * and its status entry added when `status.recentScales` does not list it, from the workload's
 * last-scale record, so a scale whose Event or status write failed is recorded once.
 */
import type { AppMonitorStatus } from "../../lib/appmonitor.ts";
import { parseScaleRecord, type RecordedScale, type ScaleRecordAnnotation } from "../model.ts";
import { recordState, type ScaleEntry } from "./recent-scales.ts";

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
    state === "missing" ? { time: record.time, workload, event: record.event, changes: record.changes, dryRun: false, repair: true, ...(record.trigger === undefined ? {} : { trigger: record.trigger }) } : undefined;
  return { action: "repair", record, entry };
}
