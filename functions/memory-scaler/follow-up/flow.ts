/**
 * The follow-up of the rollouts memory-scaler started, on each tick of a PingSource (the
 * Trigger `memory-scaler-rollouts-ping`, knative/eventing/triggers.yaml): level-based, so a lost
 * or repeated tick costs nothing but latency.
 *
 * 1. One LIST of the AppMonitors of every namespace, from the API server's watch cache. An
 *    AppMonitor whose `status.capped` lists workloads at a cap other than its `spec.maxMemory`
 *    now drops them (`status/capped.ts`), and one whose `status.probableLeaks` holds a window that
 *    has ended drops it (`status/leaks.ts`; a status write, no read). None with `status.rollouts`
 *    or `status.pendingScales`: done, nothing else is read.
 * 1a. For each scale still listed in `status.pendingScales` (`status/pending-scales.ts`: listed before
 *    its patch, taken off by the status write that records it, so one listed here is a scale
 *    whose status write failed, one in flight, or one that lost its compare-and-swap): GET its
 *    workload; `decidePendingScale` says whether the workload's last-scale record is this scale's.
 *    Then the scale is recorded from it (`repairedStatus`: its `recentScales` entry and
 *    `scaleCount` unless listed already, its rollout pending from the generation the workload has
 *    now, the entry off the list) and its `Scaled` Events (and `PodsReplaced`) written again under
 *    the id of the event that scaled; or the entry is dropped (the patch never landed), or kept
 *    for the next tick while the patch may still be in flight.
 * 2. For each pending rollout: GET the workload and LIST its Pods (by its selector), in
 *    parallel; `decideFollowUp` (`follow-up/rollout.ts`, pure) says where it stands. A bare Pod's
 *    in-place resize (kind `Pod`): GET the Pod; `decideResizeFollowUp` (`follow-up/resize.ts`)
 *    reads its `PodResizePending`/`PodResizeInProgress` conditions and container statuses; while
 *    it is pending, the condition's message says why (`withResizeProgress`). A workload's Pods
 *    resized in place (an entry with `inPlace`): GET each of them; `decideInPlaceFollowUp`
 *    (`follow-up/in-place.ts`) judges them alike, and under `spec.updateMode: InPlaceOrRollout` a
 *    failed resize falls back: the resize ends `RolloutFailed`, and `deps.fallBack` (the scale
 *    flow) writes the recorded memory into the template, which starts a rollout of its own.
 * 3. Ended: the condition `RolledOut` on the AppMonitor (True, or False with the failure's
 *    reason) and the entry removed from `status.rollouts`; an Event on the workload and one on the
 *    AppMonitor (Normal `RolledOut`, Warning `RolloutFailed`, named after the workload (and its uid), the
 *    generation and the result, so a repeated tick writes none); the metric
 *    `appmonitor_memory_scaler_rollouts_total{kind,result,reason}`. OnDelete still waiting: the
 *    entry names the Pods on the old revision. `stuckRollout: DeletePod`: the crash-looping Pod is
 *    deleted (its uid as precondition) and a Warning `DeletedStuckPod` says so.
 * 4. Down-steps (`spec.scaleDown`, `follow-up/scale-down.ts`): the workloads an AppMonitor's status
 *    shows raised and due, each read and handed to the scale flow (`deps.scaleDown`).
 * Any API failure is thrown once every other rollout was looked at (503 etc., by its class): the
 * Broker retries the tick, and what was done is not done twice.
 */
import type { Logger } from "pino";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, type AppMonitorSpec, type AppMonitorStatus, type UpdateMode } from "../../lib/appmonitor.ts";
import { toHttpFailure } from "../../lib/kube-api-errors.ts";
import { formatTimestamp } from "../../lib/rfc3339.ts";
import { podResizeView, type PodResizeView, podView, revisionView, selectorString, workloadView } from "../kube/views.ts";
import { apiVersionOf, objectRef, type WorkloadKind } from "../model.ts";
import { cappedWorkloads, withCapsOf } from "../status/capped.ts";
import { capOf } from "../caps.ts";
import { withoutEndedLeaks } from "../status/leaks.ts";
import { pendingScales } from "../status/pending-scales.ts";
import { type PendingRollout, pendingRollouts, type RolloutConditionChange, withResizeProgress, withRolloutFollowedUp } from "../status/rollouts.ts";
import type { FollowDeps } from "./deps.ts";
import { recordPendingScale, WORKLOAD_KINDS } from "./pending-scales.ts";
import { decideInPlaceFollowUp } from "./in-place.ts";
import { readPodResize } from "./resize.ts";
import type { FollowUp } from "./follow-up.ts";
import { decideFollowUp } from "./rollout.ts";
import { type ScaleDownSummary, stepDown } from "./scale-down.ts";

/** What one tick did: rollouts looked at, ended, still pending; scales listed in `status.pendingScales` looked at and recorded; every step is in the log. */
export interface FollowSummary {
  readonly checked: number;
  readonly ended: number;
  readonly pending: number;
  /** Entries of `status.pendingScales` looked at (each cost a GET of its workload); absent when none was listed. */
  readonly scales?: number;
  /** Of those, the scales recorded from their workload's last-scale record (their status write had failed); absent when none was listed. */
  readonly recorded?: number;
  /** Workloads found due for a down-step of `spec.scaleDown` and handed to the scale flow, and of those, lowered (`scale-down.ts`); absent when none was due. */
  readonly scaleDowns?: ScaleDownSummary;
}

/** How an ended rollout sets the condition, and the Event's type and reason (a fallback's: failed, in place). */
function ending(follow: FollowUp): { condition: RolloutConditionChange; result: "RolledOut" | "RolloutFailed"; reason: string } | undefined {
  if (follow.result === "rolledOut") return { condition: { status: "True", reason: "RolledOut", message: follow.message }, result: "RolledOut", reason: "RolledOut" };
  if (follow.result === "failed" || follow.result === "fallBack") return { condition: { status: "False", reason: follow.reason, message: follow.message }, result: "RolloutFailed", reason: follow.reason };
  return undefined;
}

/** The Pods of a workload's in-place resize, read (in parallel) by name; undefined for one gone. */
async function readInPlacePods(deps: FollowDeps, namespace: string, rollout: PendingRollout): Promise<Map<string, PodResizeView | undefined>> {
  const names = (rollout.inPlace?.pods ?? []).map((p) => p.name);
  const pods = await Promise.all(names.map((name) => deps.cluster.readPod(namespace, name)));
  return new Map(names.map((name, i) => {
    const pod = pods[i];
    return [name, pod === undefined ? undefined : podResizeView(pod)];
  }));
}

/**
 * Follows every pending rollout once (module comment).
 * @throws HttpError (by the API failure's class, `toHttpFailure`) when a read or write failed,
 * after the other rollouts were followed.
 */
export async function followRollouts(deps: FollowDeps, log: Logger): Promise<FollowSummary> {
  const { cluster } = deps;
  const items = await cluster.listAllAppMonitors().catch((error: unknown) => {
    throw toHttpFailure(error, "list AppMonitors");
  });
  const stale = await uncapStale(deps, items);
  const listed = items.flatMap((item) => {
    const am = item as { metadata?: { name?: string; namespace?: string; uid?: string }; spec?: { stuckRollout?: "Report" | "DeletePod"; updateMode?: UpdateMode }; status?: unknown };
    const { name, namespace } = am.metadata ?? {};
    if (name === undefined || namespace === undefined) return [];
    const ref = { name, namespace, uid: am.metadata?.uid, raw: item as Record<string, unknown>, stuckRollout: am.spec?.stuckRollout, updateMode: am.spec?.updateMode };
    return [{ am: ref, rollouts: pendingRollouts(am.status), scales: pendingScales(am.status) }];
  });
  const work = listed.flatMap(({ am, rollouts }) => rollouts.map((rollout) => ({ am, rollout })));
  const marked = listed.flatMap(({ am, scales }) => scales.map((scale) => ({ am, scale })));
  // Down-steps of spec.scaleDown: decided from the list, so a tick without one due reads nothing more.
  let downFailure: unknown;
  const downs = await stepDown(deps, items, log).catch((error: unknown) => {
    downFailure = error;
    return { asked: 0, stepped: 0 };
  });
  const scaleDowns = downs.asked === 0 ? {} : { scaleDowns: downs };
  if (work.length === 0 && marked.length === 0) {
    if (stale !== undefined) throw toHttpFailure(stale, "update the capped workloads of an AppMonitor");
    if (downFailure !== undefined) throw downFailure;
    return { checked: 0, ended: 0, pending: 0, ...scaleDowns };
  }

  let ended = 0;
  let recorded = 0;
  const failures: unknown[] = [...(stale === undefined ? [] : [stale]), ...(downFailure === undefined ? [] : [downFailure])];
  await Promise.all([
    ...work.map(async ({ am, rollout }) => {
      try {
        if (await followOne(deps, am, rollout, log)) ended += 1;
      } catch (error) {
        failures.push(error);
      }
    }),
    ...marked.map(async ({ am, scale }) => {
      try {
        if (await recordPendingScale(deps, am, scale, log)) recorded += 1;
      } catch (error) {
        failures.push(error);
      }
    }),
  ]);
  if (failures.length > 0) throw toHttpFailure(failures[0], `follow ${failures.length} of ${work.length} pending rollouts and ${marked.length} pending scales`);
  return { checked: work.length, ended, pending: work.length - ended, ...(marked.length === 0 ? {} : { scales: marked.length, recorded }), ...scaleDowns };
}

/**
 * Drops from each AppMonitor's `status.capped` the workloads listed at a cap other than their
 * containers' caps now (`withCapsOf`, `../caps.ts`), and from its `status.probableLeaks` the
 * holds whose window has ended (`withoutEndedLeaks`); one status write per AppMonitor that
 * changes; returns the first write's failure, if any, once all were tried.
 */
async function uncapStale(deps: FollowDeps, items: readonly unknown[]): Promise<unknown> {
  const now = formatTimestamp(deps.now());
  const writes = items.flatMap((item) => {
    const am = item as { metadata?: { name?: string; namespace?: string; uid?: string }; spec?: Pick<AppMonitorSpec, "maxMemory" | "containerPolicies">; status?: AppMonitorStatus };
    const { name, namespace, uid } = am.metadata ?? {};
    // A cap that does not parse (a spec the API server should have refused) keeps the entry.
    const capNow = (container: string): string => {
      try {
        return capOf(am.spec ?? {}, container, deps.defaultMaxMemory, deps.ceilings?.maxMemory).maxMemory;
      } catch {
        return cappedWorkloads(am.status).find((c) => c.containers.includes(container))?.maxMemory ?? "";
      }
    };
    const change = (status: AppMonitorStatus | undefined) => withoutEndedLeaks(withCapsOf(status, capNow, now), now);
    if (name === undefined || namespace === undefined || change(am.status) === am.status) return [];
    return [deps.status.update({ name, namespace, uid }, change, item as Record<string, unknown>)];
  });
  const results = await Promise.allSettled(writes);
  return results.find((r): r is PromiseRejectedResult => r.status === "rejected")?.reason;
}

/** Follows one rollout; true when it ended (or its workload is gone). */
async function followOne(
  deps: FollowDeps,
  am: { name: string; namespace: string; uid: string | undefined; raw: Record<string, unknown>; stuckRollout: "Report" | "DeletePod" | undefined; updateMode: UpdateMode | undefined },
  rollout: PendingRollout,
  log: Logger,
): Promise<boolean> {
  const { cluster } = deps;
  const { kind, name } = rollout.workload;
  const ref = { namespace: am.namespace, name: am.name, uid: am.uid };
  const now = deps.now();
  const stamp = formatTimestamp(now);
  // A bare Pod's in-place resize: its own conditions and container statuses say how it ended.
  const resize = kind === "Pod" ? await readPodResize(cluster, am.namespace, rollout, now) : undefined;
  // A workload's Pods resized in place: their resizes say how it stands, not the workload's rollout.
  const inPlacePods = rollout.inPlace === undefined ? undefined : await readInPlacePods(deps, am.namespace, rollout);
  const inPlace = inPlacePods === undefined ? undefined : decideInPlaceFollowUp({ rollout, pods: inPlacePods, updateMode: am.updateMode, now });
  const object = WORKLOAD_KINDS.has(kind) && inPlace === undefined ? await cluster.readWorkload(kind as WorkloadKind, am.namespace, name) : undefined;
  const selector = selectorString(object?.spec?.selector);
  const pods = object === undefined || selector === undefined ? [] : await cluster.listPods(am.namespace, selector);
  // A Knative Service's rollout is its latest Revision's coming up.
  const latest = kind === "Service" ? object?.status?.latestCreatedRevisionName : undefined;
  const revision = latest === undefined ? undefined : await cluster.readKnative("Revision", am.namespace, latest);
  const follow =
    resize?.follow ??
    inPlace ??
    decideFollowUp({ rollout, workload: object === undefined ? undefined : workloadView(kind, object), pods: pods.map(podView), revision: revision === undefined ? undefined : revisionView(revision), stuckRollout: am.stuckRollout, now });
  const line = { appmonitor: `${am.namespace}/${am.name}`, workload: `${kind}/${name}`, generation: rollout.generation, result: follow.result };

  if (follow.result === "gone") {
    log.info(line, follow.message);
    await deps.status.update(ref, (status) => withRolloutFollowedUp(status, rollout, { end: { status: "Unknown", reason: "WorkloadGone", message: follow.message } }, stamp), am.raw);
    return true;
  }
  const amRef = objectRef(APPMONITOR_API_VERSION, APPMONITOR_KIND, am.namespace, am.name, am.uid);
  const wlRef = resize?.ref ?? objectRef(apiVersionOf(kind), kind, am.namespace, name, object?.metadata?.uid);
  const end = ending(follow);
  if (end !== undefined) {
    log.info({ ...line, reason: end.reason }, follow.message);
    const type = end.result === "RolledOut" ? "Normal" : "Warning";
    // The workload's uid too: one deleted and created again under its name reaches the same
    // generations (a bare Pod's first resize is always generation 2), and the AppMonitor's Event,
    // whose name is derived from this key and the AppMonitor, would be taken for the old one's.
    const key = `rollout/${kind}/${name}/${wlRef.uid ?? ""}/${rollout.generation}/${end.reason}`;
    const fallingBack = follow.result === "fallBack" && deps.fallBack !== undefined;
    const note = end.result === "RolledOut" ? follow.message : `${rollout.inPlace === undefined ? "rollout" : "in-place resize"} failed (${end.reason}): ${follow.message}${fallingBack ? "; spec.updateMode InPlaceOrRollout: writing the memory into the Pod template instead" : ""}`;
    const problems = await Promise.all([
      deps.events.record({ type, reason: end.result, note, regarding: wlRef, related: amRef, key }),
      deps.events.record({ type, reason: end.result, note, regarding: amRef, related: wlRef, key }),
    ]);
    for (const problem of problems) if (problem !== undefined) log.warn(line, problem);
    await deps.status.update(ref, (status) => withRolloutFollowedUp(status, rollout, { end: end.condition }, stamp), am.raw);
    deps.onEnded?.(kind, end.result, end.reason);
    if (fallingBack && deps.fallBack !== undefined) {
      // After the in-place entry ended: the template patch records a rollout of its own.
      // The rounds observe the workload from one of its Pods still there.
      const failed = [...(inPlacePods ?? new Map<string, PodResizeView | undefined>())].find(([, view]) => view !== undefined)?.[0] ?? name;
      const fell = await deps.fallBack({ namespace: am.namespace, pod: failed, appmonitor: am.name, reason: follow.message, eventId: `fallback/${key}` }, log);
      log.info({ ...line, outcome: fell.outcome, reason: fell.reason }, `fallback to the template patch: ${fell.message}`);
    }
    return true;
  }
  if (follow.result === "deletePod") {
    log.warn(line, follow.message);
    await cluster.deletePod(am.namespace, follow.pod.name, follow.pod.uid);
    const key = `stuck/${follow.pod.uid ?? follow.pod.name}`;
    await Promise.all([
      deps.events.record({ type: "Warning", reason: "DeletedStuckPod", note: follow.message, regarding: wlRef, related: amRef, key }),
      deps.events.record({ type: "Warning", reason: "DeletedStuckPod", note: follow.message, regarding: amRef, related: wlRef, key }),
    ]);
    return false;
  }
  log.info(line, follow.message);
  if ((resize !== undefined || inPlace !== undefined) && follow.result === "progressing") {
    await deps.status.update(ref, (status) => withResizeProgress(status, rollout, follow.message), am.raw);
  }
  if (follow.result === "progressing" && follow.waitingPods !== undefined) {
    const waitingPods = follow.waitingPods;
    await deps.status.update(ref, (status) => withRolloutFollowedUp(status, rollout, { waitingPods }, stamp), am.raw);
  }
  return false;
}
