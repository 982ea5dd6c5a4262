/**
 * memory-scaler's Prometheus metrics, registered in the runtime's registry (served at
 * `/metrics` with `function="memory-scaler"`). Label values are bounded sets: event kinds,
 * outcomes and CamelCase reasons, workload kinds — never names.
 */
import { Counter, Histogram } from "prom-client";
import type { Registry } from "prom-client";

/** The function's metrics. */
export interface MemoryScalerMetrics {
  /**
   * `appmonitor_memory_scaler_events_total{type,outcome,reason}`: events handled.
   * type: firing, resolved, tick (a PingSource tick), invalid; outcome: scaled, dry-run, skipped,
   * ignored, idle, followed, invalid, failed;
   * reason: the outcome's CamelCase reason (`Scaled`, `Cooldown`, …) or, for `failed`, the HTTP status.
   */
  readonly events: Counter<"type" | "outcome" | "reason">;
  /** `appmonitor_memory_scaler_scales_total{kind}`: workload patches written, by workload kind (`Pod`: a bare Pod resized in place). */
  readonly scales: Counter<"kind">;
  /**
   * `appmonitor_memory_scaler_scale_downs_total{kind,outcome,reason}`: down-steps of `spec.scaleDown`
   * the follow-up asked for, by workload kind and outcome (`scaled` with reason `ScaledDown`,
   * `dry-run`, `skipped` with e.g. `PeakNearThreshold`). A counter of its own, so that
   * `scales_total` keeps counting raises only.
   */
  readonly scaleDowns: Counter<"kind" | "outcome" | "reason">;
  /**
   * `appmonitor_memory_scaler_rollouts_total{kind,result,reason}`: rollouts followed to their
   * end (kind `Pod`: a bare Pod's in-place resize). result: `RolledOut` or `RolloutFailed`;
   * reason: `RolledOut`, or the failure (`ProgressDeadlineExceeded`, `FailedCreate`,
   * `PodUnschedulable`, `CrashLoopingPod`; a resize: `Infeasible`, `ResizeError`).
   */
  readonly rollouts: Counter<"kind" | "result" | "reason">;
  /**
   * `appmonitor_memory_scaler_reverts_total{kind,result}`: firing alerts of a workload whose last
   * scale something lowered (a revert, `coexist/reverts.ts`). result: `Repatched` (patched again, within
   * `spec.revertBudgetPerHour`) or `Held` (the budget is used: skipped as `Reverted`).
   */
  readonly reverts: Counter<"kind" | "result">;
  /** `appmonitor_memory_scaler_write_conflicts_total`: compare-and-swap writes that lost a race and were decided again. */
  readonly conflicts: Counter;
  /** `appmonitor_memory_scaler_event_duration_seconds{outcome}`: time to handle one event, in seconds. */
  readonly duration: Histogram<"outcome">;
}

/** Creates the metrics in `registry`. */
export function createMetrics(registry: Registry): MemoryScalerMetrics {
  return {
    events: new Counter({
      name: "appmonitor_memory_scaler_events_total",
      help: "Memory-threshold events handled, by event type, outcome and reason.",
      labelNames: ["type", "outcome", "reason"] as const,
      registers: [registry],
    }),
    scales: new Counter({
      name: "appmonitor_memory_scaler_scales_total",
      help: "Workload patches written (memory requests and limits raised), by workload kind.",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    scaleDowns: new Counter({
      name: "appmonitor_memory_scaler_scale_downs_total",
      help: "Down-steps of spec.scaleDown asked for by the follow-up, by workload kind, outcome and reason (ScaledDown when the memory was lowered).",
      labelNames: ["kind", "outcome", "reason"] as const,
      registers: [registry],
    }),
    rollouts: new Counter({
      name: "appmonitor_memory_scaler_rollouts_total",
      help: "Rollouts started by a scale and followed to their end, by workload kind, result and reason.",
      labelNames: ["kind", "result", "reason"] as const,
      registers: [registry],
    }),
    reverts: new Counter({
      name: "appmonitor_memory_scaler_reverts_total",
      help: "Firing alerts of a workload whose last scale another writer lowered, by workload kind and result (Repatched, or Held by the revert budget).",
      labelNames: ["kind", "result"] as const,
      registers: [registry],
    }),
    conflicts: new Counter({
      name: "appmonitor_memory_scaler_write_conflicts_total",
      help: "Compare-and-swap workload writes that lost a race and were decided again.",
      registers: [registry],
    }),
    duration: new Histogram({
      name: "appmonitor_memory_scaler_event_duration_seconds",
      help: "Time to handle one event, from decoded to answered, in seconds.",
      labelNames: ["outcome"] as const,
      buckets: [0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}
