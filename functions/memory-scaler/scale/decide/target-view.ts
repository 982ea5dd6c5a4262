/**
 * What planning reads of a write target (`../targets/`): its facts, read once and never changed
 * (`view`), and its own pure rules over them: the OOM kill's window, what its last scale leaves,
 * and the decision told its way. Pure; the targets implement it, the flow hands it to
 * {@link planFiring} (`plan.ts`), which never sees how a target writes.
 */
import type { Autoscalers } from "../../coexist/autoscalers.ts";
import type { GitOpsOwner } from "../../coexist/gitops.ts";
import type { BudgetUse, Revert } from "../../coexist/reverts.ts";
import type { Reported } from "../../events.ts";
import type { StatusChange } from "../../kube/status-writer.ts";
import type { ContainerChange, ContainerMemory, ObjectRef, ScaleMark, ScaleRecordAnnotation } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import type { Decision } from "./decide.ts";
import type { TemplateOwner, ValidAppMonitor } from "./governing.ts";
import type { ContainerHeap } from "./heap-flags.ts";

/** What the target's last scale by the governing AppMonitor leaves for this alert. */
export interface History {
  /**
   * The last scale to make sure of (`../../status/repair.ts` `repairOf`): its `Scaled` Events as they were
   * written then (deterministic names: a no-op once written), and the status change that lists it
   * when `status.recentScales` does not (`time`: the scale's). Undefined when there is nothing to
   * repair, or the target keeps no last-scale record (a bare Pod).
   */
  readonly repair: { readonly reported: Reported; readonly status: StatusChange | undefined; readonly time: string } | undefined;
  /** Its revert, when something lowered the memory it set (`../../coexist/reverts.ts`). */
  readonly revert: Revert | undefined;
  /** memory-scaler's scales of the target in the last hour, against `spec.revertBudgetPerHour`. */
  readonly budget: BudgetUse;
  /**
   * Its scales within the leak guard's window or the hour, whichever is longer, newest first
   * (`../../coexist/reverts.ts` `scaleMarks`): what the leak guard counts and the next last-scale
   * record keeps as `earlier`.
   */
  readonly marks: readonly ScaleMark[];
}

/** A target's facts, as read: what it is, the memory asked for and running, its last scale, its heaps, who else manages it. */
export interface TargetView {
  /** The object written, as the outcome, the status entries and `status.capped` name it. */
  readonly workload: { readonly kind: string; readonly name: string };
  /** What its Events regard. */
  readonly ref: ObjectRef;
  /** What an AppMonitor must cover to govern it (`governing.ts`): a workload's Pod template, a bare Pod's own metadata. */
  readonly owner: TemplateOwner;
  /** The memory asked for (the decision's `templateContainers`): the template, or the bare Pod's spec. */
  readonly desired: readonly ContainerMemory[];
  /** The memory the alert measured against (the decision's `podContainers`): the alerting Pod's spec, or what the bare Pod's containers run with. */
  readonly running: readonly ContainerMemory[];
  /** The last scale's time, RFC 3339: the cooldown's clock; undefined when never scaled. */
  readonly lastScaleTime: string | undefined;
  /** The workload's last-scale record, parsed (`../../model.ts`): what a down-step steps back from; undefined for none (a bare Pod keeps none). */
  readonly lastRecord: ScaleRecordAnnotation | undefined;
  /**
   * The memory its in-place record holds beyond its Pod template, as changes of the template
   * (`../../in-place.ts` `recordedChanges`): what a fallback to the template patch writes. Empty
   * when there is none (and for a bare Pod).
   */
  readonly recorded: readonly ContainerChange[];
  /** Each container's heap flags, from its command, args and env (`heap-flags.ts`): what `fixed-heap.ts` holds a raise by. */
  readonly heaps: readonly ContainerHeap[];
  /** Whether its write can raise a heap flag with the limit (`spec.heapFlags: Scale`): a Pod template can, a running Pod cannot. */
  readonly rewritesHeaps: boolean;
  /** The GitOps tool that applies it, if any (`coexist/gitops.ts`). */
  readonly gitOps: GitOpsOwner | undefined;
  readonly autoscalers: Autoscalers;
}

/** What planning reads of a target (module comment). */
export interface PlannedTarget {
  readonly view: TargetView;
  /** Seconds back from `now` within which an OOM kill is evidence (`evidence.ts` `checkOOMKilled`). */
  oomWindowSeconds(now: Date): number;
  /** What its last scale by `appMonitor` leaves (pure). */
  history(appMonitor: ValidAppMonitor, now: Date, statusLimit: number): History;
  /** `decideScale`'s decision as this target tells it (pure): e.g. an OnDelete workload's or a resize's skip said its own way. */
  refine(decision: Decision, appMonitor: ValidAppMonitor, alert: { readonly pod: string; readonly container?: string | undefined }): Skip | Scale;
}
