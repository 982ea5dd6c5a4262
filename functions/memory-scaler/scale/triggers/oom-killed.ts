/**
 * The OOM-kill trigger (`AppMonitorOOMKilled`): a container OOM-killed. Confirmed by the Pod
 * already read, which must show the kill within the target's window; Prometheus is not asked
 * (after the kill the restarted container's working set is low again, which is why this alert exists).
 */
import { APPMONITOR_OOM_ALERT_NAME } from "../../../lib/appmonitor.ts";
import { afterCheck, checkOOMKilled } from "../decide/evidence.ts";
import type { Trigger } from "./trigger.ts";

export const oomKilled: Trigger = {
  name: "oomKilled",
  alertname: APPMONITOR_OOM_ALERT_NAME,
  measure: async () => undefined,
  check: (scale, { statuses, now, oomWindowSeconds }) => afterCheck(scale, "oomKilled", checkOOMKilled(scale.changes, statuses, now, oomWindowSeconds)),
};
