/**
 * The pure core of alert-receiver: an Alertmanager webhook payload → one CloudEvent per
 * alert. No I/O; the shell (`handler.ts`) turns the attributes into SDK events and sends them.
 *
 * Contract of the event: DESIGN.md "The memory-threshold CloudEvent"; attribute rules:
 * CloudEvents 1.0 (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/spec.md#context-attributes).
 */
import { createHash } from "node:crypto";
import { FIRING_TYPE, RESOLVED_TYPE, triggerOf, type AlertEventData } from "../lib/alert-event.ts";
import { APPMONITOR_ALERT_LABEL } from "../lib/appmonitor.ts";
import { isDnsLabel, isDnsSubdomain } from "../lib/kube-names.ts";
import type { AlertmanagerAlert, AlertmanagerWebhook, AlertStatus } from "./webhook.ts";

/** `source` when the payload has no usable `externalURL`. */
export const DEFAULT_SOURCE = "/alertmanager";
/** Go's zero time, which Alertmanager sends as `endsAt` of an alert that has not ended. */
export const NOT_ENDED = "0001-01-01T00:00:00Z";

const NOT_ENDED_MS = Date.parse(NOT_ENDED);
/** A decimal number as Prometheus prints one in `{{ $value }}`; NaN and ±Inf are not values. */
const NUMBER_PATTERN = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
/** Characters of an RFC 3986 URI reference (the CloudEvents `source` format). */
const URI_CHARACTERS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/;

/** The attributes of one CloudEvent to send (specversion 1.0). */
export interface AlertEventAttributes {
  /** sha256 hex of fingerprint, startsAt and status: the same alert occurrence → the same id. */
  readonly id: string;
  readonly type: typeof FIRING_TYPE | typeof RESOLVED_TYPE;
  readonly source: string;
  /** `namespaces/<namespace>/pods/<pod>`. */
  readonly subject: string;
  /** RFC 3339 in UTC with milliseconds: startsAt (firing) or endsAt (resolved). */
  readonly time: string;
  readonly datacontenttype: "application/json";
  readonly data: AlertEventData;
}

/** Why an alert gave no event. */
export type DropReason = "no-namespace-or-pod" | "invalid-namespace-or-pod" | "invalid-time";

/** An alert that gave no event. */
export interface DroppedAlert {
  /** Position in `alerts`. */
  readonly index: number;
  readonly fingerprint: string;
  readonly reason: DropReason;
}

/** Result of {@link mapWebhook}: events in the order of the alerts, and the alerts left out. */
export interface Mapping {
  readonly events: AlertEventAttributes[];
  readonly dropped: DroppedAlert[];
}

/**
 * Maps a schema-valid payload to events: one per alert, typed by the alert's own `status`
 * (the payload's status is the group's, not the alert's). An alert without `namespace` and
 * `pod` labels, with labels that are not Kubernetes names, or with a time that is not a
 * real instant, is dropped and listed. Never throws for a payload the schema accepts.
 */
export function mapWebhook(payload: AlertmanagerWebhook): Mapping {
  const source = sourceOf(payload.externalURL);
  const events: AlertEventAttributes[] = [];
  const dropped: DroppedAlert[] = [];
  payload.alerts.forEach((alert, index) => {
    const result = mapAlert(alert, source);
    if (typeof result === "string") dropped.push({ index, fingerprint: alert.fingerprint, reason: result });
    else events.push(result);
  });
  return { events, dropped };
}

/** One alert → its event attributes, or why it has none. */
export function mapAlert(alert: AlertmanagerAlert, source: string): AlertEventAttributes | DropReason {
  const namespace = own(alert.labels, "namespace");
  const pod = own(alert.labels, "pod");
  if (namespace === undefined || pod === undefined || namespace === "" || pod === "") return "no-namespace-or-pod";
  if (!isDnsLabel(namespace) || !isDnsSubdomain(pod)) {
    return "invalid-namespace-or-pod";
  }
  const startsMs = Date.parse(alert.startsAt);
  const endsMs = Date.parse(alert.endsAt);
  if (!Number.isFinite(startsMs) || !Number.isFinite(endsMs)) return "invalid-time";
  const ended = !isNotEnded(alert.endsAt);
  const timeMs = alert.status === "resolved" && ended ? endsMs : startsMs;

  const container = own(alert.labels, "container");
  const appmonitor = own(alert.labels, APPMONITOR_ALERT_LABEL);
  const value = parseValue(own(alert.annotations, "value")) ?? parseValue(own(alert.labels, "value"));
  const alertname = own(alert.labels, "alertname") ?? "";
  const data: AlertEventData = {
    alertname,
    status: alert.status,
    namespace,
    pod,
    ...(container === undefined || container === "" ? {} : { container }),
    ...(appmonitor === undefined || appmonitor === "" ? {} : { appmonitor }),
    trigger: triggerOf(alertname),
    ...(value === undefined ? {} : { value }),
    fingerprint: alert.fingerprint,
    startsAt: alert.startsAt,
    endsAt: ended ? alert.endsAt : null,
    labels: nullPrototypeCopy(alert.labels),
    annotations: nullPrototypeCopy(alert.annotations),
    generatorURL: alert.generatorURL ?? "",
  };
  return {
    id: eventId(alert.fingerprint, alert.startsAt, alert.status),
    type: alert.status === "firing" ? FIRING_TYPE : RESOLVED_TYPE,
    source,
    subject: `namespaces/${namespace}/pods/${pod}`,
    time: new Date(timeMs).toISOString(),
    datacontenttype: "application/json",
    data,
  };
}

/**
 * The event id of one alert occurrence: hex sha256 of `fingerprint`, `startsAt` and `status`
 * joined by newlines. Alertmanager re-sends an alert with the same three, so a re-send gets the
 * same id (receivers deduplicate on source + id, CloudEvents spec §id); resolving changes the
 * status and so the id; the alert firing again later has a new startsAt and a new id.
 */
export function eventId(fingerprint: string, startsAt: string, status: AlertStatus): string {
  return createHash("sha256").update(`${fingerprint}\n${startsAt}\n${status}`).digest("hex");
}

/** `externalURL` when it is an absolute URL made of URI characters, else {@link DEFAULT_SOURCE}. */
export function sourceOf(externalURL: string | undefined): string {
  if (externalURL === undefined || !URI_CHARACTERS.test(externalURL) || !URL.canParse(externalURL)) return DEFAULT_SOURCE;
  return externalURL;
}

/** True for Alertmanager's "not ended" `endsAt` (Go's zero time, however it is written). */
export function isNotEnded(endsAt: string): boolean {
  return Date.parse(endsAt) === NOT_ENDED_MS;
}

/** A finite decimal number, or `undefined` (absent, empty, NaN, ±Inf, anything else). */
export function parseValue(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (!NUMBER_PATTERN.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * A label set copied into an object without a prototype: every name is an own data property,
 * `__proto__` and `constructor` included (Alertmanager accepts both as label and annotation
 * names and sends them), and reading one never reaches `Object.prototype`. The JSON of the event
 * carries them all; a copy into a plain object by assignment (`Object.assign({}, …)`,
 * `copy[name] = value`) would silently drop `__proto__`.
 */
function nullPrototypeCopy(labels: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  return Object.assign(Object.create(null) as Record<string, string>, labels);
}

/** A label by name, ignoring inherited properties (`constructor`, `__proto__`). */
function own(labels: Readonly<Record<string, string>>, name: string): string | undefined {
  return Object.hasOwn(labels, name) ? labels[name] : undefined;
}
