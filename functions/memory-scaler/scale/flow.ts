/**
 * What memory-scaler does with one firing alert, reconcile-style, each step in a module of its
 * own: observe (`observe.ts`: read the world from the API server), plan (`plan.ts`, pure: from
 * plain data, with `decide.ts`), write once (`write.ts`: compare-and-swap, `patch.ts`), report
 * (`report.ts`, pure: the Events and status entries of each outcome, as one table). This module
 * runs them in order and is the only one that does I/O through the adapters in `FlowDeps` (`flow-deps.ts`).
 *
 * 0. Only an AppMonitor rule's alert is acted on: alertname `AppMonitorMemoryHigh` (trigger
 *    `threshold`) or `AppMonitorOOMKilled` (trigger `oomKilled`) with an `appmonitor` label, whose `namespace`/`pod` name the measured Pod (`governing.ts`
 *    `alertOrigin`); anything else → skip `NotAppMonitorAlert`, before any read.
 * 1. Read the Pod (gone → skip `PodGone`) and the AppMonitors of its namespace (the one the
 *    alert names is not there, or invalid → skip `NoAppMonitor`); beside them, the namespace's
 *    HPAs and VPAs (an API not served counts as none).
 * 2. Walk the Pod's owners to the workload (`owners.ts`; a Job, unknown owner → skip
 *    `UnsupportedOwner` and a Warning Event on the Pod; an owner deleted meanwhile → `OwnerGone`).
 *    A bare Pod (no controller) is resized in place instead (`resize-flow.ts`: reason `Resized`).
 *    This comes before coverage: an unsupported owner has no template to judge and is never
 *    scaled, whatever its Pod carries.
 * 3. The alert's AppMonitor must govern the workload: cover its Pod template — the template's
 *    annotations and labels, never the live Pod's, which anyone allowed to annotate one Pod could
 *    set (`governing.ts`; none covers → skip `NotCovered`; only other AppMonitors do → skip
 *    `AppMonitorNotGoverning`).
 * 3a. The workload's last scale by this AppMonitor (its last-scale record) is made sure of:
 *    its `Scaled` Events written again (deterministic names: a no-op once written) and its
 *    status entry added when `recentScales` does not list it (`repairOf` in `status.ts`), so a
 *    scale whose Event or status write failed is recorded by the next event for the workload —
 *    a re-delivery, a `Cooldown` skip — and never counted twice. Failures are warnings. When the
 *    template's memory is below what that scale set (`reverts.ts`), `Reverted` Warnings say so,
 *    once per reverted scale.
 * 4. `decideScale` (skip reasons there; `AtCap` and `LimitNotInTemplate` also warn on the
 *    workload and the AppMonitor; `AtCap` at most once per workload per `cooldownSeconds`
 *    window, `kube-events.ts` `windowedKey`, and lists the workload in `status.capped` with the
 *    `AtMaxMemory` condition, written once: `capped-status.ts`). A `Cooldown` or `RolloutUnderWay` skip of a StatefulSet or
 *    DaemonSet with `updateStrategy: OnDelete` whose alerting Pod runs less memory than the
 *    template becomes `RolloutWaitsForDelete`, whose message says to delete the Pod.
 * 5. A threshold event, with a verifier: drop containers whose working set is below the
 *    threshold (`BelowThreshold`, `NotMeasured`); Prometheus unavailable → 503. An OOM-kill
 *    event: no Prometheus query (the restarted container's working set is low again); drop
 *    containers whose status in the Pod read at step 1 shows no OOM kill within
 *    `OOM_KILL_RECENT_SECONDS` (`oom.ts`, `NotOOMKilled`).
 * 5a. Who else manages the workload (`plan.ts` `gateScale`): an HPA on memory → `HPAOnMemory`, a
 *    VPA not `Off` → `VPAControlled` (Warnings, once per cooldown window); a GitOps tool with
 *    `spec.gitOpsManaged` `Skip` → `GitOpsManaged` (Warnings and a `held` status entry naming the
 *    manifest values); a reverted workload whose `spec.revertBudgetPerHour` is used → `Reverted`
 *    (a `held` status entry). With `Patch`, the scale goes on with `GitOpsManaged` Warnings.
 * 6. `DryRun` AppMonitor → Events and a `recentScales` entry marked `dryRun`, no patch.
 * 7. Server-side dry run of the JSON Patch and of the Pod the scaled template makes
 *    (`admission-pod.ts`); refused by admission → skip `AdmissionRefused` and a Warning Event
 *    carrying the API server's message. In parallel, the Nodes are listed: when that Pod's memory
 *    request, as the scheduler counts it, exceeds every Node's allocatable memory
 *    (`rollout.ts`) → skip `Unschedulable` and Warning Events naming both; a Node list that
 *    fails or is empty does not block the scale (a warning in the log line). Also in parallel,
 *    the namespace's ResourceQuotas: when the rollout's peak (a Deployment's new Pods beside
 *    `maxSurge` old ones) passes one (`quota.ts`) → skip `RolloutExceedsQuota` and Warning Events.
 *    Beside them, the scale is listed in the AppMonitor's `status.pendingScales`
 *    (`pending-scales.ts`), awaited before the patch: the follow-up tick records from the
 *    workload's last-scale record a scale whose status write (step 9) failed; a refused scale is
 *    taken off the list.
 * 8. The patch: `test` operations on the values decided from make it a compare-and-swap, and it
 *    writes the last-scale annotation that the cooldown reads, and the last-scale record (the
 *    AppMonitor, the event id, the changes, and the hour's earlier scales the revert budget
 *    counts) that step 3a repairs from. A lost race (the `test` failed)
 *    starts again at 1, at most `maxAttempts` rounds; the next round sees the new template and
 *    skips (`Cooldown` / `RolloutUnderWay`), so concurrent deliveries never compound.
 * 9. Normal `Scaled` Events on the workload and the AppMonitor, whose note says that the Pods
 *    are replaced (restarted) to get the new memory (`replacement.ts`), and `PodsReplaced`
 *    Warnings when that loses what they likely hold (a single-replica Deployment, a StatefulSet,
 *    an `emptyDir` volume); for an OnDelete workload also
 *    `RolloutWaitsForDelete` Warnings: the patch reached no Pod; AppMonitor status, with the
 *    rollout the patch started (the generation it gave the workload) pending in
 *    `status.rollouts`, which `follow-flow.ts` follows to its end, and the scale off
 *    `status.pendingScales`. Their failure
 *    is reported in `warnings` but does not fail the request: the scale is done, and a retry
 *    would only skip.
 *
 * Any API server failure before the patch → HttpError (the status of its class in
 * `functions/lib/kube-api-errors.ts`: 503, 429, 500 or 422) and nothing written. Sources: DESIGN.md "Decisions that matter for correctness"; this function's
 * README, "What it does".
 */
import type * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AlertEventData } from "../../lib/alert-event.ts";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND } from "../../lib/appmonitor.ts";
import { formatTimestamp } from "../../lib/rfc3339.ts";
import { HttpError } from "../../lib/runtime/errors.ts";
import { gateScale } from "../coexist/gate.ts";
import { gitOpsPatchedNote } from "../coexist/gitops.ts";
import { revertNote } from "../coexist/reverts.ts";
import { eventsOf, type Reported, scaledNote, type Subjects } from "../events.ts";
import { APPS_V1, describeChanges, formatScaleRecord, type ObjectRef, type Workload } from "../model.ts";
import type { Outcome } from "../outcome.ts";
import { cappedStatus, repairedStatus, scaledStatus } from "../status/changes.ts";
import { withoutPendingScale, withPendingScale } from "../status/pending-scales.ts";
import type { PendingRollout } from "../status/rollouts.ts";
import type { FlowDeps } from "./deps.ts";
import { afterCheck, checkOOMKilled, checkThreshold } from "./evidence.ts";
import { alertOrigin, type ValidAppMonitor } from "./governing.ts";
import { observeFiring } from "./observe.ts";
import { onDeleteScaledNote, waitsForDelete } from "./on-delete.ts";
import { planFiring, type Scale, type Skip } from "./plan.ts";
import { resizeBarePod } from "./pod-resize-target.ts";
import { buildTemplatePatch } from "./template-patch.ts";
import { podForAdmission, writeWorkload } from "./write.ts";

function appMonitorRef(am: ValidAppMonitor): ObjectRef {
  const ref: ObjectRef = { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name: am.metadata.name, namespace: am.metadata.namespace };
  if (am.metadata.uid !== undefined) ref.uid = am.metadata.uid;
  return ref;
}

function workloadRef(workload: Workload): ObjectRef {
  const ref: ObjectRef = { apiVersion: APPS_V1, kind: workload.kind, name: workload.name, namespace: workload.namespace };
  const uid = workload.object.metadata?.uid;
  if (uid !== undefined) ref.uid = uid;
  return ref;
}

function podRef(pod: k8s.V1Pod, namespace: string, name: string): ObjectRef {
  const ref: ObjectRef = { apiVersion: "v1", kind: "Pod", name, namespace };
  if (pod.metadata?.uid !== undefined) ref.uid = pod.metadata.uid;
  return ref;
}

/**
 * Handles one firing alert. `eventId` keys the Events so re-deliveries write each Event once.
 * @returns the outcome (the sender gets 204 with its `outcome` and `reason`).
 * @throws HttpError when the API server failed before anything was written (`toHttpFailure`:
 * 503, 429, 500 or 422 by the failure's class), 503 when Prometheus did, or 503 when the
 * compare-and-swap lost `maxAttempts` times in a row.
 */
export async function handleFiring(deps: FlowDeps, eventId: string, data: AlertEventData, log: Logger): Promise<Outcome> {
  const base = { pod: `${data.namespace}/${data.pod}` };
  const warnings: string[] = [];
  const withWarnings = <T extends object>(outcome: T): T & { warnings?: string[] } => (warnings.length > 0 ? { ...outcome, warnings } : outcome);
  const keepWarning = (error: unknown): void => {
    warnings.push((error as Error).message);
  };
  const report = async (reported: Reported, subjects: Subjects, now: Date): Promise<void> => {
    const results = await Promise.all(eventsOf(reported, subjects, eventId, now).map((spec) => deps.events.record(spec)));
    for (const problem of results) if (problem !== undefined) warnings.push(problem);
  };

  const origin = alertOrigin(data);
  if (origin.result === "none") return { ...base, outcome: "skipped", reason: origin.reason, message: origin.message, attempts: 0 };

  for (let attempt = 1; ; attempt += 1) {
    // Observe.
    const observation = await observeFiring(deps.cluster, { namespace: data.namespace, pod: data.pod, appmonitor: origin.name }, log);
    if (observation.result === "ended") return { ...base, outcome: "skipped", reason: observation.reason, message: observation.message, attempts: attempt };
    if (observation.result === "bare") {
      // No controller: the Pod itself is resized in place (resize-flow.ts).
      const resized = await resizeBarePod(deps, { eventId, data, trigger: origin.trigger, observation, attempt }, log);
      if (resized === "conflict") continue;
      return resized;
    }
    if (observation.result === "unsupported") {
      // No template to judge, so never scaled; warn so whoever opted this Pod in learns why.
      await report({ reason: "UnsupportedOwner", message: observation.message }, { pod: podRef(observation.pod, data.namespace, data.pod), appMonitor: appMonitorRef(observation.named), cooldownSeconds: observation.named.spec.cooldownSeconds }, deps.now());
      return withWarnings({ ...base, outcome: "skipped", reason: "UnsupportedOwner", message: observation.message, attempts: attempt });
    }
    const { workload, pod } = observation;
    const withOwner = { ...base, workload: { kind: workload.kind, name: workload.name } };

    // Plan.
    const now = deps.now();
    const plan = planFiring({ observation, alert: data, now, statusLimit: deps.status.limit });
    if (!plan.governed) return { ...withOwner, outcome: "skipped", reason: plan.reason, message: plan.message, attempts: attempt };
    const am = plan.appMonitor;
    const amRef = { namespace: am.metadata.namespace, name: am.metadata.name, uid: am.metadata.uid };
    const subjects: Subjects = { pod: podRef(pod, data.namespace, data.pod), appMonitor: appMonitorRef(am), cooldownSeconds: am.spec.cooldownSeconds, workload: workloadRef(workload) };
    const withWorkload = { ...withOwner, appmonitor: am.metadata.name };
    const skip = (s: Skip) => withWarnings({ ...withWorkload, outcome: "skipped" as const, reason: s.reason, message: s.message, ...(s.skipped === undefined ? {} : { skipped: s.skipped }), attempts: attempt });

    // The last scale's Events and status entry, made sure of whatever this alert comes to; and
    // its revert, when something lowered what it set, told once (the Events are keyed by that scale).
    const { revert } = plan;
    if (revert !== undefined) log.info({ workload: `${workload.kind}/${workload.name}`, scaledAt: revert.record.time }, "the last scale was reverted");
    if (plan.repair.action === "repair" || revert !== undefined) {
      const repair = plan.repair.action === "repair" ? plan.repair : undefined;
      if (repair?.entry !== undefined) log.info({ workload: `${workload.kind}/${workload.name}`, time: repair.entry.time }, "recording a scale the AppMonitor status does not list");
      await Promise.all([
        repair === undefined
          ? undefined
          : report({ reason: "Scaled", changes: repair.record.changes, multiplier: repair.record.multiplier, trigger: repair.record.trigger ?? "threshold", key: repair.record.event, replacement: plan.replacement }, subjects, now),
        repair?.entry === undefined
          ? undefined
          : deps.status.update(amRef, repairedStatus(repair.entry, { kind: workload.kind, generation: workload.object.metadata?.generation }, repair.record.event, deps.status.limit), am.raw).catch(keepWarning),
        revert === undefined ? undefined : report({ reason: "Reverted", message: revertNote(workload, revert, plan.budget), key: revert.record.event }, subjects, now),
      ]);
    }

    if (plan.decision.action === "skip") {
      const { decision } = plan;
      await Promise.all([
        report({ reason: decision.reason, message: decision.message }, subjects, now),
        decision.reason === "AtCap"
          ? deps.status.update(amRef, cappedStatus(workload, decision.skipped ?? [], am.spec.maxMemory ?? "", formatTimestamp(now)), am.raw).catch(keepWarning)
          : undefined,
      ]);
      return skip(decision);
    }

    // The alert's evidence: an OOM kill in the Pod read above (Prometheus would show the
    // restarted container's low working set), or the working set measured against the threshold.
    let checked: Skip | Scale = plan.decision;
    if (origin.trigger === "oomKilled") {
      const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
      checked = afterCheck(plan.decision, origin.trigger, checkOOMKilled(plan.decision.changes, statuses, now));
    } else if (deps.verifier !== undefined) {
      const measured = await deps.verifier.workingSets(data.namespace, data.pod, plan.decision.changes.map((c) => c.container));
      checked = afterCheck(plan.decision, origin.trigger, checkThreshold(plan.decision.changes, plan.podContainers, measured, am.spec.memThresholdPercent));
    }
    if (checked.action === "skip") return skip(checked);
    const { changes, skipped } = checked;
    const summary = describeChanges(changes);
    const entry = { time: formatTimestamp(now), workload: { kind: workload.kind, name: workload.name }, event: eventId, changes };

    // Who else manages the workload: an autoscaler on memory, a GitOps tool, a writer that reverts.
    const gate = gateScale({ workload, changes, gitOpsManaged: am.spec.gitOpsManaged, gitOps: plan.gitOps, revert, budget: plan.budget, autoscalers: observation });
    if (gate.action === "skip") {
      const { held } = gate;
      await Promise.all([
        // A held revert's Events were written when it was first seen (above).
        gate.reason === "Reverted" ? undefined : report({ reason: gate.reason, message: gate.message }, subjects, now),
        held === undefined ? undefined : deps.status.add(amRef, { ...entry, dryRun: checked.dryRun, held }, am.raw).catch(keepWarning),
      ]);
      return withWarnings({ ...withWorkload, outcome: "skipped", reason: gate.reason, message: gate.message, changes, skipped, attempts: attempt, ...(gate.reason === "Reverted" ? { revert: "Held" as const } : {}) });
    }

    if (checked.dryRun) {
      await Promise.all([report({ reason: "DryRun", changes, trigger: origin.trigger }, subjects, now), deps.status.add(amRef, { ...entry, dryRun: true }, am.raw).catch(keepWarning)]);
      return withWarnings({ ...withWorkload, outcome: "dry-run", reason: "DryRun", message: `would scale: ${summary}`, changes, skipped, attempts: attempt });
    }

    // Write.
    const record = formatScaleRecord({
      time: entry.time,
      appmonitor: am.metadata.name,
      event: eventId,
      multiplier: am.spec.memMultiplier,
      changes,
      ...(origin.trigger === "oomKilled" ? { trigger: origin.trigger } : {}),
      earlier: plan.budget.scales,
    });
    const patch = buildTemplatePatch({ templateContainers: plan.templateContainers, changes, annotations: workload.object.metadata?.annotations, time: now, record });
    // The scale listed in status.pendingScales before the patch (pending-scales.ts): should the
    // status write after the patch fail, the follow-up tick finds the workload there and records
    // the scale from its last-scale record. Written beside the dry runs (no round trip of its
    // own), awaited before the patch; its failure (a status RBAC never granted) only loses that
    // repair path, so the scale goes on. A lost compare-and-swap leaves it listed: the winning
    // scale's status write removes it when it is the same event's, the next tick otherwise.
    const pending = { workload: entry.workload, time: entry.time, event: eventId };
    const listing = deps.status.update(amRef, (status) => withPendingScale(status, pending), am.raw).then(
      () => true,
      (error: unknown) => {
        log.warn({ workload: `${workload.kind}/${workload.name}` }, `could not list the scale in status.pendingScales, scaling anyway: ${(error as Error).message}`);
        return false;
      },
    );
    const write = await writeWorkload(
      deps.cluster,
      workload,
      patch,
      podForAdmission(workload, changes),
      (message) => {
        log.warn({ workload: `${workload.kind}/${workload.name}` }, message);
        warnings.push(message);
      },
      listing,
    );
    const inPending = await listing;
    // Once listed, the writer's answer to that write is the status to start from (no read).
    const statusFrom = inPending ? undefined : am.raw;
    if (write.result === "conflict") {
      deps.onConflict?.();
      log.info({ attempt, workload: `${workload.kind}/${workload.name}`, detail: write.message }, "compare-and-swap lost: reading again");
      if (attempt >= deps.maxAttempts) {
        throw new HttpError(503, `${workload.kind} ${workload.name} changed during each of ${attempt} attempts to scale it; retry later`, {
          headers: { "retry-after": "1" },
        });
      }
      continue;
    }
    if (write.result !== "written") {
      const reason = ({ refused: "AdmissionRefused", overQuota: "RolloutExceedsQuota", unschedulable: "Unschedulable" } as const)[write.result];
      await Promise.all([
        report({ reason, message: write.message, changes }, subjects, now),
        // Nothing was patched: the listing goes (else the next tick drops it).
        inPending ? deps.status.update(amRef, (status) => withoutPendingScale(status, pending), statusFrom).catch((error: unknown) => log.warn((error as Error).message)) : undefined,
      ]);
      return withWarnings({ ...withWorkload, outcome: "skipped", reason, message: write.message, changes, skipped, attempts: attempt });
    }

    // Report: followed until it ends (`follow-flow.ts`); a bare ReplicaSet never replaces its Pods, so it has no rollout.
    const rollout: PendingRollout | undefined =
      workload.kind === "ReplicaSet" || write.generation === undefined
        ? undefined
        : { workload: { kind: workload.kind, name: workload.name }, generation: write.generation, startedAt: entry.time, event: eventId };
    // OnDelete: the patch is what the user's strategy asks for, but it reached no Pod; say so.
    const onDelete = waitsForDelete(plan.strategy) ? onDeleteScaledNote(plan.strategy, data.pod, summary) : undefined;
    const gitOps = gate.gitOps === undefined ? undefined : gitOpsPatchedNote(workload, gate.gitOps, changes);
    const scaled: Reported = { reason: "Scaled", changes, multiplier: am.spec.memMultiplier, trigger: origin.trigger, onDelete, gitOps, replacement: plan.replacement };
    await Promise.all([
      report(scaled, subjects, now),
      deps.status.update(amRef, scaledStatus({ ...entry, dryRun: false, ...(gate.reverted ? { reverted: true } : {}) }, rollout, deps.status.limit), statusFrom).catch(keepWarning),
    ]);
    const note = scaledNote(workload, am.spec.memMultiplier, changes, origin.trigger, plan.replacement);
    return withWarnings({ ...withWorkload, outcome: "scaled", reason: "Scaled", message: onDelete ?? gitOps ?? note, changes, skipped, attempts: attempt, ...(gate.reverted ? { revert: "Repatched" as const } : {}) });
  }
}
