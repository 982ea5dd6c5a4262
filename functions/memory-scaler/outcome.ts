/**
 * What one firing alert came to: the outcome memory-scaler logs, counts and answers with
 * (`handler.ts`: 204 with `X-Appmonitor-Outcome` and `X-Appmonitor-Reason`). Its steps are
 * `scale/flow.ts`'s; which reasons write Events is `events.ts`'s table.
 */
import type { ProbableLeak } from "./status/leaks.ts";
import type { AlertTrigger } from "../lib/alert-event.ts";
import type { ContainerChange, SkippedContainer } from "./model.ts";
import type { HeapError } from "./model.ts";

/**
 * Why the flow ended as it did; CamelCase, also used as Event reasons and metric labels (the
 * README's "Skip reasons" table lists each with its Warning Events). Besides `decideScale`'s
 * {@link SkipReason}s and the governing ones ({@link NoneGoverns}):
 * - `PodGone`, `UnsupportedOwner`, `OwnerGone`: no workload to scale (step 1–2);
 * - `UnknownController`: the workload (a Deployment, StatefulSet, DaemonSet, ReplicaSet) has a
 *   controller the owner walk does not know (a Knative Revision, an operator's resource), which
 *   would put a patched template back: never patched, Warning Events naming that controller as
 *   the object to change instead (step 2, `scale/decide/owner-chain.ts`);
 * - `BelowThreshold`, `NotMeasured`: Prometheus does not confirm the alert (step 5);
 * - `NotOOMKilled`: an OOM-kill event whose containers the Pod does not show OOM-killed
 *   recently (step 5, `scale/decide/evidence.ts` `checkOOMKilled`);
 * - `NotTrending`: a trend event whose containers Prometheus no longer predicts at their limit
 *   within the AppMonitor's horizon, or whose AppMonitor no longer sets `spec.trend` (step 5,
 *   `scale/decide/evidence.ts` `checkTrend`);
 * - `NotHeapError`, `NoTerminationMessage`: a heap-error event whose containers' last run did not
 *   end in their runtime's heap error, or left no termination message to tell (step 5,
 *   `scale/decide/heap-error.ts`); `HeapNeedsRollout`: it did, and the Pod is bare
 *   (no template to roll out), so a resize in place cannot reach a heap sized at start: Warning Events;
 * - `FixedHeap`: a flag in the container's command, args or env fixes its heap at or below the
 *   limit (`-Xmx`, `-XX:MaxRAM`, `--max-old-space-size`, `GOMEMLIMIT`: `scale/decide/fixed-heap.ts`), so
 *   a raise would not reach it, and `spec.heapFlags` is `Hold` (or the target cannot write the
 *   flag: a resize in place): Warning Events naming the flag and its value (step 2);
 * - `AdmissionRefused`: the dry run of the patch or of the scaled Pod was refused (step 7);
 * - `Unschedulable`: the scaled Pod would request more memory than any Node's
 *   `status.allocatable.memory` (`scale/decide/capacity.ts` `decideFit`): no patch, Warning Events (step 7);
 * - `RolloutExceedsQuota`: the rollout's peak (all new Pods, and a Deployment's `maxSurge` old
 *   ones beside them) would pass a ResourceQuota's `requests.memory` or `limits.memory`
 *   (`scale/decide/capacity.ts` `decideQuota`): no patch, Warning Events (step 7);
 * - `RolloutWaitsForDelete`: a StatefulSet or DaemonSet with `updateStrategy: OnDelete` whose
 *   alerting Pod still runs less memory than the template (a `Cooldown` or `RolloutUnderWay`
 *   skip otherwise): it gets the new memory only when deleted (`scale/decide/capacity.ts` `waitingForDelete`);
 *   also any alert of such a workload while the rollout of its last scale is pending in the
 *   AppMonitor's `status.rollouts` (Pods still on the old revision): no scale on top of one that
 *   has not reached its Pods.
 *   After the patch of such a workload the outcome stays `Scaled`, with a `RolloutWaitsForDelete`
 *   Warning Event on the workload and the AppMonitor saying to delete the Pods;
 * - `HPAOnMemory`, `VPAControlled`: a HorizontalPodAutoscaler scales the workload on memory, or a
 *   VerticalPodAutoscaler not `Off` sets its Pods' resources (`coexist/autoscalers.ts`): Warning Events;
 * - `GitOpsManaged`: a GitOps tool manages the workload and `spec.gitOpsManaged` is `Skip`
 *   (`coexist/gitops.ts`): Warning Events and a held `recentScales` entry naming the manifest values;
 * - `Reverted`: something lowered the memory memory-scaler set, and the revert budget
 *   (`spec.revertBudgetPerHour` patches of the workload per hour, `coexist/reverts.ts`) is used: a held
 *   `recentScales` entry (the revert's Warning Events are written once, when it is first seen);
 * - `Scaled`, `DryRun`: patched, or would have been;
 * - `ScaledDown`: a down-step of `spec.scaleDown` lowered the workload's memory (`scale/decide/scale-down.ts`);
 *   its refusals: `PeakNearThreshold` (the peak over the quiet period would be too near the threshold
 *   at the lower limit), `AtFloor` (at the memory before the first scale or `minMemory`), `QuietPeriod`
 *   (scaled or alerted within it), `NotRaised` (no last-scale record of the AppMonitor), `ScaleDownOff`;
 * - `Resized`: a bare Pod (no controller) resized in place through its `resize` subresource
 *   (`scale/targets/pod-resize-target.ts`); `ResizeUnderWay`: its spec already asks for more memory than its
 *   containers run with (the kubelet has not applied the last resize, or cannot).
 */
export type OutcomeReason = (typeof OUTCOME_REASONS)[number];

/** What happened to one firing alert: logged in full; `outcome` and `reason` also answer the sender (`handler.ts`). */
export interface Outcome {
  /** `scaled`: the workload was patched (a bare Pod resized in place); `dry-run`: it would have been; `skipped`: nothing to do. */
  readonly outcome: "scaled" | "dry-run" | "skipped";
  readonly reason: OutcomeReason;
  readonly message: string;
  /** `<namespace>/<pod>` from the event. */
  readonly pod: string;
  /** Which of the AppMonitor's alerts it answered, once it is one of theirs (`NotAppMonitorAlert` has none). */
  readonly trigger?: AlertTrigger;
  /** Name of the governing AppMonitor, once known. */
  readonly appmonitor?: string;
  readonly workload?: { readonly kind: string; readonly name: string };
  /** For `scaled` and `dry-run`: each container's memory before and after. */
  readonly changes?: readonly ContainerChange[];
  readonly skipped?: readonly SkippedContainer[];
  /** Follow-up writes (Events, status) that failed after the outcome was reached. */
  readonly warnings?: readonly string[];
  /**
   * Set when the workload's last scale was found reverted: `Repatched` when this event patched it
   * again, `Held` when the revert budget stopped it (`appmonitor_memory_scaler_reverts_total`).
   */
  readonly revert?: "Repatched" | "Held";
  /** Rounds of read–decide–write (more than 1 after a lost compare-and-swap; 0 for `NotAppMonitorAlert`, decided before any read). */
  readonly attempts: number;
}

/** Not to scale, and why; `skipped` lists the containers left out on the way. */
export interface Skip {
  readonly action: "skip";
  readonly reason: OutcomeReason;
  readonly message: string;
  readonly skipped?: readonly SkippedContainer[];
  /** `ProbableLeak`: the leak guard's entry (`scale/decide/leak-guard.ts`), for the status, the Warning and the alert. */
  readonly leak?: ProbableLeak;
}

/** To scale (or, `dryRun`, to say what a scale would do): each container's memory before and after. */
export interface Scale {
  readonly action: "scale";
  readonly changes: readonly ContainerChange[];
  readonly skipped: readonly SkippedContainer[];
  readonly dryRun: boolean;
  /**
   * Containers scaled whose last run ended in an in-process heap failure (exit code 134, reason
   * `Error`) with no heap flag that fixes their heap read (`scale/decide/fixed-heap.ts`): a `HeapFailure`
   * Warning says the raise may not reach the heap. Absent: none.
   */
  readonly heapFailed?: readonly string[];
  /**
   * The heap errors a heap-error alert's check confirmed (`scale/decide/heap-error.ts`): the write
   * sets the heap with the limit where the runtime needs it (`scale/decide/heap-settings.ts`).
   */
  readonly heapErrors?: readonly HeapError[];
  /** `down`: a down-step of `spec.scaleDown` (`scale/decide/scale-down.ts`); absent: a raise. */
  readonly direction?: "down";
  /** A down-step whose every container reaches its floor: its `recentScales` entries say `floored`. */
  readonly floored?: boolean;
  /** The caps and the install's ceilings that held this raise (`scale/decide/decide.ts`); the Events and the outcome say them. Absent: none. */
  readonly bounds?: readonly ScaleBound[];
  /** Why the cooldown did not hold this raise: a new crossing of the raised limit (`scale/decide/decide.ts` rule 1); the Events and the outcome end with it. Absent: no cooldown ran. */
  readonly newCrossing?: string;
}

/** A bound that held a raise: of one container (its cap), or of the whole scale (the multiplier's ceiling). */
export interface ScaleBound {
  readonly container?: string;
  /** `app capped by the install's ceiling MAX_MEMORY 4Gi (over spec.maxMemory 16Gi)`. */
  readonly message: string;
}

/**
 * Why nothing (or not a given container) is scaled. CamelCase so it can serve directly as a
 * Kubernetes Event `reason`.
 * - `Cooldown`: the workload was scaled less than `spec.cooldownSeconds` ago, and the alert is no
 *   new crossing of the raised limit (a threshold or trend alert that began after that scale).
 * - `ContainerNotSelected`: the alert's container is not in `spec.containers`.
 * - `NoTargetContainer`: no container is left to consider (e.g. `spec.containers` names none of the template's).
 * - `ContainerNotFound`: the container is in neither the containers nor the init containers of
 *   the workload's Pod template.
 * - `InitContainer`: the container is an init container (not a native sidecar): it runs to
 *   completion before the app's containers start, and is never scaled.
 * - `NoMemoryLimit`: neither the template nor the alerting Pod sets a memory limit for the container.
 * - `LimitNotInTemplate`: the alerting Pod has a memory limit the template does not set (a
 *   LimitRange default or an admission webhook put it there): there is no limit in the
 *   template to raise; the caller emits a Warning Event saying to set it there.
 * - `InvalidResources`: the template's limit is not positive, or its request exceeds its limit.
 * - `TemplateDiffers`: the alerting Pod does not run the template's values (missing container or
 *   limit, the container of another kind, or a lower template limit): the alert says nothing
 *   about the current template.
 * - `RolloutUnderWay`: the template already gives the container a larger limit than the Pod has.
 * - `AtCap`: the limit is already at its cap (`caps.ts`: a container policy's `maxMemory`,
 *   `spec.maxMemory` or the install's `DEFAULT_MAX_MEMORY`); the caller emits a Warning Event.
 * - `PolicyOff`: the container's `spec.containerPolicies` entry says `mode: Off`.
 * - `ProbableLeak`: the leak guard holds the workload (`scale/decide/leak-guard.ts`).
 */
export const SKIP_REASONS = ["Cooldown", "ContainerNotSelected", "NoTargetContainer", "ContainerNotFound", "InitContainer", "NoMemoryLimit", "LimitNotInTemplate", "InvalidResources", "TemplateDiffers", "RolloutUnderWay", "AtCap", "PolicyOff", "ProbableLeak"] as const;
/** One of {@link SKIP_REASONS}. */
export type SkipReason = (typeof SKIP_REASONS)[number];

/**
 * Why no AppMonitor governs:
 * - `NotAppMonitorAlert`: the alert was not raised by an AppMonitor's rule ({@link alertOrigin});
 * - `NoAppMonitor`: the AppMonitor the alert names is not in the namespace, or its spec is invalid;
 * - `NotCovered`: no AppMonitor covers the workload's Pod template;
 * - `AppMonitorNotGoverning`: the named AppMonitor does not cover the template, another one does
 *   (that one's own alerts may scale it);
 * - `AppMonitorConflict`: the named AppMonitor covers the template, and another one that covers it
 *   takes precedence (`scale/decide/governing.ts` `byPrecedence`): only that one's alerts scale it;
 * - `NamespaceNotWatched`: the alert's namespace is outside `WATCH_NAMESPACES` (a scoped install).
 */
export const NONE_GOVERNS_REASONS = ["NotAppMonitorAlert", "NoAppMonitor", "NotCovered", "AppMonitorNotGoverning", "AppMonitorConflict", "NamespaceNotWatched"] as const;
/** Why no AppMonitor governs ({@link NONE_GOVERNS_REASONS}). */
export interface NoneGoverns {
  readonly result: "none";
  readonly reason: (typeof NONE_GOVERNS_REASONS)[number];
  readonly message: string;
}

/** Every {@link OutcomeReason}, for what lists them (the README's tables are tested against it). */
export const OUTCOME_REASONS = [
  ...SKIP_REASONS,
  ...NONE_GOVERNS_REASONS,
  "PodGone", "UnsupportedOwner", "UnknownController", "OwnerGone", "BelowThreshold", "NotMeasured", "NotOOMKilled", "NotTrending",
  "NotHeapError", "NoTerminationMessage", "HeapNeedsRollout",
  "FixedHeap", "AdmissionRefused", "Unschedulable", "RolloutExceedsQuota", "RolloutWaitsForDelete",
  "HPAOnMemory", "VPAControlled", "GitOpsManaged", "Reverted",
  "Scaled", "DryRun", "Resized", "ResizeUnderWay",
  "ScaledDown", "PeakNearThreshold", "AtFloor", "QuietPeriod", "NotRaised", "ScaleDownOff",
] as const;
