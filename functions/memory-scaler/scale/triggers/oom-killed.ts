/**
 * The OOM-kill trigger (`AppMonitorOOMKilled`): a container OOM-killed. Confirmed by the Pod
 * already read, which must show the kill within the target's window; Prometheus is not asked
 * (after the kill the restarted container's working set is low again, which is why this alert exists).
 * Read again before a `NotOOMKilled` stands ({@link OOM_KILL_STATUS_LAG_MS}).
 */
import { APPMONITOR_OOM_ALERT_NAME } from "../../../lib/appmonitor.ts";
import { afterCheck, checkOOMKilled } from "../decide/evidence.ts";
import type { Trigger } from "./trigger.ts";

/**
 * The waits (ms) before the Pod is read again when it shows no recent OOM kill: the kernel's kill
 * moves cAdvisor's `container_oom_events_total` at once, but the kubelet writes it to the Pod's
 * status only when it next syncs the Pod (its PLEG relists every second, later on a loaded node),
 * so an alert on the counter can arrive first (seen on the real node: the alert 2.7 s after the
 * kill, before the status showed it). 10 s in all, well inside a Broker's delivery timeout; a kill
 * of a child process, which leaves the container running, is answered `NotOOMKilled` after them.
 */
export const OOM_KILL_STATUS_LAG_MS: readonly number[] = [2_000, 3_000, 5_000];

export const oomKilled: Trigger = {
  name: "oomKilled",
  alertname: APPMONITOR_OOM_ALERT_NAME,
  evidenceLagMs: OOM_KILL_STATUS_LAG_MS,
  measure: async () => undefined,
  check: (scale, { statuses, now, oomWindowSeconds }) => afterCheck(scale, "oomKilled", checkOOMKilled(scale.changes, statuses, now, oomWindowSeconds)),
};
