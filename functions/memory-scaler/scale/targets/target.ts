/**
 * What a scale writes to: the one interface behind which a workload's Pod template patch
 * (`template-target.ts`), the in-place resize of a workload's running Pods (`in-place-target.ts`)
 * and a bare Pod's resize (`pod-resize-target.ts`) differ, so the flow (`flow.ts`) runs observe →
 * plan → act → report once for all three.
 *
 * A target is a read-only view and a writer:
 * - what the decision reads (`../decide/target-view.ts`, pure): the memory asked for and the
 *   memory running, the last scale's time (the cooldown's clock), who else may set its memory;
 *   and its own rules: the window in which an OOM kill is evidence, what its last scale left (a
 *   repair, a revert, the revert budget), the decision told its way;
 * - its writer: one compare-and-swap request, a lost race a result (`conflict`), a refusal a
 *   result with the API server's message; and what follows the write: the Events that say so, the
 *   outcome's message, and what the follow-up tick watches to its end (a rollout, a resize).
 */
import type { Logger } from "pino";
import type { AlertTrigger } from "../../../lib/alert-event.ts";
import type { GitOpsOwner } from "../../coexist/gitops.ts";
import type { Reported } from "../../events.ts";
import type { Cluster } from "../../kube/cluster.ts";
import type { AppMonitorRef, StatusWriter } from "../../kube/status-writer.ts";
import type { ContainerChange } from "../../model.ts";
import type { PendingRollout } from "../../status/rollouts.ts";
import type { ValidAppMonitor } from "../decide/governing.ts";
import type { HeapError } from "../../model.ts";
import type { History, PlannedTarget } from "../decide/target-view.ts";

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
  /** The heap errors the alert's check confirmed: a template write sets the heap with the limit (`../decide/heap-settings.ts`). */
  readonly heapErrors?: readonly HeapError[];
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

/**
 * One kind of object a scale writes to (module comment): what planning reads of it
 * ({@link PlannedTarget}: its view and its rules) and its writer.
 */
export interface WriteTarget extends PlannedTarget {
  readonly writer: TargetWriter;
}

/** How a target writes, and what a written scale of it reports. */
export interface TargetWriter {
  /** Verb of the 503 after `maxAttempts` lost races: `scale`, `resize`. */
  readonly verb: string;
  /** The outcome message of a `DryRun`, before the changes: `would scale`, `would resize in place`. */
  readonly wouldDo: string;
  /** Reason of a written scale's outcome: `Scaled`, `Resized`. */
  readonly scaledReason: "Scaled" | "Resized";
  /** Writes the scale once, as a compare-and-swap (with `input.dryRun`, only its checks). @throws HttpError on an unexpected API failure, before anything was written. */
  write(input: WriteInput): Promise<WriteResult>;
  /** What a written scale reports (pure). */
  written(input: WrittenInput): Written;
}

/** What {@link TargetWriter.written} reports from: the scale, and what its write returned. */
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
  /** As {@link WriteInput.heapErrors}: the `Scaled` note names the heap settings written. */
  readonly heapErrors?: readonly HeapError[] | undefined;
}
