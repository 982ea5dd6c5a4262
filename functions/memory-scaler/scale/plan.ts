/**
 * The pure plan of a firing alert, from what `observe.ts` read and the {@link WriteTarget} it
 * names: which AppMonitor governs the target, what the target's last scale leaves (a repair, a
 * revert, the revert budget), and whether to scale — `decideScale` on the target's memory, told
 * the target's way (`WriteTarget.refine`: an OnDelete workload's `RolloutWaitsForDelete`, a bare
 * Pod's `ResizeUnderWay`), and held where a heap flag makes the raise useless (`FixedHeap`). No I/O: plain data in, a decision out.
 */
import type { NoneGoverns, Scale, Skip } from "../outcome.ts";
import { decideScale } from "./decide.ts";
import { holdFixedHeaps } from "./fixed-heap.ts";
import { type CoverageConflict, governingAppMonitor, type NamespaceAppMonitors, type ValidAppMonitor } from "./governing.ts";
import type { History, WriteTarget } from "./target.ts";

/** What the plan says of one alert; `conflict` when several AppMonitors cover the target (`governing.ts`). */
export type FiringPlan = (
  | { readonly governed: false; readonly reason: NoneGoverns["reason"]; readonly message: string }
  | ({ readonly governed: true; readonly appMonitor: ValidAppMonitor; readonly decision: Skip | Scale } & History)
) & { readonly conflict?: CoverageConflict };

/** What the plan reads: the target, the namespace's AppMonitors, the alert, the time, and how many scales the status keeps. */
export interface PlanInput {
  readonly target: WriteTarget;
  /** The namespace's AppMonitors (the invalid ones set apart) and the one the alert names. */
  readonly monitors: NamespaceAppMonitors;
  readonly named: ValidAppMonitor;
  /** The alerting Pod's name and, when the alert names one, its container. */
  readonly alert: { readonly pod: string; readonly container?: string | undefined };
  readonly now: Date;
  /** Entries kept in `status.recentScales`. */
  readonly statusLimit: number;
  /** The alerting Pod's containers whose last run was an in-process heap failure (`fixed-heap.ts` `heapFailures`). */
  readonly heapFailed?: readonly string[];
}

/**
 * Plans one alert:
 * 1. the alert's AppMonitor must govern the target (`governing.ts`: a workload's Pod template, a
 *    bare Pod's own metadata) and come first among those that cover it, else `NotCovered` /
 *    `AppMonitorNotGoverning` / `AppMonitorConflict`;
 * 2. what the target's last scale leaves (`WriteTarget.history`);
 * 3. `decideScale` on the target's memory asked for and running, its last scale's time and the
 *    alert's container, told the target's way (`WriteTarget.refine`);
 * 4. each raise a heap flag makes useless held (`fixed-heap.ts` `holdFixedHeaps`, by
 *    `spec.heapFlags`), a container left out as `FixedHeap`.
 */
export function planFiring(input: PlanInput): FiringPlan {
  const { target, alert, now } = input;
  const governing = governingAppMonitor(target.owner, input.monitors, input.named);
  const conflict = governing.conflict === undefined ? {} : { conflict: governing.conflict };
  if (governing.result === "none") return { governed: false, reason: governing.reason, message: governing.message, ...conflict };
  const am = governing.appMonitor;
  const decision = decideScale({
    podContainers: target.running,
    templateContainers: target.desired,
    now,
    spec: am.spec,
    ...(target.lastScaleTime === undefined ? {} : { lastScaleTime: target.lastScaleTime }),
    ...(alert.container === undefined ? {} : { alertContainer: alert.container }),
  });
  const refined = target.refine(decision, am, alert);
  const held = holdFixedHeaps(refined, { heaps: target.heaps, policy: am.spec.heapFlags ?? "Hold", rewritable: target.rewritesHeaps, failed: input.heapFailed ?? [] });
  return { governed: true, appMonitor: am, ...target.history(am, now, input.statusLimit), decision: held, ...conflict };
}
