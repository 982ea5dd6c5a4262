/**
 * `status.lastOutcome` (CRD field, DESIGN.md "The API", Status): what the AppMonitor's last alert
 * came to — scaled, a dry run, or a skip and why — so a skip is visible with `kubectl get
 * appmonitors` (the `Last Outcome` column) without reading memory-scaler's logs, which go with its
 * Pod when it scales to zero. memory-scaler writes it; rule-sync never does.
 *
 * A workload that keeps alerting into the same skip (a `Cooldown`, a working set `BelowThreshold`)
 * would cost a status write per alert: the same workload, outcome and reason within `windowSeconds`
 * of the recorded time leaves the status as it is (the status writer then writes nothing), so such
 * a run costs one write per window. The window is read from the recorded time in the cluster, not
 * kept in memory: it holds across instances and restarts. Pure.
 */
import type { AppMonitorStatus } from "../../lib/appmonitor.ts";

/** How an alert ended, as memory-scaler's outcome says (`../outcome.ts` `Outcome.outcome`). */
export type OutcomeKind = "scaled" | "dry-run" | "skipped";

/** `status.lastOutcome`: the last alert's outcome (module comment). */
export interface LastOutcome {
  /** RFC 3339, whole seconds: when it was decided. */
  readonly time: string;
  /** `<namespace>/<pod>` of the alerting Pod. */
  readonly pod: string;
  /** The workload, once resolved. */
  readonly workload?: { readonly kind: string; readonly name: string };
  readonly outcome: OutcomeKind;
  /** The outcome's reason: `Scaled`, `DryRun`, `Cooldown`, `NotCovered`, … */
  readonly reason: string;
  /** The outcome's message, at most {@link MAX_MESSAGE_LENGTH} characters. */
  readonly message: string;
}

/** A message longer than this is cut (an API server's refusal can run to kilobytes). */
export const MAX_MESSAGE_LENGTH = 1024;

/** A status that may carry `lastOutcome`. */
export type WithLastOutcome = AppMonitorStatus & { lastOutcome?: LastOutcome };

/** `outcome` as recorded at `time`. */
export function lastOutcomeOf(
  outcome: { readonly pod: string; readonly workload?: { readonly kind: string; readonly name: string } | undefined; readonly outcome: OutcomeKind; readonly reason: string; readonly message: string },
  time: string,
): LastOutcome {
  const message = outcome.message.length > MAX_MESSAGE_LENGTH ? `${outcome.message.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : outcome.message;
  return {
    time,
    pod: outcome.pod,
    ...(outcome.workload === undefined ? {} : { workload: { kind: outcome.workload.kind, name: outcome.workload.name } }),
    outcome: outcome.outcome,
    reason: outcome.reason,
    message,
  };
}

/**
 * The status with `last` as its `lastOutcome`, or `status` itself (nothing to write) when it
 * records a skip of the same workload with the same reason less than `windowSeconds` before
 * `last.time` (module comment). Scales and dry runs are always recorded.
 */
export function withLastOutcome(status: WithLastOutcome | undefined, last: LastOutcome, windowSeconds: number): WithLastOutcome | undefined {
  const current = status?.lastOutcome;
  if (current !== undefined && last.outcome === "skipped" && sameSkip(current, last)) {
    const age = (Date.parse(last.time) - Date.parse(current.time)) / 1000;
    if (age >= 0 && age < windowSeconds) return status;
  }
  return { ...status, lastOutcome: last };
}

/** The same skip of the same workload (of the same Pod when no workload was resolved): any of its Pods alerting counts. */
function sameSkip(a: LastOutcome, b: LastOutcome): boolean {
  if (a.outcome !== b.outcome || a.reason !== b.reason) return false;
  if (a.workload === undefined || b.workload === undefined) return a.workload === b.workload && a.pod === b.pod;
  return a.workload.kind === b.workload.kind && a.workload.name === b.workload.name;
}

/**
 * Seconds within which one skip of a workload is recorded once (in `status.lastOutcome` and as an
 * Event): the AppMonitor's `spec.cooldownSeconds`, or {@link DEFAULT_SKIP_WINDOW_SECONDS} when it
 * asks for none (or is not known: `NoAppMonitor`).
 */
export function skipWindowSeconds(cooldownSeconds: number | undefined): number {
  return cooldownSeconds !== undefined && cooldownSeconds > 0 ? cooldownSeconds : DEFAULT_SKIP_WINDOW_SECONDS;
}

/** The window of {@link skipWindowSeconds} without a cooldown: Alertmanager's default `group_interval` is 5 m, so about one alert in each. */
export const DEFAULT_SKIP_WINDOW_SECONDS = 300;
