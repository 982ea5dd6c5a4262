/**
 * Writes scale entries into AppMonitor status through the status subresource
 * (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#status-subresource),
 * read–modify–write with the resourceVersion as precondition.
 *
 * Writes to one AppMonitor are coalesced: while one is in flight, new entries wait and the next
 * write carries them all. A burst of scales in one namespace (one AppMonitor, many workloads)
 * then costs a few writes instead of a storm of conflicting ones. The first try starts from the
 * object this writer last wrote (the API server's answer) when the caller listed that version,
 * else from the object the caller listed when this writer wrote none, saving a read, else from a
 * fresh read (the two differ: another writer may have come between, and a change that is a no-op
 * on an old copy would never conflict); a conflict with another writer (another replica,
 * rule-sync's conditions, a user's edit) is retried from a fresh read.
 */
import type { Logger } from "pino";
import type { AppMonitorStatus } from "../../lib/appmonitor.ts";
import { apiStatus, isConflict } from "../../lib/kube-api-errors.ts";
import { retry, type RetryPolicy } from "../../lib/retry.ts";
import { type ScaleEntry, withScales } from "../status/recent-scales.ts";
import type { Cluster } from "./cluster.ts";

/** Identifies the AppMonitor to write to; `uid` guards against a namesake created since it was read. */
export interface AppMonitorRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
}

/** Records scale entries in AppMonitor status. */
export interface StatusWriter {
  /** Entries kept in `recentScales` (`RECENT_SCALES_LIMIT`). */
  readonly limit: number;
  /**
   * Resolves once a status write that includes `entry` succeeded, or with nothing to do when
   * the AppMonitor is gone (or replaced by a namesake).
   * @throws Error describing the failure after the retries (the caller reports it; the scale
   * itself already happened).
   */
  add(ref: AppMonitorRef, entry: ScaleEntry, listed?: Record<string, unknown>): Promise<void>;
  /**
   * Like {@link add}, with any change of the status: `apply` gets the status as read and returns
   * the new one, or the same object when there is nothing to change (then nothing is written).
   * Coalesced with the other writes to the same AppMonitor, and called again after a conflict.
   */
  update(ref: AppMonitorRef, apply: StatusChange, listed?: Record<string, unknown>): Promise<void>;
}

/** A change of an AppMonitor's status: pure, given the status as read (undefined: none yet). */
export type StatusChange = (status: AppMonitorStatus | undefined) => AppMonitorStatus | undefined;

/** AppMonitors whose last written object is remembered; the oldest is forgotten beyond this. */
export const MAX_REMEMBERED = 1_000;

/** Conflicts are retried quickly: the other writer finished by the time the API server answered. */
export const STATUS_RETRY_POLICY: RetryPolicy = { maxAttempts: 8, baseDelayMs: 5, maxDelayMs: 200 };

interface Waiting {
  readonly apply: StatusChange;
  readonly listed: Record<string, unknown> | undefined;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

const resourceVersionOf = (object: Record<string, unknown>): unknown => (object.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;

/**
 * The object a write starts from: the one this writer last wrote while the caller's listed copy
 * is that very version (or the caller listed none), else the listed copy when nothing was written;
 * when the two differ, a fresh read (undefined). Another writer (another replica) may have written
 * since this one did, and a change that is a no-op on the remembered copy (the end of a rollout
 * that replica recorded pending, which this one never saw) would write nothing and never conflict.
 */
function startFrom(remembered: Record<string, unknown> | undefined, listed: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (remembered === undefined) return listed;
  if (listed === undefined || resourceVersionOf(listed) === resourceVersionOf(remembered)) return remembered;
  return undefined;
}

/** A {@link StatusWriter} keeping at most `limit` entries in `recentScales`. */
export function createStatusWriter(cluster: Cluster, limit: number, log: Logger, policy: RetryPolicy = STATUS_RETRY_POLICY): StatusWriter {
  const queues = new Map<string, { ref: AppMonitorRef; waiting: Waiting[] }>();
  const written = new Map<string, Record<string, unknown>>();

  const remember = (key: string, object: Record<string, unknown>): void => {
    written.delete(key);
    written.set(key, object);
    if (written.size > MAX_REMEMBERED) written.delete(written.keys().next().value ?? "");
  };

  async function write(key: string, ref: AppMonitorRef, changes: readonly StatusChange[], start: Record<string, unknown> | undefined): Promise<void> {
    let known = start;
    await retry(
      async () => {
        const object = known ?? (await cluster.readAppMonitor(ref.namespace, ref.name));
        known = undefined;
        const metadata = object?.metadata as { uid?: string } | undefined;
        if (object === undefined || (ref.uid !== undefined && metadata?.uid !== ref.uid)) {
          log.info({ appmonitor: `${ref.namespace}/${ref.name}` }, "AppMonitor gone before its status was written");
          return;
        }
        const read = object.status as AppMonitorStatus | undefined;
        const status = changes.reduce<AppMonitorStatus | undefined>((current, change) => change(current), read);
        if (status === read) return;
        remember(key, await cluster.replaceAppMonitorStatus(ref.namespace, ref.name, { ...object, status }));
      },
      policy,
      (error) => {
        if (isConflict(error)) written.delete(key);
        return isConflict(error);
      },
    );
  }

  async function drain(key: string): Promise<void> {
    for (;;) {
      const queue = queues.get(key);
      if (queue === undefined || queue.waiting.length === 0) {
        queues.delete(key);
        return;
      }
      const batch = queue.waiting.splice(0);
      try {
        await write(key, queue.ref, batch.map((w) => w.apply), startFrom(written.get(key), batch.find((w) => w.listed !== undefined)?.listed));
        for (const w of batch) w.resolve();
      } catch (error) {
        const failure = new Error(`could not update status of AppMonitor ${queue.ref.namespace}/${queue.ref.name}: ${apiStatus(error).message}`, { cause: error });
        for (const w of batch) w.reject(failure);
      }
    }
  }

  const update = (ref: AppMonitorRef, apply: StatusChange, listed?: Record<string, unknown>): Promise<void> => {
    const key = `${ref.namespace}/${ref.name}/${ref.uid ?? ""}`;
    return new Promise<void>((resolve, reject) => {
      const queue = queues.get(key);
      if (queue !== undefined) {
        queue.waiting.push({ apply, listed, resolve, reject });
        return;
      }
      queues.set(key, { ref, waiting: [{ apply, listed, resolve, reject }] });
      void drain(key);
    });
  };
  return {
    limit,
    add: (ref, entry, listed) => update(ref, (status) => withScales(status, [entry], limit), listed),
    update,
  };
}
