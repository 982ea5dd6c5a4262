/**
 * A firing alert on a bare Pod (no controller owner reference), resized in place through its
 * `resize` subresource (https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/),
 * and the follow-up's read of such a resize. `scale-flow.ts` hands an observed bare Pod here;
 * the steps mirror a workload scale's:
 *
 * 1. The alert's AppMonitor must govern the Pod: cover its own labels and annotations (a bare Pod
 *    is its own declaration; `governing.ts`), else `NotCovered` / `AppMonitorNotGoverning`.
 * 2. `decideScale` with the Pod's spec as the template and the memory its containers run with
 *    (`status.containerStatuses[*].resources`) as the Pod (`resize.ts` `runningMemory`), and as
 *    last scale the time of memory-scaler's `managedFields` entry for the `resize` subresource
 *    (`lastResizeTime`): the same multiplier, `maxMemory` cap and cooldown. A spec above what runs
 *    (a resize not applied yet, or one the kubelet cannot apply) → `ResizeUnderWay`.
 * 3. The alert's evidence, as for a workload: an OOM kill in the Pod's status (one that ended after
 *    memory-scaler's last resize of it: the container, and its `lastState`, outlive a resize), or the
 *    working set against the threshold (Prometheus).
 * 3a. A Pod a GitOps tool applies (`gitops.ts`, on the Pod's own metadata): `spec.gitOpsManaged`
 *    `Skip` → `GitOpsManaged` (Warnings and a `held` status entry), `Patch` → resized with
 *    `GitOpsManaged` Warnings, as for a workload.
 * 4. `DryRun` → Events and a `recentScales` entry marked `dryRun`.
 * 5. The compare-and-swap JSON Patch of the `resize` subresource (`buildResizePatch`: `test` on
 *    the resourceVersion and on each value decided from), field manager
 *    `appmonitor-memory-scaler`. One request: the API server applies it whole or refuses it whole
 *    (validation, e.g. a QoS class change; ResourceQuota or another admission plugin) →
 *    `AdmissionRefused` and Warning Events, nothing written. A lost race → read again.
 * 6. Normal `Resized` Events on the Pod and the AppMonitor; the status entry and the resize
 *    pending in `status.rollouts` (kind `Pod`, the generation the resize gave the Pod), which the
 *    follow-up (`follow-flow.ts` with {@link readPodResize}) follows to its end.
 * A bare Pod's scale has no last-scale record on the object (the `resize` subresource writes
 * container resources only), so a status or Event write that failed is not repaired later.
 */
import type { Logger } from "pino";
import type { AlertEventData, AlertTrigger } from "../../lib/alert-event.ts";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND } from "../../lib/appmonitor.ts";
import { apiStatus, isPatchConflict, isRefusal, toHttpFailure } from "../../lib/kube-api-errors.ts";
import { formatTimestamp } from "../../lib/rfc3339.ts";
import { HttpError } from "../../lib/runtime/errors.ts";
import { gateScale } from "../coexist/gate.ts";
import { gitOpsOwner, gitOpsPatchedNote } from "../coexist/gitops.ts";
import { eventsOf, type Reported, type Subjects } from "../events.ts";
import { lastResizeTime, memoryOf, runningMemory } from "../kube/views.ts";
import { describeChanges, type ObjectRef } from "../model.ts";
import type { Outcome } from "../outcome.ts";
import { cappedStatus, scaledStatus } from "../status/changes.ts";
import type { PendingRollout } from "../status/rollouts.ts";
import { decideScale } from "./decide.ts";
import type { FlowDeps } from "./deps.ts";
import { afterCheck, checkOOMKilled, checkThreshold, oomWindow } from "./evidence.ts";
import { governingAppMonitor } from "./governing.ts";
import type { Observation } from "./observe.ts";
import type { Scale, Skip } from "./plan.ts";
import { buildResizePatch } from "./resize-patch.ts";

/** What {@link resizeBarePod} needs of the alert and of the read step. */
export interface BarePodInput {
  /** The CloudEvent's id: the key of the Events and the status entry. */
  readonly eventId: string;
  readonly data: AlertEventData;
  readonly trigger: AlertTrigger;
  readonly observation: Extract<Observation, { result: "bare" }>;
  /** This round of read–decide–write, from 1. */
  readonly attempt: number;
}

/**
 * Resizes the bare Pod the alert names, or says why not (module comment).
 * @returns the outcome (`scaled`/`Resized`, `dry-run`, `skipped`), or `conflict` when the
 * compare-and-swap lost (the Pod changed since it was read: read again).
 * @throws HttpError when the API server or Prometheus failed before anything was written
 * (`toHttpFailure` by class; 503 for Prometheus), or 503 when the compare-and-swap lost in round
 * `deps.maxAttempts`.
 */
export async function resizeBarePod(deps: FlowDeps, input: BarePodInput, log: Logger): Promise<Outcome | "conflict"> {
  const { eventId, data, trigger, observation, attempt } = input;
  const { pod, monitors, named } = observation;
  const name = data.pod;
  const base = { pod: `${data.namespace}/${name}`, workload: { kind: "Pod", name }, attempts: attempt };
  const governing = governingAppMonitor({ kind: "Pod", name, template: { metadata: pod.metadata ?? {} } }, monitors, named);
  if (governing.result === "none") return { ...base, outcome: "skipped", reason: governing.reason, message: governing.message };
  const am = governing.appMonitor;
  const amRef = { namespace: am.metadata.namespace, name: am.metadata.name, uid: am.metadata.uid };
  const podRef: ObjectRef = { apiVersion: "v1", kind: "Pod", name, namespace: data.namespace, ...(pod.metadata?.uid === undefined ? {} : { uid: pod.metadata.uid }) };
  const subjects: Subjects = {
    pod: podRef,
    workload: podRef,
    appMonitor: { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name: am.metadata.name, namespace: am.metadata.namespace, ...(am.metadata.uid === undefined ? {} : { uid: am.metadata.uid }) },
    cooldownSeconds: am.spec.cooldownSeconds,
  };
  const now = deps.now();
  const warnings: string[] = [];
  const keepWarning = (error: unknown): void => void warnings.push((error as Error).message);
  const report = async (reported: Reported): Promise<void> => {
    const results = await Promise.all(eventsOf(reported, subjects, eventId, now).map((spec) => deps.events.record(spec)));
    for (const problem of results) if (problem !== undefined) warnings.push(problem);
  };
  const done = (outcome: Omit<Outcome, "pod" | "workload" | "attempts" | "appmonitor">): Outcome => ({ ...base, appmonitor: am.metadata.name, ...outcome, ...(warnings.length > 0 ? { warnings } : {}) });

  const containers = memoryOf(pod.spec);
  const running = runningMemory(pod);
  const lastScaleTime = lastResizeTime(pod.metadata);
  const decision = decideScale({
    podContainers: running,
    templateContainers: containers,
    now,
    spec: am.spec,
    ...(lastScaleTime === undefined ? {} : { lastScaleTime }),
    ...(data.container === undefined ? {} : { alertContainer: data.container }),
  });
  if (decision.action === "skip") {
    // The spec (desired) above what the containers run with is a resize the kubelet has not applied.
    const underWay = decision.reason === "RolloutUnderWay";
    const reason = underWay ? "ResizeUnderWay" : decision.reason;
    const message = underWay ? `Pod ${name} is being resized: its spec asks for more memory than its containers run with (${decision.message})` : decision.message;
    await Promise.all([
      report({ reason, message }),
      // At the cap: listed in status.capped with the AtMaxMemory condition, as a workload is (scale-flow.ts step 4).
      reason === "AtCap" ? deps.status.update(amRef, cappedStatus({ kind: "Pod", name }, decision.skipped, am.spec.maxMemory ?? "", formatTimestamp(now)), am.raw).catch(keepWarning) : undefined,
    ]);
    return done({ outcome: "skipped", reason, message, skipped: decision.skipped });
  }

  // The alert's evidence, as for a workload (scale-flow.ts step 5).
  const plan: Scale = { action: "scale", changes: decision.changes, skipped: decision.skipped, dryRun: decision.dryRun };
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  const measured = trigger === "oomKilled" || deps.verifier === undefined ? undefined : await deps.verifier.workingSets(data.namespace, name, plan.changes.map((c) => c.container));
  const checked: Skip | Scale =
    trigger === "oomKilled"
      ? afterCheck(plan, trigger, checkOOMKilled(plan.changes, statuses, now, oomWindow(lastScaleTime, now)))
      : measured === undefined
        ? plan
        : afterCheck(plan, trigger, checkThreshold(plan.changes, running, measured, am.spec.memThresholdPercent));
  if (checked.action === "skip") return done({ outcome: "skipped", reason: checked.reason, message: checked.message, ...(checked.skipped === undefined ? {} : { skipped: checked.skipped }) });
  const { changes, skipped } = checked;
  const entry = { time: formatTimestamp(now), workload: { kind: "Pod", name }, event: eventId, changes };
  // A Pod Argo CD or Flux applies is theirs as a workload is: their next sync finds the resources
  // changed (and, forcing it, recreates the Pod with the manifest's memory), so `gitOpsManaged`
  // decides here too (`plan.ts` `gateScale`; no HPA or VPA targets a bare Pod, no revert is kept).
  const gitOps = gitOpsOwner(pod.metadata);
  if (gitOps !== undefined) {
    const gate = gateScale({ workload: entry.workload, changes, gitOpsManaged: am.spec.gitOpsManaged, gitOps, revert: undefined, budget: { budget: 0, scales: [], exhausted: false }, autoscalers: { hpas: [], vpas: [] } });
    if (gate.action === "skip") {
      await Promise.all([report({ reason: gate.reason, message: gate.message }), deps.status.add(amRef, { ...entry, dryRun: checked.dryRun, held: "GitOpsManaged" }, am.raw).catch(keepWarning)]);
      return done({ outcome: "skipped", reason: gate.reason, message: gate.message, changes, skipped });
    }
  }
  if (checked.dryRun) {
    await Promise.all([report({ reason: "DryRun", changes, trigger }), deps.status.add(amRef, { ...entry, dryRun: true }, am.raw).catch(keepWarning)]);
    return done({ outcome: "dry-run", reason: "DryRun", message: `would resize in place: ${describeChanges(changes)}`, changes, skipped });
  }

  let generation: number | undefined;
  try {
    ({ generation } = await deps.cluster.resizePod(data.namespace, name, buildResizePatch(containers, changes, pod.metadata?.resourceVersion)));
  } catch (error) {
    if (isPatchConflict(error)) {
      deps.onConflict?.();
      log.info({ attempt, pod: base.pod, detail: apiStatus(error).message }, "compare-and-swap of the resize lost: reading again");
      if (attempt >= deps.maxAttempts) throw new HttpError(503, `Pod ${name} changed during each of ${attempt} attempts to resize it; retry later`, { headers: { "retry-after": "1" } });
      return "conflict";
    }
    if (!isRefusal(error)) throw toHttpFailure(error, `resize Pod ${data.namespace}/${name}`);
    const message = apiStatus(error).message;
    await report({ reason: "AdmissionRefused", message, changes });
    return done({ outcome: "skipped", reason: "AdmissionRefused", message, changes, skipped });
  }

  const rollout: PendingRollout | undefined = generation === undefined ? undefined : { workload: entry.workload, generation, startedAt: entry.time, event: eventId };
  await Promise.all([
    report({ reason: "Resized", changes, multiplier: am.spec.memMultiplier, trigger }),
    gitOps === undefined ? undefined : report({ reason: "GitOpsManaged", message: gitOpsPatchedNote(entry.workload, gitOps, changes) }),
    deps.status.update(amRef, scaledStatus({ ...entry, dryRun: false }, rollout, deps.status.limit), am.raw).catch(keepWarning),
  ]);
  const after = trigger === "oomKilled" ? " after an OOM kill" : "";
  return done({ outcome: "scaled", reason: "Resized", message: `resized Pod ${name} in place by ${am.spec.memMultiplier}${after}: ${describeChanges(changes)}`, changes, skipped });
}
