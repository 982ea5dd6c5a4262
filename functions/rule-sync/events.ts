/**
 * The Warning Events rule-sync writes on an AppMonitor: when one of its conditions turns to a
 * reason that needs someone to change something, once per change (not per resync tick), shown by
 * `kubectl describe appmonitor` and `kubectl get events --field-selector type=Warning`. Pure: the
 * Event object; `sync.ts` decides when and writes it.
 *
 * | condition turns to | meaning |
 * | --- | --- |
 * | `PrometheusUnreachable`, `PrometheusAPIError` (RuleReady) | a wrong or unreachable `PROMETHEUS_URL` |
 * | `WorkingSetNotScraped`, `LimitNotScraped`, `CoveredPodsNotExported` (MetricsReady) | a side of the rule's expression that Prometheus has nowhere: a scrape or relabeling to change |
 * | `RuleEvaluationFailed` (RuleReady) | Prometheus loaded the rule and cannot evaluate it |
 *
 * And, with no condition behind it, when an alert of the AppMonitor fires in Prometheus and
 * Alertmanager does not deliver it to alert-receiver (`alert-delivery.ts` says why not a
 * condition): `AlertInhibited`, `AlertSilenced`, `AlertMuted`, `AlertNotRouted`, once per firing
 * and cause ({@link deliveryWarningEvent}).
 *
 * API: https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/
 */
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND } from "../lib/appmonitor.ts";
import { METRICS_READY, METRICS_REASONS, PROMETHEUS_FAILURE_REASONS, REASONS, RULE_READY, type DesiredCondition } from "./conditions.ts";

/** `reportingController` of rule-sync's Events. */
export const REPORTING_CONTROLLER = "kubedemo.com/rule-sync";
/** `action` of its Events: what it was doing. */
export const EVENT_ACTION = "CheckRule";
/** `action` of the Events about an alert's delivery. */
export const DELIVERY_ACTION = "CheckAlertDelivery";
/** The API server refuses a `note` longer than 1 kB. */
const MAX_NOTE_LENGTH = 1024;

/** The reasons, by condition type, whose arrival is a Warning Event. */
const WARN_ON: Readonly<Record<string, readonly string[]>> = {
  [RULE_READY]: [...PROMETHEUS_FAILURE_REASONS, REASONS.evaluationFailed],
  [METRICS_READY]: [METRICS_REASONS.workingSetNotScraped, METRICS_REASONS.limitNotScraped, METRICS_REASONS.coveredPodsNotExported],
};

/** The AppMonitor an Event regards. */
export interface Regarding {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
}

/**
 * The conditions of `written` that deserve a Warning: those whose reason is one of the table's
 * and differs from the same condition's reason in `before` (the status the write replaced).
 */
export function warningsFor(written: readonly DesiredCondition[], before: readonly { readonly type?: string; readonly reason?: string }[] | undefined): DesiredCondition[] {
  return written.filter((c) => (WARN_ON[c.type] ?? []).includes(c.reason) && before?.find((b) => b.type === c.type)?.reason !== c.reason);
}

/**
 * The Warning Event for `condition` on the AppMonitor: reason the condition's, note its message.
 * The name is `<AppMonitor>.<16 hex>` from its uid, the reason and the time, so a status write
 * that is retried after its Event was created writes it once more only at another time.
 */
export function warningEvent(monitor: Regarding, condition: DesiredCondition, reportingInstance: string, now: Date): k8s.EventsV1Event {
  return event(monitor, [condition.type, condition.reason, String(now.getTime())], { reason: condition.reason, note: condition.message, action: EVENT_ACTION }, reportingInstance, now);
}

/**
 * The Warning Event that an alert of the AppMonitor is not delivered: `reason` one of
 * `DELIVERY_REASONS` (`alert-delivery.ts`), `note` its `deliveryMessage`. Named from `key`
 * (`deliveryEventKey`: the alert's fingerprint, the firing's start, the cause), not the time, so
 * the same firing seen again at the next resync is refused by the API server as a name taken
 * (409, which the writer ignores) until Kubernetes deletes the Event (its TTL, an hour by
 * default), and then reported once more.
 */
export function deliveryWarningEvent(monitor: Regarding, key: string, reason: string, note: string, reportingInstance: string, now: Date): k8s.EventsV1Event {
  return event(monitor, ["delivery", key], { reason, note, action: DELIVERY_ACTION }, reportingInstance, now);
}

/** A Warning Event on the AppMonitor named `<AppMonitor>.<16 hex>` from its uid and `seed`. */
function event(monitor: Regarding, seed: readonly string[], what: { reason: string; note: string; action: string }, reportingInstance: string, now: Date): k8s.EventsV1Event {
  const digest = createHash("sha256").update([monitor.uid ?? monitor.name, ...seed].join("\u0000")).digest("hex").slice(0, 16);
  const note = what.note.length > MAX_NOTE_LENGTH ? `${what.note.slice(0, MAX_NOTE_LENGTH - 1)}…` : what.note;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `${monitor.name.slice(0, 200).replace(/[.-]+$/, "")}.${digest}`, namespace: monitor.namespace },
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, 128),
    action: what.action,
    reason: what.reason,
    type: "Warning",
    note,
    regarding: { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name: monitor.name, namespace: monitor.namespace, ...(monitor.uid === undefined ? {} : { uid: monitor.uid }) },
  };
}
