/**
 * The AppMonitor status memory-scaler maintains (DESIGN.md "The API", Status): `lastScaleTime`,
 * `scaleCount` and a bounded `recentScales`, newest first. Pure: the writer reads and writes.
 * Other status fields (`conditions`, `observedGeneration`) belong to rule-sync and are kept as is.
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
  readonly changes: readonly ContainerChange[];
  /** True for a `DryRun` AppMonitor: listed in `recentScales`, not counted in `scaleCount`. */
  readonly dryRun: boolean;
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
 * `status` with `entries` added:
 * - `scaleCount` grows by the number of real (not dry-run) entries: one per workload patch,
 *   whatever the number of containers it changed;
 * - `lastScaleTime` becomes the latest real entry's time, if later than the current one;
 * - `recentScales` gets one record per changed container, newest first, at most `limit`
 *   long. A dry-run record equal (workload, container, from, to) to a dry-run record already
 *   listed is left out: re-sent alerts of a DryRun AppMonitor report the same decision once.
 * Returns the whole new status (other fields unchanged); the input is not modified.
 */
export function withScales(status: AppMonitorStatus | undefined, entries: readonly ScaleEntry[], limit: number): AppMonitorStatus {
  const current = status ?? {};
  let recent: RecordedScale[] = [...((current.recentScales ?? []) as RecordedScale[])];
  let scaleCount = current.scaleCount ?? 0;
  let lastScaleTime = current.lastScaleTime;
  const ordered = [...entries].sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
  for (const entry of ordered) {
    if (!entry.dryRun) {
      scaleCount += 1;
      if (lastScaleTime === undefined || !(Date.parse(lastScaleTime) > Date.parse(entry.time))) lastScaleTime = entry.time;
    }
    const records: RecordedScale[] = entry.changes.map((change) => ({
      time: entry.time,
      workload: { kind: entry.workload.kind, name: entry.workload.name },
      container: change.container,
      from: { ...change.from },
      to: { ...change.to },
      ...(entry.dryRun ? { dryRun: true } : {}),
    }));
    const fresh = entry.dryRun ? records.filter((r) => !recent.some((old) => old.dryRun === true && sameScale(old, r))) : records;
    recent = [...fresh, ...recent];
  }
  const next: AppMonitorStatus = { ...current, scaleCount, recentScales: recent.slice(0, limit) };
  if (lastScaleTime !== undefined) next.lastScaleTime = lastScaleTime;
  return next;
}
