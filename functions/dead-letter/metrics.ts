/**
 * The dead-letter sink's Prometheus metrics, registered in the runtime's registry (served at
 * `/metrics` with `function="dead-letter"`). The self-alert `AppMonitorDeadLetters` and the
 * dashboard's "Dead letters" panel read them (knative/monitoring/).
 */
import { Counter } from "prom-client";
import type { Registry } from "prom-client";

/** The function's metrics. */
export interface DeadLetterMetrics {
  /**
   * `appmonitor_dead_letters_total{type,code}`: dead letters recorded as a new Event, by the
   * event's CloudEvent `type` (the Triggers' exact types; longer than 100 characters: cut) and the
   * status Knative attached (`knativeerrorcode`; `none` when it attached none). A re-delivered
   * dead letter (its Event already there) is not counted again.
   */
  readonly deadLetters: Counter<"type" | "code">;
}

/** Creates the metrics in `registry`. */
export function createMetrics(registry: Registry): DeadLetterMetrics {
  return {
    deadLetters: new Counter({
      name: "appmonitor_dead_letters_total",
      help: "Dead letters recorded as a Warning Event, by CloudEvent type and the status code Knative attached (knativeerrorcode; none when absent).",
      labelNames: ["type", "code"] as const,
      registers: [registry],
    }),
  };
}
