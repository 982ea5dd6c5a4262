/**
 * Reverts and the revert budget (pure). A revert: the workload's Pod template now gives a
 * container less memory than memory-scaler's last scale set, which the workload's last-scale
 * record (`status/recent-scales.ts`, written in the same compare-and-swap as the scale) says, or, when the
 * AppMonitor's `status.recentScales` lists a later scale of it than its annotations name (replaced
 * whole, or re-applied from an old export), those entries ({@link detectRevertFromStatus}). Something put the
 * old value back — a GitOps sync, `kubectl apply` of the old manifest, a CI pipeline — and will
 * likely do it again; patching each time would loop for ever. So a reverted workload is patched at
 * most `spec.revertBudgetPerHour` times within any hour (default
 * {@link DEFAULT_REVERT_BUDGET_PER_HOUR}), counting memory-scaler's scales of it from two sources
 * that outlive a process and are shared by every replica:
 * - `status.recentScales` of the governing AppMonitor (applied entries of that workload), which
 *   survives a writer that strips the workload's annotations;
 * - the workload's last-scale record: its own time and its `earlier` marks, written in the same
 *   compare-and-swap patch as each scale, so a scale is counted even while its status write lags
 *   behind (concurrent alerts, a storm), and the count can never fall behind the patches.
 * A scale is counted once (same time and event id; an entry without an event id matches on time).
 */
import { DEFAULT_REVERT_BUDGET_PER_HOUR, type MemoryResources } from "../../lib/appmonitor.ts";
import { compare, parseQuantity } from "../../lib/quantity.ts";
import { type ContainerMemory, isApplied, MAX_EARLIER, parseScaleRecord, type RecordedScale, type ScaleMark, type ScaleRecordAnnotation } from "../model.ts";

/** The budget's window: one hour, in milliseconds. */
export const REVERT_WINDOW_MS = 3_600_000;

/** One container whose template memory is below what the last scale set. */
export interface RevertedContainer {
  readonly container: string;
  /** What memory-scaler set. */
  readonly set: MemoryResources;
  /** What the template has now (a value absent when the template sets none). */
  readonly now: { readonly limit?: string | undefined; readonly request?: string | undefined };
}

/** A revert of the workload's last scale. */
export interface Revert {
  /** The last scale, as its record says. */
  readonly record: ScaleRecordAnnotation;
  readonly containers: readonly RevertedContainer[];
}

/** True when quantity `now` is below `set`; a value that is absent or does not parse counts as lowered only when `set` is there. */
function lowered(set: string | undefined, now: string | undefined): boolean {
  if (set === undefined) return false;
  if (now === undefined) return true;
  try {
    return compare(parseQuantity(now), parseQuantity(set)) < 0;
  } catch {
    return false;
  }
}

/**
 * The revert of the last scale, or undefined: the record must be readable and be the last
 * scale's (its time is the last-scale annotation's), and some container it changed must be in
 * the template with a limit or request below what it set. A container no longer in the template
 * was removed, not reverted.
 */
export function detectRevert(input: { readonly lastScale: string | undefined; readonly record: string | undefined; readonly templateContainers: readonly ContainerMemory[] }): Revert | undefined {
  const record = parseScaleRecord(input.record);
  if (record === undefined || input.lastScale === undefined || Date.parse(input.lastScale) !== Date.parse(record.time)) return undefined;
  return revertOf(record, input.templateContainers);
}

/**
 * The revert of the workload's last scale as the AppMonitor's `status.recentScales` lists it, when
 * that scale is later than the one the workload's annotations name (`after`, its last-scale
 * annotation; undefined: none): a writer replaced the whole object (`kubectl replace`, an Argo CD
 * sync with `Replace=true`, a delete and create) and took them with the memory, or applied a copy
 * exported after an earlier scale, annotations and all. {@link detectRevert} then sees nothing, or
 * only that earlier scale, and the budget would never be asked. The newest applied entries of the
 * workload within the last hour (one per container, of one scale) stand for the record; older
 * ones are left alone, as the budget does.
 */
export function detectRevertFromStatus(input: {
  readonly workload: { readonly kind: string; readonly name: string };
  readonly appmonitor: string;
  readonly multiplier: number;
  readonly recent: readonly RecordedScale[];
  readonly now: Date;
  readonly templateContainers: readonly ContainerMemory[];
  readonly after?: string | undefined;
}): Revert | undefined {
  const since = Math.max(input.now.getTime() - REVERT_WINDOW_MS, input.after === undefined || Number.isNaN(Date.parse(input.after)) ? -Infinity : Date.parse(input.after));
  const mine = input.recent.filter((r) => isApplied(r) && r.workload.kind === input.workload.kind && r.workload.name === input.workload.name && Date.parse(r.time) > since);
  const newest = mine.reduce<RecordedScale | undefined>((a, r) => (a === undefined || Date.parse(r.time) > Date.parse(a.time) ? r : a), undefined);
  if (newest === undefined) return undefined;
  const scale = mine.filter((r) => Date.parse(r.time) === Date.parse(newest.time) && r.event === newest.event);
  const record: ScaleRecordAnnotation = {
    time: newest.time,
    appmonitor: input.appmonitor,
    event: newest.event ?? newest.time,
    multiplier: input.multiplier,
    changes: scale.map((r) => ({ container: r.container, from: r.from, to: r.to })),
  };
  return revertOf(record, input.templateContainers);
}

/** The containers `record` changed whose template memory is now below what it set, as a revert; undefined when none. */
function revertOf(record: ScaleRecordAnnotation, templateContainers: readonly ContainerMemory[]): Revert | undefined {
  const containers: RevertedContainer[] = [];
  for (const change of record.changes) {
    const now = templateContainers.find((c) => c.name === change.container);
    if (now === undefined) continue;
    if (lowered(change.to.limit, now.limit) || lowered(change.to.request, now.request)) {
      containers.push({ container: change.container, set: change.to, now: { limit: now.limit, request: now.request } });
    }
  }
  return containers.length === 0 ? undefined : { record, containers };
}

/** "memhog: limit 768Mi → 384Mi, request 512Mi → 256Mi" */
export function describeRevert(revert: Revert): string {
  return revert.containers
    .map((c) => `${c.container}: limit ${c.set.limit} → ${c.now.limit ?? "none"}${c.set.request === undefined ? "" : `, request ${c.set.request} → ${c.now.request ?? "none"}`}`)
    .join("; ");
}

/** How much of the budget the last hour used. */
export interface BudgetUse {
  /** `spec.revertBudgetPerHour`, or the default. */
  readonly budget: number;
  /** Scales of the workload within the hour before `now`, newest first (at most {@link MAX_EARLIER}). */
  readonly scales: readonly ScaleMark[];
  /** True when `scales` has `budget` entries or more: no further patch of a reverted workload. */
  readonly exhausted: boolean;
}

/**
 * memory-scaler's scales of `workload` within the hour before `now` (a scale at most
 * {@link REVERT_WINDOW_MS} ago, or later than `now` when clocks differ), from the AppMonitor's
 * `recent` entries and the workload's last-scale `record` (its time and `earlier` marks), each
 * counted once; and whether they reach `budget` (undefined: {@link DEFAULT_REVERT_BUDGET_PER_HOUR}).
 */
export function budgetUse(input: ScaleMarksInput & { readonly budget: number | undefined }): BudgetUse {
  const scales = scaleMarks(input, REVERT_WINDOW_MS);
  const budget = input.budget ?? DEFAULT_REVERT_BUDGET_PER_HOUR;
  return { budget, scales, exhausted: scales.length >= budget };
}

/** What {@link scaleMarks} counts from. */
export interface ScaleMarksInput {
  readonly workload: { readonly kind: string; readonly name: string };
  readonly record: ScaleRecordAnnotation | undefined;
  readonly recent: readonly RecordedScale[];
  readonly now: Date;
}

/**
 * memory-scaler's scales of `workload` within `windowMs` before `now` (or later than `now` when
 * clocks differ), newest first, at most {@link MAX_EARLIER}: from the AppMonitor's `recent`
 * entries and the workload's last-scale `record` (its time and `earlier` marks), each counted
 * once. The revert budget counts the last hour's; the leak guard (`scale/decide/leak-guard.ts`) its window's.
 */
export function scaleMarks(input: ScaleMarksInput, windowMs: number): ScaleMark[] {
  const since = input.now.getTime() - windowMs;
  const candidates: ScaleMark[] = [
    ...(input.record === undefined ? [] : [{ time: input.record.time, event: input.record.event }, ...(input.record.earlier ?? [])]),
    ...input.recent
      .filter((r) => isApplied(r) && r.workload.kind === input.workload.kind && r.workload.name === input.workload.name)
      .map((r) => (r.event === undefined ? { time: r.time } : { time: r.time, event: r.event })),
  ];
  const scales: ScaleMark[] = [];
  for (const mark of candidates) {
    const at = Date.parse(mark.time);
    if (Number.isNaN(at) || at <= since) continue;
    const same = scales.some((s) => Date.parse(s.time) === at && (s.event === undefined || mark.event === undefined || s.event === mark.event));
    if (!same) scales.push(mark);
  }
  scales.sort((a, b) => Date.parse(b.time) - Date.parse(a.time));
  return scales.slice(0, MAX_EARLIER);
}

/**
 * The note of the `Reverted` Warning Events: what memory-scaler set and when, what the template
 * has now, where to find the writer (the workload's `metadata.managedFields`), and the budget.
 */
export function revertNote(workload: { readonly kind: string; readonly name: string }, revert: Revert, budget: BudgetUse): string {
  return (
    `the memory memory-scaler set on ${workload.kind} ${workload.name} at ${revert.record.time} was lowered by another writer (${describeRevert(revert)}); ` +
    `its metadata.managedFields name the writer. A reverted workload is patched at most ${budget.budget} times per hour (spec.revertBudgetPerHour; ${budget.scales.length} in the last hour)`
  );
}
