/**
 * The pure plan of a firing alert (`scale-flow.ts` steps 3–5), from what `observe.ts` read:
 * which AppMonitor governs the workload, what its last scale still needs (`status.ts`
 * `repairOf`), and whether to scale — `decideScale` with the OnDelete cases on top — and, after
 * the alert's evidence is checked, which containers stay and which reason wins when none does.
 * No I/O: plain data in, a decision out.
 */
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, type AppMonitorStatus } from "../../lib/appmonitor.ts";
import { gitOpsOwner, type GitOpsOwner } from "../coexist/gitops.ts";
import { budgetUse, type BudgetUse, detectRevert, detectRevertFromStatus, type Revert } from "../coexist/reverts.ts";
import { memoryOf } from "../kube/views.ts";
import { type ContainerChange, type ContainerMemory, kindOf, parseScaleRecord, type RecordedScale, type SkippedContainer } from "../model.ts";
import type { OutcomeReason } from "../outcome.ts";
import { podReplacement, type PodReplacement } from "../replacement.ts";
import { type Repair, repairOf } from "../status/repair.ts";
import { pendingRollouts } from "../status/rollouts.ts";
import { decideScale } from "./decide.ts";
import { governingAppMonitor, type NoneGoverns, type ValidAppMonitor } from "./governing.ts";
import type { Observation } from "./observe.ts";
import { type RolloutStrategy, unreplacedNote, waitingForDelete, waitsForDelete } from "./on-delete.ts";

/**
 * The label a StatefulSet or DaemonSet controller puts on each Pod: the ControllerRevision its
 * template came from (https://kubernetes.io/docs/reference/labels-annotations-taints/#controller-revision-hash).
 */
const CONTROLLER_REVISION_LABEL = "controller-revision-hash";

/** Not to scale, and why; `skipped` lists the containers left out on the way. */
export interface Skip {
  readonly action: "skip";
  readonly reason: OutcomeReason;
  readonly message: string;
  readonly skipped?: readonly SkippedContainer[];
}

/** To scale (or, `dryRun`, to say what a scale would do): each container's memory before and after. */
export interface Scale {
  readonly action: "scale";
  readonly changes: readonly ContainerChange[];
  readonly skipped: readonly SkippedContainer[];
  readonly dryRun: boolean;
}

/** What the plan says of one alert. */
export type FiringPlan =
  | { readonly governed: false; readonly reason: NoneGoverns["reason"]; readonly message: string }
  | {
      readonly governed: true;
      readonly appMonitor: ValidAppMonitor;
      /** What the workload's last scale by this AppMonitor still needs written, whatever the decision. */
      readonly repair: Repair;
      readonly decision: Skip | Scale;
      /** The template's and the live Pod's memory, in spec order. */
      readonly templateContainers: readonly ContainerMemory[];
      readonly podContainers: readonly ContainerMemory[];
      readonly strategy: RolloutStrategy;
      /** Whether a scale replaces the workload's Pods and what that loses (`replacement.ts`): the `Scaled` note and the `PodsReplaced` Warning. */
      readonly replacement: PodReplacement;
      /** The GitOps tool that manages the workload (`gitops.ts`), if any. */
      readonly gitOps: GitOpsOwner | undefined;
      /** The revert of the workload's last scale (`reverts.ts`), if its template memory is below what that scale set. */
      readonly revert: Revert | undefined;
      /** memory-scaler's scales of the workload in the last hour, against `spec.revertBudgetPerHour`. */
      readonly budget: BudgetUse;
    };

/** What the plan reads: an observed alert, the time, and how many scales the status keeps. */
export interface PlanInput {
  readonly observation: Extract<Observation, { result: "observed" }>;
  /** The alerting Pod's name and, when the alert names one, its container. */
  readonly alert: { readonly pod: string; readonly container?: string | undefined };
  readonly now: Date;
  /** Entries kept in `status.recentScales`. */
  readonly statusLimit: number;
}

/**
 * Plans one alert (`scale-flow.ts` steps 3, 3a and 4):
 * 1. the alert's AppMonitor must govern the workload's Pod template (`governing.ts`), else
 *    `NotCovered` / `AppMonitorNotGoverning`;
 * 2. the repair of its last scale (`repairOf`), and whether a scale replaces its Pods
 *    (`podReplacement`);
 * 3. `decideScale`; a `Cooldown` or `RolloutUnderWay` skip of an OnDelete StatefulSet or DaemonSet
 *    whose alerting Pod runs less memory than its template, or any decision while that
 *    workload's last rollout is pending in `status.rollouts`, becomes `RolloutWaitsForDelete`
 *    (nothing replaces such a Pod until someone deletes it: say so, and scale nothing on top).
 */
export function planFiring(input: PlanInput): FiringPlan {
  const { observation, alert, now } = input;
  const { pod, monitors, named, workload } = observation;
  const governing = governingAppMonitor({ kind: workload.kind, name: workload.name, template: workload.object.spec.template }, monitors, named);
  if (governing.result === "none") return { governed: false, reason: governing.reason, message: governing.message };
  const am = governing.appMonitor;
  const annotations = workload.object.metadata?.annotations;
  const templateContainers = memoryOf(workload.object.spec.template.spec);
  const podContainers = memoryOf(pod.spec);
  const strategy: RolloutStrategy = {
    kind: workload.kind,
    name: workload.name,
    updateStrategy: workload.object.spec.updateStrategy?.type,
    updateRevision: workload.object.status?.updateRevision,
    replicas: workload.object.spec.replicas,
  };
  const repair = repairOf({
    lastScale: annotations?.[LAST_SCALE_ANNOTATION],
    record: annotations?.[LAST_SCALE_RECORD_ANNOTATION],
    workload,
    appmonitor: am.metadata.name,
    status: am.raw.status as AppMonitorStatus | undefined,
    limit: input.statusLimit,
  });
  const recent = ((am.raw.status as AppMonitorStatus | undefined)?.recentScales ?? []) as RecordedScale[];
  // A writer that replaced the whole workload, or applied an old copy of it, took the annotations
  // back with the memory: a later scale the status lists stands for the record.
  const revert =
    detectRevertFromStatus({ workload, appmonitor: am.metadata.name, multiplier: am.spec.memMultiplier, recent, now, templateContainers, after: annotations?.[LAST_SCALE_ANNOTATION] }) ??
    detectRevert({ lastScale: annotations?.[LAST_SCALE_ANNOTATION], record: annotations?.[LAST_SCALE_RECORD_ANNOTATION], templateContainers });
  const budget = budgetUse({
    workload,
    record: parseScaleRecord(annotations?.[LAST_SCALE_RECORD_ANNOTATION]),
    recent,
    now,
    budget: am.spec.revertBudgetPerHour,
  });
  const gitOps = gitOpsOwner(workload.object.metadata);
  const replacement = podReplacement({
    kind: workload.kind,
    replicas: workload.object.spec.replicas,
    updateStrategy: workload.object.spec.updateStrategy?.type,
    volumes: workload.object.spec.template.spec?.volumes ?? [],
  });
  const planned = { governed: true, appMonitor: am, repair, templateContainers, podContainers, strategy, replacement, gitOps, revert, budget } as const;

  // OnDelete: the last scale's rollout is pending until every Pod was deleted and replaced (the
  // follow-up ends it); until then no scale goes on top of one no Pod has.
  const unreplaced = waitsForDelete(strategy) ? pendingRollouts(am.raw.status).find((r) => r.workload.kind === workload.kind && r.workload.name === workload.name) : undefined;
  const lastScaleTime = annotations?.[LAST_SCALE_ANNOTATION];
  const decision = decideScale({
    podContainers,
    templateContainers,
    now,
    spec: am.spec,
    ...(lastScaleTime === undefined ? {} : { lastScaleTime }),
    ...(alert.container === undefined ? {} : { alertContainer: alert.container }),
  });
  if (decision.action === "skip") {
    const behind = decision.reason === "Cooldown" || decision.reason === "RolloutUnderWay";
    // An OnDelete workload's Pod behind its template is not in a rollout: nothing will replace
    // it until it is deleted, which only the user can do; say that, not Cooldown or RolloutUnderWay.
    const waiting = behind
      ? waitingForDelete({
          workload: strategy,
          pod: { name: alert.pod, revision: pod.metadata?.labels?.[CONTROLLER_REVISION_LABEL] },
          limits: templateContainers
            .filter((c) => kindOf(c) !== "init" && (alert.container === undefined || c.name === alert.container))
            .map((c) => ({ container: c.name, template: c.limit, pod: podContainers.find((p) => p.name === c.name)?.limit })),
        })
      : undefined;
    if (waiting !== undefined) return { ...planned, decision: { action: "skip", reason: "RolloutWaitsForDelete", message: waiting, skipped: decision.skipped } };
    if (unreplaced !== undefined && behind) return { ...planned, decision: { action: "skip", reason: "RolloutWaitsForDelete", message: unreplacedNote(workload, unreplaced), skipped: decision.skipped } };
    return { ...planned, decision: { action: "skip", reason: decision.reason, message: decision.message, skipped: decision.skipped } };
  }
  if (unreplaced !== undefined) return { ...planned, decision: { action: "skip", reason: "RolloutWaitsForDelete", message: unreplacedNote(workload, unreplaced), skipped: decision.skipped } };
  return { ...planned, decision: { action: "scale", changes: decision.changes, skipped: decision.skipped, dryRun: decision.dryRun } };
}
