/**
 * The AppMonitor status rule-sync writes: its {@link RULE_READY} condition and
 * `status.observedGeneration`, as a server-side apply body for the status subresource. Pure.
 *
 * `status.conditions` is a map list keyed by `type` in the AppMonitor CRD
 * (`x-kubernetes-list-type: map`), so applying only our condition leaves the others (e.g.
 * memory-scaler's) untouched (https://kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy).
 * Condition fields follow metav1.Condition
 * (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties):
 * `lastTransitionTime` changes only when `status` does.
 */
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, type AppMonitorCondition } from "../lib/appmonitor.ts";
import { formatTimestamp } from "../lib/rfc3339.ts";
import { RULE_READY, type DesiredCondition, type ObservedAppMonitor } from "./plan.ts";

/** A server-side apply body for `appmonitors/status`. */
export interface StatusApply {
  readonly apiVersion: typeof APPMONITOR_API_VERSION;
  readonly kind: typeof APPMONITOR_KIND;
  /**
   * name, namespace, and the resourceVersion that was read: the API server refuses the write
   * with 409 Conflict when the AppMonitor changed (or was replaced) since, so a condition is never
   * written against a generation it was not computed for.
   */
  readonly metadata: { readonly name: string; readonly namespace: string; readonly resourceVersion?: string };
  readonly status: { readonly observedGeneration?: number; readonly conditions: readonly AppMonitorCondition[] };
}

/**
 * The status write that reports `desired` on `monitor`, or undefined when the AppMonitor
 * already says exactly that (same status, reason, message and observed generation), so a
 * resync that changes nothing writes nothing.
 *
 * @param monitor the AppMonitor as read (its generation and current status).
 * @param desired the condition to report.
 * @param now the current time; becomes `lastTransitionTime` when the condition's status changes.
 * @returns the apply body, or undefined.
 */
export function statusApply(monitor: ObservedAppMonitor, desired: DesiredCondition, now: Date): StatusApply | undefined {
  const { name, namespace, resourceVersion, generation } = monitor.metadata;
  if (name === undefined || namespace === undefined) return undefined;
  const current = monitor.status?.conditions?.find((c) => c.type === RULE_READY);
  const observedGeneration = typeof generation === "number" ? generation : undefined;
  const unchanged =
    current !== undefined &&
    current.status === desired.status &&
    current.reason === desired.reason &&
    current.message === desired.message &&
    current.observedGeneration === observedGeneration &&
    monitor.status?.observedGeneration === observedGeneration;
  if (unchanged) return undefined;
  const keepTime = current?.status === desired.status && typeof current.lastTransitionTime === "string" && current.lastTransitionTime !== "";
  const condition: AppMonitorCondition = {
    type: RULE_READY,
    status: desired.status,
    reason: desired.reason,
    // metav1.Condition's limit, so the message also fits a condition of a built-in type.
    message: desired.message.slice(0, 32_768),
    lastTransitionTime: keepTime && current.lastTransitionTime !== undefined ? current.lastTransitionTime : formatTimestamp(now),
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
  return {
    apiVersion: APPMONITOR_API_VERSION,
    kind: APPMONITOR_KIND,
    metadata: { name, namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    status: { ...(observedGeneration === undefined ? {} : { observedGeneration }), conditions: [condition] },
  };
}
