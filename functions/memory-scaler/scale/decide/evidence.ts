/**
 * The rules of the evidence each alert needs before its scale (pure; what it rests on is read by
 * the caller, and each trigger, `../triggers/`, applies its own):
 * a threshold alert, Prometheus' working set at or above the threshold ({@link checkThreshold});
 * a trend alert, Prometheus' prediction at or above the limit ({@link checkTrend}); an OOM-kill
 * alert (`trigger: "oomKilled"`), the Pod memory-scaler already read must itself show that the
 * container was OOM-killed, recently. Prometheus would not help there: after the kill the
 * restarted container's working set is low again, which is the reason the OOM-kill alert exists
 * (DESIGN.md "Decisions that matter for correctness", OOM kills).
 *
 * The kubelet records why a container's last run ended in its status:
 * `status.containerStatuses[]` (and `initContainerStatuses[]`, native sidecars included),
 * `state.terminated` while it is down, `lastState.terminated` once it runs again, each with a
 * `reason` (`OOMKilled` when the kernel's OOM killer ended it) and `finishedAt`
 * (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#PodStatus,
 * ContainerStateTerminated).
 */
import type { AlertTrigger } from "../../../lib/alert-event.ts";
import type { AppMonitorTrend } from "../../../lib/appmonitor.ts";
import { floor, parseQuantity } from "../../../lib/quantity.ts";
import type { ContainerChange, ContainerMemory, SkippedContainer } from "../../model.ts";
import type { OutcomeReason, Scale, Skip } from "../../outcome.ts";

/**
 * How recent a kill must be, in seconds, for an OOM-kill event to scale: 10 minutes, the OOM-kill
 * alert's own window (`rule-sync/rule.ts` `OOM_WINDOW_SECONDS`), so a kill that can still make
 * the alert fire counts, and one older than that (a stale or replayed event, a Pod that stopped
 * being killed) does not. The broker's retries (about four minutes) and Alertmanager's
 * `group_wait` fit well inside it.
 */
export const OOM_KILL_RECENT_SECONDS = 600;

/** The kubelet's `reason` of a container ended by the kernel's OOM killer. */
export const OOM_KILLED_REASON = "OOMKilled";

/** One end of a container's run, as a ContainerStateTerminated says it. */
export interface Termination {
  /** e.g. `OOMKilled`, `Error`, `Completed`. */
  readonly reason?: string;
  /** When it ended: RFC 3339 text, or a Date as @kubernetes/client-node deserializes it. */
  readonly finishedAt?: Date | string;
  readonly exitCode?: number;
  /** The termination message (the log's tail under `terminationMessagePolicy: FallbackToLogsOnError`): a heap error's evidence (`heap-error.ts`). */
  readonly message?: string;
}

/** The parts of a container status read here (V1ContainerStatus). */
export interface ContainerStatusLike {
  readonly name: string;
  readonly state?: { readonly terminated?: Termination };
  readonly lastState?: { readonly terminated?: Termination };
}

/**
 * Splits `changes` into the containers whose status shows an OOM kill within `recentSeconds` of
 * `now`, and the others (`NotOOMKilled`, the message says what the status shows instead). A
 * container's current `state.terminated` counts as well as its `lastState.terminated`: between
 * the kill and the restart the kubelet reports the kill as the current state. A `finishedAt` in
 * the future (the node's clock ahead of ours) counts as recent; a missing or unparseable one
 * does not (a kill of unknown age proves nothing about now).
 *
 * @param changes what `decideScale` would change, one entry per container.
 * @param statuses the Pod's `status.containerStatuses` and `status.initContainerStatuses`.
 * @param now the current time.
 * @param recentSeconds the bound, in seconds; default {@link OOM_KILL_RECENT_SECONDS}.
 * @returns `keep` (in `changes`' order) and `skipped`.
 */
export function checkOOMKilled(
  changes: readonly ContainerChange[],
  statuses: readonly ContainerStatusLike[],
  now: Date,
  recentSeconds = OOM_KILL_RECENT_SECONDS,
): { keep: ContainerChange[]; skipped: SkippedContainer<"NotOOMKilled">[] } {
  const keep: ContainerChange[] = [];
  const skipped: SkippedContainer<"NotOOMKilled">[] = [];
  for (const change of changes) {
    const { container } = change;
    const status = statuses.find((s) => s.name === container);
    const ends = [status?.state?.terminated, status?.lastState?.terminated].filter((t): t is Termination => t !== undefined);
    const kills = ends.filter((t) => t.reason === OOM_KILLED_REASON);
    const recent = kills.find((t) => {
      const finished = finishedMs(t.finishedAt);
      return finished !== undefined && now.getTime() - finished <= recentSeconds * 1000;
    });
    if (recent !== undefined) {
      keep.push(change);
      continue;
    }
    let shows: string;
    if (status === undefined) shows = "the Pod reports no status for it";
    else if (kills.length > 0) shows = `its last OOM kill ended at ${kills.map((t) => describeTime(t.finishedAt)).join(", ")}, more than ${recentSeconds}s ago`;
    else if (ends.length > 0) shows = `its last termination was ${ends.map((t) => t.reason ?? "without a reason").join(", ")}, not ${OOM_KILLED_REASON}`;
    else shows = "it has not terminated";
    skipped.push({ container, reason: "NotOOMKilled", message: `container ${container} was not OOM-killed in the last ${recentSeconds}s: ${shows}` });
  }
  return { keep, skipped };
}

/** Milliseconds since the epoch, or undefined for a missing or unparseable time. */
function finishedMs(time: Date | string | undefined): number | undefined {
  if (time === undefined) return undefined;
  const ms = time instanceof Date ? time.getTime() : Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}

function describeTime(time: Date | string | undefined): string {
  const ms = finishedMs(time);
  return ms === undefined ? "an unknown time" : new Date(ms).toISOString();
}

/** What a check of the alert's evidence left: the changes it keeps and the containers it drops. */
export interface Checked {
  readonly keep: readonly ContainerChange[];
  readonly skipped: readonly SkippedContainer[];
}

/** The skip reason of a check that measured a container and found against the alert, by trigger. */
const REFUTED: Readonly<Record<Exclude<AlertTrigger, "oomKilled">, OutcomeReason>> = { threshold: "BelowThreshold", trend: "NotTrending", heapError: "NotHeapError", heapThreshold: "BelowThreshold" };

/**
 * The plan after the alert's evidence was checked (the README's "What it does", step 5): the scale with the
 * containers the check kept, or, when it kept none, the skip. An OOM-kill alert's skip is
 * `NotOOMKilled`; a threshold alert's `BelowThreshold` and a trend alert's `NotTrending` when
 * any container was measured against it, else the first container's reason (`NotMeasured`;
 * `kube/prometheus.ts`). Its message joins every dropped container's; `skipped` lists the plan's
 * and the check's.
 */
export function afterCheck(scale: Scale, trigger: AlertTrigger, checked: Checked): Skip | Scale {
  const skipped = [...scale.skipped, ...checked.skipped];
  if (checked.keep.length > 0) return { ...scale, changes: checked.keep, skipped };
  const message = checked.skipped.map((s) => s.message).join("; ");
  if (trigger === "oomKilled") return { action: "skip", reason: "NotOOMKilled", message, skipped };
  const first = checked.skipped.find((s) => s.reason === REFUTED[trigger]) ?? checked.skipped[0];
  return { action: "skip", reason: (first?.reason as OutcomeReason | undefined) ?? "NotMeasured", message, skipped };
}

/**
 * The seconds within which an OOM kill is evidence for a bare Pod: {@link OOM_KILL_RECENT_SECONDS},
 * but no further back than memory-scaler's last resize of it (`lastResize`, RFC 3339). A workload's
 * scale replaces its Pods, whose statuses start clean; a resize in place keeps the container, and
 * with it the kill in `lastState`, so a later delivery past the cooldown would answer the same kill
 * twice.
 */
export function oomWindow(lastResize: string | undefined, now: Date): number {
  const since = lastResize === undefined ? Number.NaN : Math.floor((now.getTime() - Date.parse(lastResize)) / 1000);
  return Number.isNaN(since) ? OOM_KILL_RECENT_SECONDS : Math.max(0, Math.min(OOM_KILL_RECENT_SECONDS, since));
}

/**
 * Splits `changes` into those whose container's working set is at least `thresholdPercent` of
 * the alerting Pod's memory limit, and the others. Pure.
 * @param podContainers the alerting Pod's containers, as read from the API server
 * @param workingSets bytes per container name, from {@link Verifier.workingSets}
 */
export function checkThreshold(
  changes: readonly ContainerChange[],
  podContainers: readonly ContainerMemory[],
  workingSets: ReadonlyMap<string, number>,
  thresholdPercent: number,
): { keep: ContainerChange[]; skipped: SkippedContainer<"BelowThreshold" | "NotMeasured">[] } {
  const keep: ContainerChange[] = [];
  const skipped: SkippedContainer<"BelowThreshold" | "NotMeasured">[] = [];
  for (const change of changes) {
    const { container } = change;
    const used = workingSets.get(container);
    const limitText = podContainers.find((c) => c.name === container)?.limit;
    if (used === undefined || limitText === undefined) {
      skipped.push({ container, reason: "NotMeasured", message: `Prometheus has no working set for container ${container}: cannot confirm the alert` });
      continue;
    }
    const limit = Number(floor(parseQuantity(limitText)));
    const percent = limit > 0 ? (used / limit) * 100 : Number.POSITIVE_INFINITY;
    if (percent >= thresholdPercent) {
      keep.push(change);
    } else {
      const shown = Math.round(percent * 100) / 100;
      skipped.push({ container, reason: "BelowThreshold", percent: shown, message: `container ${container} uses ${shown}% of its ${limitText} limit, below the threshold of ${thresholdPercent}%` });
    }
  }
  return { keep, skipped };
}

/**
 * Splits `changes` into those whose container Prometheus predicts (`predictions`, bytes, from
 * {@link Verifier.predictions}) at or above the alerting Pod's memory limit within the horizon,
 * the trend alert's own claim (rule-sync's `trendAlertExpression`, condition 1), and the others:
 * `NotTrending` (the growth stopped or slowed since the rule fired), `NotMeasured` (no
 * prediction: fewer than two samples in the window). With `trend` undefined (the AppMonitor no
 * longer sets `spec.trend`: its rule has no trend alert now) every change is `NotTrending`. Pure.
 * @param podContainers the alerting Pod's containers, as read from the API server (the limit's authority)
 * @param trend the AppMonitor's `spec.trend` as memory-scaler read it, for the messages
 */
export function checkTrend(
  changes: readonly ContainerChange[],
  podContainers: readonly ContainerMemory[],
  predictions: ReadonlyMap<string, number>,
  trend: Required<AppMonitorTrend> | undefined,
): { keep: ContainerChange[]; skipped: SkippedContainer<"NotTrending" | "NotMeasured">[] } {
  const keep: ContainerChange[] = [];
  const skipped: SkippedContainer<"NotTrending" | "NotMeasured">[] = [];
  for (const change of changes) {
    const { container } = change;
    if (trend === undefined) {
      skipped.push({ container, reason: "NotTrending", message: `the AppMonitor no longer sets spec.trend: its trend alert for container ${container} is not acted on` });
      continue;
    }
    const rate = `at the rate of the last ${trend.windowSeconds}s`;
    const predicted = predictions.get(container);
    const limitText = podContainers.find((c) => c.name === container)?.limit;
    if (predicted === undefined || limitText === undefined) {
      skipped.push({ container, reason: "NotMeasured", message: `Prometheus has no prediction for container ${container} ${rate}: cannot confirm the alert` });
      continue;
    }
    const limit = Number(floor(parseQuantity(limitText)));
    if (predicted >= limit) {
      keep.push(change);
    } else {
      const percent = Math.round((predicted / limit) * 10_000) / 100;
      const message = `container ${container} is not predicted to reach its ${limitText} limit within ${trend.horizonSeconds}s ${rate} (predicted ${percent}% of it)`;
      skipped.push({ container, reason: "NotTrending", message });
    }
  }
  return { keep, skipped };
}
