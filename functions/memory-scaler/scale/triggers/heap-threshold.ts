/**
 * The heap-threshold trigger (`AppMonitorHeapThreshold`, a `spec.containerPolicies` entry with
 * `heapMetrics: Watch`): a container's used heap, from its runtime's own metrics, at or above its
 * heap threshold, before the runtime's heap error. Confirmed by Prometheus' heap percent now
 * (`../decide/heap-threshold.ts`); without `PROMETHEUS_URL`, taken as it came. Answered as a heap
 * error is: the limit and the heap setting by a rollout.
 */
import { APPMONITOR_HEAP_THRESHOLD_ALERT_NAME } from "../../../lib/appmonitor.ts";
import { afterHeapThresholdCheck, checkHeapThreshold, heapWatched } from "../decide/heap-threshold.ts";
import type { Trigger } from "./trigger.ts";

export const heapThreshold: Trigger = {
  name: "heapThreshold",
  alertname: APPMONITOR_HEAP_THRESHOLD_ALERT_NAME,
  needsNewStart: true,
  measure: async (verifier, { namespace, pod, containers, spec }) => {
    const watched = heapWatched(containers, spec);
    return watched.length === 0 ? new Map() : verifier?.heapPercents(namespace, pod, watched);
  },
  check(scale, { measured, spec, rollsOut }) {
    const watched = heapWatched(scale.changes.map((c) => c.container), spec);
    const checked = measured === undefined ? { keep: [...scale.changes], skipped: [] } : checkHeapThreshold(scale.changes, watched, measured);
    return afterHeapThresholdCheck(scale, checked, watched, rollsOut);
  },
};
