/**
 * The joined form of the AppMonitor rules, for the rule-sync-scale bench's comparison only (the
 * product writes one rule group per AppMonitor, functions/rule-sync/rule.ts). Each AppMonitor's
 * threshold becomes one series, `appmonitor_threshold_percent{namespace, appmonitor}`, and ONE
 * threshold alert and ONE OOM-kill alert join every container's series with it on namespace.
 *
 * In a real design rule-sync would expose the threshold series (a metric Prometheus scrapes);
 * here they are recording rules of `vector(<percent>)` in one group, so their cost shows up as
 * that group's evaluation time. What the joined form cannot say, unlike one rule per AppMonitor:
 *
 * - two AppMonitors in one namespace: `group_left` needs one threshold series per namespace, and
 *   a second one fails the whole rule ("many-to-many matching not allowed") for every namespace;
 * - spec.containers: the container matchers are the same for every AppMonitor;
 * - spec.forSeconds: one rule has one `for` (here the smallest of all);
 * - the kube-state-metrics source's narrowing to the Pods an AppMonitor covers (its annotation,
 *   or its own spec.selector, which differs per AppMonitor).
 */
import { stringify } from "yaml";
import { promDuration, promqlNumber } from "../../functions/lib/promql.ts";
import { APPMONITOR_ALERT_NAME, APPMONITOR_OOM_ALERT_NAME } from "../../functions/lib/appmonitor.ts";

/** What the joined form keeps of one AppMonitor. */
export interface JoinedMonitor {
  readonly namespace: string;
  readonly name: string;
  /** spec.memThresholdPercent, 1–100. */
  readonly memThresholdPercent: number;
  /** spec.forSeconds, ≥ 0. */
  readonly forSeconds: number;
}

/** The name of the threshold series, one per AppMonitor, labelled namespace and appmonitor. */
export const THRESHOLD_SERIES = "appmonitor_threshold_percent";

const BY = "(namespace, pod, container)";
const CONTAINERS = 'container!="", container!="POD"';

/**
 * The joined threshold alert's expression: 100 × working set / limit per container in every
 * namespace, kept where it is ≥ that namespace's threshold series, which also lends it the
 * `appmonitor` label. Labels: namespace, pod, container, appmonitor; value: the percent in use.
 */
export function joinedAlertExpression(): string {
  return [
    "(",
    `  100 * max by ${BY} (container_memory_working_set_bytes{${CONTAINERS}})`,
    `    / on ${BY}`,
    `  max by ${BY} (container_spec_memory_limit_bytes{${CONTAINERS}} > 0)`,
    ")",
    `  >= on (namespace) group_left (appmonitor)`,
    THRESHOLD_SERIES,
  ].join("\n");
}

/** The joined OOM-kill alert's expression: a kill in the last 10 minutes in any namespace that has a threshold series. */
export function joinedOOMExpression(): string {
  return [
    `(max by ${BY} (increase(container_oom_events_total{${CONTAINERS}}[10m])) > 0)`,
    `  * on (namespace) group_left (appmonitor)`,
    `(${THRESHOLD_SERIES} > bool 0)`,
  ].join("\n");
}

/**
 * Two Prometheus rules files (YAML text) for `monitors`: `thresholds`, one group `name` +
 * "-thresholds" of one recording rule per AppMonitor (`vector(<percent>)`, labelled namespace and
 * appmonitor), and `alerts`, one group `name` with the two joined alerting rules, `for` the
 * smallest spec.forSeconds (0 s without monitors).
 *
 * @param monitors the AppMonitors; one per namespace (see the module comment).
 * @param name the alert group's name.
 * @param interval the groups' evaluation interval in seconds; undefined: Prometheus's global one.
 */
export function joinedRulesFiles(monitors: readonly JoinedMonitor[], name: string, interval?: number): { thresholds: string; alerts: string } {
  const every = interval === undefined ? {} : { interval: promDuration(interval) };
  const thresholds = {
    groups: [{
      name: `${name}-thresholds`,
      ...every,
      rules: monitors.map((m) => ({ record: THRESHOLD_SERIES, expr: `vector(${promqlNumber(m.memThresholdPercent)})`, labels: { namespace: m.namespace, appmonitor: m.name } })),
    }],
  };
  const forSeconds = monitors.reduce((least, m) => Math.min(least, m.forSeconds), Number.POSITIVE_INFINITY);
  const alerts = {
    groups: [{
      name,
      ...every,
      rules: [
        {
          alert: APPMONITOR_ALERT_NAME,
          expr: joinedAlertExpression(),
          for: promDuration(Number.isFinite(forSeconds) ? forSeconds : 0),
          annotations: { summary: `Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} uses {{ $value | printf "%.1f" }}% of its memory limit (AppMonitor {{ $labels.appmonitor }}).`, value: "{{ $value }}" },
        },
        { alert: APPMONITOR_OOM_ALERT_NAME, expr: joinedOOMExpression(), annotations: { summary: `Container {{ $labels.container }} of Pod {{ $labels.namespace }}/{{ $labels.pod }} was OOM-killed (AppMonitor {{ $labels.appmonitor }}).` } },
      ],
    }],
  };
  return { thresholds: stringify(thresholds, { lineWidth: 0 }), alerts: stringify(alerts, { lineWidth: 0 }) };
}
