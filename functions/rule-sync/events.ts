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
  const digest = createHash("sha256").update([monitor.uid ?? monitor.name, condition.type, condition.reason, String(now.getTime())].join("\u0000")).digest("hex").slice(0, 16);
  const note = condition.message.length > MAX_NOTE_LENGTH ? `${condition.message.slice(0, MAX_NOTE_LENGTH - 1)}…` : condition.message;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `${monitor.name.slice(0, 200).replace(/[.-]+$/, "")}.${digest}`, namespace: monitor.namespace },
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, 128),
    action: EVENT_ACTION,
    reason: condition.reason,
    type: "Warning",
    note,
    regarding: { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, name: monitor.name, namespace: monitor.namespace, ...(monitor.uid === undefined ? {} : { uid: monitor.uid }) },
  };
}
