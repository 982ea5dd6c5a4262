/**
 * What a scale writes to: the one interface behind which a workload's Pod template patch
 * (`template-target.ts`), the in-place resize of a workload's running Pods (`in-place-target.ts`)
 * and a bare Pod's resize (`pod-resize-target.ts`) differ, so the flow (`flow.ts`) runs observe →
 * plan → act → report once for all three.
 *
 * A target says three things:
 * - what the decision reads: the memory asked for and the memory running, the last scale's time
 *   (the cooldown's clock), the window in which an OOM kill is evidence, what its last scale left
 *   (a repair, a revert, the revert budget), who else may set its memory;
 * - how it writes: one compare-and-swap request, a lost race a result (`conflict`), a refusal a
 *   result with the API server's message;
 * - what follows the write: the Events that say so, the outcome's message, and what the
 *   follow-up tick watches to its end (a rollout, a resize).
 */
import type { Logger } from "pino";
import type { AlertTrigger } from "../../../lib/alert-event.ts";
import type { Autoscalers } from "../../coexist/autoscalers.ts";
import type { GitOpsOwner } from "../../coexist/gitops.ts";
import type { BudgetUse, Revert } from "../../coexist/reverts.ts";
import type { Reported } from "../../events.ts";
import type { Cluster } from "../../kube/cluster.ts";
import type { AppMonitorRef, StatusChange, StatusWriter } from "../../kube/status-writer.ts";
import type { ContainerChange, ContainerMemory, ObjectRef, ScaleMark, ScaleRecordAnnotation } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import type { PendingRollout } from "../../status/rollouts.ts";
import type { Decision } from "../decide/decide.ts";
import type { TemplateOwner, ValidAppMonitor } from "../decide/governing.ts";
import type { ContainerHeap } from "../decide/heap-flags.ts";

/** What the target's last scale by the governing AppMonitor leaves for this alert. */
export interface History {
  /**
   * The last scale to make sure of (`status/repair.ts` `repairOf`): its `Scaled` Events as they were
   * written then (deterministic names: a no-op once written), and the status change that lists it
   * when `status.recentScales` does not (`time`: the scale's). Undefined when there is nothing to
   * repair, or the target keeps no last-scale record (a bare Pod).
   */
  readonly repair: { readonly reported: Reported; readonly status: StatusChange | undefined; readonly time: string } | undefined;
  /** Its revert, when something lowered the memory it set (`coexist/reverts.ts`). */
  readonly revert: Revert | undefined;
  /** memory-scaler's scales of the target in the last hour, against `spec.revertBudgetPerHour`. */
  readonly budget: BudgetUse;
  /**
   * Its scales within the leak guard's window or the hour, whichever is longer, newest first
   * (`coexist/reverts.ts` `scaleMarks`): what the leak guard counts and the next last-scale
   * record keeps as `earlier`.
   */
  readonly marks: readonly ScaleMark[];
}

/** What a write needs beyond the target: the adapters, the scale and whose it is. */
export interface WriteInput {
  /** The API server (`../kube/cluster.ts`) and the AppMonitor status writer: the adapters a write uses. */
  readonly cluster: Cluster;
  readonly status: StatusWriter;
  /** The CloudEvent's id: the key of the status entries and the last-scale record. */
  readonly eventId: string;
  readonly appMonitor: ValidAppMonitor;
  readonly amRef: AppMonitorRef;
  readonly changes: readonly ContainerChange[];
  readonly trigger: AlertTrigger;
  readonly history: History;
  readonly now: Date;
  /** `now` as RFC 3339 (whole seconds): the scale's time in every record of it. */
  readonly time: string;
  readonly log: Logger;
  /**
   * A dry run (`spec.mode: DryRun`, or `PAUSE_SCALING`): every check the write makes runs — the
   * API server's dry runs (`dryRun=All`), the quota, the Node fit — and nothing is written.
   */
  readonly dryRun: boolean;
  /** Hears a problem that does not stop the write (a Node or quota list that failed); it lands in the outcome's `warnings`. */
  readonly warn: (message: string) => void;
  /** `down`: a down-step of `spec.scaleDown` (`../decide/scale-down.ts`): the last-scale record says so; absent: a raise. */
  readonly direction?: "down";
}

/** How a write ended. Only an unexpected API failure throws (HttpError by class, nothing written). */
export type WriteResult =
  /**
   * Written once; `generation` is what the object has now (the follow-up's mark); `statusFrom` the
   * AppMonitor object the status write starts from (undefined: the status writer's last answer, or
   * a fresh read); `resized` the workload's Pods resized in place and their new generations;
   * `fallback` why `InPlaceOrRollout` wrote the template instead.
   */
  | {
      readonly result: "written";
      readonly generation: number | undefined;
      readonly statusFrom: Record<string, unknown> | undefined;
      readonly resized?: readonly ResizedPod[];
      readonly fallback?: string;
    }
  /** A dry run: every check passed, so the write would have been made; nothing was written. */
  | { readonly result: "checked" }
  /** A `test` operation failed: the object changed since it was read; read again. */
  | { readonly result: "conflict"; readonly message: string }
  /** Not written, and why (the API server's message, or the check's). */
  | { readonly result: "refused"; readonly reason: "AdmissionRefused" | "RolloutExceedsQuota" | "Unschedulable"; readonly message: string };

/** A Pod resized in place, and the `metadata.generation` its resize gave it (the follow-up's mark). */
export interface ResizedPod {
  readonly name: string;
  readonly generation: number;
}

/** What a written scale reports: its Events, the outcome's message, and what the follow-up watches. */
export interface Written {
  /** The outcome's reason when not the target's `scaledReason`: `Scaled` for an in-place target that wrote the template instead, `ScaledDown` for a down-step. */
  readonly reason?: "Scaled" | "Resized" | "ScaledDown";
  readonly reported: readonly Reported[];
  readonly message: string;
  /** The rollout or resize pending in `status.rollouts`; undefined when nothing replaces a Pod (a bare ReplicaSet) or no generation came back. */
  readonly rollout: PendingRollout | undefined;
}

/** One kind of object a scale writes to (module comment). */
export interface WriteTarget {
  /** The object written, as the outcome, the status entries and `status.capped` name it. */
  readonly workload: { readonly kind: string; readonly name: string };
  /** What its Events regard. */
  readonly ref: ObjectRef;
  /** What an AppMonitor must cover to govern it (`../decide/governing.ts`): a workload's Pod template, a bare Pod's own metadata. */
  readonly owner: TemplateOwner;
  /** The memory asked for (the decision's `templateContainers`): the template, or the bare Pod's spec. */
  readonly desired: readonly ContainerMemory[];
  /** The memory the alert measured against (the decision's `podContainers`): the alerting Pod's spec, or what the bare Pod's containers run with. */
  readonly running: readonly ContainerMemory[];
  /** The last scale's time, RFC 3339: the cooldown's clock; undefined when never scaled. */
  readonly lastScaleTime: string | undefined;
  /** The workload's last-scale record, parsed (`../model.ts`): what a down-step steps back from; undefined for none (a bare Pod keeps none). */
  readonly lastRecord: ScaleRecordAnnotation | undefined;
  /** The GitOps tool that applies it, if any (`coexist/gitops.ts`). */
  readonly gitOps: GitOpsOwner | undefined;
  readonly autoscalers: Autoscalers;
  /** Verb of the 503 after `maxAttempts` lost races: `scale`, `resize`. */
  readonly verb: string;
  /** The outcome message of a `DryRun`, before the changes: `would scale`, `would resize in place`. */
  readonly wouldDo: string;
  /** Reason of a written scale's outcome: `Scaled`, `Resized`. */
  readonly scaledReason: "Scaled" | "Resized";
  /**
   * The memory its in-place record holds beyond its Pod template, as changes of the template
   * (`../in-place.ts` `recordedChanges`): what a fallback to the template patch writes. Empty
   * when there is none (and for a bare Pod).
   */
  readonly recorded: readonly ContainerChange[];
  /** Each container's heap flags, from its command, args and env (`../decide/heap-flags.ts`): what `../decide/fixed-heap.ts` holds a raise by. */
  readonly heaps: readonly ContainerHeap[];
  /** Whether its write can raise a heap flag with the limit (`spec.heapFlags: Scale`): a Pod template can, a running Pod cannot. */
  readonly rewritesHeaps: boolean;
  /** Seconds back from `now` within which an OOM kill is evidence (`../decide/evidence.ts` `checkOOMKilled`). */
  oomWindowSeconds(now: Date): number;
  /** What its last scale by `appMonitor` leaves (pure). */
  history(appMonitor: ValidAppMonitor, now: Date, statusLimit: number): History;
  /** `decideScale`'s decision as this target tells it (pure): e.g. an OnDelete workload's or a resize's skip said its own way. */
  refine(decision: Decision, appMonitor: ValidAppMonitor, alert: { readonly pod: string; readonly container?: string | undefined }): Skip | Scale;
  /** Writes the scale once, as a compare-and-swap (with `input.dryRun`, only its checks). @throws HttpError on an unexpected API failure, before anything was written. */
  write(input: WriteInput): Promise<WriteResult>;
  /** What a written scale reports (pure). */
  written(input: WrittenInput): Written;
}

/** What {@link WriteTarget.written} reports from: the scale, and what its write returned. */
export interface WrittenInput {
  readonly changes: readonly ContainerChange[];
  readonly appMonitor: ValidAppMonitor;
  readonly trigger: AlertTrigger;
  /** Under `spec.gitOpsManaged: Patch`: the GitOps tool to warn about (`coexist/gate.ts`). */
  readonly gitOps: GitOpsOwner | undefined;
  readonly generation: number | undefined;
  readonly time: string;
  readonly eventId: string;
  readonly alertPod: string;
  /** The Pods resized in place (`WriteResult`). */
  readonly resized?: readonly ResizedPod[] | undefined;
  /** Why the template was written instead of the Pods resized in place (`WriteResult`), for its `InPlaceFallback` Warnings. */
  readonly fallback?: string | undefined;
  /** `down`: a down-step: its Events say `ScaledDown`. */
  readonly direction?: "down" | undefined;
}
