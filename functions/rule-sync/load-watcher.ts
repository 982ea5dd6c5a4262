/**
 * Watching Prometheus load the rule groups rule-sync just wrote, with one poll for all of them:
 * every {@link POLL_MS} while any group is waited for, one `GET /api/v1/rules` asking for those
 * groups, however many events wait (a burst of a thousand new AppMonitors costs one request
 * every 2 s, not a thousand).
 *
 * Two ways to wait (DESIGN.md, "Ready means working"): an event that wrote a rule waits a bounded
 * time ({@link LoadWatcher.wait}, `RULE_LOAD_WAIT_MS`), so the answer it gives is as true as it
 * can be without holding the delivery; after that, the instance keeps watching for
 * {@link FOLLOW_MS} ({@link LoadWatcher.follow}) and calls back once the group is loaded, which
 * reconciles the AppMonitor again and so writes RuleReady True within seconds of the load, not
 * at the next resync tick. Only in memory: a restart forgets it, and the resync tick (and the
 * start-up resync) ask again.
 */
import type { Logger } from "pino";
import { PrometheusError, type PrometheusApi } from "./prometheus.ts";
import { isLoaded, type AppliedRule, type LoadedGroup } from "./rule-loaded.ts";

/** Between two polls of `/api/v1/rules`, in ms. */
export const POLL_MS = 2_000;
/**
 * How long a written group is followed after its event answered, in ms: past the operator's
 * usual minute or two; a group still not loaded then is one its Prometheus does not select, which
 * RuleReady says, and the resync tick checks again.
 */
export const FOLLOW_MS = 10 * 60_000;

/** Watches groups load. */
export interface LoadWatcher {
  /**
   * Resolves once Prometheus lists `rule`'s group at its generation, or after `timeoutMs`, with
   * the group as last seen (undefined when never listed or Prometheus never answered).
   */
  wait(rule: AppliedRule, timeoutMs: number): Promise<LoadedGroup | undefined>;
  /**
   * Calls `loaded` once (errors logged) when Prometheus lists `rule`'s group at its generation,
   * within {@link FOLLOW_MS}; a later follow of the same group replaces this one.
   */
  follow(rule: AppliedRule, loaded: () => Promise<void>): void;
  /** Groups waited for or followed now (for tests and the log). */
  watching(): number;
  /** Stops polling; pending waits resolve as not loaded, follows are dropped. */
  close(): void;
}

interface Entry {
  rule: AppliedRule;
  lastSeen: LoadedGroup | undefined;
  waiters: Set<(group: LoadedGroup | undefined) => void>;
  follow: { readonly then: () => Promise<void>; readonly until: number } | undefined;
}

/**
 * A {@link LoadWatcher} polling `api`.
 *
 * @param options `pollMs`, `followMs` and `now` for tests.
 */
export function createLoadWatcher(api: PrometheusApi, log: Logger, options: { pollMs?: number; followMs?: number; now?: () => number } = {}): LoadWatcher {
  const pollMs = options.pollMs ?? POLL_MS;
  const followMs = options.followMs ?? FOLLOW_MS;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const entryOf = (rule: AppliedRule): Entry => {
    const key = rule.group;
    let entry = entries.get(key);
    if (entry === undefined) {
      entry = { rule, lastSeen: undefined, waiters: new Set(), follow: undefined };
      entries.set(key, entry);
    }
    entry.rule = rule;
    return entry;
  };

  const drop = (key: string, entry: Entry): void => {
    if (entry.waiters.size === 0 && entry.follow === undefined && entries.get(key) === entry) entries.delete(key);
  };

  const poll = async (): Promise<void> => {
    timer = undefined;
    if (closed || entries.size === 0) return;
    let groups: Map<string, LoadedGroup> | undefined;
    try {
      groups = await api.ruleGroups([...entries.keys()]);
    } catch (error) {
      if (!(error instanceof PrometheusError)) throw error;
      log.debug({ err: error.message, groups: entries.size }, "rule load poll: Prometheus did not answer");
    }
    const at = now();
    for (const [key, entry] of [...entries]) {
      if (groups !== undefined) entry.lastSeen = groups.get(key);
      if (groups !== undefined && isLoaded(entry.rule, entry.lastSeen)) {
        for (const resolve of entry.waiters) resolve(entry.lastSeen);
        entry.waiters.clear();
        const follow = entry.follow;
        entry.follow = undefined;
        if (follow !== undefined) {
          log.info({ group: key }, "rule group loaded by Prometheus: reconciling its AppMonitor again");
          follow.then().catch((error: unknown) => log.warn({ group: key, err: error }, "reconcile after the rule group loaded failed; the next resync reports"));
        }
      } else if (entry.follow !== undefined && at >= entry.follow.until) {
        log.info({ group: key }, "rule group still not loaded by Prometheus: no longer followed");
        entry.follow = undefined;
      }
      drop(key, entry);
    }
    schedule();
  };

  const schedule = (): void => {
    if (closed || timer !== undefined || entries.size === 0) return;
    timer = setTimeout(() => {
      poll().catch((error: unknown) => log.error({ err: error }, "rule load poll failed"));
    }, pollMs);
    // A server's sockets keep the process alive; a poll alone must not.
    timer.unref();
  };

  return {
    wait(rule, timeoutMs) {
      if (closed || timeoutMs <= 0) return Promise.resolve(undefined);
      const entry = entryOf(rule);
      return new Promise((resolve) => {
        const done = (group: LoadedGroup | undefined): void => {
          clearTimeout(deadline);
          entry.waiters.delete(done);
          drop(rule.group, entry);
          resolve(group);
        };
        const deadline = setTimeout(() => done(entry.lastSeen), timeoutMs);
        entry.waiters.add(done);
        schedule();
      });
    },
    follow(rule, loaded) {
      if (closed) return;
      entryOf(rule).follow = { then: loaded, until: now() + followMs };
      schedule();
    },
    watching: () => entries.size,
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      for (const entry of entries.values()) {
        for (const resolve of [...entry.waiters]) resolve(undefined);
        entry.follow = undefined;
      }
      entries.clear();
    },
  };
}
