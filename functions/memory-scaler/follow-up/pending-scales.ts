/**
 * A tick's look at the scales still listed in an AppMonitor's `status.pendingScales`
 * (`../status/pending-scales.ts`: listed before the patch, taken off by the status write that records
 * it): `decidePendingScale` (pure) says from the workload's last-scale record whether the scale
 * landed, and `recordPendingScale` records it, drops the entry, or keeps it for the next tick.
 */
import type { Logger } from "pino";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, type AppMonitorStatus } from "../../lib/appmonitor.ts";
import { eventsOf } from "../events.ts";
import { apiVersionOf, objectRef, parseScaleRecord, type RecordedScale, type ScaleRecordAnnotation, type WorkloadKind } from "../model.ts";
import { podReplacement } from "../replacement.ts";
import { repairedStatus } from "../status/changes.ts";
import { PENDING_SCALE_GRACE_SECONDS, type PendingScale, withoutPendingScale } from "../status/pending-scales.ts";
import { recordState } from "../status/recent-scales.ts";
import type { FollowDeps } from "./deps.ts";

/** The kinds whose rollouts a tick follows by their controller's status (a bare ReplicaSet replaces no Pod; a bare Pod's resize is `resize.ts`'s). */
export const WORKLOAD_KINDS: ReadonlySet<string> = new Set(["Deployment", "StatefulSet", "DaemonSet", "Service"]);
/** The kinds a scale patches, so the kinds a `status.pendingScales` entry names. */
const SCALED_KINDS: ReadonlySet<string> = new Set([...WORKLOAD_KINDS, "ReplicaSet"]);

/**
 * Looks at one entry of an AppMonitor's `status.pendingScales` (module comment, 1a): GETs its
 * workload and records the scale from the workload's last-scale record, drops the entry, or keeps
 * it. True when the scale was recorded now (the listed status did not list it).
 * @throws whatever the {@link Cluster} or the status writer throws (the caller classifies it).
 */
export async function recordPendingScale(
  deps: FollowDeps,
  am: { name: string; namespace: string; uid: string | undefined; raw: Record<string, unknown> },
  scale: PendingScale,
  log: Logger,
): Promise<boolean> {
  const { kind, name } = scale.workload;
  const ref = { namespace: am.namespace, name: am.name, uid: am.uid };
  const now = deps.now();
  const object = SCALED_KINDS.has(kind) ? await deps.cluster.readWorkload(kind as WorkloadKind, am.namespace, name) : undefined;
  const decision = decidePendingScale({ scale, appmonitor: am.name, workload: object === undefined ? undefined : { annotations: object.metadata?.annotations }, now });
  const line = { appmonitor: `${am.namespace}/${am.name}`, workload: `${kind}/${name}`, event: scale.event, action: decision.action };
  if (decision.action === "wait") {
    log.info(line, decision.why);
    return false;
  }
  if (decision.action === "drop") {
    log.info(line, decision.why);
    await deps.status.update(ref, (status) => withoutPendingScale(status, scale), am.raw);
    return false;
  }
  const { record } = decision;
  // Counted only when the listed status lacks it (another writer may have recorded it since; the write decides again).
  const missing = recordState(((am.raw.status as AppMonitorStatus | undefined)?.recentScales ?? []) as RecordedScale[], { time: record.time, workload: scale.workload, event: record.event }, deps.status.limit) === "missing";
  log.info(
    { ...line, time: object?.metadata?.annotations?.[LAST_SCALE_ANNOTATION] },
    missing ? "recording a scale whose status write failed, from the workload's last-scale record" : "the scale is recorded already: taking it off status.pendingScales",
  );
  const amRef = objectRef(APPMONITOR_API_VERSION, APPMONITOR_KIND, am.namespace, am.name, am.uid);
  const wlRef = objectRef(apiVersionOf(kind), kind, am.namespace, name, object?.metadata?.uid);
  const replacement = podReplacement({ kind, replicas: object?.spec?.replicas, updateStrategy: object?.spec?.updateStrategy?.type, volumes: object?.spec?.template?.spec?.volumes ?? [] });
  const events = eventsOf(
    { reason: "Scaled", changes: record.changes, multiplier: record.multiplier, trigger: record.trigger ?? "threshold", key: record.event, replacement },
    { appMonitor: amRef, workload: wlRef, cooldownSeconds: 0 },
    record.event,
    now,
  );
  const entry = { time: record.time, workload: { kind, name }, event: record.event, changes: record.changes, dryRun: false, repair: true, ...(record.trigger === undefined ? {} : { trigger: record.trigger }) };
  const [problems] = await Promise.all([
    Promise.all(events.map((spec) => deps.events.record(spec))),
    deps.status.update(ref, repairedStatus(entry, { kind, generation: object?.metadata?.generation }, record.event, deps.status.limit), am.raw),
  ]);
  for (const problem of problems) if (problem !== undefined) log.warn(line, problem);
  return missing;
}

/** What a tick does with one entry of `status.pendingScales`. */
export type PendingScaleDecision =
  /** The workload's last-scale record is this scale's: record it from there (a no-op when listed already) and drop the entry. */
  | { readonly action: "record"; readonly record: ScaleRecordAnnotation }
  /** The entry can never be recorded, or no longer needs to be: drop it. */
  | { readonly action: "drop"; readonly why: string }
  /** Its patch may still be in flight: keep it for the next tick. */
  | { readonly action: "wait"; readonly why: string };

/**
 * Decides what a tick does with `scale`, from its workload as read now. In order:
 * 1. the workload is gone → `drop`;
 * 2. its last-scale record (read as `repairOf` reads it: the annotation's time is the record's)
 *    is this AppMonitor's, for this scale's event → `record`;
 * 3. the record's `earlier` lists this event: a later scale superseded it, whose record no longer
 *    holds this one's changes → `drop`;
 * 4. more than {@link PENDING_SCALE_GRACE_SECONDS} after its time → `drop` (the patch never
 *    landed: refused, or lost the compare-and-swap to another scale);
 * 5. else `wait`.
 */
export function decidePendingScale(input: {
  readonly scale: PendingScale;
  /** The AppMonitor the entry is listed in. */
  readonly appmonitor: string;
  /** The workload's `metadata.annotations` as read; undefined: the workload does not exist. */
  readonly workload: { readonly annotations: Readonly<Record<string, string>> | undefined } | undefined;
  readonly now: Date;
}): PendingScaleDecision {
  const { scale } = input;
  const subject = `${scale.workload.kind} ${scale.workload.name}`;
  if (input.workload === undefined) return { action: "drop", why: `${subject} no longer exists` };
  const annotations = input.workload.annotations;
  const record = parseScaleRecord(annotations?.[LAST_SCALE_RECORD_ANNOTATION]);
  const lastScale = annotations?.[LAST_SCALE_ANNOTATION];
  const current = record !== undefined && lastScale !== undefined && Date.parse(lastScale) === Date.parse(record.time);
  if (current && record.event === scale.event && record.appmonitor === input.appmonitor) return { action: "record", record };
  if (record?.earlier?.some((m) => m.event === scale.event) === true) return { action: "drop", why: `${subject} was scaled again since the scale of event ${scale.event}` };
  const age = (input.now.getTime() - Date.parse(scale.time)) / 1000;
  if (!(age <= PENDING_SCALE_GRACE_SECONDS)) return { action: "drop", why: `the patch of ${subject} for event ${scale.event} is not on it ${Math.round(age)}s after the scale` };
  return { action: "wait", why: `the patch of ${subject} for event ${scale.event} is not on it yet` };
}
