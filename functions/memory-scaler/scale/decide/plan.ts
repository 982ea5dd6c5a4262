/**
 * The pure plan of a firing alert, from what `../observe.ts` read and the {@link PlannedTarget} it
 * names: which AppMonitor governs the target, what the target's last scale leaves (a repair, a
 * revert, the revert budget), and whether to scale — `decideScale` on the target's memory, told
 * the target's way (`PlannedTarget.refine`: an OnDelete workload's `RolloutWaitsForDelete`, a bare
 * Pod's `ResizeUnderWay`), and held where a heap flag makes the raise useless (`FixedHeap`). No I/O: plain data in, a decision out.
 */
import type { AppMonitorStatus } from "../../../lib/appmonitor.ts";
import type { RecordedScale } from "../../model.ts";
import type { NoneGoverns, Scale, Skip } from "../../outcome.ts";
import { leakOf } from "../../status/leaks.ts";
import { guardLeak, type LeakVerdict, leakWindowMs, templateHash } from "./leak-guard.ts";
import { decideScale } from "./decide.ts";
import { holdFixedHeaps } from "./fixed-heap.ts";
import type { HeapError } from "../../model.ts";
import { type CoverageConflict, governingAppMonitor, type NamespaceAppMonitors, type ValidAppMonitor } from "./governing.ts";
import type { History, PlannedTarget } from "./target-view.ts";

/** What the plan says of one alert; `conflict` when several AppMonitors cover the target (`governing.ts`). */
export type FiringPlan = (
  | { readonly governed: false; readonly reason: NoneGoverns["reason"]; readonly message: string }
  | ({
      readonly governed: true;
      readonly appMonitor: ValidAppMonitor;
      readonly decision: Skip | Scale;
      /** The leak guard's verdict on a raise (`leak-guard.ts`); absent when nothing would be raised, or only in a dry run. */
      readonly leak?: LeakVerdict;
    } & History)
) & { readonly conflict?: CoverageConflict };

/** What the plan reads: the target, the namespace's AppMonitors, the alert, the time, and how many scales the status keeps. */
export interface PlanInput {
  readonly target: PlannedTarget;
  /** The namespace's AppMonitors (the invalid ones set apart) and the one the alert names. */
  readonly monitors: NamespaceAppMonitors;
  readonly named: ValidAppMonitor;
  /**
   * The alerting Pod's name and, when the alert names one, its container; `crossingStartedAt`, the
   * alert's `startsAt` when its trigger `crossesLimit` (`decide.ts` `DecideInput`).
   */
  readonly alert: { readonly pod: string; readonly container?: string | undefined; readonly crossingStartedAt?: string | undefined };
  readonly now: Date;
  /** Entries kept in `status.recentScales`. */
  readonly statusLimit: number;
  /** The alerting Pod's containers whose last run was an in-process heap failure (`fixed-heap.ts` `heapFailures`). */
  readonly heapFailed?: readonly string[];
  /** Those whose termination message names their runtime's heap error (`heap-error.ts` `heapErrors`). */
  readonly heapErrors?: readonly HeapError[];
  /** The install's cap (`DEFAULT_MAX_MEMORY`, `caps.ts`); absent: its default. */
  readonly defaultMaxMemory?: string | undefined;
  /** The install's ceiling `MAX_MEMORY` (`../../ceilings.ts`); absent: none. */
  readonly maxMemoryCeiling?: string | undefined;
}

/**
 * Plans one alert:
 * 1. the alert's AppMonitor must govern the target (`governing.ts`: a workload's Pod template, a
 *    bare Pod's own metadata) and come first among those that cover it, else `NotCovered` /
 *    `AppMonitorNotGoverning` / `AppMonitorConflict`;
 * 2. what the target's last scale leaves (`PlannedTarget.history`);
 * 3. `decideScale` on the target's memory asked for and running, its last scale's time, the
 *    alert's container and, for a crossing of the limit, when the alert began, told the target's way (`PlannedTarget.refine`);
 * 4. each raise a heap flag makes useless held (`fixed-heap.ts` `holdFixedHeaps`, by
 *    `spec.heapFlags`), a container left out as `FixedHeap`;
 * 5. a raise left (not a dry run, not of a reverted workload, which the revert budget bounds)
 *    asked of the leak guard (`leak-guard.ts` `guardLeak`): held → skipped `ProbableLeak`.
 */
export function planFiring(input: PlanInput): FiringPlan {
  const { target, alert, now } = input;
  const governing = governingAppMonitor(target.view.owner, input.monitors, input.named);
  const conflict = governing.conflict === undefined ? {} : { conflict: governing.conflict };
  if (governing.result === "none") return { governed: false, reason: governing.reason, message: governing.message, ...conflict };
  const am = governing.appMonitor;
  const decision = decideScale({
    podContainers: target.view.running,
    templateContainers: target.view.desired,
    now,
    spec: am.spec,
    ...(target.view.lastScaleTime === undefined ? {} : { lastScaleTime: target.view.lastScaleTime }),
    ...(alert.container === undefined ? {} : { alertContainer: alert.container }),
    ...(alert.crossingStartedAt === undefined ? {} : { crossingStartedAt: alert.crossingStartedAt }),
    ...(input.defaultMaxMemory === undefined ? {} : { defaultMaxMemory: input.defaultMaxMemory }),
    ...(input.maxMemoryCeiling === undefined ? {} : { maxMemoryCeiling: input.maxMemoryCeiling }),
    ...(am.held === undefined ? {} : { held: am.held }),
  });
  const refined = target.refine(decision, am, alert);
  const held = holdFixedHeaps(refined, { heaps: target.view.heaps, policy: am.spec.heapFlags ?? "Hold", rewritable: target.view.rewritesHeaps, failed: input.heapFailed ?? [], errors: input.heapErrors ?? [] });
  const history = target.history(am, now, input.statusLimit);
  // A reverted workload's memory does not grow (another writer lowers it): the revert budget bounds it, not the leak guard.
  if (held.action === "skip" || held.dryRun || history.revert !== undefined) return { governed: true, appMonitor: am, ...history, decision: held, ...conflict };
  const since = now.getTime() - leakWindowMs(am.spec);
  const status = am.raw.status as AppMonitorStatus | undefined;
  const leak = guardLeak({
    workload: target.view.workload,
    spec: am.spec,
    generation: am.metadata.generation,
    template: templateHash(target.view.owner.template),
    marks: history.marks.filter((m) => Date.parse(m.time) > since),
    recent: (status?.recentScales ?? []) as RecordedScale[],
    listed: leakOf(status, target.view.workload),
    now,
    ...(am.held === undefined ? {} : { held: am.held }),
  });
  const guarded: Skip | Scale = leak.action === "hold" ? { action: "skip", reason: "ProbableLeak", message: leak.message, skipped: [], leak: leak.entry } : held;
  return { governed: true, appMonitor: am, ...history, decision: guarded, leak, ...conflict };
}
