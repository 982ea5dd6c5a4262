/**
 * The CloudEvent endpoint: `POST /` with one memory-threshold CloudEvent, binary or structured
 * mode (CloudEvents HTTP binding 1.0; decoding and attribute validation are the runtime's).
 *
 * A handled event is answered 204 with no body (a Knative Broker fails a reply body that is not
 * a CloudEvent; see the runtime's `acknowledge`) and the headers `X-Appmonitor-Outcome` /
 * `X-Appmonitor-Reason`; the rest of the `Outcome` (message, workload, changes, skipped
 * containers, warnings, attempts) goes to the log line.
 *
 * | status | when |
 * | --- | --- |
 * | 204, outcome `scaled` \| `dry-run` \| `skipped`, reason (`Scaled`, `Resized` for a bare Pod resized in place, `DryRun`, `Cooldown`, …) | a firing alert was handled: scaled, or deliberately not (the reason says why; the list is in `scale/flow.ts` and the README) |
 * | 204, outcome `skipped`, reason `NotAppMonitorAlert` | an alert no AppMonitor rule raised (another alertname, no `appmonitor` label, or `exported_namespace`/`exported_pod` labels): never acted on, nothing read |
 * | 204, outcome `skipped`, reason `NoAppMonitor` \| `NotCovered` \| `AppMonitorNotGoverning` \| `AppMonitorConflict` | the AppMonitor the alert names is not in the namespace, does not cover the workload's Pod template, or covers it and another that covers it takes precedence |
 * | 204, outcome `skipped`, reason `NamespaceNotWatched` | the alert's namespace is not among `WATCH_NAMESPACES`: nothing read |
 * | 204, outcome `ignored`, reason `Resolved` | a resolved alert: nothing to undo |
 * | 204, the outcome and reason of the first answer | a copy of a firing event (same `source` and `id`) this instance is handling, or scaled (or dry-ran) in the last 600 s: nothing read (`answers.ts`) |
 * | 204, outcome `idle` \| `followed`, reason `NoPendingRollout` \| `RolloutsPending` \| `RolloutsEnded` \| `ScalesRecorded` | a PingSource tick (`dev.knative.sources.ping`): the pending rollouts were followed, and scales whose status write failed recorded from their workload's last-scale record (`ScalesRecorded`; `follow-up/flow.ts`); with none pending, one LIST and nothing else |
 * | 400 `{ error, details }` | not a CloudEvent, another event type, `data` not matching `schemas/alert-event.schema.json`, subject or status contradicting `data` (the runtime or `incoming-event.ts`) |
 * | 413 / 415 | body over 1 MiB; a batch (`application/cloudevents-batch+json`) — the runtime |
 * | 422 | the API server refused a write no step expected it to refuse; never retried (dead-lettered) |
 * | 429 | the API server throttled memory-scaler |
 * | 500 | memory-scaler's RBAC lacks a permission (named in a Warning Event on its ServiceAccount) or it hit a bug; the sender retries, then dead-letters |
 * | 503 | the API server or Prometheus is unavailable, refuses the credentials (also after reading them again), a CRD is missing, or the workload kept changing; nothing was written, retry |
 *
 * The API failures' mapping, and why: `functions/lib/kube-api-errors.ts`.
 *
 * A copy of a firing event this instance is handling, or has scaled or dry-run (same `source` and `id`)
 * gets that answer without a read (`answers.ts`); it is logged and counted as outcome
 * `duplicate` with the answer's reason, so every scale is counted once.
 *
 * At most {@link FLOWS_IN_FLIGHT} firing events are handled at once; the others wait, holding
 * only their decoded event, so a storm's memory is bounded however many the sender has in flight.
 * Copies of an event being handled wait for its answer without taking a place.
 *
 * One JSON log line per event with its id (bound by the runtime), outcome, reason and changes.
 */
import type { CloudEvent } from "cloudevents";
import pLimit from "p-limit";
import type { AlertEventDataValidator } from "../lib/alert-event.ts";
import { PING_EVENT_TYPE } from "../lib/ping-event.ts";
import { HttpError } from "../lib/runtime/errors.ts";
import type { CloudEventOutcome, FunctionContext } from "../lib/runtime/types.ts";
import type { AnswerMemory } from "./answers.ts";
import type { FollowDeps } from "./follow-up/deps.ts";
import { type FollowSummary, followRollouts } from "./follow-up/flow.ts";
import { type AlertEvent, readAlertEvent } from "./incoming-event.ts";
import type { MemoryScalerMetrics } from "./metrics.ts";
import type { FlowDeps } from "./scale/deps.ts";
import { handleFiring } from "./scale/flow.ts";

/**
 * Firing events handled at once by one instance. Each holds its reads (the Pod, the workload, the
 * namespace's lists) until it answers; 200 at once took memory-scaler past half its memory limit
 * (docs/performance.md). 16 keep both cores busy: a scale spends most of its time waiting for the
 * API server.
 */
export const FLOWS_IN_FLIGHT = 16;

/**
 * A tick's reason, by what its follow-up did: the first row that holds, most telling first (a
 * down-step over a recorded scale over a rollout still pending over one ended).
 */
const TICK_REASONS: readonly (readonly [reason: string, holds: (summary: FollowSummary) => boolean])[] = [
  ["ScaledDown", (s) => (s.scaleDowns?.stepped ?? 0) > 0],
  ["ScalesRecorded", (s) => (s.recorded ?? 0) > 0],
  ["RolloutsPending", (s) => s.pending > 0],
  ["RolloutsEnded", (s) => s.checked > 0],
  ["ScaleDownsChecked", (s) => s.scaleDowns !== undefined],
];

/** A tick's answer: `idle` when it found nothing to follow, record or step down, else `followed`; the reason by {@link TICK_REASONS}, else `NoPendingRollout`. */
export function tickAnswer(summary: FollowSummary): { readonly outcome: "idle" | "followed"; readonly reason: string } {
  const idle = summary.checked === 0 && (summary.scales ?? 0) === 0 && summary.scaleDowns === undefined;
  const reason = TICK_REASONS.find(([, holds]) => holds(summary))?.[0] ?? "NoPendingRollout";
  return { outcome: idle ? "idle" : "followed", reason };
}

/** What the handler needs; adapters, so tests can substitute them. */
export interface HandlerDeps {
  readonly validate: AlertEventDataValidator;
  readonly flow: FlowDeps;
  readonly follow: FollowDeps;
  readonly metrics: MemoryScalerMetrics;
  /** The answers this instance gave to firing events, for their copies. */
  readonly answers: AnswerMemory;
  /** Firing events handled at once (≥ 1); {@link FLOWS_IN_FLIGHT} when absent. */
  readonly flowsInFlight?: number;
}

/** Builds `handle` for the runtime (a CloudEvent function). */
export function createHandler(deps: HandlerDeps): (context: FunctionContext, event: CloudEvent<unknown>) => Promise<CloudEventOutcome> {
  const { metrics } = deps;
  const inFlight = pLimit(deps.flowsInFlight ?? FLOWS_IN_FLIGHT);
  return async (context, cloudEvent) => {
    const stopTimer = metrics.duration.startTimer();
    if (cloudEvent.type === PING_EVENT_TYPE) {
      try {
        const summary = await followRollouts(deps.follow, context.log);
        const { outcome, reason } = tickAnswer(summary);
        metrics.events.inc({ type: "tick", outcome, reason });
        stopTimer({ outcome });
        context.log.info({ outcome, reason, ...summary }, "followed the pending rollouts");
        return { outcome, reason };
      } catch (error) {
        metrics.events.inc({ type: "tick", outcome: "failed", reason: String(error instanceof HttpError ? error.status : 500) });
        stopTimer({ outcome: "failed" });
        throw error;
      }
    }
    let event: AlertEvent;
    try {
      event = readAlertEvent(cloudEvent, deps.validate);
    } catch (error) {
      metrics.events.inc({ type: "invalid", outcome: "invalid", reason: "Malformed" });
      stopTimer({ outcome: "invalid" });
      throw error;
    }
    const pod = `${event.data.namespace}/${event.data.pod}`;
    if (event.kind === "resolved") {
      metrics.events.inc({ type: "resolved", outcome: "ignored", reason: "Resolved" });
      stopTimer({ outcome: "ignored" });
      context.log.info({ pod, outcome: "ignored", reason: "Resolved" }, "resolved alert: nothing to do");
      return { outcome: "ignored", reason: "Resolved" };
    }
    try {
      const answered = await deps.answers.answer(cloudEvent.source, cloudEvent.id, () => inFlight(() => handleFiring(deps.flow, event.id, event.data, context.log)));
      if (answered.shared !== false) {
        const { answer } = answered;
        metrics.events.inc({ type: "firing", outcome: "duplicate", reason: answer.reason });
        stopTimer({ outcome: "duplicate" });
        context.log.info({ pod, outcome: "duplicate", answer: `${answer.outcome}/${answer.reason}`, of: answered.shared }, "a copy of an event this instance answered: the same answer, nothing read");
        return { outcome: answer.outcome, reason: answer.reason };
      }
      const { outcome } = answered;
      metrics.events.inc({ type: "firing", outcome: outcome.outcome, reason: outcome.reason });
      if (outcome.outcome === "scaled" && outcome.workload !== undefined) metrics.scales.inc({ kind: outcome.workload.kind });
      if (outcome.revert !== undefined && outcome.workload !== undefined) metrics.reverts.inc({ kind: outcome.workload.kind, result: outcome.revert });
      stopTimer({ outcome: outcome.outcome });
      const line = { pod, trigger: outcome.trigger, outcome: outcome.outcome, reason: outcome.reason, appmonitor: outcome.appmonitor, workload: outcome.workload, changes: outcome.changes, skipped: outcome.skipped, attempts: outcome.attempts };
      if (outcome.warnings !== undefined) context.log.warn({ ...line, warnings: outcome.warnings }, outcome.message);
      else context.log.info(line, outcome.message);
      return { outcome: outcome.outcome, reason: outcome.reason };
    } catch (error) {
      const status = error instanceof HttpError ? error.status : 500;
      metrics.events.inc({ type: "firing", outcome: "failed", reason: String(status) });
      stopTimer({ outcome: "failed" });
      throw error;
    }
  };
}
