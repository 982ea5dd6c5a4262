/**
 * When a workload is due for a down-step of `spec.scaleDown` (docs/scale-down.md), as the
 * AppMonitor's status tells it (pure): the follow-up tick asks this of every AppMonitor with
 * `spec.scaleDown` before it reads anything else, so a tick costs a GET and a Prometheus query only
 * for a workload that is raised and due; the scale flow asks it again of the AppMonitor it reads
 * (`../scale/decide/scale-down.ts`), with the workload's last-scale record's count of flaps.
 *
 * Due: memory-scaler scaled the workload (an applied `status.recentScales` entry), and for the
 * quiet period ({@link quietPeriodMs}) nothing happened to it: no `recentScales` entry of any kind
 * (a raise, a dry run, a held scale, a down-step), no `status.lastOutcome` of it (an alert's skip,
 * a down-step refused), no rollout or scale pending; and its last down-step did not reach its floor
 * (`floored`). `lastOutcome` holds one outcome only, so an alert of the workload that another's
 * outcome replaced there is not seen: the peak over the period (the down-step's evidence) still is.
 */
import type { AppMonitorScaleDown, AppMonitorStatus } from "../../lib/appmonitor.ts";
import { isApplied, type RecordedScale } from "../model.ts";
import type { WithLastOutcome } from "./last-outcome.ts";
import { pendingScales } from "./pending-scales.ts";
import { pendingRollouts } from "./rollouts.ts";

/** The quiet period grows at most this many times over (3 doublings): a week and a day at the default, past a weekly cycle. */
export const MAX_QUIET_FACTOR = 8;

/**
 * The quiet period after `flaps` raises that followed a down-step, in milliseconds: doubled per
 * flap (a workload lowered and raised again showed a need the period missed, so the next period
 * looks twice as far back), at most {@link MAX_QUIET_FACTOR} times `quietPeriodSeconds`.
 */
export function quietPeriodMs(scaleDown: Required<AppMonitorScaleDown>, flaps: number): number {
  const factor = Math.min(MAX_QUIET_FACTOR, 2 ** Math.max(0, Math.floor(flaps)));
  return scaleDown.quietPeriodSeconds * 1000 * factor;
}

/** `recent`'s entries of `workload`, oldest first. */
function entriesOf(recent: readonly RecordedScale[], workload: { readonly kind: string; readonly name: string }): RecordedScale[] {
  return recent.filter((r) => r.workload.kind === workload.kind && r.workload.name === workload.name).sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
}

/**
 * Raises of `workload` in `recent` that came after one of its down-steps (applied entries, one per
 * scale): what the status says of its flaps when the workload's record is not read.
 */
export function flapsInStatus(recent: readonly RecordedScale[], workload: { readonly kind: string; readonly name: string }): number {
  let flaps = 0;
  let last: "up" | "down" | undefined;
  let lastTime: number | undefined;
  for (const entry of entriesOf(recent, workload).filter(isApplied)) {
    const at = Date.parse(entry.time);
    if (at === lastTime) continue;
    const direction = entry.direction === "down" ? "down" : "up";
    if (direction === "up" && last === "down") flaps += 1;
    last = direction;
    lastTime = at;
  }
  return flaps;
}

/** Whether `workload` is due (module comment), or why not. */
export type Due = { readonly due: true } | { readonly due: false; readonly reason: "NotRaised" | "AtFloor" | "QuietPeriod" | "RolloutUnderWay"; readonly message: string };

/**
 * Whether `workload` is due for a down-step at `now` by `status` (module comment), after `flaps`
 * raises that followed a down-step; a `cooldownSeconds` longer than the quiet period stands for it.
 */
export function scaleDownDue(status: AppMonitorStatus | undefined, workload: { readonly kind: string; readonly name: string }, scaleDown: Required<AppMonitorScaleDown>, flaps: number, now: Date, cooldownSeconds = 0): Due {
  const mine = entriesOf((status?.recentScales ?? []) as RecordedScale[], workload);
  const applied = mine.filter(isApplied);
  const name = `${workload.kind} ${workload.name}`;
  if (applied.length === 0) return { due: false, reason: "NotRaised", message: `${name} has no scale of this AppMonitor in status.recentScales` };
  const newest = applied.at(-1);
  const lastOfScale = applied.filter((r) => r.time === newest?.time);
  if (lastOfScale.every((r) => r.direction === "down" && r.floored === true)) return { due: false, reason: "AtFloor", message: `${name}'s last down-step reached its floor` };
  // The cooldown holds a down-step as it holds a raise.
  const period = Math.max(quietPeriodMs(scaleDown, flaps), cooldownSeconds * 1000);
  const seconds = period / 1000;
  const times = [...mine.map((r) => ({ time: r.time, what: r.direction === "down" ? "a down-step" : "a scale" }))];
  const last = (status as WithLastOutcome | undefined)?.lastOutcome;
  if (last?.workload !== undefined && last.workload.kind === workload.kind && last.workload.name === workload.name) times.push({ time: last.time, what: `an outcome (${last.reason})` });
  const latest = times.reduce<{ time: string; what: string } | undefined>((a, t) => (a === undefined || Date.parse(t.time) > Date.parse(a.time) ? t : a), undefined);
  if (latest !== undefined && now.getTime() - Date.parse(latest.time) < period) {
    const ends = new Date(Date.parse(latest.time) + period).toISOString().replace(/\.\d{3}Z$/, "Z");
    return { due: false, reason: "QuietPeriod", message: `${name} had ${latest.what} at ${latest.time}: the quiet period of ${seconds}s${flaps > 0 ? ` (spec.scaleDown.quietPeriodSeconds doubled for ${flaps} raise${flaps === 1 ? "" : "s"} after a down-step)` : ""} ends at ${ends}` };
  }
  const pending = pendingRollouts(status).some((r) => r.workload.kind === workload.kind && r.workload.name === workload.name) || pendingScales(status).some((s) => s.workload.kind === workload.kind && s.workload.name === workload.name);
  if (pending) return { due: false, reason: "RolloutUnderWay", message: `${name} has a rollout or a scale pending in the AppMonitor's status` };
  return { due: true };
}

/**
 * The workloads of the AppMonitor `status` belongs to that are due for a down-step at `now`
 * (each workload with an applied `recentScales` entry, its flaps counted from the status).
 */
export function workloadsDue(status: AppMonitorStatus | undefined, scaleDown: Required<AppMonitorScaleDown>, now: Date, cooldownSeconds = 0): { readonly kind: string; readonly name: string }[] {
  const recent = (status?.recentScales ?? []) as RecordedScale[];
  const seen = new Map<string, { kind: string; name: string }>();
  for (const r of recent) if (isApplied(r)) seen.set(`${r.workload.kind}/${r.workload.name}`, { kind: r.workload.kind, name: r.workload.name });
  return [...seen.values()].filter((w) => scaleDownDue(status, w, scaleDown, flapsInStatus(recent, w), now, cooldownSeconds).due);
}
