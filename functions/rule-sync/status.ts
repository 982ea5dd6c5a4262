/**
 * The AppMonitor status rule-sync writes: its conditions (RuleReady and MetricsReady, and Ready
 * summarising them, `conditions.ts` `readyOf`) and `status.observedGeneration`, as a server-side
 * apply body for the status subresource. Pure.
 *
 * `status.conditions` is a map list keyed by `type` in the AppMonitor CRD
 * (`x-kubernetes-list-type: map`), so applying only our conditions leaves the others (e.g.
 * memory-scaler's) untouched (https://kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy).
 * Condition fields follow metav1.Condition
 * (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties):
 * `lastTransitionTime` changes only when `status` does.
 */
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, type AppMonitorCondition } from "../lib/appmonitor.ts";
import { formatTimestamp } from "../lib/rfc3339.ts";
import { type DesiredCondition, READY, readyOf } from "./conditions.ts";
import type { ObservedAppMonitor } from "./plan.ts";

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
 * already says exactly that (each condition's status, reason, message and observed generation,
 * and the top-level observed generation), so a resync that changes nothing writes nothing.
 *
 * Every condition rule-sync owns is in every write: server-side apply removes a list entry its
 * manager owned and left out. So `given` holds RuleReady and MetricsReady; Ready is added here.
 *
 * @param monitor the AppMonitor as read (its generation and current status).
 * @param given the conditions to report, one per type (Ready, their summary, is derived from them).
 * @param now the current time; becomes a condition's `lastTransitionTime` when its status changes.
 * @returns the apply body, or undefined.
 */
export function statusApply(monitor: ObservedAppMonitor, given: readonly DesiredCondition[], now: Date): StatusApply | undefined {
  const desired = [...given.filter((c) => c.type !== READY), readyOf(given)];
  const { name, namespace, resourceVersion, generation } = monitor.metadata;
  if (name === undefined || namespace === undefined) return undefined;
  const observedGeneration = typeof generation === "number" ? generation : undefined;
  const currentOf = (type: string) => monitor.status?.conditions?.find((c) => c.type === type);
  const same = (d: DesiredCondition): boolean => {
    const current = currentOf(d.type);
    return current !== undefined && current.status === d.status && current.reason === d.reason && current.message === d.message && current.observedGeneration === observedGeneration;
  };
  if (desired.every(same) && monitor.status?.observedGeneration === observedGeneration) return undefined;
  const conditions = desired.map((d): AppMonitorCondition => {
    const current = currentOf(d.type);
    const keepTime = current?.status === d.status && typeof current.lastTransitionTime === "string" && current.lastTransitionTime !== "";
    return {
      type: d.type,
      status: d.status,
      reason: d.reason,
      // metav1.Condition's limit, so the message also fits a condition of a built-in type.
      message: d.message.slice(0, 32_768),
      lastTransitionTime: keepTime && current.lastTransitionTime !== undefined ? current.lastTransitionTime : formatTimestamp(now),
      ...(observedGeneration === undefined ? {} : { observedGeneration }),
    };
  });
  return {
    apiVersion: APPMONITOR_API_VERSION,
    kind: APPMONITOR_KIND,
    metadata: { name, namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    status: { ...(observedGeneration === undefined ? {} : { observedGeneration }), conditions },
  };
}
