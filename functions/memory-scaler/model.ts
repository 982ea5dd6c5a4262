/**
 * The shapes every step of memory-scaler shares, and nothing that does I/O: a container's memory
 * and its change, a container left out, the workload, object references (one builder), the field
 * manager, the JSON Patch operation, and the workload's last-scale record (the annotation written
 * in the scale's compare-and-swap patch, which the repair, the revert check and the follow-up read).
 */
import type * as k8s from "@kubernetes/client-node";
import type { MemoryResources, ScaleRecord } from "../lib/appmonitor.ts";

/** Field manager recorded in `managedFields` for memory-scaler's writes. */
export const FIELD_MANAGER = "appmonitor-memory-scaler";

/**
 * The workload kinds memory-scaler scales, all with the Pod template at `spec.template`: the four
 * of `apps/v1`, and the Knative Service (`serving.knative.dev/v1`, whose `spec.template` is a
 * Revision template: a Pod spec and Serving's own fields), named `Service` in memory-scaler's
 * status and Events, where no core Service is ever meant.
 */
export type WorkloadKind = "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Service";

/** What memory-scaler reads of any of the workload kinds. */
export interface WorkloadObject {
  metadata?: k8s.V1ObjectMeta;
  spec?: {
    template?: k8s.V1PodTemplateSpec;
    /** StatefulSet and DaemonSet: `OnDelete` means a template change reaches a Pod only when it is deleted. */
    updateStrategy?: { type?: string; rollingUpdate?: { partition?: number; maxUnavailable?: number | string } };
    /** Deployment: how it replaces Pods (`maxSurge` bounds the extra Pods of a rollout). */
    strategy?: { type?: string; rollingUpdate?: { maxSurge?: number | string } };
    /** Deployment, ReplicaSet, StatefulSet. */
    replicas?: number;
    /** The Pods it owns. */
    selector?: k8s.V1LabelSelector;
    /** Knative Service: which Revisions get traffic; absent means all of it to the latest Ready one. */
    traffic?: KnativeTrafficTarget[];
  };
  /**
   * What its controller reports (Deployment, StatefulSet and DaemonSet fields; `follow-up/rollout.ts`
   * reads them). StatefulSet: `updateRevision` is the ControllerRevision the current template
   * makes (Pods carry theirs in the `controller-revision-hash` label).
   */
  status?: {
    observedGeneration?: number;
    updateRevision?: string;
    currentRevision?: string;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    /** Knative Service: the Revision its current template made, and the newest Ready one. */
    latestCreatedRevisionName?: string;
    latestReadyRevisionName?: string;
  };
}

/**
 * A Knative Revision or Configuration as memory-scaler reads it: its controller reference (the
 * owner walk), and a Revision's `Ready` condition (the follow-up of a Service's rollout).
 */
export interface KnativeObject {
  metadata?: k8s.V1ObjectMeta;
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** A Knative Service's `spec.traffic[]` entry (https://knative.dev/docs/serving/traffic-management/). */
export interface KnativeTrafficTarget {
  revisionName?: string;
  /** True: this share follows the latest Ready Revision, so a new one serves it once Ready. */
  latestRevision?: boolean;
  percent?: number;
  tag?: string;
}

/**
 * Where a Pod spec declares a container, and so how long it runs
 * (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/):
 * - `container`: in `containers`, for the Pod's life;
 * - `sidecar`: in `initContainers` with `restartPolicy: Always`, a native sidecar: started
 *   before the containers and running beside them for the Pod's life;
 * - `init`: any other entry of `initContainers`, which runs to completion before the
 *   containers start.
 */
export type ContainerKind = "container" | "sidecar" | "init";

/** A container's memory as Kubernetes quantity strings (bytes); absent when not set. */
export interface ContainerMemory {
  name: string;
  /** `resources.requests.memory` */
  request?: string;
  /** `resources.limits.memory` */
  limit?: string;
  /** Absent: `container`. */
  kind?: ContainerKind;
}

/** The kind of `container`, `container` when unset. */
export function kindOf(container: ContainerMemory): ContainerKind {
  return container.kind ?? "container";
}

/** The Pod spec list that holds `container`: `containers`, or `initContainers` for sidecars and init containers. */
export function listOf(container: ContainerMemory): "containers" | "initContainers" {
  return kindOf(container) === "container" ? "containers" : "initContainers";
}

/** One container's new memory: `from` as written in the template, `to` formatted in binary SI. */
export interface ContainerChange {
  container: string;
  from: MemoryResources;
  /** `to.request` is absent exactly when `from.request` is (the Pod's request then defaults to its limit). */
  to: MemoryResources;
}

/**
 * A container left unchanged, and why: the one shape of every step that leaves one out (the
 * decision, `scale/decide/decide.ts`; the OOM-kill, threshold and trend checks, `scale/decide/evidence.ts`) and of the
 * outcome's `skipped` list. `R` narrows the reasons a step can give.
 */
export interface SkippedContainer<R extends string = string> {
  readonly container: string;
  /** CamelCase, a reason word: `AtCap`, `NotOOMKilled`, `BelowThreshold`, … */
  readonly reason: R;
  /** Human-readable, for logs and Events. */
  readonly message: string;
  /** Percent of the Pod's memory limit in use, when the threshold check measured it. */
  readonly percent?: number;
  /** `AtCap`: the cap the limit is at, and where it comes from (`caps.ts`). */
  readonly cap?: { readonly maxMemory: string; readonly source: "containerPolicy" | "spec" | "default" | "ceiling" };
}

/** `apiVersion` of the workload kinds memory-scaler scales but the Knative Service. */
export const APPS_V1 = "apps/v1";

/** `apiVersion` of Knative Serving's Service, Configuration and Revision. */
export const KNATIVE_SERVING_V1 = "serving.knative.dev/v1";

/** The `apiVersion` of workload kind `kind` (`Pod`, for a bare Pod's resize: `v1`). */
export function apiVersionOf(kind: string): string {
  return kind === "Service" ? KNATIVE_SERVING_V1 : kind === "Pod" ? "v1" : APPS_V1;
}

/** A workload memory-scaler can patch. */
export interface Workload {
  readonly kind: WorkloadKind;
  readonly name: string;
  readonly namespace: string;
  /** The object as read: its `spec.template` and `metadata` (annotations, uid) are what the decision and the patch use. */
  readonly object: WorkloadObject & { spec: { template: k8s.V1PodTemplateSpec } };
}

/** One RFC 6902 operation, as sent with `Content-Type: application/json-patch+json`. */
export interface JsonPatchOperation {
  op: "test" | "replace" | "add" | "remove";
  /** An RFC 6901 JSON Pointer. */
  path: string;
  /** Absent for `remove`. */
  value?: unknown;
}

/** A reference an Event can regard: with a name and a namespace. */
export type ObjectRef = k8s.V1ObjectReference & { name: string; namespace: string };

/**
 * The one builder of an {@link ObjectRef}: `uid` only when known (a reference without one still
 * names the object; with one, an Event cannot be taken for a namesake's).
 * @param apiVersion e.g. `apps/v1`, `v1`, `kubedemo.com/v1`.
 */
export function objectRef(apiVersion: string, kind: string, namespace: string, name: string, uid: string | undefined): ObjectRef {
  return { apiVersion, kind, name, namespace, ...(uid === undefined ? {} : { uid }) };
}

/** "memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; …" */
export function describeChanges(changes: readonly ContainerChange[]): string {
  return changes
    .map((c) => `${c.container}: limit ${c.from.limit} → ${c.to.limit}${c.from.request === undefined ? "" : `, request ${c.from.request} → ${c.to.request ?? c.from.request}`}`)
    .join("; ");
}

/** A `status.recentScales` entry; `dryRun` marks what a `DryRun` AppMonitor would have done (CRD field). */
export interface RecordedScale extends ScaleRecord {
  dryRun?: boolean;
}

/** Whether `entry` is a scale memory-scaler applied (not a dry run, not held). */
export function isApplied(entry: { readonly dryRun?: boolean | undefined; readonly held?: string | undefined }): boolean {
  return entry.dryRun !== true && entry.held === undefined;
}

/** What the last-scale-record annotation holds: enough to write the status entry and the `Scaled` Events again. */
export interface ScaleRecordAnnotation {
  /** RFC 3339, equal to the last-scale annotation written with it. */
  readonly time: string;
  /** The AppMonitor that scaled the workload. */
  readonly appmonitor: string;
  /** The CloudEvent id the `Scaled` Events are named after (`kube/event-recorder.ts`). */
  readonly event: string;
  /** `spec.memMultiplier` at the time, for the Events' note. */
  readonly multiplier: number;
  readonly changes: readonly ContainerChange[];
  /** `oomKilled` when an OOM-kill alert caused the scale, for the Events' note; absent: a threshold alert. */
  readonly trigger?: "oomKilled";
  /** `inPlace` when the scale resized the workload's Pods in place (its Events say `Resized`); absent: a template patch. */
  readonly mode?: "inPlace";
  /**
   * memory-scaler's earlier scales of this workload within the hour before this one (newest
   * first, at most {@link MAX_EARLIER}): written in the same compare-and-swap as the scale, so
   * the revert budget (`coexist/reverts.ts`) counts every patch even while a status write lags.
   */
  readonly earlier?: readonly ScaleMark[];
  /** `down` for a down-step of `spec.scaleDown` (`scale/decide/scale-down.ts`); absent: a raise (records of older versions too). */
  readonly direction?: "down";
  /**
   * Per container, its memory before memory-scaler's first scale of it: the floor no down-step
   * goes below, carried from record to record (`scale/targets/scale-record.ts` `recordFields`). Absent (records
   * of older versions): the last scale's `from` is the best known.
   */
  readonly original?: Readonly<Record<string, MemoryResources>>;
  /** Raises that came after a down-step of this workload: each doubles the next quiet period (`scale/decide/scale-down.ts`). Absent: 0. */
  readonly flaps?: number;
}

/** One scale's identity in the last-scale record's `earlier`: its time (RFC 3339) and event id. */
export interface ScaleMark {
  readonly time: string;
  readonly event?: string;
}

/** At most this many `earlier` scales are kept in the record: the largest `spec.revertBudgetPerHour`. */
export const MAX_EARLIER = 10;

/** The annotation's value for `record`. */
export function formatScaleRecord(record: ScaleRecordAnnotation): string {
  // A threshold scale's record stays exactly what it was before OOM kills were a trigger.
  const trigger = record.trigger === "oomKilled" ? { trigger: record.trigger } : {};
  const earlier = record.earlier === undefined || record.earlier.length === 0 ? {} : { earlier: record.earlier.slice(0, MAX_EARLIER) };
  const mode = record.mode === "inPlace" ? { mode: record.mode } : {};
  const down = record.direction === "down" ? { direction: record.direction } : {};
  const original = record.original === undefined ? {} : { original: record.original };
  const flaps = record.flaps === undefined || record.flaps === 0 ? {} : { flaps: record.flaps };
  return JSON.stringify({ time: record.time, appmonitor: record.appmonitor, event: record.event, multiplier: record.multiplier, changes: record.changes, ...trigger, ...mode, ...earlier, ...down, ...original, ...flaps });
}

const isString = (v: unknown): v is string => typeof v === "string";

function parseResources(value: unknown): ContainerChange["from"] | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { limit, request } = value as { limit?: unknown; request?: unknown };
  if (!isString(limit) || !(request === undefined || isString(request))) return undefined;
  return request === undefined ? { limit } : { limit, request };
}

/** The annotation's record, or undefined when it is absent or not one (edited by hand, another version's). */
export function parseScaleRecord(value: string | undefined): ScaleRecordAnnotation | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { time, appmonitor, event, multiplier, changes, trigger, mode, earlier, direction, original, flaps } = parsed as Record<string, unknown>;
  if (!isString(time) || Number.isNaN(Date.parse(time)) || !isString(appmonitor) || !isString(event) || typeof multiplier !== "number" || !Array.isArray(changes)) return undefined;
  const parsedChanges: ContainerChange[] = [];
  for (const change of changes as unknown[]) {
    const { container, from, to } = (typeof change === "object" && change !== null ? change : {}) as Record<string, unknown>;
    const f = parseResources(from);
    const t = parseResources(to);
    if (!isString(container) || f === undefined || t === undefined) return undefined;
    parsedChanges.push({ container, from: f, to: t });
  }
  if (parsedChanges.length === 0) return undefined;
  // `earlier` is a hint for the revert budget: entries that do not read are left out, not fatal.
  const marks: ScaleMark[] = (Array.isArray(earlier) ? (earlier as unknown[]) : []).flatMap((m) => {
    const { time: t, event: e } = (typeof m === "object" && m !== null ? m : {}) as Record<string, unknown>;
    return isString(t) && !Number.isNaN(Date.parse(t)) ? [isString(e) ? { time: t, event: e } : { time: t }] : [];
  });
  // The down-step's fields are hints as `earlier` is: one that does not read is left out.
  const originals = Object.entries(typeof original === "object" && original !== null ? original : {}).flatMap(([container, memory]) => {
    const resources = parseResources(memory);
    return resources === undefined ? [] : [[container, resources] as const];
  });
  return {
    time,
    appmonitor,
    event,
    multiplier,
    changes: parsedChanges,
    ...(trigger === "oomKilled" ? { trigger } : {}),
    ...(mode === "inPlace" ? { mode } : {}),
    ...(marks.length > 0 ? { earlier: marks } : {}),
    ...(direction === "down" ? { direction } : {}),
    ...(originals.length > 0 ? { original: Object.fromEntries(originals) } : {}),
    ...(typeof flaps === "number" && Number.isSafeInteger(flaps) && flaps > 0 ? { flaps } : {}),
  };
}

/**
 * A workload whose in-place resize failed under `InPlaceOrRollout` (`follow-up/in-place.ts`), for
 * the scale flow to write its recorded memory into the template (`scale/flow.ts` `handleFallback`).
 */
export interface FallbackRequest {
  readonly namespace: string;
  /** A Pod of the workload (one whose resize failed): what the rounds observe the workload from. */
  readonly pod: string;
  /** The AppMonitor that resized it. */
  readonly appmonitor: string;
  /** Why the in-place resize failed: the `InPlaceFallback` Warnings say so. */
  readonly reason: string;
  /** Keys the Events: one fallback of one resize writes each Event once. */
  readonly eventId: string;
}

/** A workload the follow-up found due for a down-step of `spec.scaleDown` (`follow-up/scale-down.ts`, `scale/flow.ts` `handleScaleDown`). */
export interface ScaleDownRequest {
  readonly namespace: string;
  /** A running Pod of the workload: what the rounds observe the workload from. */
  readonly pod: string;
  /** The AppMonitor whose `spec.scaleDown` asks for it. */
  readonly appmonitor: string;
  /** Keys the Events and the record: the workload and its last scale's time, so one step is one set of Events however often it is asked. */
  readonly eventId: string;
}

/** The runtimes whose heap errors are read. */
export type HeapRuntime = "Node.js" | "JVM" | "Go" | ".NET";

/** A heap error read from a message: the runtime, the line that says it, and the heap it had where the log tail tells it. */
export interface HeapErrorLine {
  readonly runtime: HeapRuntime;
  readonly line: string;
  /** Node.js: the heap's size at its last full collection, from V8's trace (`Mark-Compact 255.9 (259.5) -> …`): `259.5 MB`. */
  readonly heap?: string;
}

/** A container whose last run ended in its runtime's heap error. */
export interface HeapError extends HeapErrorLine {
  readonly container: string;
  readonly exitCode: number | undefined;
}
