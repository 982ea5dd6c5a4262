/**
 * A workload's running Pods resized in place as a {@link WriteTarget} (`spec.updateMode` `InPlace`
 * or `InPlaceOrRollout`): the multiplier, cap, cooldown, gates and trail of a template patch, the
 * Pods' memory raised through their `resize` subresource, the Pod template left alone (DESIGN.md
 * "In place for workloads"). Built on the workload's template target (`template-target.ts`), whose
 * coverage, history and last-scale record it shares; what differs:
 *
 * - Decides from the workload's memory (the template's raised by its in-place record) against what
 *   the alerting Pod's containers run with (`status.containerStatuses[*].resources`, as for a bare
 *   Pod): a spec above that is a resize the kubelet has not applied, `ResizeUnderWay`. A Pod that
 *   runs less than the workload's memory without a resize under way (created while the admission
 *   policy was not there) is resized up to it: no new scale, so no multiplier and no cooldown.
 * - An OOM kill counts only when it ended after the last scale (the container outlives a resize).
 * - No GitOps tool is crossed (the template does not change), so `GitOpsManaged` holds nothing; an
 *   HPA on memory or a VPA still would fight the Pods' memory and hold the scale.
 * - Writes (`write`): dry runs of every running Pod's resize (a dry run of the scale stops after
 *   them and a dry run of the claim), then the claim (`in-place-patch.ts`:
 *   the workload's metadata, a compare-and-swap), listed in `status.pendingScales` first as a
 *   template patch is, then the resizes, each a compare-and-swap on its Pod's values. A refused dry
 *   run writes nothing: `InPlace` → `AdmissionRefused` naming the Pod and the API server's message;
 *   `InPlaceOrRollout` → the template target's write, with `InPlaceFallback` Warnings (unless a
 *   GitOps tool applies the workload and `spec.gitOpsManaged` is `Skip`: then as `InPlace`).
 * - What follows: `Resized` Events on the workload and the AppMonitor naming the Pods, and the
 *   resize pending in `status.rollouts` with its Pods (`follow-up/in-place.ts` follows them).
 * - Never built for a raise that must reach a heap its runtime sized at start (a heap error, a
 *   declared runtime): that one rolls out (`../decide/heap-relief.ts`), as a resize is no relief.
 */
import type * as k8s from "@kubernetes/client-node";
import { IN_PLACE_MEMORY_ANNOTATION, type UpdateMode } from "../../../lib/appmonitor.ts";
import { apiStatus, isPatchConflict, isRefusal, toHttpFailure } from "../../../lib/kube-api-errors.ts";
import { gitOpsOwner } from "../../coexist/gitops.ts";
import { effectiveMemory, formatInPlaceRecord, type InPlaceEntry, parseInPlaceRecord, podChanges, withInPlaceChanges } from "../../in-place.ts";
import { isRevisionPodOf, servicePodSelector, userContainers } from "../../knative.ts";
import { memoryOf, runningMemory, selectorString } from "../../kube/views.ts";
import { describeChanges, type Workload } from "../../model.ts";
import { scaledDownNote } from "../../events.ts";
import { scaleRecordOf } from "./scale-record.ts";
import { oomWindow } from "../decide/evidence.ts";
import { buildInPlaceClaimPatch } from "./in-place-patch.ts";
import { buildResizePatch } from "./resize-patch.ts";
import type { TargetView } from "../decide/target-view.ts";
import type { ResizedPod, WriteInput, WriteResult, WriteTarget } from "./target.ts";
import { templateTarget } from "./template-target.ts";
import { listPendingScale } from "./write.ts";

/**
 * Whether `pod` is one of `workload`'s: its controller is the workload (a Deployment's through its
 * ReplicaSet `<name>-<pod-template-hash>`, a Knative Service's through its Revision's:
 * `../../knative.ts` `isRevisionPodOf`). The admission policy's rule too.
 */
export function isPodOf(workload: Workload, pod: k8s.V1Pod): boolean {
  if (workload.kind === "Service") return isRevisionPodOf({ name: workload.name, uid: workload.object.metadata?.uid }, pod);
  const owner = pod.metadata?.ownerReferences?.find((r) => r.controller === true && r.apiVersion === "apps/v1");
  if (owner === undefined) return false;
  if (workload.kind !== "Deployment") return owner.kind === workload.kind && owner.uid === workload.object.metadata?.uid;
  const hash = pod.metadata?.labels?.["pod-template-hash"];
  return owner.kind === "ReplicaSet" && hash !== undefined && owner.name === `${workload.name}-${hash}`;
}

/** The in-place target of `workload`, whose Pod `pod` alerted, under `mode` (module comment). */
export function inPlaceTarget(workload: Workload, pod: k8s.V1Pod, autoscalers: TargetView["autoscalers"], mode: Exclude<UpdateMode, "Rollout">): WriteTarget {
  const base = templateTarget(workload, pod, autoscalers);
  const { metadata, spec } = workload.object;
  const template = memoryOf(spec.template.spec);
  const record = parseInPlaceRecord(metadata?.annotations?.[IN_PLACE_MEMORY_ANNOTATION]);
  // A Revision Pod's queue-proxy is Serving's: never resized (nothing of the Service's template sets it).
  const mine = <T extends { name: string }>(memory: T[]): T[] => (workload.kind === "Service" ? userContainers(memory) : memory);
  const running = mine(runningMemory(pod));
  const specMemory = mine(memoryOf(pod.spec));
  const { kind, name } = base.view.workload;
  // Containers the alerting Pod runs short of the workload's memory, and whether a resize is asking for it.
  const behind = podChanges(running, base.view.desired);
  const resizing = podChanges(running, specMemory).length > 0;

  /** The claim of a new scale (`in-place-patch.ts`): the last-scale record and the in-place record `inPlace`. */
  function claimOf(input: WriteInput, inPlace: readonly InPlaceEntry[] | undefined) {
    const { time, changes } = input;
    const record = scaleRecordOf(input, changes, base.view.lastRecord, "inPlace");
    return buildInPlaceClaimPatch({ template, resourceVersion: metadata?.resourceVersion, annotations: metadata?.annotations, labels: metadata?.labels, time, record, inPlace: formatInPlaceRecord(inPlace ?? []) });
  }

  async function write(input: WriteInput): Promise<WriteResult> {
    const { cluster, changes, appMonitor: am, log } = input;
    const namespace = workload.namespace;
    // Up to the workload's memory (a Pod behind it), or a new scale of it, recorded.
    const catchUp = changes.every((c) => base.view.desired.some((d) => d.name === c.container && d.limit === c.to.limit));
    const inPlace = catchUp ? record : withInPlaceChanges(template, record, changes);
    const target = effectiveMemory(template, inPlace);
    // A Knative Service has no selector of its own: its Pods are those Serving labels with its name.
    const selector = workload.kind === "Service" ? servicePodSelector(name) : selectorString(spec.selector);
    const pods = selector === undefined ? [] : (await cluster.listPods(namespace, selector).catch((error: unknown) => {
      throw toHttpFailure(error, `list the Pods of ${kind} ${namespace}/${name}`);
    }));
    const resizes = pods
      .filter((p) => isPodOf(workload, p) && p.metadata?.deletionTimestamp === undefined && p.spec?.nodeName !== undefined)
      .map((p) => ({ name: p.metadata?.name ?? "", containers: memoryOf(p.spec), changes: podChanges(memoryOf(p.spec), target, input.direction === "down") }))
      .filter((r) => r.changes.length > 0);
    // Tested on the values only: a Pod's resourceVersion moves with each status update of its kubelet.
    const resize = (r: (typeof resizes)[number], dryRun: boolean) => cluster.resizePod(namespace, r.name, buildResizePatch(r.containers, r.changes, undefined), dryRun);

    const trials = await Promise.allSettled(resizes.map((r) => resize(r, true)));
    const refusals: string[] = [];
    for (const [i, trial] of trials.entries()) {
      if (trial.status === "fulfilled") continue;
      const pod = resizes[i]?.name ?? "";
      if (isPatchConflict(trial.reason)) return { result: "conflict", message: `Pod ${pod}: ${apiStatus(trial.reason).message}` };
      if (!isRefusal(trial.reason)) throw toHttpFailure(trial.reason, `dry-run the resize of Pod ${namespace}/${pod}`);
      refusals.push(`Pod ${pod}: ${apiStatus(trial.reason).message}`);
    }
    if (refusals.length > 0) {
      const why = `the API server refused the in-place resize of ${refusals.join("; ")}`;
      const held = gitOpsOwner(metadata) !== undefined && am.spec.gitOpsManaged !== "Patch";
      if (mode === "InPlace" || held) return { result: "refused", reason: "AdmissionRefused", message: held ? `${why}; not rolled out instead: a GitOps tool applies ${kind} ${name} and spec.gitOpsManaged is Skip` : why };
      const written = await base.writer.write(input);
      return written.result === "written" ? { ...written, fallback: why } : written;
    }
    // A dry run: the resizes passed; the claim is dry-run too (admission may judge the workload's metadata).
    if (input.dryRun) {
      if (catchUp) return { result: "checked" };
      try {
        await cluster.patchWorkload(workload.kind, namespace, name, claimOf(input, inPlace), true);
        return { result: "checked" };
      } catch (error) {
        if (isPatchConflict(error)) return { result: "conflict", message: apiStatus(error).message };
        if (isRefusal(error)) return { result: "refused", reason: "AdmissionRefused", message: apiStatus(error).message };
        throw toHttpFailure(error, `dry-run the patch of ${kind} ${namespace}/${name}`);
      }
    }

    let statusFrom: Record<string, unknown> | undefined = am.raw;
    if (!catchUp) {
      const { time, eventId } = input;
      const pending = listPendingScale(input.status, input.amRef, { workload: base.view.workload, time, event: eventId }, am.raw, log);
      const claim = claimOf(input, inPlace);
      await pending.listed;
      try {
        await cluster.patchWorkload(workload.kind, namespace, name, claim, false);
      } catch (error) {
        await pending.unlist();
        if (isPatchConflict(error)) return { result: "conflict", message: apiStatus(error).message };
        if (isRefusal(error)) return { result: "refused", reason: "AdmissionRefused", message: apiStatus(error).message };
        throw toHttpFailure(error, `patch ${kind} ${namespace}/${name}`);
      }
      if (await pending.listed) statusFrom = undefined;
    }
    // The claim stands; a resize that fails now (the Pod changed since its dry run) is a warning,
    // and the Pod gets the memory when it crosses the threshold (it is behind the workload's memory).
    const resized: ResizedPod[] = [];
    const results = await Promise.allSettled(resizes.map((r) => resize(r, false)));
    for (const [i, result] of results.entries()) {
      const pod = resizes[i]?.name ?? "";
      if (result.status === "fulfilled") resized.push({ name: pod, generation: result.value.generation ?? 0 });
      else input.warn(`could not resize Pod ${pod} in place: ${apiStatus(result.reason).message}`);
    }
    return { result: "written", generation: metadata?.generation, statusFrom, resized };
  }

  return {
    view: {
      ...base.view,
      running,
      // A running Pod's command, args and env are immutable: a resize cannot raise a heap flag.
      rewritesHeaps: false,
      // The template does not change: nothing for a GitOps tool to put back.
      gitOps: undefined,
    },
    oomWindowSeconds: (now) => oomWindow(base.view.lastScaleTime, now),
    history: base.history,
    refine(decision, am, alert) {
      if (behind.length > 0 && resizing) {
        const message = `Pod ${alert.pod} is being resized: its spec asks for more memory than its containers run with (${describeChanges(behind)})`;
        return { action: "skip", reason: "ResizeUnderWay", message, skipped: decision.skipped };
      }
      // Behind the workload's memory with no resize under way: brought up to it, not scaled again.
      if (behind.length > 0) return { action: "scale", changes: behind, skipped: decision.skipped, dryRun: am.spec.mode === "DryRun" };
      // No rollout to wait for (an OnDelete workload's Pods are resized like any other's).
      if (decision.action === "scale") return decision;
      return { action: "skip", reason: decision.reason, message: decision.message, skipped: decision.skipped };
    },
    writer: {
      verb: "resize",
      wouldDo: "would resize in place",
      scaledReason: "Resized",
      write,
      written(input) {
        if (input.fallback !== undefined) return base.writer.written(input);
        const { changes, appMonitor: am, trigger, time, eventId, generation } = input;
        const pods = (input.resized ?? []).map((p) => p.name);
        const rollout = pods.length === 0 ? undefined : { workload: base.view.workload, generation: generation ?? 0, startedAt: time, event: eventId, inPlace: { pods: input.resized ?? [] } };
        if (input.direction === "down") {
          return { reason: "ScaledDown", reported: [{ reason: "ScaledDown", changes, pods }], message: `${scaledDownNote(workload, changes)} in place (${pods.length === 0 ? "no running Pod needed it" : `Pods ${pods.join(", ")}`})`, rollout };
        }
        const after = trigger === "oomKilled" ? " after an OOM kill" : "";
        const which = pods.length === 0 ? "no running Pod needed it" : `Pod${pods.length === 1 ? "" : "s"} ${pods.join(", ")}`;
        return {
          reported: [{ reason: "Resized", changes, multiplier: am.spec.memMultiplier, trigger, pods }],
          message: `resized ${kind} ${name} in place by ${am.spec.memMultiplier}${after} (${which}): ${describeChanges(changes)}`,
          rollout,
        };
      },
    },
  };
}
