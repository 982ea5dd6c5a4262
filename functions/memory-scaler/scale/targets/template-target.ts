/**
 * The workload's Pod template as a {@link WriteTarget}: a Deployment, StatefulSet, DaemonSet or
 * ReplicaSet whose controller rolls the new memory out by replacing its Pods.
 *
 * - Decides from the workload's memory (the template's, raised by its in-place record where one
 *   applies: `../in-place.ts`) against the alerting Pod's spec; the cooldown's clock is the
 *   template's last-scale annotation; an OOM kill counts within `OOM_KILL_RECENT_SECONDS` (the
 *   scale replaces the Pods, whose statuses start clean).
 * - A workload resized in place before: the patch writes the whole raise into the template (each
 *   change from the template's own values) and removes the in-place record and its label, tested
 *   as read, in the same compare-and-swap; a fallback (`InPlaceOrRollout`) writes the recorded
 *   memory alone (`recorded`) and says why in `InPlaceFallback` Warnings.
 * - Keeps a last-scale record on the workload, written in the scale's own patch: what a later
 *   event repairs from (`status/repair.ts`), sees a revert by (`coexist/reverts.ts`) and counts
 *   the revert budget with.
 * - An OnDelete StatefulSet or DaemonSet whose Pod is behind its template, or whose last rollout is
 *   still pending, is `RolloutWaitsForDelete` (`../decide/on-delete.ts`), not `Cooldown`/`RolloutUnderWay`.
 * - Writes (`write.ts`): dry runs of the patch and of a Pod of the scaled template, the quota and
 *   Node checks (`../decide/capacity.ts`), the scale listed in `status.pendingScales` first, then one JSON
 *   Patch with `test` operations (`template-patch.ts`).
 * - What follows: `Scaled` Events (with `PodsReplaced`, `RolloutWaitsForDelete`, `GitOpsManaged`
 *   Warnings where they apply), and the rollout pending in `status.rollouts` (none for a bare
 *   ReplicaSet, which replaces no Pod).
 */
import type * as k8s from "@kubernetes/client-node";
import { IN_PLACE_LABEL, IN_PLACE_MEMORY_ANNOTATION, LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, type AppMonitorStatus } from "../../../lib/appmonitor.ts";
import { gitOpsOwner, gitOpsPatchedNote } from "../../coexist/gitops.ts";
import { budgetUse, detectRevert, detectRevertFromStatus, REVERT_WINDOW_MS, scaleMarks } from "../../coexist/reverts.ts";
import { leakWindowMs } from "../decide/leak-guard.ts";
import { heapClause, type Reported, scaledDownNote, scaledNote, settingsClause } from "../../events.ts";
import { effectiveMemory, foldedChanges, type InPlaceEntry, parseInPlaceRecord, recordedChanges } from "../../in-place.ts";
import { pinnedTrafficNote, userContainers } from "../../knative.ts";
import { memoryOf } from "../../kube/views.ts";
import { apiVersionOf, type ContainerMemory, describeChanges, type JsonPatchOperation, kindOf, objectRef, parseScaleRecord, type RecordedScale, type Workload } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import { podReplacement, type PodReplacement } from "../../replacement.ts";
import { repairedStatus } from "../../status/changes.ts";
import { repairOf } from "../../status/repair.ts";
import { pendingRollouts } from "../../status/rollouts.ts";
import type { Decision } from "../decide/decide.ts";
import { OOM_KILL_RECENT_SECONDS } from "../decide/evidence.ts";
import type { ValidAppMonitor } from "../decide/governing.ts";
import { describeHeapChanges, heapFlagChanges } from "../decide/fixed-heap.ts";
import { type ContainerHeap, podHeaps } from "../decide/heap-flags.ts";
import { describeHeapSettings, HEAP_SETTINGS_ANNOTATION, heapSettings, knownRuntimes, markOwned, parseHeapSettings } from "../decide/heap-settings.ts";
import { onDeleteScaledNote, type RolloutStrategy, unreplacedNote, waitingForDelete, waitsForDelete } from "../decide/on-delete.ts";
import type { History, TargetView } from "../decide/target-view.ts";
import type { WriteInput, WriteResult, WriteTarget, WrittenInput, Written } from "./target.ts";
import { buildHeapFlagPatch, buildHeapSettingPatch, buildTemplatePatch, escapeJsonPointerToken } from "./template-patch.ts";
import { scaleRecordOf } from "./scale-record.ts";
import { listPendingScale, podForAdmission, writeWorkload } from "./write.ts";

/**
 * The label a StatefulSet or DaemonSet controller puts on each Pod: the ControllerRevision its
 * template came from (https://kubernetes.io/docs/reference/labels-annotations-taints/#controller-revision-hash).
 */
const CONTROLLER_REVISION_LABEL = "controller-revision-hash";

/** What the template target's steps read of the workload and the alerting Pod, once. */
interface Template {
  readonly workload: Workload;
  readonly pod: k8s.V1Pod;
  readonly named: { readonly kind: string; readonly name: string };
  readonly annotations: Record<string, string> | undefined;
  readonly lastScaleTime: string | undefined;
  /** The Pod template's own memory (`memoryOf`), which the patch tests and writes. */
  readonly template: readonly ContainerMemory[];
  /** The in-place record the workload carries, if any (`../in-place.ts`). */
  readonly inPlace: readonly InPlaceEntry[] | undefined;
  /** The workload's memory: the template's, raised where the in-place record applies. */
  readonly desired: readonly ContainerMemory[];
  readonly running: readonly ContainerMemory[];
  readonly strategy: RolloutStrategy;
  /** Whether a scale replaces the workload's Pods and what that loses: the `Scaled` note and the `PodsReplaced` Warning. */
  readonly replacement: PodReplacement;
  /** Each container's heap flags (`../decide/heap-flags.ts`). */
  readonly heaps: readonly ContainerHeap[];
}

/**
 * The template target of `workload`, whose Pod `pod` alerted (module comment).
 * @param autoscalers the namespace's HPAs and VPAs, as the read step listed them.
 */
export function templateTarget(workload: Workload, pod: k8s.V1Pod, autoscalers: TargetView["autoscalers"]): WriteTarget {
  const { spec, metadata } = workload.object;
  const annotations = metadata?.annotations;
  const lastScaleTime = annotations?.[LAST_SCALE_ANNOTATION];
  const template = memoryOf(spec.template.spec);
  const inPlace = parseInPlaceRecord(annotations?.[IN_PLACE_MEMORY_ANNOTATION]);
  const t: Template = {
    workload,
    pod,
    named: { kind: workload.kind, name: workload.name },
    annotations,
    lastScaleTime,
    template,
    inPlace,
    desired: effectiveMemory(template, inPlace),
    // A Revision Pod's queue-proxy is Serving's: no template of the Service sets it.
    running: workload.kind === "Service" ? userContainers(memoryOf(pod.spec)) : memoryOf(pod.spec),
    strategy: { kind: workload.kind, name: workload.name, updateStrategy: spec.updateStrategy?.type, updateRevision: workload.object.status?.updateRevision, replicas: spec.replicas },
    replacement: podReplacement({ kind: workload.kind, replicas: spec.replicas, updateStrategy: spec.updateStrategy?.type, volumes: spec.template.spec?.volumes ?? [] }),
    // A flag memory-scaler wrote after a heap error is its own: raised with the limit, never held.
    heaps: markOwned(podHeaps(spec.template.spec), parseHeapSettings(annotations?.[HEAP_SETTINGS_ANNOTATION])),
  };
  return {
    view: {
      workload: t.named,
      ref: objectRef(apiVersionOf(workload.kind), workload.kind, workload.namespace, workload.name, metadata?.uid),
      owner: { kind: workload.kind, name: workload.name, template: spec.template },
      desired: t.desired,
      running: t.running,
      lastScaleTime,
      lastRecord: parseScaleRecord(annotations?.[LAST_SCALE_RECORD_ANNOTATION]),
      recorded: recordedChanges(template, inPlace),
      heaps: t.heaps,
      rewritesHeaps: true,
      gitOps: gitOpsOwner(metadata),
      autoscalers,
    },
    oomWindowSeconds: () => OOM_KILL_RECENT_SECONDS,
    history: (am, now, statusLimit) => history(t, am, now, statusLimit),
    refine: (decision, am, alert) => refine(t, decision, am, alert),
    writer: {
      verb: "scale",
      wouldDo: "would scale",
      scaledReason: "Scaled",
      write: (input) => write(t, input),
      written: (input) => written(t, input),
    },
  };
}

/** The last scale's repair, revert and budget, from the workload's last-scale record and the AppMonitor's `recentScales`. */
function history(t: Template, am: ValidAppMonitor, now: Date, statusLimit: number): History {
  const { workload, annotations, lastScaleTime, desired, replacement } = t;
  const status = am.raw.status as AppMonitorStatus | undefined;
  const recent = (status?.recentScales ?? []) as RecordedScale[];
  const record = annotations?.[LAST_SCALE_RECORD_ANNOTATION];
  const last = repairOf({ lastScale: lastScaleTime, record, workload, appmonitor: am.metadata.name, status, limit: statusLimit });
  const repair =
    last.action === "none"
      ? undefined
      : {
          reported:
            last.record.mode === "inPlace"
              ? ({ reason: "Resized", changes: last.record.changes, multiplier: last.record.multiplier, trigger: last.record.trigger ?? "threshold", key: last.record.event } as const)
              : ({ reason: "Scaled", changes: last.record.changes, multiplier: last.record.multiplier, trigger: last.record.trigger ?? "threshold", key: last.record.event, replacement } as const),
          status: last.entry === undefined ? undefined : repairedStatus(last.entry, { kind: workload.kind, generation: workload.object.metadata?.generation }, last.record.event, statusLimit),
          time: last.record.time,
        };
  // A writer that replaced the whole workload, or applied an old copy of it, took the annotations
  // back with the memory: a later scale the status lists stands for the record.
  const revert =
    detectRevertFromStatus({ workload, appmonitor: am.metadata.name, multiplier: am.spec.memMultiplier, recent, now, templateContainers: desired, after: lastScaleTime }) ??
    detectRevert({ lastScale: lastScaleTime, record, templateContainers: desired });
  const marksInput = { workload, record: parseScaleRecord(record), recent, now };
  const budget = budgetUse({ ...marksInput, budget: am.spec.revertBudgetPerHour });
  return { repair, revert, budget, marks: scaleMarks(marksInput, Math.max(REVERT_WINDOW_MS, leakWindowMs(am.spec))) };
}

/** `decideScale`'s decision for the template: an OnDelete workload's skip (or scale) becomes `RolloutWaitsForDelete` where nothing replaces the Pod. */
function refine(t: Template, decision: Decision, am: ValidAppMonitor, alert: { readonly pod: string; readonly container?: string | undefined }): Skip | Scale {
  const { workload, pod, strategy, desired, running } = t;
  // OnDelete: the last scale's rollout is pending until every Pod was deleted and replaced (the
  // follow-up ends it); until then no scale goes on top of one no Pod has.
  const unreplaced = waitsForDelete(strategy) ? pendingRollouts(am.raw.status).find((r) => r.workload.kind === workload.kind && r.workload.name === workload.name) : undefined;
  if (decision.action === "scale") {
    if (unreplaced !== undefined) return { action: "skip", reason: "RolloutWaitsForDelete", message: unreplacedNote(workload, unreplaced), skipped: decision.skipped };
    return decision;
  }
  if (decision.reason !== "Cooldown" && decision.reason !== "RolloutUnderWay") return { action: "skip", reason: decision.reason, message: decision.message, skipped: decision.skipped };
  // An OnDelete workload's Pod behind its template is not in a rollout: nothing will replace
  // it until it is deleted, which only the user can do; say that, not Cooldown or RolloutUnderWay.
  const waiting = waitingForDelete({
    workload: strategy,
    pod: { name: alert.pod, revision: pod.metadata?.labels?.[CONTROLLER_REVISION_LABEL] },
    limits: desired
      .filter((c) => kindOf(c) !== "init" && (alert.container === undefined || c.name === alert.container))
      .map((c) => ({ container: c.name, template: c.limit, pod: running.find((p) => p.name === c.name)?.limit })),
  });
  if (waiting !== undefined) return { action: "skip", reason: "RolloutWaitsForDelete", message: waiting, skipped: decision.skipped };
  if (unreplaced !== undefined) return { action: "skip", reason: "RolloutWaitsForDelete", message: unreplacedNote(workload, unreplaced), skipped: decision.skipped };
  return { action: "skip", reason: decision.reason, message: decision.message, skipped: decision.skipped };
}

/**
 * The operations that remove the workload's in-place record and its label, the record tested as
 * read: a template patch carries the raise itself from then on.
 */
function withoutInPlace(annotations: Record<string, string> | undefined, labels: Record<string, string> | undefined): JsonPatchOperation[] {
  const record = annotations?.[IN_PLACE_MEMORY_ANNOTATION];
  if (record === undefined) return [];
  const path = `/metadata/annotations/${escapeJsonPointerToken(IN_PLACE_MEMORY_ANNOTATION)}`;
  const label = labels?.[IN_PLACE_LABEL] === undefined ? [] : [{ op: "remove" as const, path: `/metadata/labels/${escapeJsonPointerToken(IN_PLACE_LABEL)}` }];
  return [{ op: "test", path, value: record }, { op: "remove", path }, ...label];
}

/** The checked patch of the template (module comment), the scale listed in `status.pendingScales` first. */
async function write(t: Template, input: WriteInput): Promise<WriteResult> {
  const { workload, named, annotations, template } = t;
  const { cluster, status: statusWriter, eventId, appMonitor: am, amRef, now, time, log, warn, dryRun } = input;
  // Decided from the workload's memory; written from the template's own (the in-place part included).
  const changes = foldedChanges(template, input.changes);
  // With the memory before the first scale and the flaps, for the next down-step (`scale-record.ts`).
  const record = scaleRecordOf(input, changes, parseScaleRecord(annotations?.[LAST_SCALE_RECORD_ANNOTATION]));
  // spec.heapFlags: Scale: each flag that fixes a raised container's heap goes up with its limit, in the same patch.
  const heapFlags = heapFlagChanges(input.changes, t.heaps, am.spec.heapFlags ?? "Hold");
  // After a heap error, or for a declared runtime: the heap set with the limit where its default would not follow it (`heap-settings.ts`).
  const { settings } = heapSettings(input.changes, runtimesOf(input), t.heaps);
  const patch = [
    // A Knative Service's patch makes a Revision of the whole template as read: tested whole
    // (resourceVersion), so an edit since is read again and decided from, not stamped out beside ours.
    ...buildTemplatePatch({ templateContainers: template, changes, annotations, time: now, record, ...(workload.kind === "Service" && workload.object.metadata?.resourceVersion !== undefined ? { resourceVersion: workload.object.metadata.resourceVersion } : {}) }),
    ...buildHeapFlagPatch(workload.object.spec.template.spec, heapFlags),
    ...buildHeapSettingPatch(workload.object.spec.template.spec, settings, annotations, ownedAfter(t.heaps, heapFlags, settings)),
    ...withoutInPlace(annotations, workload.object.metadata?.labels),
  ];
  // A dry run writes nothing, so lists nothing.
  const pending = dryRun ? undefined : listPendingScale(statusWriter, amRef, { workload: named, time, event: eventId }, am.raw, log);
  const written = await writeWorkload(
    cluster,
    workload,
    patch,
    podForAdmission(workload, changes),
    (message) => {
      log.warn({ workload: `${workload.kind}/${workload.name}` }, message);
      warn(message);
    },
    pending?.listed,
    dryRun,
  );
  if (written.result === "checked" || pending === undefined) return written.result === "written" ? { ...written, statusFrom: am.raw } : refusedOf(written);
  // Once listed, the writer's answer to that write is the status to start from (no read).
  const statusFrom = (await pending.listed) ? undefined : am.raw;
  if (written.result === "written") return { result: "written", generation: written.generation, statusFrom };
  if (written.result === "conflict") return written;
  await pending.unlist();
  return refusedOf(written);
}

/** The raised containers' runtimes: from their heap errors, else from `spec.containerPolicies`. */
function runtimesOf(input: Pick<WriteInput, "changes" | "heapErrors" | "appMonitor">) {
  return knownRuntimes(input.changes.map((c) => c.container), input.heapErrors ?? [], input.appMonitor.spec);
}

/**
 * The tokens memory-scaler owns after this write, per container (`HEAP_SETTINGS_ANNOTATION`): those
 * it owned, raised where raised, and the settings it adds; undefined when it owns none before or after.
 */
function ownedAfter(heaps: readonly ContainerHeap[], raised: ReturnType<typeof heapFlagChanges>, settings: ReturnType<typeof heapSettings>["settings"]): Record<string, string> | undefined {
  const owned: Record<string, string> = {};
  for (const h of heaps) for (const f of h.flags) if (f.owned === true) owned[h.container] = f.token;
  for (const r of raised) if (r.flag.owned === true) owned[r.container] = r.to;
  for (const s of settings) if (s.recorded) owned[s.container] = s.token;
  return Object.keys(owned).length === 0 ? undefined : owned;
}

/** A write that did not happen as the target says it: checked (a dry run), a lost race, or the refusal's reason. */
function refusedOf(written: Exclude<Awaited<ReturnType<typeof writeWorkload>>, { result: "written" }>): WriteResult {
  if (written.result === "checked" || written.result === "conflict") return written;
  const reason = ({ refused: "AdmissionRefused", overQuota: "RolloutExceedsQuota", unschedulable: "Unschedulable" } as const)[written.result];
  return { result: "refused", reason, message: written.message };
}

/** A written template's `Scaled` Events (with the notes that apply), its outcome message and its rollout. */
function written(t: Template, input: WrittenInput): Written {
  const { workload, named, strategy, replacement } = t;
  const { appMonitor: am, trigger, gitOps: tool, generation, time, eventId, alertPod, fallback } = input;
  const changes = foldedChanges(t.template, input.changes);
  // Followed until it ends (follow-up/); a bare ReplicaSet never replaces its Pods, so it has no rollout.
  const rollout = workload.kind === "ReplicaSet" || generation === undefined ? undefined : { workload: named, generation, startedAt: time, event: eventId };
  if (input.direction === "down") {
    const message = scaledDownNote(workload, changes, replacement);
    return { reason: "ScaledDown", reported: [{ reason: "ScaledDown", changes, replacement, ...(tool === undefined ? {} : { gitOps: gitOpsPatchedNote(workload, tool, changes) }) }], message, rollout };
  }
  // OnDelete: the patch is what the user's strategy asks for, but it reached no Pod; say so.
  const onDelete = waitsForDelete(strategy) ? onDeleteScaledNote(strategy, alertPod, describeChanges(changes)) : undefined;
  const gitOps = tool === undefined ? undefined : gitOpsPatchedNote(workload, tool, changes);
  const heapFlags = heapFlagChanges(input.changes, t.heaps, am.spec.heapFlags ?? "Hold");
  const heap = heapFlags.length === 0 ? undefined : describeHeapChanges(heapFlags);
  const { settings, notes } = heapSettings(input.changes, runtimesOf(input), t.heaps);
  const set = settings.length === 0 ? undefined : describeHeapSettings(settings);
  const scaled: Reported = { reason: "Scaled", changes, multiplier: am.spec.memMultiplier, trigger, onDelete, gitOps, replacement, heap, settings: set, notes };
  const note = `${scaledNote(workload, am.spec.memMultiplier, changes, trigger, replacement)}${heapClause(heap)}${settingsClause(set, notes)}`;
  // InPlaceOrRollout: the Pods could not be resized in place, so they are replaced; say why.
  const fellBack: Reported[] = fallback === undefined ? [] : [{ reason: "InPlaceFallback", message: `${fallback}; wrote the template instead, so the Pods are replaced` }];
  // A Knative Service whose traffic is pinned: the new Revision comes up but serves nothing.
  const pinned = workload.kind === "Service" ? pinnedTrafficNote(workload.name, workload.object.spec.traffic) : undefined;
  const message = onDelete ?? gitOps ?? (fallback === undefined ? note : `${note} (in place: ${fallback})`);
  return { reason: "Scaled", reported: [scaled, ...fellBack], message: pinned === undefined ? message : `${message}; ${pinned}`, rollout };
}
