/**
 * `status.probableLeaks` and the `ProbableLeak` condition (pure; CRD fields, DESIGN.md "The API",
 * Status): the workloads the leak guard holds (`scale/decide/leak-guard.ts`), and those it released
 * before the window's end (`cleared`), kept until `until` so the scales before the hold are not
 * counted again. The condition is `True` while any entry is a hold.
 */
import { withCondition, type AppMonitorStatus } from "../../lib/appmonitor.ts";

/** `type` of the AppMonitor condition about workloads the leak guard holds. */
export const LEAK_CONDITION = "ProbableLeak";

/** Entries kept in `status.probableLeaks` (the CRD's `maxItems`); the oldest is forgotten beyond. */
export const MAX_LEAKS = 50;

/** One `status.probableLeaks` entry. */
export interface ProbableLeak {
  readonly workload: { readonly kind: string; readonly name: string };
  /** RFC 3339: when the guard held it. */
  readonly since: string;
  /** RFC 3339: when its window ends. */
  readonly until: string;
  /** The AppMonitor's `metadata.generation` at `since`. */
  readonly generation?: number;
  /** `templateHash` of the Pod template at `since`. */
  readonly template: string;
  /** The scales counted, `<time> <container> <from> → <to>`, oldest first. */
  readonly scales: readonly string[];
  /** Why the hold ended before `until`; absent while it holds. */
  readonly cleared?: string;
}

type WithLeaks = AppMonitorStatus & { probableLeaks?: ProbableLeak[] };

const same = (a: ProbableLeak["workload"], b: ProbableLeak["workload"]): boolean => a.kind === b.kind && a.name === b.name;

/** The entries of `status.probableLeaks` (none when absent or not a list). */
export function probableLeaks(status: unknown): ProbableLeak[] {
  const leaks = (status as WithLeaks | undefined)?.probableLeaks;
  return Array.isArray(leaks) ? leaks : [];
}

/** The entry of `workload`, if listed. */
export function leakOf(status: unknown, workload: ProbableLeak["workload"]): ProbableLeak | undefined {
  return probableLeaks(status).find((l) => same(l.workload, workload));
}

/**
 * `status` with `entry` for its workload (replacing any), or, `drop`, without the workload; the
 * condition set from what is left. Returns `status` itself when nothing changes.
 */
export function withLeak(status: AppMonitorStatus | undefined, entry: ProbableLeak, drop: boolean, now: string): AppMonitorStatus | undefined {
  const listed = probableLeaks(status);
  const old = listed.find((l) => same(l.workload, entry.workload));
  if (drop ? old === undefined : JSON.stringify(old) === JSON.stringify(entry)) return status;
  const leaks = [...listed.filter((l) => !same(l.workload, entry.workload)), ...(drop ? [] : [entry])].slice(-MAX_LEAKS);
  const held = leaks.filter((l) => l.cleared === undefined);
  const condition =
    held.length === 0
      ? { type: LEAK_CONDITION, status: "False" as const, reason: "NoLeak", message: "the leak guard holds no workload" }
      : { type: LEAK_CONDITION, status: "True" as const, reason: "ProbableLeak", message: `not scaled, a probable memory leak: ${held.map((l) => `${l.workload.kind} ${l.workload.name} (until ${l.until})`).join("; ")}` };
  const next: WithLeaks = withCondition(status ?? {}, condition, now);
  if (leaks.length > 0) next.probableLeaks = leaks;
  else delete next.probableLeaks;
  return next;
}

/**
 * `status` without the entries whose window has ended (`until` at or before `now`, RFC 3339), the
 * condition set from what is left: the follow-up tick's, so `ProbableLeak` turns `False` when a
 * hold ends even if its workload never alerts again. Returns `status` itself when none ended.
 */
export function withoutEndedLeaks(status: AppMonitorStatus | undefined, now: string): AppMonitorStatus | undefined {
  const ended = probableLeaks(status).filter((l) => !(Date.parse(l.until) > Date.parse(now)));
  return ended.reduce((s, entry) => withLeak(s, entry, true, now), status);
}
