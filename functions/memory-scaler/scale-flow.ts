/**
 * What memory-scaler does with one firing alert, reconcile-style: read the world from the API
 * server, decide from plain data (`decide.ts`), write once (compare-and-swap, `patch.ts`), report.
 *
 * 0. Only an AppMonitor rule's alert is acted on: alertname `AppMonitorMemoryHigh` (trigger
 *    `threshold`) or `AppMonitorOOMKilled` (trigger `oomKilled`) with an `appmonitor` label, whose `namespace`/`pod` name the measured Pod (`governing.ts`
 *    `alertOrigin`); anything else → skip `NotAppMonitorAlert`, before any read.
 * 1. Read the Pod (gone → skip `PodGone`) and the AppMonitors of its namespace (the one the
 *    alert names is not there, or invalid → skip `NoAppMonitor`).
 * 2. Walk the Pod's owners to the workload (`owners.ts`; a Job, bare Pod, unknown owner → skip
 *    `UnsupportedOwner` and a Warning Event on the Pod; an owner deleted meanwhile → `OwnerGone`).
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
 *    a re-delivery, a `Cooldown` skip — and never counted twice. Failures are warnings.
 * 4. `decideScale` (skip reasons there; `AtCap` and `LimitNotInTemplate` also warn on the
 *    workload and the AppMonitor; `AtCap` at most once per workload per `cooldownSeconds`
 *    window, `kube-events.ts` `windowedKey`). A `Cooldown` or `RolloutUnderWay` skip of a StatefulSet or
 *    DaemonSet with `updateStrategy: OnDelete` whose alerting Pod runs less memory than the
 *    template becomes `RolloutWaitsForDelete`, whose message says to delete the Pod.
 * 5. A threshold event, with a verifier: drop containers whose working set is below the
 *    threshold (`BelowThreshold`, `NotMeasured`); Prometheus unavailable → 503. An OOM-kill
 *    event: no Prometheus query (the restarted container's working set is low again); drop
 *    containers whose status in the Pod read at step 1 shows no OOM kill within
 *    `OOM_KILL_RECENT_SECONDS` (`oom.ts`, `NotOOMKilled`).
 * 6. `DryRun` AppMonitor → Events and a `recentScales` entry marked `dryRun`, no patch.
 * 7. Server-side dry run of the JSON Patch and of the Pod the scaled template makes
 *    (`admission-pod.ts`); refused by admission → skip `AdmissionRefused` and a Warning Event
 *    carrying the API server's message. In parallel, the Nodes are listed: when that Pod's memory
 *    request, as the scheduler counts it, exceeds every Node's allocatable memory
 *    (`rollout.ts`) → skip `Unschedulable` and Warning Events naming both; a Node list that
 *    fails or is empty does not block the scale (a warning in the log line). Also in parallel,
 *    the namespace's ResourceQuotas: when the rollout's peak (a Deployment's new Pods beside
 *    `maxSurge` old ones) passes one (`quota.ts`) → skip `RolloutExceedsQuota` and Warning Events.
 * 8. The patch: `test` operations on the values decided from make it a compare-and-swap, and it
 *    writes the last-scale annotation that the cooldown reads, and the last-scale record (the
 *    AppMonitor, the event id, the changes) that step 3a repairs from. A lost race (the `test` failed)
 *    starts again at 1, at most `maxAttempts` rounds; the next round sees the new template and
 *    skips (`Cooldown` / `RolloutUnderWay`), so concurrent deliveries never compound.
 * 9. Normal `Scaled` Events on the workload and the AppMonitor (and, for an OnDelete workload,
 *    `RolloutWaitsForDelete` Warnings: the patch reached no Pod); AppMonitor status, with the
 *    rollout the patch started (the generation it gave the workload) pending in
 *    `status.rollouts`, which `follow-flow.ts` follows to its end. Their failure
 *    is reported in `warnings` but does not fail the request: the scale is done, and a retry
 *    would only skip.
 *
 * Any API server failure before the patch → HttpError (the status of its class in
 * `functions/lib/kube-api-errors.ts`: 503, 429, 500 or 422) and nothing written. Sources: DESIGN.md "Decisions that matter for correctness"; this function's
 * README, "What it does".
 */
import type * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AlertEventData, AlertTrigger } from "../lib/alert-event.ts";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, type AppMonitorStatus } from "../lib/appmonitor.ts";
import { apiStatus, isPatchConflict, isRefusal, toHttpFailure } from "../lib/kube-api-errors.ts";
import { formatTimestamp } from "../lib/rfc3339.ts";
import { HttpError } from "../lib/runtime/errors.ts";
import { podForAdmission } from "./admission-pod.ts";
import type { Cluster } from "./cluster.ts";
import { decideScale, kindOf, type ContainerChange, type ContainerKind, type ContainerMemory, type SkipReason } from "./decide.ts";
import { windowedKey, type EventRecorder, type EventSpec } from "./kube-events.ts";
import { alertOrigin, governingAppMonitor, namedAppMonitor, validAppMonitors, type NoneGoverns, type ValidAppMonitor } from "./governing.ts";
import { APPS_V1, resolveWorkload, type Workload } from "./owners.ts";
import { checkOOMKilled } from "./oom.ts";
import { buildTemplatePatch } from "./patch.ts";
import type { PendingRollout } from "./follow-up.ts";
import { decideQuota, type QuotaView, type RolloutShape } from "./quota.ts";
import { decideFit, onDeleteScaledNote, podMemoryLimit, podMemoryRequest, waitingForDelete, waitsForDelete, type RolloutStrategy } from "./rollout.ts";
import { pendingRollouts, withRolloutStarted } from "./rollout-status.ts";
import { formatScaleRecord, repairOf, withScales } from "./status.ts";
import type { StatusWriter } from "./status-writer.ts";
import { checkThreshold, type Verifier } from "./verify.ts";

/**
 * Why the flow ended as it did; CamelCase, also used as Event reasons and metric labels (the
 * README's "Skip reasons" table lists each with its Warning Events). Besides `decideScale`'s
 * {@link SkipReason}s and the governing ones ({@link NoneGoverns}):
 * - `PodGone`, `UnsupportedOwner`, `OwnerGone`: no workload to scale (step 1–2);
 * - `BelowThreshold`, `NotMeasured`: Prometheus does not confirm the alert (step 5);
 * - `NotOOMKilled`: an OOM-kill event whose containers the Pod does not show OOM-killed
 *   recently (step 5, `oom.ts` `checkOOMKilled`);
 * - `AdmissionRefused`: the dry run of the patch or of the scaled Pod was refused (step 7);
 * - `Unschedulable`: the scaled Pod would request more memory than any Node's
 *   `status.allocatable.memory` (`rollout.ts` `decideFit`): no patch, Warning Events (step 7);
 * - `RolloutExceedsQuota`: the rollout's peak (all new Pods, and a Deployment's `maxSurge` old
 *   ones beside them) would pass a ResourceQuota's `requests.memory` or `limits.memory`
 *   (`quota.ts` `decideQuota`): no patch, Warning Events (step 7);
 * - `RolloutWaitsForDelete`: a StatefulSet or DaemonSet with `updateStrategy: OnDelete` whose
 *   alerting Pod still runs less memory than the template (a `Cooldown` or `RolloutUnderWay`
 *   skip otherwise): it gets the new memory only when deleted (`rollout.ts` `waitingForDelete`);
 *   also any alert of such a workload while the rollout of its last scale is pending in the
 *   AppMonitor's `status.rollouts` (Pods still on the old revision): no scale on top of one that
 *   has not reached its Pods.
 *   After the patch of such a workload the outcome stays `Scaled`, with a `RolloutWaitsForDelete`
 *   Warning Event on the workload and the AppMonitor saying to delete the Pods;
 * - `Scaled`, `DryRun`: patched, or would have been.
 */
export type OutcomeReason =
  | SkipReason
  | NoneGoverns["reason"]
  | "PodGone"
  | "UnsupportedOwner"
  | "OwnerGone"
  | "BelowThreshold"
  | "NotMeasured"
  | "NotOOMKilled"
  | "AdmissionRefused"
  | "Unschedulable"
  | "RolloutExceedsQuota"
  | "RolloutWaitsForDelete"
  | "Scaled"
  | "DryRun";

/** A container left unchanged, and why. */
export interface SkippedContainer {
  readonly container: string;
  readonly reason: string;
  readonly message: string;
}

/** What happened to one firing alert: logged in full; `outcome` and `reason` also answer the sender (`handler.ts`). */
export interface Outcome {
  /** `scaled`: the workload was patched; `dry-run`: it would have been; `skipped`: nothing to do. */
  readonly outcome: "scaled" | "dry-run" | "skipped";
  readonly reason: OutcomeReason;
  readonly message: string;
  /** `<namespace>/<pod>` from the event. */
  readonly pod: string;
  /** Name of the governing AppMonitor, once known. */
  readonly appmonitor?: string;
  readonly workload?: { readonly kind: string; readonly name: string };
  /** For `scaled` and `dry-run`: each container's memory before and after. */
  readonly changes?: readonly ContainerChange[];
  readonly skipped?: readonly SkippedContainer[];
  /** Follow-up writes (Events, status) that failed after the outcome was reached. */
  readonly warnings?: readonly string[];
  /** Rounds of read–decide–write (more than 1 after a lost compare-and-swap; 0 for `NotAppMonitorAlert`, decided before any read). */
  readonly attempts: number;
}

/** What the flow needs; adapters, so tests can substitute them. */
export interface FlowDeps {
  readonly cluster: Cluster;
  readonly events: EventRecorder;
  readonly status: StatusWriter;
  /** Absent: no Prometheus check (`PROMETHEUS_URL` unset). */
  readonly verifier: Verifier | undefined;
  /** Rounds allowed when the compare-and-swap loses; ≥ 1. */
  readonly maxAttempts: number;
  readonly now: () => Date;
  /** Called once per lost compare-and-swap (for a metric). */
  readonly onConflict?: () => void;
}

/**
 * The label a StatefulSet or DaemonSet controller puts on each Pod: the ControllerRevision its
 * template came from (https://kubernetes.io/docs/reference/labels-annotations-taints/#controller-revision-hash).
 */
const CONTROLLER_REVISION_LABEL = "controller-revision-hash";

/** Skip reasons of `decideScale` that also warn on the workload and the AppMonitor: someone has to act. */
const WARNING_SKIPS: ReadonlySet<SkipReason> = new Set(["AtCap", "LimitNotInTemplate"]);

/**
 * The memory a Pod spec sets, as the decision reads it: `containers`, then `initContainers`
 * (a native sidecar when its `restartPolicy` is `Always`), each in spec order.
 */
export function memoryOf(spec: k8s.V1PodSpec | undefined): ContainerMemory[] {
  const one = (c: k8s.V1Container, kind: ContainerKind): ContainerMemory => {
    const memory: ContainerMemory = { name: c.name, kind };
    const request = c.resources?.requests?.memory;
    const limit = c.resources?.limits?.memory;
    if (request !== undefined) memory.request = request;
    if (limit !== undefined) memory.limit = limit;
    return memory;
  };
  return [
    ...(spec?.containers ?? []).map((c) => one(c, "container")),
    ...(spec?.initContainers ?? []).map((c) => one(c, c.restartPolicy === "Always" ? "sidecar" : "init")),
  ];
}

type Ref = k8s.V1ObjectReference & { name: string; namespace: string };

function appMonitorRef(am: ValidAppMonitor): Ref {
  const ref: Ref = { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name: am.metadata.name, namespace: am.metadata.namespace };
  if (am.metadata.uid !== undefined) ref.uid = am.metadata.uid;
  return ref;
}

function workloadRef(workload: Workload): Ref {
  const ref: Ref = { apiVersion: APPS_V1, kind: workload.kind, name: workload.name, namespace: workload.namespace };
  const uid = workload.object.metadata?.uid;
  if (uid !== undefined) ref.uid = uid;
  return ref;
}

/** The note of the `Scaled` Events; one caused by an OOM-kill alert says so. */
function scaledNote(workload: Workload, multiplier: number, changes: readonly ContainerChange[], trigger: AlertTrigger = "threshold"): string {
  const cause = trigger === "oomKilled" ? " after an OOM kill" : "";
  return `scaled ${workload.kind} ${workload.name} by ${multiplier}${cause}: ${describeChanges(changes)}`;
}

/** "memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; …" */
export function describeChanges(changes: readonly ContainerChange[]): string {
  return changes
    .map((c) => `${c.container}: limit ${c.from.limit} → ${c.to.limit}${c.from.request === undefined ? "" : `, request ${c.from.request} → ${c.to.request ?? c.from.request}`}`)
    .join("; ");
}

/**
 * Handles one firing alert. `eventId` keys the Events so re-deliveries write each Event once.
 * @returns the outcome (the sender gets 204 with its `outcome` and `reason`).
 * @throws HttpError when the API server failed before anything was written (`toHttpFailure`:
 * 503, 429, 500 or 422 by the failure's class), 503 when Prometheus did, or 503 when the
 * compare-and-swap lost `maxAttempts` times in a row.
 */
export async function handleFiring(deps: FlowDeps, eventId: string, data: AlertEventData, log: Logger): Promise<Outcome> {
  const { cluster } = deps;
  const podKey = `${data.namespace}/${data.pod}`;
  const base = { pod: podKey };
  const warnings: string[] = [];
  const notify = async (specs: Omit<EventSpec, "key">[], key = eventId): Promise<void> => {
    const results = await Promise.all(specs.map((spec) => deps.events.record({ ...spec, key })));
    for (const problem of results) if (problem !== undefined) warnings.push(problem);
  };
  const withWarnings = <T extends object>(outcome: T): T & { warnings?: string[] } => (warnings.length > 0 ? { ...outcome, warnings } : outcome);

  const origin = alertOrigin(data);
  if (origin.result === "none") return { ...base, outcome: "skipped", reason: origin.reason, message: origin.message, attempts: 0 };

  for (let attempt = 1; ; attempt += 1) {
    const [pod, items] = await Promise.all([
      cluster.readPod(data.namespace, data.pod).catch((error: unknown) => {
        throw toHttpFailure(error, `read Pod ${podKey}`);
      }),
      cluster.listAppMonitors(data.namespace).catch((error: unknown) => {
        throw toHttpFailure(error, `list AppMonitors in namespace ${data.namespace}`);
      }),
    ]);
    if (pod === undefined) return { ...base, outcome: "skipped", reason: "PodGone", message: `Pod ${podKey} no longer exists`, attempts: attempt };

    const monitors = validAppMonitors(data.namespace, items);
    for (const rejected of monitors.rejected) log.warn({ appmonitor: rejected.name, problem: rejected.problem }, "ignoring an AppMonitor with an invalid spec");
    const named = namedAppMonitor(monitors, origin.name);
    if (named.result === "none") return { ...base, outcome: "skipped", reason: named.reason, message: named.message, attempts: attempt };

    // The owner before coverage: coverage is judged on the workload's Pod template, not on the
    // live Pod, whose annotations and labels anyone allowed to edit that one Pod can set.
    const resolution = await resolveWorkload(cluster, pod).catch((error: unknown) => {
      throw toHttpFailure(error, `read the owner of Pod ${podKey}`);
    });
    if (resolution.result === "gone") return { ...base, outcome: "skipped", reason: "OwnerGone", message: resolution.message, attempts: attempt };
    if (resolution.result === "unsupported") {
      // No template to judge, so never scaled; warn so whoever opted this Pod in learns why.
      const podRef: Ref = { apiVersion: "v1", kind: "Pod", name: data.pod, namespace: data.namespace };
      if (pod.metadata?.uid !== undefined) podRef.uid = pod.metadata.uid;
      await notify([{ type: "Warning", reason: "UnsupportedOwner", note: `not scaled: ${resolution.message}`, regarding: podRef, related: appMonitorRef(named.appMonitor) }]);
      return withWarnings({ ...base, outcome: "skipped", reason: "UnsupportedOwner", message: resolution.message, attempts: attempt });
    }
    const workload = resolution.workload;
    const withOwner = { ...base, workload: { kind: workload.kind, name: workload.name } };

    const governing = governingAppMonitor({ kind: workload.kind, name: workload.name, template: workload.object.spec.template }, monitors, named.appMonitor);
    if (governing.result === "none") return { ...withOwner, outcome: "skipped", reason: governing.reason, message: governing.message, attempts: attempt };
    const am = governing.appMonitor;
    const amRef = appMonitorRef(am);
    const wlRef = workloadRef(workload);
    const withWorkload = { ...withOwner, appmonitor: am.metadata.name };
    const templateContainers = memoryOf(workload.object.spec.template.spec);
    const podContainers = memoryOf(pod.spec);
    const annotations = workload.object.metadata?.annotations;
    const strategy: RolloutStrategy = {
      kind: workload.kind,
      name: workload.name,
      updateStrategy: workload.object.spec.updateStrategy?.type,
      updateRevision: workload.object.status?.updateRevision,
      replicas: workload.object.spec.replicas,
    };

    const repair = repairOf({
      lastScale: annotations?.[LAST_SCALE_ANNOTATION],
      record: annotations?.[LAST_SCALE_RECORD_ANNOTATION],
      workload,
      appmonitor: am.metadata.name,
      status: am.raw.status as AppMonitorStatus | undefined,
      limit: deps.status.limit,
    });
    if (repair.action === "repair") {
      const note = scaledNote(workload, repair.record.multiplier, repair.record.changes, repair.record.trigger);
      const { entry } = repair;
      if (entry !== undefined) log.info({ workload: `${workload.kind}/${workload.name}`, time: entry.time }, "recording a scale the AppMonitor status does not list");
      await Promise.all([
        notify(
          [
            { type: "Normal", reason: "Scaled", note, regarding: wlRef, related: amRef },
            { type: "Normal", reason: "Scaled", note, regarding: amRef, related: wlRef },
          ],
          repair.record.event,
        ),
        entry === undefined
          ? undefined
          : deps.status
              .update(
                { namespace: am.metadata.namespace, name: am.metadata.name, uid: am.metadata.uid },
                (status) => {
                  // A scale counted only now had its rollout unrecorded too: follow it from the
                  // generation the workload has now, which includes the patch.
                  const scaled = withScales(status, [entry], deps.status.limit);
                  const generation = workload.object.metadata?.generation;
                  const counted = (scaled.scaleCount ?? 0) > (status?.scaleCount ?? 0);
                  if (!counted || workload.kind === "ReplicaSet" || generation === undefined) return scaled;
                  const rollout = { workload: entry.workload, generation, startedAt: entry.time, event: repair.record.event };
                  return withRolloutStarted(scaled, rollout, `${workload.kind} ${workload.name}: rolling out generation ${generation} (${describeChanges(entry.changes)})`, entry.time);
                },
                am.raw,
              )
              .catch((error: unknown) => {
                warnings.push((error as Error).message);
              }),
      ]);
    }

    const now = deps.now();
    // OnDelete: the last scale's rollout is pending until every Pod was deleted and replaced (the
    // follow-up ends it); until then no scale goes on top of one no Pod has.
    const unreplaced = waitsForDelete(strategy) ? pendingRollouts(am.raw.status).find((r) => r.workload.kind === workload.kind && r.workload.name === workload.name) : undefined;

    const lastScaleTime = annotations?.[LAST_SCALE_ANNOTATION];
    const decision = decideScale({
      podContainers,
      templateContainers,
      now,
      spec: am.spec,
      ...(lastScaleTime === undefined ? {} : { lastScaleTime }),
      ...(data.container === undefined ? {} : { alertContainer: data.container }),
    });
    if (decision.action === "skip") {
      // An OnDelete workload's Pod behind its template is not in a rollout: nothing will replace
      // it until it is deleted, which only the user can do; say that, not Cooldown or RolloutUnderWay.
      const waiting =
        decision.reason === "Cooldown" || decision.reason === "RolloutUnderWay"
          ? waitingForDelete({
              workload: strategy,
              pod: { name: data.pod, revision: pod.metadata?.labels?.[CONTROLLER_REVISION_LABEL] },
              limits: templateContainers
                .filter((c) => kindOf(c) !== "init" && (data.container === undefined || c.name === data.container))
                .map((c) => ({ container: c.name, template: c.limit, pod: podContainers.find((p) => p.name === c.name)?.limit })),
            })
          : undefined;
      if (waiting !== undefined) {
        return withWarnings({ ...withWorkload, outcome: "skipped", reason: "RolloutWaitsForDelete", message: waiting, skipped: decision.skipped, attempts: attempt });
      }
      if (unreplaced !== undefined && (decision.reason === "Cooldown" || decision.reason === "RolloutUnderWay")) {
        return withWarnings({ ...withWorkload, outcome: "skipped", reason: "RolloutWaitsForDelete", message: unreplacedNote(workload, unreplaced), skipped: decision.skipped, attempts: attempt });
      }
      if (WARNING_SKIPS.has(decision.reason)) {
        // A workload at the cap alerts until its memory use drops: one AtCap Warning per
        // workload per cooldown window says it, the deterministic name turns the rest into 409s.
        const capped = decision.reason === "AtCap";
        const key = capped ? windowedKey(`${workload.kind}/${workload.name}/${wlRef.uid ?? ""}`, now, am.spec.cooldownSeconds, eventId) : eventId;
        const note = `not scaled: ${decision.message}${capped && key !== eventId ? ` (this Warning is written at most once every ${am.spec.cooldownSeconds}s)` : ""}`;
        await notify(
          [
            { type: "Warning", reason: decision.reason, note, regarding: wlRef, related: amRef },
            { type: "Warning", reason: decision.reason, note: `${workload.kind} ${workload.name}: ${note}`, regarding: amRef, related: wlRef },
          ],
          key,
        );
      }
      return withWarnings({ ...withWorkload, outcome: "skipped", reason: decision.reason, message: decision.message, skipped: decision.skipped, attempts: attempt });
    }

    if (unreplaced !== undefined) {
      return withWarnings({ ...withWorkload, outcome: "skipped", reason: "RolloutWaitsForDelete", message: unreplacedNote(workload, unreplaced), skipped: decision.skipped, attempts: attempt });
    }

    let changes = decision.changes;
    const skipped: SkippedContainer[] = [...decision.skipped];
    if (origin.trigger === "oomKilled") {
      // The Pod read above is the evidence: Prometheus would show the restarted container's low working set.
      const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
      const checked = checkOOMKilled(changes, statuses, now);
      skipped.push(...checked.skipped);
      changes = checked.keep;
      if (changes.length === 0) {
        return { ...withWorkload, outcome: "skipped", reason: "NotOOMKilled", message: checked.skipped.map((s) => s.message).join("; "), skipped, attempts: attempt };
      }
    } else if (deps.verifier !== undefined) {
      const measured = await deps.verifier.workingSets(data.namespace, data.pod, changes.map((c) => c.container));
      const checked = checkThreshold(changes, podContainers, measured, am.spec.memThresholdPercent);
      skipped.push(...checked.skipped);
      changes = checked.keep;
      if (changes.length === 0) {
        const first = checked.skipped.find((s) => s.reason === "BelowThreshold") ?? checked.skipped[0];
        return {
          ...withWorkload,
          outcome: "skipped",
          reason: first?.reason ?? "NotMeasured",
          message: checked.skipped.map((s) => s.message).join("; "),
          skipped,
          attempts: attempt,
        };
      }
    }
    const summary = describeChanges(changes);
    const entry = { time: formatTimestamp(now), workload: { kind: workload.kind, name: workload.name }, event: eventId, changes };

    if (decision.dryRun) {
      const note = `DryRun: would scale ${workload.kind} ${workload.name}${origin.trigger === "oomKilled" ? " after an OOM kill" : ""}: ${summary}`;
      await Promise.all([
        notify([
          { type: "Normal", reason: "DryRun", note, regarding: wlRef, related: amRef },
          { type: "Normal", reason: "DryRun", note, regarding: amRef, related: wlRef },
        ]),
        deps.status.add({ namespace: am.metadata.namespace, name: am.metadata.name, uid: am.metadata.uid }, { ...entry, dryRun: true }, am.raw).catch((error: unknown) => {
          warnings.push((error as Error).message);
        }),
      ]);
      return withWarnings({ ...withWorkload, outcome: "dry-run", reason: "DryRun", message: `would scale: ${summary}`, changes, skipped, attempts: attempt });
    }

    const record = formatScaleRecord({
      time: entry.time,
      appmonitor: am.metadata.name,
      event: eventId,
      multiplier: am.spec.memMultiplier,
      changes,
      ...(origin.trigger === "oomKilled" ? { trigger: origin.trigger } : {}),
    });
    const patch = buildTemplatePatch({ templateContainers, changes, annotations, time: now, record });
    const write = await writeWorkload(cluster, workload, patch, podForAdmission(workload, changes), (message) => {
      log.warn({ workload: `${workload.kind}/${workload.name}` }, message);
      warnings.push(message);
    });
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
    if (write.result === "refused") {
      const note = `not scaled (${summary}): the API server refused it: ${write.message}`;
      await notify([
        { type: "Warning", reason: "AdmissionRefused", note, regarding: wlRef, related: amRef },
        { type: "Warning", reason: "AdmissionRefused", note: `${workload.kind} ${workload.name}: ${note}`, regarding: amRef, related: wlRef },
      ]);
      return withWarnings({ ...withWorkload, outcome: "skipped", reason: "AdmissionRefused", message: write.message, changes, skipped, attempts: attempt });
    }
    if (write.result === "overQuota" || write.result === "unschedulable") {
      const reason = write.result === "overQuota" ? "RolloutExceedsQuota" : "Unschedulable";
      const note = `not scaled (${summary}): ${write.message}`;
      await notify([
        { type: "Warning", reason, note, regarding: wlRef, related: amRef },
        { type: "Warning", reason, note: `${workload.kind} ${workload.name}: ${note}`, regarding: amRef, related: wlRef },
      ]);
      return withWarnings({ ...withWorkload, outcome: "skipped", reason, message: write.message, changes, skipped, attempts: attempt });
    }

    const note = scaledNote(workload, am.spec.memMultiplier, changes, origin.trigger);
    // Followed until it ends (`follow-flow.ts`); a bare ReplicaSet never replaces its Pods, so it has no rollout.
    const rollout: PendingRollout | undefined =
      workload.kind === "ReplicaSet" || write.generation === undefined
        ? undefined
        : { workload: { kind: workload.kind, name: workload.name }, generation: write.generation, startedAt: entry.time, event: eventId };
    // OnDelete: the patch is what the user's strategy asks for, but it reached no Pod; say so.
    const onDelete = waitsForDelete(strategy) ? onDeleteScaledNote(strategy, data.pod, summary) : undefined;
    await Promise.all([
      notify([
        { type: "Normal", reason: "Scaled", note, regarding: wlRef, related: amRef },
        { type: "Normal", reason: "Scaled", note, regarding: amRef, related: wlRef },
        ...(onDelete === undefined
          ? []
          : ([
              { type: "Warning", reason: "RolloutWaitsForDelete", note: onDelete, regarding: wlRef, related: amRef },
              { type: "Warning", reason: "RolloutWaitsForDelete", note: onDelete, regarding: amRef, related: wlRef },
            ] as const)),
      ]),
      deps.status
        .update(
          { namespace: am.metadata.namespace, name: am.metadata.name, uid: am.metadata.uid },
          (status) => {
            const scaled = withScales(status, [{ ...entry, dryRun: false }], deps.status.limit);
            return rollout === undefined ? scaled : withRolloutStarted(scaled, rollout, `${workload.kind} ${workload.name}: rolling out generation ${rollout.generation} (${summary})`, entry.time);
          },
          am.raw,
        )
        .catch((error: unknown) => {
          warnings.push((error as Error).message);
        }),
    ]);
    return withWarnings({ ...withWorkload, outcome: "scaled", reason: "Scaled", message: onDelete ?? note, changes, skipped, attempts: attempt });
  }
}

type WriteResult =
  | { result: "written"; generation: number | undefined }
  | { result: "conflict"; message: string }
  | { result: "refused"; message: string }
  | { result: "overQuota"; message: string }
  | { result: "unschedulable"; message: string };

/** The note of a `RolloutWaitsForDelete` skip while the last scale's OnDelete rollout is pending. */
function unreplacedNote(workload: Workload, rollout: PendingRollout): string {
  const pods = rollout.waitingPods ?? [];
  const which = pods.length > 0 ? `Pod${pods.length === 1 ? "" : "s"} ${pods.join(", ")} still run${pods.length === 1 ? "s" : ""} the old revision` : "its Pods still run the old revision";
  return `${workload.kind} ${workload.name} has updateStrategy OnDelete and its last scale (generation ${rollout.generation}, ${rollout.startedAt}) has not reached every Pod: ${which}; no further scale until they are deleted and replaced`;
}

/** The peak of a rollout depends on these (`quota.ts`). */
function shapeOf(workload: Workload): RolloutShape {
  const spec = workload.object.spec;
  return { kind: workload.kind, name: workload.name, replicas: spec.replicas ?? 1, strategy: spec.strategy?.type, maxSurge: spec.strategy?.rollingUpdate?.maxSurge };
}

function quotaView(quota: k8s.V1ResourceQuota): QuotaView {
  return {
    name: quota.metadata?.name ?? "",
    scoped: (quota.spec?.scopes?.length ?? 0) > 0 || quota.spec?.scopeSelector !== undefined,
    hard: quota.status?.hard ?? {},
    used: quota.status?.used ?? {},
  };
}

/**
 * Dry-runs the patch and the Pod it would produce, and lists the Nodes, all three in parallel
 * (the Node list costs no round trip of its own); then, when the patch and the Pod pass and the
 * Pod fits some Node (`rollout.ts` `decideFit`), writes the patch. Failures are reported in this
 * order: the patch's (a lost race makes the rest moot), the Pod's admission, the fit. A Node list
 * that fails — forbidden by RBAC that predates it, the API server unavailable — or that says
 * nothing (no Node, none reporting allocatable memory) never blocks the scale: `onWarning` hears
 * why and the write goes on.
 */
async function writeWorkload(
  cluster: Cluster,
  workload: Workload,
  patch: ReturnType<typeof buildTemplatePatch>,
  pod: k8s.V1Pod,
  onWarning: (message: string) => void,
): Promise<WriteResult> {
  const { kind, name, namespace } = workload;
  const classify = (error: unknown, doing: string): WriteResult => {
    if (isPatchConflict(error)) return { result: "conflict", message: apiStatus(error).message };
    if (isRefusal(error)) return { result: "refused", message: apiStatus(error).message };
    throw toHttpFailure(error, doing);
  };
  const [patchTrial, podTrial, nodes, quotas] = await Promise.allSettled([
    cluster.patchWorkload(kind, namespace, name, patch, true),
    cluster.dryRunCreatePod(namespace, pod),
    cluster.listNodeAllocatableMemory(),
    cluster.listResourceQuotas(namespace),
  ]);
  if (patchTrial.status === "rejected") return classify(patchTrial.reason, `dry-run the patch of ${kind} ${namespace}/${name}`);
  if (podTrial.status === "rejected") return classify(podTrial.reason, `dry-run a Pod of ${kind} ${namespace}/${name}`);
  if (quotas.status === "rejected") {
    onWarning(`could not list ResourceQuotas to check that the rollout fits them (scaling anyway): ${apiStatus(quotas.reason).message}`);
  } else if (quotas.value.length > 0) {
    const before = workload.object.spec.template.spec ?? { containers: [] };
    const after = pod.spec ?? { containers: [] };
    const fit = decideQuota(
      shapeOf(workload),
      { request: podMemoryRequest(before), limit: podMemoryLimit(before) },
      { request: podMemoryRequest(after), limit: podMemoryLimit(after) },
      quotas.value.map(quotaView),
    );
    if (fit.result === "refused") return { result: "overQuota", message: fit.message };
  }
  if (nodes.status === "rejected") {
    onWarning(`could not list Nodes to check that the scaled Pod fits one (scaling anyway): ${apiStatus(nodes.reason).message}`);
  } else {
    const fit = decideFit(podMemoryRequest(pod.spec ?? { containers: [] }), nodes.value);
    if (fit.result === "unschedulable") return { result: "unschedulable", message: fit.message };
    if (fit.result === "unknown") onWarning(`${fit.message} (scaling anyway)`);
  }
  try {
    const { generation } = await cluster.patchWorkload(kind, namespace, name, patch, false);
    return { result: "written", generation };
  } catch (error) {
    return classify(error, `patch ${kind} ${namespace}/${name}`);
  }
}
