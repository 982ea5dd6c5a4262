/**
 * Asking where an AppMonitor's firing alerts went: Prometheus for the alerts of its rules that
 * fire (one query per event or resync, shared through the {@link PrometheusView}), and, only when
 * one of the AppMonitor's does, Alertmanager for the alerts of its namespace (one request). The
 * shell of `alert-delivery.ts`, which decides.
 *
 * Neither failure stops a reconcile: the rule is applied and its conditions written already, and
 * the next resync asks again. A failure is logged and counted
 * (`appmonitor_rule_sync_prometheus_requests_total`, `…_alertmanager_requests_total`).
 */
import type { Logger } from "pino";
import { findUndelivered, firingOf, namespaceFilter, type Undelivered } from "./alert-delivery.ts";
import { AlertmanagerError, type AlertmanagerApi } from "./alertmanager.ts";
import type { PrometheusView } from "./prometheus-check.ts";
import { PrometheusError } from "./prometheus.ts";

/**
 * The firing alerts of the AppMonitor `namespace/name` that Alertmanager does not deliver to the
 * `appmonitor` receiver (`findUndelivered`).
 *
 * @param view the Prometheus answers shared with the other AppMonitors of this event or resync.
 * @param alertmanager rule-sync's Alertmanager (`ALERTMANAGER_URL`).
 * @returns empty when nothing of the AppMonitor fires, all is delivered, or either could not be asked.
 * @throws only what is not a PrometheusError or AlertmanagerError (a bug).
 */
export async function checkDelivery(view: PrometheusView, alertmanager: AlertmanagerApi, namespace: string, name: string, log: Logger): Promise<Undelivered[]> {
  try {
    const firing = firingOf(await view.firingAlerts(), namespace, name);
    if (firing.length === 0) return [];
    return findUndelivered(firing, await alertmanager.alerts([namespaceFilter(namespace)]));
  } catch (error) {
    if (!(error instanceof PrometheusError || error instanceof AlertmanagerError)) throw error;
    log.warn({ namespace, name, problem: error.message, kind: error.kind, source: error.name }, "could not check where the AppMonitor's firing alerts went");
    return [];
  }
}
