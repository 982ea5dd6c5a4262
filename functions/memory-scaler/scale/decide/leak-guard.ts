/**
 * The leak guard (pure): a workload memory-scaler scaled `maxScales` times within `windowSeconds`
 * (`spec.leakGuard`) is scaled no more — a leak defeats any multiplier, and each scale rolls the
 * workload. The alert that would make one more is held `ProbableLeak`; the AppMonitor lists the
 * workload in `status.probableLeaks` (condition `ProbableLeak`), one Warning pair says so with the
 * scales, and an alert goes to Alertmanager (`../kube/alertmanager.ts`). All of it is derived
 * from the cluster — the scales from the workload's last-scale record and `status.recentScales`
 * (`coexist/reverts.ts` `scaleMarks`), the hold from `status.probableLeaks` — so it holds across
 * restarts and replicas. It ends when the window from the hold has passed, or earlier (the entry
 * kept `cleared` until then, so the scales before it are not counted again) when the AppMonitor's
 * spec (`metadata.generation`) or the workload's Pod template changed since the hold.
 *
 * Defaults ({@link DEFAULT_LEAK_MAX_SCALES} in {@link DEFAULT_LEAK_WINDOW_SECONDS}): three scales a
 * day, PerfectScale's limit on automatic increases; at the default multiplier 2 that is 8× the
 * memory, far beyond what a workload that was merely sized too small needs.
 */
import { createHash } from "node:crypto";
import type { AppMonitorSpec } from "../../../lib/appmonitor.ts";
import { formatTimestamp } from "../../../lib/rfc3339.ts";
import { describeHeld, type HeldCeiling } from "../../ceilings.ts";
import { isApplied, type RecordedScale, type ScaleMark } from "../../model.ts";
import type { ProbableLeak } from "../../status/leaks.ts";

/** `spec.leakGuard.maxScales` when absent. */
export const DEFAULT_LEAK_MAX_SCALES = 3;
/** `spec.leakGuard.windowSeconds` when absent: a day. */
export const DEFAULT_LEAK_WINDOW_SECONDS = 86_400;

/** The guard's window in milliseconds, from `spec.leakGuard`. */
export function leakWindowMs(spec: Pick<AppMonitorSpec, "leakGuard">): number {
  return (spec.leakGuard?.windowSeconds ?? DEFAULT_LEAK_WINDOW_SECONDS) * 1000;
}

/** What {@link guardLeak} judges. */
export interface LeakInput {
  readonly workload: { readonly kind: string; readonly name: string };
  readonly spec: Pick<AppMonitorSpec, "leakGuard">;
  /** The AppMonitor's `metadata.generation`. */
  readonly generation: number | undefined;
  /** {@link templateHash} of the workload's Pod template now. */
  readonly template: string;
  /** The workload's scales within the window (`scaleMarks`), newest first. */
  readonly marks: readonly ScaleMark[];
  /** `status.recentScales`: what the Warning lists of each scale (from → to). */
  readonly recent: readonly RecordedScale[];
  /** The workload's `status.probableLeaks` entry, if any. */
  readonly listed: ProbableLeak | undefined;
  readonly now: Date;
  /** The install's ceilings that held over `spec` (already bounded, `bound-spec.ts`): the note names them. */
  readonly held?: readonly HeldCeiling[];
}

/**
 * What the guard says of an alert that would scale:
 * - `scale`: go on; `change` the entry to write first (a hold ended: cleared, or dropped after its window);
 * - `hold`: skip `ProbableLeak`; `tripped` when this alert set the hold (its entry is new).
 */
export type LeakVerdict =
  | { readonly action: "scale"; readonly change?: { readonly entry: ProbableLeak; readonly drop: boolean } }
  | { readonly action: "hold"; readonly entry: ProbableLeak; readonly tripped: boolean; readonly message: string };

/** A hash of a Pod template (its JSON with keys sorted): what tells the guard the template changed. */
export function templateHash(template: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value === null || typeof value !== "object") return value;
    const object = value as Record<string, unknown>;
    return Object.fromEntries(Object.keys(object).sort().filter((k) => object[k] !== undefined).map((k) => [k, canonical(object[k])]));
  };
  return createHash("sha256").update(JSON.stringify(canonical(template) ?? null)).digest("hex").slice(0, 16);
}

/**
 * The note of the `ProbableLeak` Warnings and the alert's description; `held`: the install's
 * ceilings that set `maxScales` or `windowSeconds` (`../../ceilings.ts`), named in place of the spec.
 */
export function leakNote(entry: ProbableLeak, maxScales: number, windowSeconds: number, held?: readonly HeldCeiling[]): string {
  const bounds = (held ?? []).filter((h) => h.field.startsWith("spec.leakGuard."));
  const allows = bounds.length === 0 ? `spec.leakGuard allows ${maxScales}` : `spec.leakGuard allows ${maxScales}: ${bounds.map(describeHeld).join(", ")}`;
  return (
    `${entry.workload.kind} ${entry.workload.name} was scaled ${entry.scales.length} times within ${windowSeconds}s (${allows}): a probable memory leak, not scaled until ${entry.until} ` +
    `or until the AppMonitor's spec or the Pod template changes. Scales: ${entry.scales.join("; ")}`
  );
}

/** The scales as the entry lists them: `<time> <container> <from> → <to>`, oldest first. */
function described(input: LeakInput, marks: readonly ScaleMark[]): string[] {
  return [...marks].reverse().flatMap((mark) => {
    const at = Date.parse(mark.time);
    const rows = input.recent.filter(
      (r) => isApplied(r) && r.workload.kind === input.workload.kind && r.workload.name === input.workload.name && Date.parse(r.time) === at && (mark.event === undefined || r.event === undefined || r.event === mark.event),
    );
    return rows.length === 0 ? [mark.time] : rows.map((r) => `${r.time} ${r.container} ${r.from.limit} → ${r.to.limit}`);
  });
}

/**
 * The guard's verdict on an alert that would scale `input.workload` (module comment), in order:
 * a listed hold whose window is open holds while the spec's generation and the template are those
 * it was set at, else it is cleared; a listed entry past its window is dropped; then, counting the
 * scales within the window (after a cleared entry's `since`), `maxScales` or more → a new hold.
 */
export function guardLeak(input: LeakInput): LeakVerdict {
  const { listed, now } = input;
  const maxScales = input.spec.leakGuard?.maxScales ?? DEFAULT_LEAK_MAX_SCALES;
  const windowMs = leakWindowMs(input.spec);
  const windowSeconds = windowMs / 1000;
  let change: { entry: ProbableLeak; drop: boolean } | undefined;
  let after = -Infinity;
  if (listed !== undefined) {
    if (Date.parse(listed.until) <= now.getTime()) change = { entry: listed, drop: true };
    else {
      after = Date.parse(listed.since);
      if (listed.cleared === undefined) {
        const why = listed.generation !== input.generation ? "the AppMonitor's spec changed" : listed.template !== input.template ? "the Pod template changed" : undefined;
        if (why === undefined) return { action: "hold", entry: listed, tripped: false, message: leakNote(listed, maxScales, windowSeconds, input.held) };
        change = { entry: { ...listed, cleared: why }, drop: false };
      }
    }
  }
  const marks = input.marks.filter((m) => Date.parse(m.time) > after);
  if (marks.length >= maxScales) {
    const entry: ProbableLeak = {
      workload: { kind: input.workload.kind, name: input.workload.name },
      since: formatTimestamp(now),
      until: formatTimestamp(new Date(now.getTime() + windowMs)),
      ...(input.generation === undefined ? {} : { generation: input.generation }),
      template: input.template,
      scales: described(input, marks),
    };
    return { action: "hold", entry, tripped: true, message: leakNote(entry, maxScales, windowSeconds, input.held) };
  }
  return change === undefined ? { action: "scale" } : { action: "scale", change };
}
