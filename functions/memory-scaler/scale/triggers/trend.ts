/**
 * The trend trigger (`AppMonitorMemoryTrend`, an AppMonitor with `spec.trend`): a container's
 * working set predicted at its limit within `horizonSeconds`. Confirmed by Prometheus' prediction
 * now; an AppMonitor that no longer sets `spec.trend` is refused, Prometheus not asked.
 */
import { APPMONITOR_TREND_ALERT_NAME } from "../../../lib/appmonitor.ts";
import { afterCheck, checkTrend } from "../decide/evidence.ts";
import type { Trigger } from "./trigger.ts";

export const trend: Trigger = {
  name: "trend",
  alertname: APPMONITOR_TREND_ALERT_NAME,
  crossesLimit: true,
  measure: async (verifier, { namespace, pod, containers, trend: spec }) => (spec === undefined ? undefined : verifier?.predictions(namespace, pod, containers, spec)),
  check(scale, { running, measured, trend: spec }) {
    if (spec !== undefined && measured === undefined) return scale;
    return afterCheck(scale, "trend", checkTrend(scale.changes, running, measured ?? new Map(), spec));
  },
};
