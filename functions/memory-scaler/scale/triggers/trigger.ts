/**
 * A trigger of a scale, as one object: the alert rule-sync raises for it (`alertname`; its PromQL
 * is rule-sync's `rule.ts`), what memory-scaler asks Prometheus about it before it acts (`measure`,
 * through the adapter it is given), and the evidence that confirms it (`check`, pure, over its rule
 * in `../decide/evidence.ts`). The flow (`../flow.ts`) has no branch per trigger: a new trigger is
 * one more file here, listed in `index.ts`, plus its rule.
 */
import type { AlertTrigger } from "../../../lib/alert-event.ts";
import type { AppMonitorSpec, AppMonitorTrend } from "../../../lib/appmonitor.ts";
import type { Verifier } from "../../kube/prometheus.ts";
import type { ContainerMemory } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import type { ContainerStatusLike } from "../decide/evidence.ts";

/** What a trigger's measurement names: the alerting Pod's containers to raise, and the AppMonitor's `spec.trend` and `spec.containerPolicies`. */
export interface Measured {
  readonly namespace: string;
  readonly pod: string;
  readonly containers: readonly string[];
  /** `spec.trend`, defaults applied; undefined: the AppMonitor sets none. */
  readonly trend: Required<AppMonitorTrend> | undefined;
  /** `spec.containerPolicies` and `spec.memThresholdPercent`: whose heap is watched, and at what threshold. */
  readonly spec: Pick<AppMonitorSpec, "containerPolicies" | "memThresholdPercent">;
}

/** What a trigger's check weighs besides the scale. */
export interface Evidence {
  /** The alerting Pod's container statuses (`kube/views.ts` `containerStatuses`): an OOM kill's evidence. */
  readonly statuses: readonly ContainerStatusLike[];
  readonly now: Date;
  /** Seconds back from `now` within which a kill counts (`PlannedTarget.oomWindowSeconds`). */
  readonly oomWindowSeconds: number;
  /** The memory the alert measured against (`TargetView.running`): the threshold's and the trend's base. */
  readonly running: readonly ContainerMemory[];
  /** Whether the target's write rolls out new Pods (a template patch), which a runtime's heap sized at start needs (`TargetView.rewritesHeaps`). */
  readonly rollsOut: boolean;
  /** `spec.memThresholdPercent`. */
  readonly thresholdPercent: number;
  /** `spec.trend`, defaults applied; undefined: the AppMonitor sets none. */
  readonly trend: Required<AppMonitorTrend> | undefined;
  /** As {@link Measured.spec}. */
  readonly spec: Pick<AppMonitorSpec, "containerPolicies" | "memThresholdPercent">;
  /** Per container from {@link Trigger.measure} (bytes; the heap trigger's: percent of the heap limit); undefined: not asked (no `PROMETHEUS_URL`, or nothing to ask). */
  readonly measured: ReadonlyMap<string, number> | undefined;
}

/** One trigger (module comment). */
export interface Trigger {
  readonly name: AlertTrigger;
  /** The `alertname` of rule-sync's alert for it (`functions/lib/appmonitor.ts`). */
  readonly alertname: string;
  /**
   * Its alert is a crossing of the Pod's limit that `check` confirms against the limit now: one
   * that began after the workload's last scale is a new crossing of the raised limit, which the
   * cooldown does not hold (`../decide/decide.ts` rule 1).
   */
  readonly crossesLimit?: boolean;
  /** Its answer is a heap the runtime sized when it started, which only a new start reaches: under `InPlaceOrRollout` the scale rolls out. */
  readonly needsNewStart?: boolean;
  /**
   * Its evidence can reach the Pod's status after its alert: when `check` skips, the round runs
   * again, the Pod read anew, after each of these waits in turn (ms) before the skip stands; absent: none.
   */
  readonly evidenceLagMs?: readonly number[];
  /**
   * Asks Prometheus what the check needs; undefined when there is nothing to ask, or no Prometheus.
   * @throws HttpError 503 when Prometheus is unavailable (`kube/prometheus.ts`).
   */
  measure(verifier: Verifier | undefined, what: Measured): Promise<ReadonlyMap<string, number> | undefined>;
  /** The alert's evidence against a planned scale (pure): the scale with the containers it confirms, or the skip. */
  check(scale: Scale, evidence: Evidence): Skip | Scale;
  /** The plan's skip said with what the alert saw that it leaves unanswered (pure); absent: the skip as planned. */
  explain?(skip: Skip, evidence: Evidence): Skip;
}
