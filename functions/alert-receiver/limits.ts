/**
 * How large an Alertmanager webhook payload may get, and the `max_alerts` that keeps every
 * payload well under the body limit.
 *
 * The body limit is the shared runtime's `BODY_LIMIT_BYTES` (functions/lib/runtime/config.ts):
 * 1 MiB, enforced while the runtime reads the body, before alert-receiver runs. A function has
 * no way to pass the runtime a limit of its own, and alert-receiver needs none: the payloads the
 * suggested `max_alerts` allows stay at half of it. Above it the runtime answers 413, and
 * Alertmanager does not retry a 4xx: every alert of that notification is lost, and alert-receiver
 * never sees which (the runtime logs a warning with status 413, the body's `contentLength` and
 * the sender's user agent; Alertmanager logs `Notify for alerts failed` with the receiver and
 * `num_alerts`).
 *
 * The worst case, in bytes of JSON as Alertmanager writes it (Go's encoding/json, which also
 * escapes `&`, `<` and `>` as `\u0026`…):
 *
 * - One alert of a generated rule: labels `alertname`, `namespace` (≤ 63 characters), `pod`
 *   (≤ 253), `container` (≤ 63), `appmonitor` (≤ 253), `severity` (≤ 63); annotations `summary`
 *   (which repeats those names) and `value`; `generatorURL` = Prometheus's external URL and the
 *   rule's expression, URL-encoded; times and fingerprint. With the longest names Kubernetes
 *   allows, the kube-state-metrics source, five 63-character names in `spec.containers` and a
 *   selector of four 63/63-character labels: 3.8 KiB (test/unit/alert-receiver/limits.test.ts builds it
 *   from the real rule). Prometheus's own label limits bound nothing here: `label_limit` and
 *   `label_value_length_limit` are 0 (unlimited) by default, and apply to scrapes, not to
 *   `external_labels` or alert relabelling, which add labels to every alert.
 *   {@link ALERT_BYTES} = 8 KiB: that alert and 4 KiB for labels added outside the rule.
 * - The rest of a payload: `groupLabels` and `commonLabels` hold at most one alert's labels,
 *   `commonAnnotations` at most its annotations, `groupKey` the route's matchers and the group
 *   labels, plus `receiver`, `status`, `externalURL`, `version`, `truncatedAlerts`:
 *   at most 3 × {@link ALERT_BYTES} + 1 KiB.
 *
 * So {@link SUGGESTED_MAX_ALERTS} = 64 (64 × 8 KiB is half the limit) gives at most
 * (64 + 3) × 8 KiB + 1 KiB = 537 KiB, 52 % of 1 MiB. A demo alert (`mymonitor`, memhog) is
 * about 1 KiB, so 64 of them make about 64 KiB. Alerts beyond `max_alerts` are not sent in
 * that notification (Alertmanager counts them in `truncatedAlerts`, which alert-receiver logs
 * and counts); with the shipped route (`group_by: [namespace, pod, container]`) a group holds one
 * alert per AppMonitor covering that container, far below 64.
 */
import { BODY_LIMIT_BYTES } from "../lib/runtime/config.ts";

/** The body limit webhooks are read with (the runtime's), in bytes. */
export const WEBHOOK_BODY_LIMIT_BYTES = BODY_LIMIT_BYTES;

/** The size one alert of a payload is budgeted at, in bytes of JSON; see the module comment. */
export const ALERT_BYTES = 8 * 1024;

/** Bytes of a payload besides its alerts: at most three alerts' worth and 1 KiB. */
export const ENVELOPE_BYTES = 3 * ALERT_BYTES + 1024;

/** The `max_alerts` the shipped Alertmanager configurations and the README set. */
export const SUGGESTED_MAX_ALERTS = 64;

/** A payload at least this large is logged as near the limit (three quarters of it), in bytes. */
export const LARGE_PAYLOAD_BYTES = Math.floor((WEBHOOK_BODY_LIMIT_BYTES * 3) / 4);

/**
 * The largest payload Alertmanager sends with `max_alerts` set to `maxAlerts`, when no alert is
 * over `alertBytes`.
 *
 * @param maxAlerts the receiver's `max_alerts` (≥ 1).
 * @param alertBytes the largest alert, in bytes of JSON.
 * @returns bytes.
 */
export function worstCasePayloadBytes(maxAlerts: number, alertBytes = ALERT_BYTES): number {
  return maxAlerts * alertBytes + 3 * alertBytes + 1024;
}
