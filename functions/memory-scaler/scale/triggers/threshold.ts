/**
 * The threshold trigger (`AppMonitorMemoryHigh`): a container's working set at or above
 * `memThresholdPercent` of its limit. Confirmed by Prometheus' working set now (the alert may be
 * minutes old); without `PROMETHEUS_URL`, taken as it came.
 */
import { APPMONITOR_ALERT_NAME } from "../../../lib/appmonitor.ts";
import { afterCheck, checkThreshold } from "../decide/evidence.ts";
import type { Trigger } from "./trigger.ts";

export const threshold: Trigger = {
  name: "threshold",
  alertname: APPMONITOR_ALERT_NAME,
  crossesLimit: true,
  measure: async (verifier, { namespace, pod, containers }) => verifier?.workingSets(namespace, pod, containers),
  check(scale, { running, measured, thresholdPercent }) {
    if (measured === undefined) return scale;
    return afterCheck(scale, "threshold", checkThreshold(scale.changes, running, measured, thresholdPercent));
  },
};
