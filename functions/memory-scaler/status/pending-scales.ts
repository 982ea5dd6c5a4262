/**
 * The scales memory-scaler is writing, listed in the AppMonitor's `status.pendingScales` (CRD
 * field): the marker a follow-up tick records a scale from when the status write after its patch
 * failed. Pure: the flows write and read, this decides.
 *
 * The authority on a scale is the workload's last-scale record, written in the same
 * compare-and-swap patch as the new memory; the AppMonitor's status is its copy, written after
 * (`status/recent-scales.ts`). When that write fails (the API server cut between the two), nothing in the
 * AppMonitor names the workload, and a tick that reads only the AppMonitors — one LIST, all a tick
 * costs with nothing pending — cannot find it; reading every workload on every tick would cost a
 * LIST per kind per tick instead. So before the patch the flow lists the scale here (workload,
 * time, event id), in the same round trip as the patch's dry runs (no round trip of its own) and
 * awaited before the patch, and the status write that records the scale removes it (`events.ts`
 * `scaledStatus`, `repairedStatus`). An entry still listed on a tick is a scale whose status write
 * failed, one in flight, or one that lost its compare-and-swap: the tick GETs its workload
 * (`follow-up/flow.ts`) and {@link decidePendingScale} says whether the record there is this scale's
 * (then the scale is recorded, once: `withScales`' identity rules), or its patch never landed.
 *
 * Not the re-sent alert's answer: an alert re-sent after the cut names a Pod the rollout has
 * replaced, and `PodGone` is decided from that Pod's 404 alone (`scale/observe.ts`), before any owner is
 * read; the owner chain lived in the deleted Pod's `ownerReferences`. The workload could only be
 * guessed from the Pod's name or the alert's labels, which are input, never authority, and a scale
 * answered 204 before its status write failed is never re-sent at all.
 */
import type { AppMonitorStatus } from "../../lib/appmonitor.ts";

/** An entry of `status.pendingScales`: a scale memory-scaler decided and is writing (CRD field). */
export interface PendingScale {
  /** The workload being patched (Deployment, StatefulSet, DaemonSet, ReplicaSet). */
  readonly workload: { readonly kind: string; readonly name: string };
  /** RFC 3339: the scale's time, which its patch writes as the last-scale annotation. */
  readonly time: string;
  /** The id of the CloudEvent that caused the scale: the last-scale record names it once patched. */
  readonly event: string;
}

/** Entries kept per AppMonitor (the CRD's `maxItems`); the oldest is forgotten beyond this. */
export const MAX_PENDING_SCALES = 50;

/**
 * Seconds after its time within which an entry whose patch is not on the workload may still be in
 * flight (the handling of one event, its compare-and-swap rounds included, ends well within
 * Knative's default request timeout of 300 s); a tick after that drops it.
 */
export const PENDING_SCALE_GRACE_SECONDS = 300;

type WithPendingScales = AppMonitorStatus & { pendingScales?: PendingScale[] };

const same = (a: Pick<PendingScale, "workload" | "event">, b: Pick<PendingScale, "workload" | "event">): boolean =>
  a.workload.kind === b.workload.kind && a.workload.name === b.workload.name && a.event === b.event;

/** The entries listed in `status` (none when absent or not a list). */
export function pendingScales(status: unknown): PendingScale[] {
  const listed = (status as WithPendingScales | undefined)?.pendingScales;
  return Array.isArray(listed) ? listed : [];
}

/** `status` with `scale` listed, replacing an entry of the same workload and event (a later round of the same delivery). */
export function withPendingScale(status: AppMonitorStatus | undefined, scale: PendingScale): AppMonitorStatus {
  const current: WithPendingScales = status ?? {};
  const others = pendingScales(current).filter((p) => !same(p, scale));
  const entry: PendingScale = { workload: { kind: scale.workload.kind, name: scale.workload.name }, time: scale.time, event: scale.event };
  const next: WithPendingScales = { ...current, pendingScales: [...others, entry].slice(-MAX_PENDING_SCALES) };
  return next;
}

/**
 * `status` without the entry of `scale`'s workload and event; the field is removed when no entry
 * is left, and the whole status (undefined) when nothing else is in it, as before the scale was
 * listed. Returns `status` itself when none is listed, so the writer can skip the write.
 */
export function withoutPendingScale(status: AppMonitorStatus | undefined, scale: Pick<PendingScale, "workload" | "event">): AppMonitorStatus | undefined {
  const listed = pendingScales(status);
  if (status === undefined || !listed.some((p) => same(p, scale))) return status;
  const { pendingScales: _dropped, ...rest } = status as WithPendingScales;
  const left = listed.filter((p) => !same(p, scale));
  if (left.length > 0) {
    const next: WithPendingScales = { ...rest, pendingScales: left };
    return next;
  }
  return Object.keys(rest).length === 0 ? undefined : rest;
}
