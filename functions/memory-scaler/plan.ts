/**
 * The pure plan of a firing alert (`scale-flow.ts` steps 3–5), from what `observe.ts` read:
 * which AppMonitor governs the workload, what its last scale still needs (`status.ts`
 * `repairOf`), and whether to scale — `decideScale` with the OnDelete cases on top — and, after
 * the alert's evidence is checked, which containers stay and which reason wins when none does.
 * No I/O: plain data in, a decision out.
 */
import type * as k8s from "@kubernetes/client-node";
import type { AlertTrigger } from "../lib/alert-event.ts";
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, type AppMonitorStatus } from "../lib/appmonitor.ts";
import { classifyAutoscalers } from "./autoscalers.ts";
import { FIELD_MANAGER } from "./cluster.ts";
import { decideScale, kindOf, type ContainerChange, type ContainerKind, type ContainerMemory } from "./decide.ts";
import type { PendingRollout } from "./follow-up.ts";
import { gitOpsOwner, type GitOpsOwner } from "./gitops.ts";
import { governingAppMonitor, type NoneGoverns, type ValidAppMonitor } from "./governing.ts";
import type { Observation } from "./observe.ts";
import type { OutcomeReason, SkippedContainer } from "./outcome.ts";
import type { Workload } from "./owners.ts";
import { podReplacement, type PodReplacement } from "./replacement.ts";
import { waitingForDelete, waitsForDelete, type RolloutStrategy } from "./rollout.ts";
import { pendingRollouts } from "./rollout-status.ts";
import { budgetUse, describeRevert, detectRevert, detectRevertFromStatus, type BudgetUse, type Revert } from "./reverts.ts";
import { parseScaleRecord, repairOf, type RecordedScale, type Repair } from "./status.ts";

/**
 * The label a StatefulSet or DaemonSet controller puts on each Pod: the ControllerRevision its
 * template came from (https://kubernetes.io/docs/reference/labels-annotations-taints/#controller-revision-hash).
 */
const CONTROLLER_REVISION_LABEL = "controller-revision-hash";

/**
 * The memory a Pod spec sets, as the decision reads it: `containers`, then `initContainers`
 * (a native sidecar when its `restartPolicy` is `Always`), each in spec order.
 */
export function memoryOf(spec: k8s.V1PodSpec | undefined): ContainerMemory[] {
  const one = (c: k8s.V1Container, kind: ContainerKind): ContainerMemory => {
    const memory: ContainerMemory = { name: c.name, kind };
    const request = c.resources?.requests?.memory;
    const limit = c.resources?.limits?.memory;
    if (request !== undefined) memory.request = request;
    if (limit !== undefined) memory.limit = limit;
    return memory;
  };
  return [
    ...(spec?.containers ?? []).map((c) => one(c, "container")),
    ...(spec?.initContainers ?? []).map((c) => one(c, c.restartPolicy === "Always" ? "sidecar" : "init")),
  ];
}

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

/** What a check of the alert's evidence left: the changes it keeps and the containers it drops. */
export interface Checked {
  readonly keep: readonly ContainerChange[];
  readonly skipped: readonly SkippedContainer[];
}

/**
 * The plan after the alert's evidence was checked (`scale-flow.ts` step 5): the scale with the
 * containers the check kept, or, when it kept none, the skip. An OOM-kill alert's skip is
 * `NotOOMKilled` (`oom.ts`); a threshold alert's is `BelowThreshold` when any container was
 * measured below it, else the first container's reason (`NotMeasured`; `verify.ts`). Its
 * message joins every dropped container's; `skipped` lists the plan's and the check's.
 */
export function afterCheck(scale: Scale, trigger: AlertTrigger, checked: Checked): Skip | Scale {
  const skipped = [...scale.skipped, ...checked.skipped];
  if (checked.keep.length > 0) return { ...scale, changes: checked.keep, skipped };
  const message = checked.skipped.map((s) => s.message).join("; ");
  if (trigger === "oomKilled") return { action: "skip", reason: "NotOOMKilled", message, skipped };
  const first = checked.skipped.find((s) => s.reason === "BelowThreshold") ?? checked.skipped[0];
  return { action: "skip", reason: (first?.reason as OutcomeReason | undefined) ?? "NotMeasured", message, skipped };
}

/** The note of a `RolloutWaitsForDelete` skip while the last scale's OnDelete rollout is pending. */
function unreplacedNote(workload: Workload, rollout: PendingRollout): string {
  const pods = rollout.waitingPods ?? [];
  const which = pods.length > 0 ? `Pod${pods.length === 1 ? "" : "s"} ${pods.join(", ")} still run${pods.length === 1 ? "s" : ""} the old revision` : "its Pods still run the old revision";
  return `${workload.kind} ${workload.name} has updateStrategy OnDelete and its last scale (generation ${rollout.generation}, ${rollout.startedAt}) has not reached every Pod: ${which}; no further scale until they are deleted and replaced`;
}

/** Why a scale decided and checked is not written: another manager of the workload (`gateScale`). */
export type GateReason = "HPAOnMemory" | "VPAControlled" | "GitOpsManaged" | "Reverted";

/** What `gateScale` lets through, or holds and why. */
export type Gate =
  | {
      readonly action: "skip";
      readonly reason: GateReason;
      readonly message: string;
      /** Listed in `status.recentScales` with the values it would set (`GitOpsManaged`, `Reverted`); an autoscaler conflict is not. */
      readonly held?: "GitOpsManaged" | "Reverted";
    }
  | {
      readonly action: "scale";
      /** Set with `spec.gitOpsManaged: Patch`: the tool to warn about. */
      readonly gitOps?: GitOpsOwner;
      /** True when the scale applies again what a revert lowered. */
      readonly reverted: boolean;
    };

/** "container memhog: resources.limits.memory 768Mi, resources.requests.memory 512Mi; …": what to write in a manifest. */
export function manifestValues(changes: readonly ContainerChange[]): string {
  return changes
    .map((c) => `container ${c.container}: resources.limits.memory ${c.to.limit}${c.to.request === undefined ? "" : `, resources.requests.memory ${c.to.request}`}`)
    .join("; ");
}

/**
 * The note of the `GitOpsManaged` Warnings that come with a scale under `spec.gitOpsManaged:
 * Patch`: the tool's next sync may put the manifest's memory back (a revert, then bounded by
 * `spec.revertBudgetPerHour`), and how to keep the scale.
 */
export function gitOpsPatchedNote(workload: { readonly kind: string; readonly name: string }, gitOps: GitOpsOwner, changes: readonly ContainerChange[]): string {
  return (
    `scaled ${workload.kind} ${workload.name}, which ${gitOps.tool} manages (${gitOps.owner}, ${gitOps.signal}): its next sync may put the manifest's memory back; ` +
    `to keep the scale, set in the manifest: ${manifestValues(changes)}, or have ${gitOps.tool} leave the fields of field manager ${FIELD_MANAGER} alone (docs/gitops.md)`
  );
}

/**
 * The last gate before a checked scale is written (`scale-flow.ts` step 5a): who else manages
 * the workload. In order:
 * 1. an HPA scaling it on memory → `HPAOnMemory`, a VPA not `Off` → `VPAControlled`
 *    (`autoscalers.ts`; these fight every scale, whatever the spec says);
 * 2. a GitOps tool manages it (`gitops.ts`) and `spec.gitOpsManaged` is `Skip` or absent →
 *    `GitOpsManaged`, held: the values to set in the manifest are reported instead;
 * 3. its last scale was reverted and the last hour's scales reach `spec.revertBudgetPerHour` →
 *    `Reverted`, held (`reverts.ts`).
 * Otherwise the scale goes on, with the GitOps tool to warn about under `Patch` and whether it
 * re-applies a reverted value.
 */
export function gateScale(input: {
  readonly workload: { readonly kind: string; readonly name: string };
  readonly changes: readonly ContainerChange[];
  readonly gitOpsManaged: "Skip" | "Patch" | undefined;
  readonly gitOps: GitOpsOwner | undefined;
  readonly revert: Revert | undefined;
  readonly budget: BudgetUse;
  readonly autoscalers: Pick<Extract<Observation, { result: "observed" }>, "hpas" | "vpas">;
}): Gate {
  const { workload, changes, gitOps, revert, budget } = input;
  const autoscaler = classifyAutoscalers(workload, changes.map((c) => c.container), input.autoscalers.hpas, input.autoscalers.vpas);
  if (autoscaler.result === "conflict") return { action: "skip", reason: autoscaler.reason, message: `not scaled: ${autoscaler.message}` };
  if (gitOps !== undefined && input.gitOpsManaged !== "Patch") {
    return {
      action: "skip",
      reason: "GitOpsManaged",
      held: "GitOpsManaged",
      message: `not scaled: ${workload.kind} ${workload.name} is managed by ${gitOps.tool} (${gitOps.owner}, ${gitOps.signal}) and spec.gitOpsManaged is Skip; set in its manifest: ${manifestValues(changes)}`,
    };
  }
  if (revert !== undefined && budget.exhausted) {
    const oldest = budget.scales.at(-1)?.time;
    return {
      action: "skip",
      reason: "Reverted",
      held: "Reverted",
      message: `not scaled: the memory memory-scaler set on ${workload.kind} ${workload.name} at ${revert.record.time} was lowered (${describeRevert(revert)}) and the revert budget of ${budget.budget} patches per hour is used (${budget.scales.length} since ${oldest ?? "–"}); the workload's managedFields name the writer: set in its source: ${manifestValues(changes)}`,
    };
  }
  return { action: "scale", ...(gitOps === undefined ? {} : { gitOps }), reverted: revert !== undefined };
}
