// The AppMonitor resource: its names (group, kind, annotations, alert names and labels) and its
// types. Validating a spec: `appmonitor-spec.ts`; which AppMonitor governs a workload:
// memory-scaler's `governing.ts`.
import type { LabelSelector } from "./label-selector.ts";

/** API group of AppMonitor (DESIGN.md "Contracts kept from the original demo"). */
export const APPMONITOR_GROUP = "kubedemo.com";
/** API version of AppMonitor. */
export const APPMONITOR_VERSION = "v1";
/** `apiVersion` field value: `kubedemo.com/v1`. */
export const APPMONITOR_API_VERSION = `${APPMONITOR_GROUP}/${APPMONITOR_VERSION}`;
/** Kind of the resource. */
export const APPMONITOR_KIND = "AppMonitor";
/** Plural resource name, as used in API paths and RBAC rules. */
export const APPMONITOR_PLURAL = "appmonitors";

/**
 * Pod template annotation that opts the workload's Pods in when its value is exactly `"true"`
 * (DESIGN.md "Contracts kept from the original demo").
 */
export const MONITOR_ANNOTATION = "app-monitor.kubedemo.com/monitor";

/**
 * Annotation on the workload (Deployment, StatefulSet, …) metadata holding the time of its last
 * scale as an RFC 3339 timestamp; written in the same patch as the new resources and read for
 * `spec.cooldownSeconds` (DESIGN.md "Decisions that matter for correctness").
 */
export const LAST_SCALE_ANNOTATION = "app-monitor.kubedemo.com/last-scale";

/**
 * Annotation on the workload metadata describing its last scale, written in the same
 * compare-and-swap patch as {@link LAST_SCALE_ANNOTATION} and the new resources, so it holds
 * exactly when the scale did: JSON `{time, appmonitor, event, multiplier, changes}`, plus
 * `trigger: "oomKilled"` for a scale an OOM-kill alert caused and `earlier` (`[{time, event}]`,
 * the workload's scales in the hour before, for the revert budget) when there were any. It is the
 * authority the AppMonitor status and the `Scaled` Events are repaired from when writing them
 * failed (`functions/memory-scaler/status/recent-scales.ts`, `repairOf`), by a later event for the workload
 * or by the follow-up tick, which finds the scale in `status.pendingScales`
 * (`functions/memory-scaler/status/pending-scales.ts`).
 */
export const LAST_SCALE_RECORD_ANNOTATION = "app-monitor.kubedemo.com/last-scale-record";

/**
 * Annotation on a workload whose Pods memory-scaler resized in place (`spec.updateMode` `InPlace`
 * or `InPlaceOrRollout`): for each container, the memory its Pod template sets and the memory its
 * Pods get instead, `<container>=<limit>><raised limit>[/<request>><raised request>]` joined by
 * `;` (`memhog=384Mi>768Mi/256Mi>512Mi`). Written in the compare-and-swap patch of the workload's
 * metadata that claims the scale; read by memory-scaler (`functions/memory-scaler/in-place.ts`)
 * and, at every Pod creation, by the MutatingAdmissionPolicy of `knative/admission/` (CEL, hence
 * a format `split` reads, not JSON). A template patch folds it into the template and removes it.
 */
export const IN_PLACE_MEMORY_ANNOTATION = "app-monitor.kubedemo.com/in-place-memory";

/**
 * Label on a workload that carries {@link IN_PLACE_MEMORY_ANNOTATION} (value `"true"`): the
 * MutatingAdmissionPolicyBindings select their parameters by it, so a Pod creation is weighed
 * against those workloads of its namespace only.
 */
export const IN_PLACE_LABEL = "app-monitor.kubedemo.com/in-place";

/** Alert label naming the AppMonitor whose rule fired (DESIGN.md "The API", last paragraph). */
export const APPMONITOR_ALERT_LABEL = "appmonitor";

/**
 * `alertname` of the alert every AppMonitor's generated rule raises; memory-scaler acts on no
 * other (DESIGN.md "Decisions that matter for correctness").
 */
export const APPMONITOR_ALERT_NAME = "AppMonitorMemoryHigh";

/**
 * `alertname` of the second alert every AppMonitor's generated rule group raises: a container of
 * a covered Pod was OOM-killed (DESIGN.md "OOM kills"). It has no `for` delay: a Pod killed
 * faster than the threshold's `for` window never raises {@link APPMONITOR_ALERT_NAME}.
 */
export const APPMONITOR_OOM_ALERT_NAME = "AppMonitorOOMKilled";

/**
 * `alertname` of the early-warning alert an AppMonitor with `spec.trend` adds to its rule group:
 * a covered container's working set is predicted to reach its memory limit within the horizon
 * (DESIGN.md "Decisions that matter for correctness", the early warning).
 */
export const APPMONITOR_TREND_ALERT_NAME = "AppMonitorMemoryTrend";

/**
 * `alertname` of the heap-error alert every AppMonitor's rule group raises: a covered container
 * restarted after an error exit (kube-state-metrics' last terminated reason `Error`), which may be
 * its runtime's own heap running out long before the container's limit (docs/fixed-heaps.md).
 * memory-scaler acts only when the container's termination message shows the runtime's heap error.
 */
export const APPMONITOR_HEAP_ERROR_ALERT_NAME = "AppMonitorHeapError";

/**
 * `alertname` of the heap-threshold alert a rule group raises for each `spec.containerPolicies`
 * entry with `heapMetrics: Watch`: the container's used heap, from its runtime's own metrics, at or
 * above the entry's `heapThresholdPercent` of its heap limit, before the runtime's heap error
 * (docs/fixed-heaps.md, "The heap's own threshold").
 */
export const APPMONITOR_HEAP_THRESHOLD_ALERT_NAME = "AppMonitorHeapThreshold";

/**
 * `spec.trend`: the early-warning trigger (docs/early-warning.md). Present: the rule group also
 * raises {@link APPMONITOR_TREND_ALERT_NAME} when the line fitted to a container's working set over
 * the last `windowSeconds` reaches its limit within `horizonSeconds`, the working set stayed at or
 * above `floorPercent` of the limit over that window, and it did not fall well below the window's
 * high; held for `spec.forSeconds`.
 */
export interface AppMonitorTrend {
  /** Fire when the limit is predicted within this many seconds; integer 1–604800. */
  horizonSeconds: number;
  /** The range the line is fitted over, in seconds; integer 1–86400; default 600. */
  windowSeconds?: number;
  /** The working set's floor over the window, in percent of the limit; 0–100; default 50. */
  floorPercent?: number;
}

/**
 * `spec.updateMode` values: how a scale reaches the workload's Pods (`Rollout`: a template patch,
 * the Pods replaced; `InPlace`: the running Pods resized, the template unchanged;
 * `InPlaceOrRollout`: in place, else the template patch). Default `Rollout`.
 */
export type UpdateMode = "Rollout" | "InPlace" | "InPlaceOrRollout";

/** The workload kinds a `spec.targetRef` can name: those memory-scaler scales (`functions/memory-scaler/model.ts` `WorkloadKind`). */
export const TARGET_REF_KINDS = ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Service"] as const;

/** `spec.targetRef`: a workload of the AppMonitor's namespace, named as the VPA's `targetRef` names one. */
export interface AppMonitorTargetRef {
  /** `apps/v1`; `serving.knative.dev/v1` exactly for kind `Service` (a Knative Service). */
  apiVersion: "apps/v1" | "serving.knative.dev/v1";
  kind: (typeof TARGET_REF_KINDS)[number];
  /** The workload's `metadata.name`. */
  name: string;
}

/** `spec.selectorMode` values: `Widen` (selected or annotated), `Narrow` (selected and annotated). */
export type SelectorMode = "Widen" | "Narrow";

/** `spec.mode` values: `Scale` patches the workload, `DryRun` only records what it would do. */
export type AppMonitorMode = "Scale" | "DryRun";

/**
 * `spec` of an AppMonitor as written by a user (DESIGN.md "The API", AppMonitor table);
 * the JSON Schema is `schemas/appmonitor.schema.json`.
 */
export interface AppMonitorSpec {
  /** Alert when working set ≥ this percent of the memory limit; 0 < x ≤ 100 (percent). */
  memThresholdPercent: number;
  /** Factor applied to memory request and limit; 1 < x ≤ 10. */
  memMultiplier: number;
  /**
   * The one workload covered (as the VPA's `targetRef`), annotated or not; not with `selector`
   * (`functions/memory-scaler/scale/decide/governing.ts` for what it takes precedence over).
   */
  targetRef?: AppMonitorTargetRef;
  /** Pod templates to watch: with `selectorMode` `Widen`, in addition to annotated ones; `Narrow`, only annotated ones it matches. */
  selector?: LabelSelector;
  /** How `selector` combines with the opt-in annotation; default `Widen`; `Narrow` needs a `selector`. */
  selectorMode?: SelectorMode;
  /** Only these containers are scaled; absent: every container with a memory limit. */
  containers?: string[];
  /** Kubernetes quantity (bytes) a limit is never raised above. */
  maxMemory?: string;
  /** The alert rule's `for`, integer ≥ 0 (seconds); default 60. */
  forSeconds?: number;
  /** No second scale of a workload within this many seconds, integer ≥ 0; default 300. */
  cooldownSeconds?: number;
  /** Default `Scale`. */
  mode?: AppMonitorMode;
  /** Default `Rollout` (`functions/memory-scaler/scale/targets/in-place-target.ts` for the others). */
  updateMode?: UpdateMode;
  /**
   * A StatefulSet rollout blocked by a crash-looping Pod of the old revision: `Report` (default)
   * or `DeletePod` (memory-scaler deletes it; `functions/memory-scaler/follow-up/rollout.ts`).
   */
  stuckRollout?: "Report" | "DeletePod";
  /**
   * A workload a GitOps tool manages (`functions/memory-scaler/coexist/gitops.ts`): `Skip` (also when
   * absent) reports the manifest value to change and patches nothing; `Patch` patches and warns
   * that the tool may revert it.
   */
  gitOpsManaged?: "Skip" | "Patch";
  /**
   * A container whose heap a flag fixes at or below its limit (`-Xmx`, `-XX:MaxRAM`,
   * `--max-old-space-size`, `GOMEMLIMIT`; `functions/memory-scaler/scale/decide/fixed-heap.ts`): `Hold`
   * (also when absent) does not raise it and warns naming the flag; `Scale` raises the flag by the
   * limit's factor in the same patch.
   */
  heapFlags?: "Hold" | "Scale";
  /**
   * Once the memory memory-scaler set on a workload was lowered by another writer (a revert), at
   * most this many patches of that workload per hour, integer 0–10; default
   * {@link DEFAULT_REVERT_BUDGET_PER_HOUR} (`functions/memory-scaler/coexist/reverts.ts`).
   */
  revertBudgetPerHour?: number;
  /** The early-warning trigger; absent: none. */
  trend?: AppMonitorTrend;
  /** Per-container limits of scaling (`functions/memory-scaler/caps.ts`); a named entry wins over `*`. */
  containerPolicies?: ContainerPolicy[];
  /** How many scales of one workload within a window before the leak guard stops it (`functions/memory-scaler/scale/decide/leak-guard.ts`). */
  leakGuard?: { maxScales?: number; windowSeconds?: number };
  /** Give memory back after a quiet period (`functions/memory-scaler/scale/decide/scale-down.ts`, docs/scale-down.md); absent: never lowered. */
  scaleDown?: AppMonitorScaleDown;
}

/**
 * `spec.scaleDown`: on the follow-up's ticks, a workload the AppMonitor raised is lowered one step
 * once `quietPeriodSeconds` passed with no scale and no alert of it, and only when its working
 * set's peak over that period stays `marginPercent` points below the threshold at the lower limit.
 */
export interface AppMonitorScaleDown {
  /** Seconds without a scale or an alert before a down-step, and the peak's range; integer 10–2592000 (shorter than two scrape intervals: no peak read, no step); default 86400. */
  quietPeriodSeconds?: number;
  /** Points below `memThresholdPercent` the peak must stay at the lowered limit; 1–50, below the threshold; default 10. */
  marginPercent?: number;
}

/** One entry of `spec.containerPolicies`, named as the VerticalPodAutoscaler's `containerPolicies`. */
export interface ContainerPolicy {
  /** A container name, or `*` for every container no other entry names. */
  containerName: string;
  /** Quantity a limit of this container is never raised above; replaces `spec.maxMemory` for it. */
  maxMemory?: string;
  /** Quantity a limit of this container is never lowered below (at most `maxMemory`). */
  minMemory?: string;
  /** `Off`: never changed; `Auto` (also when absent): scaled. */
  mode?: "Auto" | "Off";
  /** The container's runtime: Node.js, the JVM and .NET size their heap when they start, so every raise rolls out with the heap setting (docs/fixed-heaps.md). */
  runtime?: "Node.js" | "JVM" | "Go" | ".NET";
  /** `Watch`: alert on the heap the runtime's own metrics show against its heap limit (needs `runtime`); `Off` (also when absent): not. */
  heapMetrics?: "Watch" | "Off";
  /** Percent of the heap limit at which `heapMetrics: Watch` alerts, 1–100; absent: `spec.memThresholdPercent`. */
  heapThresholdPercent?: number;
}

/** `spec.revertBudgetPerHour`'s default (the schema's, so the API server writes it): three patches of a reverted workload per hour. */
export const DEFAULT_REVERT_BUDGET_PER_HOUR = 3;

/**
 * An {@link AppMonitorSpec} that passed `validateAppMonitorSpec` (`appmonitor-spec.ts`): valid,
 * with every defaulted field set (`spec.trend`'s too, when it is there).
 */
export type AppMonitorSpecWithDefaults = AppMonitorSpec &
  Required<Pick<AppMonitorSpec, "forSeconds" | "cooldownSeconds" | "mode" | "updateMode" | "selectorMode" | "stuckRollout" | "gitOpsManaged" | "heapFlags" | "revertBudgetPerHour">> & {
    trend?: Required<AppMonitorTrend>;
    scaleDown?: Required<AppMonitorScaleDown>;
  };

/**
 * A status condition, shaped like metav1.Condition.
 * Source: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/ and
 * https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties
 */
export interface AppMonitorCondition {
  /** CamelCase type, e.g. `RuleReady`. */
  type: string;
  status: "True" | "False" | "Unknown";
  /** CamelCase reason for the last transition. */
  reason: string;
  /** Human-readable detail. */
  message: string;
  /** RFC 3339 time the status last changed. */
  lastTransitionTime: string;
  /** `metadata.generation` the condition was set for. */
  observedGeneration?: number;
}

/**
 * `status` with the condition `change.type` set to `change`, the other conditions kept; its
 * `lastTransitionTime` moves (to `now`, RFC 3339) only when its `status` does, as the API
 * conventions ask of a condition (see {@link AppMonitorCondition}).
 */
export function withCondition<S extends AppMonitorStatus>(status: S, change: Omit<AppMonitorCondition, "lastTransitionTime">, now: string): S {
  const conditions = status.conditions ?? [];
  const old = conditions.find((c) => c.type === change.type);
  const condition: AppMonitorCondition = { ...change, lastTransitionTime: old !== undefined && old.status === change.status ? old.lastTransitionTime : now };
  return { ...status, conditions: [...conditions.filter((c) => c.type !== change.type), condition] };
}

/** Memory request and limit of one container, as Kubernetes quantity strings (bytes). */
export interface MemoryResources {
  /** Absent when the container sets no memory request. */
  request?: string;
  limit: string;
}

/** One entry of `status.recentScales` (DESIGN.md "The API", Status). */
export interface ScaleRecord {
  /** RFC 3339 time of the scale. */
  time: string;
  /** The patched workload. */
  workload: { kind: string; name: string };
  /** Id of the CloudEvent that caused the scale (absent in entries of older versions). */
  event?: string;
  /** The container whose resources changed. */
  container: string;
  from: MemoryResources;
  to: MemoryResources;
  /** Not applied, and why: `to` is what a scale would set (`GitOpsManaged`: set it in the manifest; `Reverted`: the revert budget is used). */
  held?: "GitOpsManaged" | "Reverted";
  /** This scale applied again memory another writer had lowered after an earlier scale. */
  reverted?: boolean;
  /** The alert that caused it when not the threshold alert: an OOM kill, the working set's trend (`spec.trend`), a heap error, the heap's own threshold. */
  trigger?: "oomKilled" | "trend" | "heapError" | "heapThreshold";
  /** `down`: a down-step of `spec.scaleDown`; absent (entries of older versions too): a raise. */
  direction?: "up" | "down";
  /** A down-step that reached the workload's floor (its memory before the first scale, or a `minMemory`): no further down-step. */
  floored?: boolean;
}

/** `status` of an AppMonitor (DESIGN.md "The API", Status). */
export interface AppMonitorStatus {
  /** `metadata.generation` last acted on. */
  observedGeneration?: number;
  conditions?: AppMonitorCondition[];
  /** RFC 3339 time of the latest scale by this AppMonitor. */
  lastScaleTime?: string;
  /** Number of scales performed (DryRun decisions excluded). */
  scaleCount?: number;
  /** The last few scales, newest first; bounded by the writer. */
  recentScales?: ScaleRecord[];
}

/** The subset of ObjectMeta this library reads; compatible with @kubernetes/client-node's V1ObjectMeta. */
export interface ObjectMetaLike {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  /** RFC 3339 string from JSON, or a Date from @kubernetes/client-node. */
  creationTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** An AppMonitor object (kubedemo.com/v1, namespaced). */
export interface AppMonitor {
  apiVersion: typeof APPMONITOR_API_VERSION;
  kind: typeof APPMONITOR_KIND;
  metadata: ObjectMetaLike;
  spec: AppMonitorSpec;
  status?: AppMonitorStatus;
}
