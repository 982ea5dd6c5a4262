/**
 * What memory-scaler tells users about an outcome (the README's "What it does", steps 2, 4, 6, 7 and 9;
 * `scale/report.ts` says which ending writes which),
 * pure: the Kubernetes Events it writes, as one table (the status changes are
 * `status/changes.ts`'s). The README's "Skip reasons" table says the same to users.
 *
 * | reported | Events (`regarding` → `related`) | note |
 * | --- | --- | --- |
 * | `UnsupportedOwner` | Warning on the Pod → the AppMonitor | `not scaled: <message>` |
 * | `UnknownController` | Warning pair (the workload another controller owns, and the AppMonitor the alert names), at most one per workload per window (`status/last-outcome.ts` `skipWindowSeconds`) | `not scaled: <message>` (that controller: kind, name, apiVersion, to change instead) |
 * | `AtCap` | Warning on the workload → the AppMonitor, and on the AppMonitor → the workload; at most one per workload per `cooldownSeconds`, at least {@link AT_CAP_WARNING_SECONDS} when it is above 0 (`windowedKey`) | `not scaled: <message>` (+ how often it is written) |
 * | `LimitNotInTemplate` | the same pair | `not scaled: <message>` |
 * | `HeapFailure` (with `Scaled`, `Resized` or `DryRun`) | Warning pair: a raised container's last run ended in exit code 134 (`Error`), an in-process heap failure, and no heap flag read fixes its heap (`scale/decide/fixed-heap.ts` `heapFailureNote`) | `<message>` |
 * | `FixedHeap` | the same pair, at most one per workload per `cooldownSeconds` (`windowedKey`) | `not scaled: <message>` (the flag, its value and where; an in-process heap failure when the Pod's last run ended in one, the runtime's heap error where its termination message says it) |
 * | `NoTerminationMessage`, `HeapNeedsRollout` | the same pair, at most one per workload per `cooldownSeconds` (`windowedKey`) | `not scaled: <message>` (what to set: `terminationMessagePolicy: FallbackToLogsOnError`; for a bare Pod, to recreate it with the heap set) |
 * | `AdmissionRefused` | the same pair | `not scaled (<changes>): the API server refused it: <message>` (a dry run's: `DryRun: would not be scaled (<changes>): …`) |
 * | `RolloutExceedsQuota`, `Unschedulable` | the same pair | `not scaled (<changes>): <message>` (a dry run's as above) |
 * | `HPAOnMemory`, `VPAControlled`, `GitOpsManaged` (skipped) | the same pair, at most one per workload per `cooldownSeconds` (`windowedKey`) | `<message>` (it starts `not scaled:`) |
 * | `Reverted` | the same pair, once per reverted scale (keyed by the id of the event that scaled) | `<message>` |
 * | `ProbableLeak` | the same pair, once per hold of the leak guard (keyed by the workload and the hold's `since`) | `not scaled: <message>` (the scales, from → to) |
 * | `Cooldown`, `BelowThreshold` | Normal pair, at most one per workload per `cooldownSeconds` (300 s without one: `status/last-outcome.ts` `skipWindowSeconds`) | `not scaled: <message>` |
 * | `NotCovered` | Warning pair (the workload and the AppMonitor the alert names), at most one per workload per window as above | `not scaled: <message>` |
 * | `NoAppMonitor` | Warning on the Pod ({@link noAppMonitorEvent}: there is no AppMonitor to relate), at most one per Pod per 300 s | `not scaled: <message>` |
 * | `DryRun` | Normal pair | `DryRun[ (<note>: paused install-wide)]: would scale[ down] <kind> <name>[ after an OOM kill\| on its trend toward the limit\| after a heap error]: <changes>[; <bounds>]` |
 * | `Scaled` | Normal pair (its note ends with the heap flags raised under `spec.heapFlags: Scale`, and after a heap error the heap settings written, `settingsClause`), and for an OnDelete workload a `RolloutWaitsForDelete` Warning pair, and for a GitOps-managed one (`spec.gitOpsManaged: Patch`) a `GitOpsManaged` Warning pair | `scaled <kind> <name> by <multiplier>[ after an OOM kill\| on its trend toward the limit\| after a heap error]: <changes>[; the rollout replaces (restarts) its Pods][; <bounds>]` (`replacement.ts` `replacementClause`; the caps and ceilings that held it, and a new crossing the cooldown let through, {@link boundsClause}) |
 * | `PodsReplaced` (with `Scaled`) | Warning pair, when the replaced Pods likely keep state in memory or in `emptyDir` volumes (`replacement.ts`: a single-replica Deployment, any StatefulSet, an `emptyDir` volume in the Pod template); never for a bare Pod resized in place | `podsReplacedNote`: why, and that their memory and emptyDir contents are lost |
 * | `Resized` | Normal pair on the bare Pod (its `workload`), or the workload whose Pods were resized in place, and the AppMonitor | `resized <kind> <name> in place by <multiplier>[ after an OOM kill\| on its trend toward the limit\| after a heap error]: <changes>[ (Pods <names>)][; <bounds>]` |
 * | `HeapNotReached` (with `Resized`) | Warning pair: a resized bare Pod's container's `spec.containerPolicies` `runtime` sizes its heap when it starts (`scale/decide/heap-settings.ts`; a workload's rolls out instead) | `resized in place, but container <name> (<runtime>) sizes its heap when it starts, so …` |
 * | `ScaledDown` | Normal pair (a down-step of `spec.scaleDown`, `scale/decide/scale-down.ts`), with the `GitOpsManaged` and `PodsReplaced` Warning pairs as for `Scaled` | `scaled down <kind> <name>: <changes>[; the rollout replaces (restarts) its Pods]` (`[ in place (Pods <names>)]` when resized in place) |
 * | `InPlaceFallback` (with `Scaled`) | Warning pair: `spec.updateMode: InPlaceOrRollout` wrote the template instead of a refused or failed resize, or either in-place mode did for a heap sized at start (`scale/decide/heap-relief.ts`: `resizing in place cannot reach <runtime>'s heap, sized when it starts`), and why | `<message>` |
 * | anything else | none: the outcome is logged and counted only | |
 *
 * A Warning on the AppMonitor names the workload first (`<kind> <name>: <note>`); a Normal one
 * carries the same note on both. Each Event is keyed by the CloudEvent's id (`kube/event-recorder.ts`:
 * its name is derived from the key, so a re-delivery writes nothing new), a repaired scale's by
 * the id of the event that scaled.
 */
import type { AlertTrigger } from "../lib/alert-event.ts";
import type * as k8s from "@kubernetes/client-node";
import { type ContainerChange, describeChanges, type ObjectRef } from "./model.ts";
import type { ScaleBound } from "./outcome.ts";
import { type PodReplacement, podsReplacedNote, replacementClause } from "./replacement.ts";
import { skipWindowSeconds } from "./status/last-outcome.ts";

/**
 * The shortest window of `AtCap` Warnings, seconds: an hour, the API server's default Event TTL
 * (`--event-ttl`), so a workload at its cap, listed in `status.capped` meanwhile, is warned about
 * about once while an Event of it lasts.
 */
export const AT_CAP_WARNING_SECONDS = 3600;

/** What an outcome's Events are about. */
export interface Subjects {
  /** The alerting Pod (every reason but a follow-up's repair; `UnsupportedOwner` regards it). */
  readonly pod?: ObjectRef;
  /** The governing AppMonitor (for `UnsupportedOwner`, the one the alert names); absent only for `NoAppMonitor`, which has none. */
  readonly appMonitor?: ObjectRef;
  /** Its `spec.cooldownSeconds`: the window of its `AtCap` Warnings. */
  readonly cooldownSeconds: number;
  /** The workload, once resolved (every reason but `UnsupportedOwner`; for `UnknownController`, the one another controller owns). */
  readonly workload?: ObjectRef;
}

/** An outcome as reported: its reason and what its note says. */
export type Reported =
  | {
      readonly reason: "NoAppMonitor" | "UnsupportedOwner" | "UnknownController" | "AtCap" | "LimitNotInTemplate" | "FixedHeap" | "HeapFailure" | "Cooldown" | "BelowThreshold" | "NotCovered" | "NoTerminationMessage" | "HeapNeedsRollout";
      readonly message: string;
    }
  /** `dryRun`: what would have refused a dry run's write (`spec.mode: DryRun`, or the install paused). */
  | { readonly reason: "AdmissionRefused" | "RolloutExceedsQuota" | "Unschedulable"; readonly message: string; readonly changes: readonly ContainerChange[]; readonly dryRun?: boolean }
  /** Another manager of the workload holds the scale (`coexist/gate.ts` `gateScale`); `Reverted` there writes no Event of its own (the detection's below says it). */
  | { readonly reason: "HPAOnMemory" | "VPAControlled" | "GitOpsManaged"; readonly message: string }
  /** The leak guard's hold, reported once: `key` names the hold (its workload and `since`). */
  | { readonly reason: "ProbableLeak"; readonly message: string; readonly key: string }
  /** The revert of a scale, reported once: `key` is the id of the event that made that scale. */
  | { readonly reason: "Reverted"; readonly message: string; readonly key: string }
  /** `note`: why a dry run when the AppMonitor's mode is not DryRun (the install paused). */
  | {
      readonly reason: "DryRun";
      readonly changes: readonly ContainerChange[];
      readonly trigger: AlertTrigger;
      readonly note?: string;
      /** A down-step's: `would scale down`. */
      readonly down?: boolean;
      /** The caps and the install's ceilings that held it ({@link boundsClause}); the note ends with them. */
      readonly bounds?: string;
    }
  | {
      readonly reason: "Scaled";
      readonly changes: readonly ContainerChange[];
      readonly multiplier: number;
      readonly trigger: AlertTrigger;
      /** For an OnDelete workload: the note of its `RolloutWaitsForDelete` Warnings. */
      readonly onDelete?: string | undefined;
      /** For a workload a GitOps tool manages (`spec.gitOpsManaged: Patch`): the note of its `GitOpsManaged` Warnings. */
      readonly gitOps?: string | undefined;
      /** The key of its Events when not the current event's (a repaired scale: the event that scaled). */
      readonly key?: string;
      /**
       * How the new template reaches the Pods (`replacement.ts`): the note says the Pods are
       * replaced, and a `PodsReplaced` Warning pair says what that loses. Absent: neither.
       */
      readonly replacement?: PodReplacement | undefined;
      /** The heap flags raised with the limits (`spec.heapFlags: Scale`, `scale/decide/fixed-heap.ts` `describeHeapChanges`); the note ends with them. */
      readonly heap?: string | undefined;
      /** After a heap error: the heap settings written with the limits (`scale/decide/heap-settings.ts`), and what was left unset; the note ends with them. */
      readonly settings?: string | undefined;
      readonly notes?: readonly string[] | undefined;
      /** The caps and the install's ceilings that held the raise ({@link boundsClause}); the note ends with them. */
      readonly bounds?: string | undefined;
    }
  | {
      readonly reason: "Resized";
      readonly changes: readonly ContainerChange[];
      readonly multiplier: number;
      readonly trigger: AlertTrigger;
      /** A workload's Pods resized in place: their names. Absent: a bare Pod (the `workload` itself). */
      readonly pods?: readonly string[];
      /** The key of its Events when not the current event's (a repaired scale: the event that scaled). */
      readonly key?: string;
      /** As for `Scaled`. */
      readonly bounds?: string | undefined;
      /** Why the running program's heap is not reached (a declared runtime that sizes it at start): a `HeapNotReached` Warning pair. */
      readonly heapNotReached?: string;
    }
  /** A down-step (`scale/decide/scale-down.ts`); `pods`: resized in place; the rest as for `Scaled`. */
  | {
      readonly reason: "ScaledDown";
      readonly changes: readonly ContainerChange[];
      readonly replacement?: PodReplacement | undefined;
      readonly gitOps?: string | undefined;
      readonly pods?: readonly string[];
      readonly key?: string;
    }
  /** `InPlaceOrRollout` fell back to the template patch: why the Pods were not resized in place. */
  | { readonly reason: "InPlaceFallback"; readonly message: string; readonly key?: string }
  | { readonly reason: string };

/** What the notes add for the alert that caused them: nothing for the threshold alert. */
const TRIGGER_CLAUSE: Readonly<Record<AlertTrigger, string>> = { threshold: "", oomKilled: " after an OOM kill", trend: " on its trend toward the limit", heapError: " after a heap error", heapThreshold: " on its heap's own threshold" };
const becauseOf = (trigger: AlertTrigger): string => TRIGGER_CLAUSE[trigger];

/**
 * The note of the `Scaled` Events; one caused by an OOM-kill alert or a trend alert says so, and
 * with a `replacement` it ends saying that the Pods are replaced (`replacementClause`).
 */
export function scaledNote(
  workload: { readonly kind?: string; readonly name: string },
  multiplier: number,
  changes: readonly ContainerChange[],
  trigger: AlertTrigger = "threshold",
  replacement?: PodReplacement,
): string {
  return `scaled ${workload.kind ?? ""} ${workload.name} by ${multiplier}${becauseOf(trigger)}: ${describeChanges(changes)}${replacement === undefined ? "" : replacementClause(replacement)}`;
}

/** The note of the `ScaledDown` Events: what a down-step lowered, and with a `replacement`, that the Pods are replaced. */
export function scaledDownNote(workload: { readonly kind?: string; readonly name: string }, changes: readonly ContainerChange[], replacement?: PodReplacement): string {
  return `scaled down ${workload.kind ?? ""} ${workload.name}: ${describeChanges(changes)}${replacement === undefined ? "" : replacementClause(replacement)}`;
}

/** The end of a `Scaled` note that names the heap flags raised with the limits; empty when none were. */
export function heapClause(heap: string | undefined): string {
  return heap === undefined ? "" : `; heap flags raised with the limits: ${heap}`;
}

/** The end of a `Scaled` note that names the heap settings written after a heap error, and what was left unset; empty when neither. */
export function settingsClause(settings: string | undefined, notes: readonly string[] | undefined): string {
  const set = settings === undefined ? "" : `; the heap set with the limits, as the runtime sizes it only when it starts: ${settings}`;
  return `${set}${(notes ?? []).map((n) => `; ${n}`).join("")}`;
}

/**
 * The end of a note that names the caps and the install's ceilings that held a raise
 * (`Scale.bounds`), those of the containers changed: `; app capped by spec.maxMemory 2Gi`; then
 * why the cooldown did not hold it (`Scale.newCrossing`), when it ran. Empty when neither.
 */
export function boundsClause(bounds: readonly ScaleBound[] | undefined, changes: readonly ContainerChange[], newCrossing?: string): string {
  const kept = (bounds ?? []).filter((b) => b.container === undefined || changes.some((c) => c.container === b.container));
  return [...kept.map((b) => b.message), ...(newCrossing === undefined ? [] : [newCrossing])].map((m) => `; ${m}`).join("");
}

/**
 * The Events of an outcome (the module's table), keyed for `EventRecorder.record`.
 * @param eventId the CloudEvent's id; @param now for the `AtCap` window.
 * @throws Error when a reason that regards the workload comes without one (a bug of the caller).
 */
export function eventsOf(reported: Reported, subjects: Subjects, eventId: string, now: Date): EventSpec[] {
  const appMonitor = (): ObjectRef => {
    if (subjects.appMonitor === undefined) throw new Error(`${reported.reason} is reported on an AppMonitor, and none was given`);
    return subjects.appMonitor;
  };
  const workload = (): ObjectRef => {
    if (subjects.workload === undefined) throw new Error(`${reported.reason} is reported on a workload, and none was given`);
    return subjects.workload;
  };
  const warningPair = (reason: string, note: string, key = eventId): EventSpec[] => {
    const wl = workload();
    return [
      { type: "Warning", reason, note, regarding: wl, related: appMonitor(), key },
      { type: "Warning", reason, note: `${wl.kind ?? ""} ${wl.name}: ${note}`, regarding: appMonitor(), related: wl, key },
    ];
  };
  const normalPair = (reason: string, note: string, key = eventId): EventSpec[] => [
    { type: "Normal", reason, note, regarding: workload(), related: appMonitor(), key },
    { type: "Normal", reason, note, regarding: appMonitor(), related: workload(), key },
  ];
  const r = reported as Reported & Record<string, unknown>;
  switch (reported.reason) {
    case "NoAppMonitor": {
      if (subjects.pod === undefined) throw new Error("NoAppMonitor is reported on a Pod, and none was given");
      return [noAppMonitorEvent(subjects.pod, String(r.message), eventId, now)];
    }
    case "UnsupportedOwner": {
      if (subjects.pod === undefined) throw new Error("UnsupportedOwner is reported on a Pod, and none was given");
      return [{ type: "Warning", reason: "UnsupportedOwner", note: `not scaled: ${String(r.message)}`, regarding: subjects.pod, related: appMonitor(), key: eventId }];
    }
    case "AtCap": {
      // A workload at the cap alerts until its memory use drops: one AtCap Warning per workload
      // per window (the cooldown, at least an hour: the status lists it meanwhile; none asked
      // for, none) says it, the deterministic name turns the rest into 409s.
      const wl = workload();
      const window = subjects.cooldownSeconds > 0 ? Math.max(subjects.cooldownSeconds, AT_CAP_WARNING_SECONDS) : 0;
      const key = windowedKey(`${wl.kind ?? ""}/${wl.name}/${wl.uid ?? ""}`, now, window, eventId);
      const often = key === eventId ? "" : ` (this Warning is written at most once every ${window}s)`;
      return warningPair("AtCap", `not scaled: ${String(r.message)}${often}`, key);
    }
    case "LimitNotInTemplate":
      return warningPair("LimitNotInTemplate", `not scaled: ${String(r.message)}`);
    case "FixedHeap": {
      // The heap stays fixed, so its alerts keep coming: one pair per workload per window.
      const wl = workload();
      return warningPair("FixedHeap", `not scaled: ${String(r.message)}`, windowedKey(`FixedHeap/${wl.kind ?? ""}/${wl.name}/${wl.uid ?? ""}`, now, subjects.cooldownSeconds, eventId));
    }
    case "HeapFailure":
      return warningPair("HeapFailure", String(r.message));
    case "NoTerminationMessage":
    case "HeapNeedsRollout": {
      // A crash loop alerts again after each restart: one pair per workload per window says it.
      const wl = workload();
      return warningPair(reported.reason, `not scaled: ${String(r.message)}`, windowedKey(`${reported.reason}/${wl.kind ?? ""}/${wl.name}/${wl.uid ?? ""}`, now, subjects.cooldownSeconds, eventId));
    }
    case "HPAOnMemory":
    case "VPAControlled":
    case "GitOpsManaged": {
      // Alerts keep firing while the other manager holds the workload: one pair per window.
      const wl = workload();
      return warningPair(reported.reason, String(r.message), windowedKey(`${reported.reason}/${wl.kind ?? ""}/${wl.name}/${wl.uid ?? ""}`, now, subjects.cooldownSeconds, eventId));
    }
    case "Cooldown":
    case "BelowThreshold":
    case "NotCovered":
    case "UnknownController": {
      // The skips that last while the alert keeps firing: one pair per workload per window says it.
      const wl = workload();
      const key = windowedKey(`${reported.reason}/${wl.kind ?? ""}/${wl.name}/${wl.uid ?? ""}`, now, skipWindowSeconds(subjects.cooldownSeconds), eventId);
      const note = `not scaled: ${String(r.message)}`;
      return reported.reason === "Cooldown" || reported.reason === "BelowThreshold" ? normalPair(reported.reason, note, key) : warningPair(reported.reason, note, key);
    }
    case "Reverted":
      return warningPair("Reverted", String(r.message), `reverted/${String(r.key)}`);
    case "ProbableLeak":
      return warningPair("ProbableLeak", `not scaled: ${String(r.message)}`, String(r.key));
    case "AdmissionRefused":
    case "RolloutExceedsQuota":
    case "Unschedulable": {
      const not = r.dryRun === true ? "DryRun: would not be scaled" : "not scaled";
      const refused = reported.reason === "AdmissionRefused" ? "the API server refused it: " : "";
      return warningPair(reported.reason, `${not} (${describeChanges(r.changes as ContainerChange[])}): ${refused}${String(r.message)}`);
    }
    case "DryRun": {
      const wl = workload();
      const note = typeof r.note === "string" ? ` (${r.note})` : "";
      if (r.down === true) return normalPair("DryRun", `DryRun${note}: would scale down ${wl.kind ?? ""} ${wl.name}: ${describeChanges(r.changes as ContainerChange[])}`);
      return normalPair("DryRun", `DryRun${note}: would scale ${wl.kind ?? ""} ${wl.name}${becauseOf(r.trigger as AlertTrigger)}: ${describeChanges(r.changes as ContainerChange[])}${typeof r.bounds === "string" ? r.bounds : ""}`);
    }
    case "Scaled": {
      const scaled = reported as Extract<Reported, { reason: "Scaled"; multiplier: number }>;
      const key = scaled.key ?? eventId;
      const wl = workload();
      const note = `${scaledNote(wl, scaled.multiplier, scaled.changes, scaled.trigger, scaled.replacement)}${heapClause(scaled.heap)}${settingsClause(scaled.settings, scaled.notes)}${scaled.bounds ?? ""}`;
      const onDelete = scaled.onDelete;
      const gitOps = scaled.gitOps;
      const replaced = scaled.replacement === undefined ? undefined : podsReplacedNote({ kind: wl.kind ?? "", name: wl.name }, scaled.replacement);
      return [
        ...normalPair("Scaled", note, key),
        ...(gitOps === undefined ? [] : warningPair("GitOpsManaged", gitOps, key)),
        ...(onDelete === undefined
          ? []
          : ([
              { type: "Warning", reason: "RolloutWaitsForDelete", note: onDelete, regarding: workload(), related: appMonitor(), key },
              { type: "Warning", reason: "RolloutWaitsForDelete", note: onDelete, regarding: appMonitor(), related: workload(), key },
            ] as const)),
        ...(replaced === undefined ? [] : warningPair("PodsReplaced", replaced, key)),
      ];
    }
    case "Resized": {
      const wl = workload();
      const pods = r.pods as readonly string[] | undefined;
      const which = pods === undefined ? "" : ` (Pod${pods.length === 1 ? "" : "s"} ${pods.join(", ")})`;
      const note = `resized ${wl.kind ?? ""} ${wl.name} in place by ${String(r.multiplier)}${becauseOf(r.trigger as AlertTrigger)}: ${describeChanges(r.changes as ContainerChange[])}${which}${typeof r.bounds === "string" ? r.bounds : ""}`;
      const key = (r.key as string | undefined) ?? eventId;
      const notReached = r.heapNotReached as string | undefined;
      return [...normalPair("Resized", note, key), ...(notReached === undefined ? [] : warningPair("HeapNotReached", `resized in place, but ${notReached}`, key))];
    }
    case "ScaledDown": {
      const down = reported as Extract<Reported, { reason: "ScaledDown"; changes: readonly ContainerChange[] }>;
      const key = down.key ?? eventId;
      const wl = workload();
      const pods = down.pods === undefined ? "" : ` in place (${down.pods.length === 0 ? "no running Pod needed it" : `Pods ${down.pods.join(", ")}`})`;
      const replaced = down.replacement === undefined ? undefined : podsReplacedNote({ kind: wl.kind ?? "", name: wl.name }, down.replacement);
      return [
        ...normalPair("ScaledDown", `${scaledDownNote(wl, down.changes, down.replacement)}${pods}`, key),
        ...(down.gitOps === undefined ? [] : warningPair("GitOpsManaged", down.gitOps, key)),
        ...(replaced === undefined ? [] : warningPair("PodsReplaced", replaced, key)),
      ];
    }
    case "InPlaceFallback":
      return warningPair("InPlaceFallback", String(r.message), (r.key as string | undefined) ?? eventId);
    default:
      return [];
  }
}

/**
 * The `NoAppMonitor` Warning on the alerting Pod: the AppMonitor its alert names is not in the
 * namespace, or its spec is invalid (module table), at most one per Pod per 300 s.
 */
export function noAppMonitorEvent(pod: ObjectRef, message: string, eventId: string, now: Date): EventSpec {
  return { type: "Warning", reason: "NoAppMonitor", note: `not scaled: ${message}`, regarding: pod, key: windowedKey(`NoAppMonitor/${pod.name}/${pod.uid ?? ""}`, now, skipWindowSeconds(undefined), eventId) };
}

/** What to report, and about which object. */
export interface EventSpec {
  readonly type: "Normal" | "Warning";
  /** CamelCase, e.g. `Scaled`, `AtCap`, `AdmissionRefused`. */
  readonly reason: string;
  /** Human-readable; cut to {@link MAX_NOTE_LENGTH}. */
  readonly note: string;
  /** The object the Event is about; its namespace is the Event's namespace. */
  readonly regarding: k8s.V1ObjectReference & { name: string; namespace: string };
  /** A second object involved (the AppMonitor, or the workload). */
  readonly related?: k8s.V1ObjectReference;
  /** What makes two reports the same: the CloudEvent id. */
  readonly key: string;
}

/**
 * The {@link EventSpec.key} of a Warning that should be written at most once per `windowSeconds`
 * about `subject` (e.g. `Deployment/web/<uid>`), however many alerts ask for it: the subject and
 * the index of the window `now` falls in (windows of `windowSeconds` counted from the Unix
 * epoch). Every report in one window gets one Event name, so the second create answers 409 and
 * stays one Event — nothing is stored for it. Windows are aligned on the epoch, not on the first
 * report: two reports less than a window apart across a boundary write two Events, never two in
 * one window. `windowSeconds` ≤ 0 (no cooldown asked for) → `eventKey` (one Event per alert, as
 * for any other Event).
 */
export function windowedKey(subject: string, now: Date, windowSeconds: number, eventKey: string): string {
  if (!(windowSeconds > 0)) return eventKey;
  return `${subject}@${Math.floor(now.getTime() / (windowSeconds * 1000))}`;
}
