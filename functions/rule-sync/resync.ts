/**
 * Running a resync: on demand (a resync event) and once at start-up, with its metrics and log
 * line. ApiServerSource can miss events (while rule-sync or the source was down, or a delivery
 * gave up), so a resync is what makes the rules eventually right.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { HttpError } from "../lib/runtime/errors.ts";
import { backoffDelay, type RetryPolicy } from "../lib/retry.ts";
import { resync, type ResyncResult, type SyncDeps } from "./sync.ts";

/** Backoff between start-up resync tries: 1 s doubling to 30 s, until one succeeds. */
export const STARTUP_RETRY: Omit<RetryPolicy, "maxAttempts"> = { baseDelayMs: 1_000, maxDelayMs: 30_000 };

/**
 * One resync, counted in `appmonitor_rule_sync_resyncs_total{trigger}` (and, for an event, in
 * `appmonitor_rule_sync_events_total{type="resync"}`) and logged.
 *
 * @param trigger what asked for it.
 * @returns the summary.
 * @throws HttpError 503 with the summary as `details` when an AppMonitor or orphan could not be
 *   reconciled; else what `resync` (sync.ts) throws.
 */
export async function runResync(deps: SyncDeps, trigger: "startup" | "event"): Promise<ResyncResult> {
  const started = Date.now();
  const count = (outcome: "ok" | "failed"): void => {
    deps.metrics.resyncs.inc({ trigger, outcome });
    if (trigger === "event") deps.metrics.events.inc({ type: "resync", outcome: outcome === "ok" ? "handled" : "failed" });
  };
  let summary: ResyncResult;
  try {
    summary = await resync(deps);
  } catch (error) {
    count("failed");
    throw error;
  }
  const line = { trigger, durationMs: Date.now() - started, appMonitors: summary.appMonitors, rules: summary.rules, notReady: summary.notReady.length, failed: summary.failed.length };
  if (summary.failed.length > 0) {
    count("failed");
    deps.log.warn(line, "resync incomplete");
    throw new HttpError(503, `resync incomplete: ${summary.failed.length} AppMonitor(s) or rule(s) could not be reconciled`, { details: summary });
  }
  count("ok");
  deps.metrics.lastResync.set(Date.now() / 1000);
  deps.log.info(line, "resync done");
  return summary;
}

/**
 * The start-up resync: tries until one resync completes, backing off per {@link STARTUP_RETRY}
 * (the API server may come up after rule-sync), or until `signal` aborts (shutdown).
 * Never rejects; failures are logged.
 */
export async function resyncUntilDone(deps: SyncDeps, signal: AbortSignal): Promise<void> {
  for (let attempt = 1; !signal.aborted; attempt += 1) {
    try {
      await runResync(deps, "startup");
      return;
    } catch (error) {
      const delayMs = Math.round(backoffDelay({ ...STARTUP_RETRY, maxAttempts: Infinity }, attempt));
      const reason = error instanceof HttpError ? error.reason : String(error);
      deps.log.warn({ attempt, delayMs, reason }, "start-up resync failed; retrying");
      try {
        await sleep(delayMs, undefined, { signal });
      } catch {
        return;
      }
    }
  }
}
