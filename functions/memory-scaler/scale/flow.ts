/**
 * What memory-scaler does with one firing alert, reconcile-style, the same for every
 * {@link WriteTarget} (a workload's Pod template, `targets/template-target.ts`; its running Pods resized in
 * place under `spec.updateMode` `InPlace` or `InPlaceOrRollout`, `targets/in-place-target.ts`, but for a
 * heap sized at start, rolled out by `targets/heap-rollout-target.ts`; a bare
 * Pod's resize, `targets/pod-resize-target.ts`): observe → plan → act → report, once per round. The same
 * rounds run for a fallback ({@link handleFallback}): the follow-up found a workload's in-place
 * resize failed under `InPlaceOrRollout`, and its recorded memory is written into the template.
 *
 * 0. Only an AppMonitor rule's alert is acted on (`decide/governing.ts` `alertOrigin`): anything else →
 *    `NotAppMonitorAlert`, before any read.
 * 1. Observe (`observe.ts`): the Pod (gone → `PodGone`), the namespace's AppMonitors (the alert's
 *    not there or invalid → `NoAppMonitor`), HPAs and VPAs, then the Pod's owners up to the top
 *    controller the walk knows (`decide/owner-chain.ts`): a Job or an unknown owner of the Pod →
 *    `UnsupportedOwner` (a Warning on the Pod: no template to judge, never scaled, whatever the
 *    Pod carries); a workload another controller owns (a Knative Revision's Deployment) →
 *    `UnknownController` (Warnings on it and the AppMonitor naming that controller: never
 *    patched, whatever the AppMonitor covers); an owner deleted meanwhile → `OwnerGone`; no
 *    controller → the bare Pod is the target, else the workload's template.
 * 2. Plan (`decide/plan.ts`, pure): the governing AppMonitor (`NotCovered`, `AppMonitorNotGoverning`,
 *    `AppMonitorConflict`; a `Conflict` condition on each AppMonitor covering the target when several do),
 *    what the target's last scale leaves, `decideScale` told the target's way, and a raise a heap
 *    flag makes useless held (`FixedHeap`, `decide/fixed-heap.ts`).
 * 3. The last scale made sure of, whatever this alert comes to (`report.ts` `repairReport`): its
 *    Events and status entry repaired, its revert told once. Failures are warnings.
 * 4. Act: the decision's skip (`AtCap` listed in `status.capped`; `ProbableLeak` listed in
 *    `status.probableLeaks` and its alert posted to Alertmanager, a hold that ended written first); the alert's evidence
 *    (its trigger's, `triggers/`: an OOM kill in the Pod read at 1, Prometheus' working set against the
 *    threshold, or Prometheus' prediction against the limit for a trend alert; Prometheus
 *    unavailable → 503); who else sets the memory (`coexist/gate.ts`:
 *    `HPAOnMemory`, `VPAControlled`, `GitOpsManaged`, `Reverted`); the target's one
 *    compare-and-swap write — or, for `spec.mode: DryRun` or an install paused (`PAUSE_SCALING`),
 *    every check of that write (its dry runs, quota, Node fit) and no write: `DryRun`, or what
 *    would have refused it. A lost race starts again at 1, at most `maxAttempts` rounds (then
 *    503): the next round sees what the winner wrote and skips, so deliveries never compound.
 *    Evidence that can lag its alert (an OOM kill the kubelet has not yet written to the Pod's
 *    status) starts again at 1 after each of its trigger's waits before its skip stands
 *    (`triggers/oom-killed.ts`); those rounds write nothing and do not count against `maxAttempts`.
 * 5. Report: the ending's row of `report.ts` applied once — its Events (`../events.ts`) and its
 *    one status write, which also records the outcome in `status.lastOutcome`
 *    (`../status/last-outcome.ts`). Every Event and status write of the rounds is such a row
 *    (`applyReport` is the only writer): the read's end (`NoAppMonitor`'s Warning), `notGoverned`,
 *    the `Conflict` condition, the repair of 3 and a released hold of the leak guard. Their
 *    failure is in the outcome's `warnings`, not an error: what was decided or written stands,
 *    and a retry would only skip.
 *
 * The flow does I/O only through `FlowDeps` (`deps.ts`): the adapters in `../kube/`. Any API
 * server failure before the write → HttpError (the status of its class in
 * `functions/lib/kube-api-errors.ts`: 503, 429, 500 or 422) and nothing written. Sources:
 * DESIGN.md "Decisions that matter for correctness"; memory-scaler's README, "What it does".
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { AlertEventData, AlertTrigger } from "../../lib/alert-event.ts";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, type AppMonitorStatus } from "../../lib/appmonitor.ts";
import { inScope } from "../../lib/namespace-scope.ts";
import { formatTimestamp } from "../../lib/rfc3339.ts";
import { HttpError } from "../../lib/runtime/errors.ts";
import { gateScale } from "../coexist/gate.ts";
import { eventsOf, type Subjects } from "../events.ts";
import type { LeakAlerter } from "../kube/alertmanager.ts";
import type { AppMonitorRef, StatusChange } from "../kube/status-writer.ts";
import type { ProbableLeak } from "../status/leaks.ts";
import { containerStatuses } from "../kube/views.ts";
import { type FallbackRequest, objectRef, type ScaleDownRequest } from "../model.ts";
import type { Outcome, Scale, Skip } from "../outcome.ts";
import { lastOutcomeOf, skipWindowSeconds, withLastOutcome } from "../status/last-outcome.ts";
import { withScales } from "../status/recent-scales.ts";
import type { FlowDeps } from "./deps.ts";
import { heapFailures } from "./decide/fixed-heap.ts";
import { heapErrors } from "./decide/heap-error.ts";
import { heapSizedAtStart } from "./decide/heap-settings.ts";
import { writeWay } from "./decide/heap-relief.ts";
import { heapRolloutTarget } from "./targets/heap-rollout-target.ts";
import { alertOrigin, type ValidAppMonitor } from "./decide/governing.ts";
import { inPlaceTarget } from "./targets/in-place-target.ts";
import { type Observation, observeFiring } from "./observe.ts";
import { type FiringPlan, planFiring } from "./decide/plan.ts";
import { podResizeTarget } from "./targets/pod-resize-target.ts";
import { conflictReports, type Ending, releaseReport, repairReport, type Report, reportOf, statusRef } from "./report.ts";
import type { History } from "./decide/target-view.ts";
import type { WriteTarget } from "./targets/target.ts";
import { templateTarget } from "./targets/template-target.ts";
import { TRIGGERS } from "./triggers/index.ts";
import { checkPeak, planScaleDown } from "./decide/scale-down.ts";
import { quietPeriodMs } from "../status/scale-down.ts";

/**
 * The target an observed Pod names: itself when bare, the template for a fallback, else as
 * `decide/heap-relief.ts` `writeWay` says for the `updateMode` of the AppMonitor the alert names
 * (only it can govern): its workload's running Pods resized in place, or its template; an
 * in-place mode's rollout for a heap sized at start (a trigger answered by a new start: a heap
 * error, the heap's threshold; a declared runtime) says why
 * in `InPlaceFallback` Warnings.
 */
function targetOf(observation: Extract<Observation, { result: "bare" | "observed" }>, namespace: string, pod: string, fallback: boolean, trigger: AlertTrigger): WriteTarget {
  if (observation.result === "bare") return podResizeTarget(observation.pod, namespace, pod);
  const template = () => templateTarget(observation.workload, observation.pod, observation);
  if (fallback) return template();
  const containers = (observation.pod.spec?.containers ?? []).map((c) => c.name);
  const way = writeWay(observation.named.spec.updateMode, TRIGGERS[trigger].needsNewStart === true, containers, observation.named.spec);
  if (way.way === "inPlace") return inPlaceTarget(observation.workload, observation.pod, observation, way.mode);
  return way.heap ? heapRolloutTarget(template(), heapSizedAtStart(containers, observation.named.spec)) : template();
}

/**
 * Writes a report's Events and its one status change, in parallel; resolves when both are done.
 * Their failures are pushed to `warnings`, not thrown: what was decided or written stands.
 */
async function applyReport(
  deps: FlowDeps,
  input: { readonly report: Omit<Report, "outcome">; readonly subjects: Subjects; readonly amRef: AppMonitorRef | undefined; readonly eventId: string; readonly now: Date; readonly warnings: string[]; readonly last?: LastWrite },
): Promise<void> {
  const { report, subjects, amRef, eventId, now, warnings } = input;
  const status = withLast(report.status, input.last, deps.status.limit);
  const [problems] = await Promise.all([
    Promise.all(report.reported.flatMap((reported) => eventsOf(reported, subjects, eventId, now)).map((spec) => deps.events.record(spec))),
    status === undefined || amRef === undefined
      ? undefined
      : ("entry" in status ? deps.status.add(amRef, status.entry, status.from) : deps.status.update(amRef, status.change, status.from)).catch((error: unknown) => void warnings.push((error as Error).message)),
  ]);
  for (const problem of problems) if (problem !== undefined) warnings.push(problem);
}

/** The `status.lastOutcome` change an ending adds to its status write, and the object it starts from. */
interface LastWrite {
  readonly change: StatusChange;
  readonly from: Record<string, unknown> | undefined;
}

/** `status` and then `last`, as one status write (the writer's one round trip); either may be absent. */
function withLast(status: Report["status"], last: LastWrite | undefined, limit: number): Report["status"] {
  if (last === undefined) return status;
  if (status === undefined) return last;
  const first: StatusChange = "entry" in status ? (s) => withScales(s, [status.entry], limit) : status.change;
  return { change: (s) => last.change(first(s)), from: status.from };
}

/** The `status.lastOutcome` write of `outcome` (`../status/last-outcome.ts`), from the AppMonitor `am` as read. */
function lastWrite(outcome: Parameters<typeof lastOutcomeOf>[0], am: ValidAppMonitor, now: Date): LastWrite {
  const last = lastOutcomeOf(outcome, formatTimestamp(now));
  const window = skipWindowSeconds(am.spec.cooldownSeconds);
  return { change: (s) => withLastOutcome(s, last, window), from: am.raw };
}

/** Logs what the repair of the last scale is about; returns it. */
function logRepair<T>(log: Logger, target: WriteTarget, history: History, repair: T): T {
  const workload = `${target.view.workload.kind}/${target.view.workload.name}`;
  if (history.revert !== undefined) log.info({ workload, scaledAt: history.revert.record.time }, "the last scale was reverted");
  if (history.repair?.status !== undefined) log.info({ workload, time: history.repair.time }, "recording a scale the AppMonitor status does not list");
  return repair;
}

/**
 * A lost compare-and-swap: counted, logged, and read again — unless it was the last of
 * `deps.maxAttempts` rounds. @throws HttpError 503 (`Retry-After: 1`) then.
 */
function lostRace(deps: FlowDeps, log: Logger, target: WriteTarget, attempt: number, detail: string): void {
  const { kind, name } = target.view.workload;
  deps.onConflict?.();
  log.info({ attempt, workload: `${kind}/${name}`, detail }, "compare-and-swap lost: reading again");
  if (attempt >= deps.maxAttempts) throw new HttpError(503, `${kind} ${name} changed during each of ${attempt} attempts to ${target.writer.verb} it; retry later`, { headers: { "retry-after": "1" } });
}

const appMonitorRef = (am: ValidAppMonitor) => objectRef(APPMONITOR_API_VERSION, APPMONITOR_KIND, am.metadata.namespace, am.metadata.name, am.metadata.uid);

/**
 * What the rounds run for: a firing alert's Pod and AppMonitor, or a fallback's (a Pod of the
 * workload whose in-place resize failed, its AppMonitor, and why it failed), which has no
 * evidence to check and writes the recorded memory instead of a decision.
 */
interface Entry {
  readonly eventId: string;
  readonly namespace: string;
  readonly pod: string;
  readonly appmonitor: string;
  readonly trigger: AlertTrigger;
  /** The alert; absent for a fallback. */
  readonly data?: AlertEventData;
  /** Why the in-place resize failed; present for a fallback only. */
  readonly fallback?: string;
  /** A down-step of `spec.scaleDown` the follow-up asked for (`decide/scale-down.ts`): no alert, the peak is its evidence. */
  readonly down?: true;
}

/** What {@link act} works from: the round's plan for its target, and what the write needs. */
interface ActInput {
  readonly target: WriteTarget;
  readonly plan: Extract<FiringPlan, { governed: true }>;
  readonly appMonitor: ValidAppMonitor;
  readonly amRef: AppMonitorRef;
  readonly entry: Entry;
  readonly trigger: AlertTrigger;
  /** The alerting Pod's container statuses, read once (`kube/views.ts`). */
  readonly statuses: ReturnType<typeof containerStatuses>;
  readonly now: Date;
  readonly log: Logger;
  readonly warnings: string[];
  /** The round's number among those that lost a compare-and-swap or found none (rounds read again for evidence not counted). */
  readonly attempt: number;
  /** Rounds already read again because the alert's evidence was not there yet. */
  readonly rereads: number;
}

/** {@link act}'s answer when the alert's evidence may not be written yet: read again after `waitMs`. */
interface Reread {
  readonly waitMs: number;
}

/** The outcome message of a dry run made because the install is paused (`PAUSE_SCALING`), before what it would have done. */
export const PAUSED_NOTE = "paused install-wide (PAUSE_SCALING)";

/**
 * One round's act (module comment, 4): the decision's skip, the alert's evidence, the gate,
 * and the target's one write, or its checks only for a dry run. Writes nothing but the target; the caller reports the ending.
 * @returns the ending, `conflict` when the compare-and-swap lost, or a {@link Reread} when the
 * trigger's evidence can lag its alert and has another wait left (`triggers/trigger.ts` `evidenceLagMs`): read again.
 * @throws HttpError when Prometheus or the API server failed before the write, or 503 after the last round's lost race.
 */
async function act(deps: FlowDeps, input: ActInput): Promise<Ending | "conflict" | Reread> {
  const { target, plan, appMonitor: am, entry, trigger, now, log } = input;
  const { decision } = plan;
  const { trend } = am.spec;
  const alerted = entry.data !== undefined;
  const on = TRIGGERS[trigger];
  const seen = { statuses: input.statuses, now, oomWindowSeconds: target.oomWindowSeconds(now), rollsOut: target.view.rewritesHeaps, running: target.view.running, thresholdPercent: am.spec.memThresholdPercent, trend, spec: am.spec };
  // A skip said with what the alert saw that it leaves unanswered (a heap error held, capped, guarded).
  if (decision.action === "skip") return { step: "decided", skip: alerted && on.explain !== undefined ? on.explain(decision, { ...seen, measured: undefined }) : decision };
  // The alert's trigger asks Prometheus what its evidence needs (an OOM kill: nothing; the Pod read is its evidence).
  const measured = alerted ? await on.measure(deps.verifier, { namespace: entry.namespace, pod: entry.pod, containers: decision.changes.map((c) => c.container), trend, spec: am.spec }) : undefined;
  const evidence = { ...seen, measured };
  // A fallback writes what was decided and checked when its alert came; a down-step's evidence is the peak.
  const checked = entry.down === true ? await checkDownStep(deps, am, entry.namespace, target, decision) : alerted ? on.check(decision, evidence) : decision;
  if (checked.action === "skip") {
    const waitMs = alerted ? on.evidenceLagMs?.[input.rereads] : undefined;
    return waitMs === undefined ? { step: "unconfirmed", skip: checked } : { waitMs };
  }
  const { changes } = checked;
  const gate = gateScale({ workload: target.view.workload, changes, gitOpsManaged: am.spec.gitOpsManaged, gitOps: target.view.gitOps, revert: plan.revert, budget: plan.budget, autoscalers: target.view.autoscalers });
  // Paused install-wide: every AppMonitor behaves as DryRun.
  const paused = deps.paused === true && !checked.dryRun;
  const scale: Scale = paused ? { ...checked, dryRun: true } : checked;
  if (gate.action === "skip") return { step: "held", gate, scale };

  const time = formatTimestamp(now);
  const { amRef } = input;
  const { eventId } = entry;
  const { dryRun } = scale;
  const direction = scale.direction === "down" ? { direction: "down" as const } : {};
  const heapErrors = checked.heapErrors === undefined ? {} : { heapErrors: checked.heapErrors };
  const result = await target.writer.write({ cluster: deps.cluster, status: deps.status, eventId, appMonitor: am, amRef, changes, trigger, history: plan, now, time, log, dryRun, warn: (message) => input.warnings.push(message), ...direction, ...heapErrors });
  if (result.result === "conflict") {
    lostRace(deps, log, target, input.attempt, result.message);
    return "conflict";
  }
  if (result.result === "refused") return { step: "refused", reason: result.reason, message: result.message, scale, ...(paused ? { note: PAUSED_NOTE } : {}) };
  if (result.result === "checked") return { step: "dryRun", scale, ...(paused ? { note: PAUSED_NOTE } : {}) };
  const fallback = result.fallback ?? entry.fallback;
  const written = target.writer.written({ changes, appMonitor: am, trigger, gitOps: gate.gitOps, generation: result.generation, time, eventId, alertPod: entry.pod, resized: result.resized, fallback, ...direction, ...heapErrors });
  return { step: "written", written, scale: checked, reverted: gate.reverted, statusFrom: result.statusFrom };
}

/**
 * Handles one firing alert. `eventId` keys the Events so re-deliveries write each Event once.
 * @returns the outcome (the sender gets 204 with its `outcome` and `reason`).
 * @throws HttpError when the API server failed before anything was written (`toHttpFailure`:
 * 503, 429, 500 or 422 by the failure's class), 503 when Prometheus did, or 503 when the
 * compare-and-swap lost `maxAttempts` times in a row.
 */
export async function handleFiring(deps: FlowDeps, eventId: string, data: AlertEventData, log: Logger): Promise<Outcome> {
  const origin = alertOrigin(data);
  if (origin.result === "none") return { pod: `${data.namespace}/${data.pod}`, outcome: "skipped", reason: origin.reason, message: origin.message, attempts: 0 };
  // A scoped install has no permission elsewhere: nothing is read there.
  if (deps.scope !== undefined && !inScope(deps.scope, data.namespace)) {
    return { pod: `${data.namespace}/${data.pod}`, outcome: "skipped", reason: "NamespaceNotWatched", message: `namespace ${data.namespace} is not among WATCH_NAMESPACES`, attempts: 0 };
  }
  return runRounds(deps, { eventId, namespace: data.namespace, pod: data.pod, appmonitor: origin.name, trigger: origin.trigger, data }, log);
}

/**
 * Writes the recorded memory of the workload of `request.pod` into its Pod template: the rounds of
 * {@link handleFiring} with the template target, no evidence (nothing alerted now), the decision
 * being the in-place record's raise (`TargetView.recorded`; none left, e.g. the template changed
 * meanwhile: skipped `TemplateDiffers`), and the gates, checks and trail of any template patch.
 * @throws HttpError as {@link handleFiring} does.
 */
export async function handleFallback(deps: FlowDeps, request: FallbackRequest, log: Logger): Promise<Outcome> {
  return runRounds(deps, { eventId: request.eventId, namespace: request.namespace, pod: request.pod, appmonitor: request.appmonitor, trigger: "threshold", fallback: request.reason }, log);
}

/**
 * Lowers the memory of the workload of `request.pod` one step (`decide/scale-down.ts`): the rounds of
 * {@link handleFiring} with the down-step as the decision (`planScaleDown`), the working set's peak
 * over the quiet period as the evidence (`checkPeak`; Prometheus unavailable → 503, none
 * configured → `NotMeasured`), and the gates, checks, compare-and-swap write and trail of any scale
 * (`ScaledDown` Events, a `recentScales` entry with `direction: down`, `status.lastOutcome`).
 * @throws HttpError as {@link handleFiring} does.
 */
export async function handleScaleDown(deps: FlowDeps, request: ScaleDownRequest, log: Logger): Promise<Outcome> {
  return runRounds(deps, { eventId: request.eventId, namespace: request.namespace, pod: request.pod, appmonitor: request.appmonitor, trigger: "threshold", down: true }, log);
}

/**
 * A down-step's evidence (`decide/scale-down.ts` `checkPeak`): the peak of each container over the quiet
 * period (the record's flaps doubling it), from Prometheus.
 * @throws HttpError 503 when Prometheus is unavailable (`kube/prometheus.ts`).
 */
async function checkDownStep(deps: FlowDeps, am: ValidAppMonitor, namespace: string, target: WriteTarget, scale: Scale): Promise<Skip | Scale> {
  const { scaleDown } = am.spec;
  if (scaleDown === undefined) return { action: "skip", reason: "ScaleDownOff", message: "the AppMonitor sets no spec.scaleDown" };
  if (deps.verifier === undefined) return { action: "skip", reason: "NotMeasured", message: "PROMETHEUS_URL is unset: the working set's peak cannot be read, so no memory is given back" };
  const seconds = quietPeriodMs(scaleDown, target.view.lastRecord?.flaps ?? 0) / 1000;
  const peaks = await deps.verifier.peaks(namespace, target.view.workload.name, scale.changes.map((c) => c.container), seconds);
  return checkPeak(scale, peaks, am.spec.memThresholdPercent, scaleDown.marginPercent);
}

/** The rounds (module comment) for one entry. */
async function runRounds(deps: FlowDeps, entry: Entry, log: Logger): Promise<Outcome> {
  const { eventId, namespace, pod } = entry;
  // The trigger of the alert answered; a fallback answers none.
  const base = { pod: `${namespace}/${pod}`, ...(entry.data === undefined ? {} : { trigger: entry.trigger }) };
  // Kept across rounds: a write's warnings stand whatever a later round comes to.
  const warnings: string[] = [];
  const write = (report: Omit<Report, "outcome">, subjects: Subjects, amRef: AppMonitorRef | undefined, now: Date, last?: LastWrite) => applyReport(deps, { report, subjects, amRef, eventId, now, warnings, ...(last === undefined ? {} : { last }) });
  let rereads = 0;

  for (let attempt = 1; ; attempt += 1) {
    // Observe.
    const observation = await observeFiring(deps.cluster, { namespace, pod, appmonitor: entry.appmonitor }, log, deps.ceilings);
    const now = deps.now();
    if (observation.result === "ended") {
      // No AppMonitor to record it on; a NoAppMonitor Warning on the Pod, when it was read.
      const read = observation.pod;
      const report = reportOf({ step: "ended", reason: observation.reason, message: observation.message, podRead: read !== undefined }, { eventId, now, statusLimit: deps.status.limit, trigger: entry.trigger });
      await write(report, { cooldownSeconds: 0, ...(read === undefined ? {} : { pod: objectRef("v1", "Pod", namespace, pod, read.metadata?.uid) }) }, undefined, now);
      return { ...base, ...report.outcome, attempts: attempt, ...(warnings.length > 0 ? { warnings } : {}) };
    }
    const podRef = objectRef("v1", "Pod", namespace, pod, observation.pod.metadata?.uid);
    const named = observation.named;
    const answer = (identity: object, report: Report): Outcome => ({ ...base, ...identity, ...report.outcome, attempts: attempt, ...(warnings.length > 0 ? { warnings } : {}) });
    if (observation.result === "unsupported") {
      // No template of ours to judge, so never scaled; warn so whoever opted this Pod in learns why.
      const { reason, message, workload } = observation;
      const report = reportOf({ step: "unsupported", reason, message }, { eventId, now, statusLimit: deps.status.limit, trigger: entry.trigger });
      const owned = workload === undefined ? {} : { workload: { kind: workload.kind ?? "", name: workload.name } };
      await write(report, { pod: podRef, appMonitor: appMonitorRef(named), cooldownSeconds: named.spec.cooldownSeconds, ...(workload === undefined ? {} : { workload }) }, statusRef(named), now, lastWrite({ ...base, ...owned, ...report.outcome }, named, now));
      return answer(owned, report);
    }
    const target = targetOf(observation, namespace, pod, entry.fallback !== undefined, entry.data === undefined ? "threshold" : entry.trigger);
    // Said, not guessed: a heap flag in a ConfigMap or Secret is not in the spec (`decide/heap-flags.ts`).
    for (const heap of target.view.heaps.filter((h) => h.unknown.length > 0)) {
      log.info({ container: heap.container, env: heap.unknown }, "heap env vars set from valueFrom are not read: a heap they fix is not seen");
    }
    const withOwner = { workload: target.view.workload };

    // Plan; a fallback's decision is the raise its in-place record holds.
    const statuses = containerStatuses(observation.pod);
    const planned = planFiring({
      target,
      monitors: observation.monitors,
      named,
      alert: {
        pod,
        ...(entry.data?.container === undefined ? {} : { container: entry.data.container }),
        ...(entry.data !== undefined && TRIGGERS[entry.trigger].crossesLimit === true ? { crossingStartedAt: entry.data.startsAt } : {}),
      },
      now,
      statusLimit: deps.status.limit,
      heapFailed: heapFailures(statuses),
      heapErrors: heapErrors(statuses),
      defaultMaxMemory: deps.defaultMaxMemory,
      maxMemoryCeiling: deps.ceilings?.maxMemory,
    });
    // The Conflict condition, whatever the plan comes to; a failed write is a warning of the answer.
    const owner = { kind: target.view.owner.kind, name: target.view.owner.name };
    await Promise.all(conflictReports(planned.conflict, named, owner, now).map(({ amRef, report }) => write(report, { cooldownSeconds: 0 }, amRef, now)));
    if (!planned.governed) {
      // Recorded on the AppMonitor the alert names; NotCovered also said in Warnings.
      const report = reportOf({ step: "notGoverned", reason: planned.reason, message: planned.message }, { eventId, now, statusLimit: deps.status.limit, trigger: entry.trigger });
      await write(report, { pod: podRef, appMonitor: appMonitorRef(named), cooldownSeconds: named.spec.cooldownSeconds, workload: target.view.ref }, statusRef(named), now, lastWrite({ ...base, ...withOwner, ...report.outcome }, named, now));
      return answer(withOwner, report);
    }
    // A fallback writes a raise already decided, and guarded, when its alert came; a down-step is its own plan.
    const plan =
      entry.down === true
        ? { ...planned, decision: downDecision(target, planned.appMonitor, now), leak: undefined }
        : entry.fallback === undefined
          ? planned
          : { ...planned, decision: fallbackDecision(target, planned.appMonitor), leak: undefined };
    const am = plan.appMonitor;
    const amRef = statusRef(am);
    const subjects: Subjects = { pod: podRef, appMonitor: appMonitorRef(am), cooldownSeconds: am.spec.cooldownSeconds, workload: target.view.ref };
    const context = { target, appMonitor: am, eventId, now, statusLimit: deps.status.limit, trigger: entry.trigger };
    const end = async (report: Report): Promise<Outcome> => {
      await write(report, subjects, amRef, now, lastWrite({ ...base, ...withOwner, ...report.outcome }, am, now));
      return answer({ ...withOwner, appmonitor: am.metadata.name }, report);
    };

    // The last scale made sure of, whatever this alert comes to.
    const repair = repairReport(plan, target, am);
    if (repair !== undefined) await write(logRepair(log, target, plan, repair), subjects, amRef, now);

    // A hold of the leak guard ended: its entry cleared (the alert resolved) or dropped first.
    const released = plan.leak?.action === "scale" ? plan.leak.change : undefined;
    if (released !== undefined) {
      await write(releaseReport(released, am, now), subjects, amRef, now);
      if (!released.drop) await postLeak(deps, released.entry, { namespace, appmonitor: am.metadata.name, description: `released: ${released.entry.cleared ?? ""}`, endsAt: formatTimestamp(now) }, warnings);
    }

    // Act, then report: the ending's row of the table, applied once.
    const ending = await act(deps, { target, plan, appMonitor: am, amRef, entry, trigger: entry.trigger, statuses, now, log, warnings, attempt: attempt - rereads, rereads });
    if (ending === "conflict") continue;
    if ("waitMs" in ending) {
      // The evidence may not be written yet (an OOM kill the kubelet has not reported): nothing written, read again.
      log.info({ waitMs: ending.waitMs, reread: rereads + 1 }, "the alert's evidence is not in the Pod's status yet: reading it again");
      await (deps.wait ?? sleep)(ending.waitMs);
      rereads += 1;
      continue;
    }
    // A hold's alert, posted again with every alert it answers (`kube/alertmanager.ts`).
    const held = ending.step === "decided" ? ending.skip.leak : undefined;
    if (held !== undefined) await postLeak(deps, held, { namespace, appmonitor: am.metadata.name, description: ending.step === "decided" ? ending.skip.message : "", endsAt: held.until }, warnings);
    return end(reportOf(ending, context));
  }
}

/** Posts a leak alert when `ALERTMANAGER_URL` is set; a failure is a warning of the outcome. */
async function postLeak(deps: FlowDeps, entry: ProbableLeak, input: Parameters<LeakAlerter["post"]>[1], warnings: string[]): Promise<void> {
  await deps.leakAlerts?.post(entry, input).catch((error: unknown) => void warnings.push((error as Error).message));
}

/** A down-step's decision (`decide/scale-down.ts` `planScaleDown`) from what the target and the AppMonitor say. */
function downDecision(target: WriteTarget, am: ValidAppMonitor, now: Date): Skip | Scale {
  return planScaleDown({
    spec: am.spec,
    appmonitor: am.metadata.name,
    status: am.raw.status as AppMonitorStatus | undefined,
    workload: target.view.workload,
    record: target.view.lastRecord,
    lastScaleTime: target.view.lastScaleTime,
    desired: target.view.desired,
    running: target.view.running,
    now,
  });
}

/** A fallback's decision: the template target's recorded raise, or nothing to write. */
function fallbackDecision(target: WriteTarget, am: ValidAppMonitor): Skip | Scale {
  if (target.view.recorded.length === 0) {
    return { action: "skip", reason: "TemplateDiffers", message: `${target.view.workload.kind} ${target.view.workload.name} carries no in-place memory its Pod template does not (the template changed since, or a later scale wrote it): nothing to roll out` };
  }
  return { action: "scale", changes: target.view.recorded, skipped: [], dryRun: am.spec.mode === "DryRun" };
}
