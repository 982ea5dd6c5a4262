/**
 * Whether an AppMonitor's firing alerts reach alert-receiver: an alert Prometheus fires that
 * Alertmanager inhibits, silences, mutes or routes to no `appmonitor` receiver never reaches
 * memory-scaler, and nothing else says so. Pure: Prometheus's firing alerts (`ALERTS`) and
 * Alertmanager's view of them (`GET /api/v2/alerts`) in, the undelivered ones and their Warning
 * text out; `delivery-check.ts` asks both.
 *
 * A Warning Event, not a condition: whether a firing alert is delivered is a fact of that firing,
 * which rule-sync sees only at an event or a resync (every 10 minutes). As a condition it would go
 * on saying "inhibited" long after the alert resolved, and it would turn Ready (which kstatus,
 * Flux and Argo CD read as the AppMonitor's health) False whenever an alert fires somewhere it is
 * inhibited. An Event is dated and names the firing it saw; it is written once per firing and
 * cause (`events.ts`, {@link deliveryEventKey}).
 *
 * An alert Prometheus fires that Alertmanager does not list, or lists as `unprocessed`, is not
 * judged: Prometheus sends on its next evaluation, and Alertmanager decides a moment later.
 */
import { APPMONITOR_RECEIVER } from "../lib/alertmanager-receiver.ts";
import { promqlString } from "../lib/promql.ts";
import { GENERATED_ALERT_NAMES } from "./rule.ts";

/**
 * An alert as Alertmanager's `GET /api/v2/alerts` lists it (its `gettableAlert`,
 * https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml), as far as rule-sync reads it.
 */
export interface ManagedAlert {
  /** Alertmanager's hash of the labels; `inhibitedBy` names alerts by it. */
  readonly fingerprint: string;
  /** The alert's labels, Prometheus's external labels included. */
  readonly labels: Readonly<Record<string, string>>;
  /** RFC 3339: when the alert started firing. */
  readonly startsAt: string;
  /** `active`, `suppressed` or `unprocessed`. */
  readonly state: string;
  /** Fingerprints of the alerts that inhibit it (the source alerts of matching inhibit rules). */
  readonly inhibitedBy: readonly string[];
  /** Ids of the silences that match it. */
  readonly silencedBy: readonly string[];
  /** Names of the time intervals that mute it (Alertmanager 0.27 and later; empty before). */
  readonly mutedBy: readonly string[];
  /** The receivers its routes name, in the routing tree's order. */
  readonly receivers: readonly string[];
}

/** A firing alert of Prometheus: the labels of its `ALERTS` series, without `__name__` and `alertstate`. */
export type FiringAlert = Readonly<Record<string, string>>;

/** Why an alert does not reach alert-receiver; the first that holds, in this order. */
export type UndeliveredCause = "inhibited" | "silenced" | "muted" | "notRouted";

/** The Event reason of each cause. */
export const DELIVERY_REASONS: Readonly<Record<UndeliveredCause, string>> = {
  inhibited: "AlertInhibited",
  silenced: "AlertSilenced",
  muted: "AlertMuted",
  notRouted: "AlertNotRouted",
};

/** A firing alert of the AppMonitor that Alertmanager does not deliver to alert-receiver. */
export interface Undelivered {
  readonly cause: UndeliveredCause;
  /** Its labels in Prometheus. */
  readonly alert: FiringAlert;
  /** Alertmanager's record of it. */
  readonly managed: ManagedAlert;
  /** The alerts of `inhibitedBy` that the answer held, as `alertname{label="value", …}`; the others by fingerprint. */
  readonly inhibitors: readonly string[];
}

/** Labels of `ALERTS` that are not the alert's own. */
const SERIES_ONLY_LABELS = new Set(["__name__", "alertstate"]);

/**
 * The instant query of every firing alert rule-sync's rules raise, in every namespace: one
 * answer serves all the AppMonitors of a resync. `appmonitor!=""` leaves out alerts of the same
 * name from another source.
 */
export function firingAlertsQuery(): string {
  return `ALERTS{alertstate="firing", alertname=~${promqlString(GENERATED_ALERT_NAMES.join("|"))}, appmonitor!=""}`;
}

/** The alerts of `samples` (an answer to {@link firingAlertsQuery}) raised by the AppMonitor `namespace/name`, as {@link FiringAlert}s. */
export function firingOf(samples: readonly { readonly metric: Readonly<Record<string, string>> }[], namespace: string, name: string): FiringAlert[] {
  return samples
    .filter((s) => s.metric.namespace === namespace && s.metric.appmonitor === name)
    .map((s) => Object.fromEntries(Object.entries(s.metric).filter(([k]) => !SERIES_ONLY_LABELS.has(k))));
}

/** Alertmanager's filter for the alerts of `namespace` (`filter=` of `GET /api/v2/alerts`): ours and what may inhibit them there. */
export function namespaceFilter(namespace: string): string {
  return `namespace=${promqlString(namespace)}`;
}

/** `alertname{k="v", …}` of `labels`, the other labels sorted; the external labels are left in (they say which Prometheus sent it). */
export function describeAlert(labels: Readonly<Record<string, string>>): string {
  const rest = Object.keys(labels).filter((k) => k !== "alertname").sort().map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${labels.alertname ?? "(no alertname)"}{${rest.join(", ")}}`;
}

/** Whether `managed` carries every label of `firing`: Alertmanager's copy has Prometheus's external labels besides. */
function sameAlert(firing: FiringAlert, managed: ManagedAlert): boolean {
  return Object.entries(firing).every(([k, v]) => managed.labels[k] === v);
}

/** Why `managed` is not delivered to `receiver`, or undefined when it is (or is not decided yet). */
function causeOf(managed: ManagedAlert, receiver: string): UndeliveredCause | undefined {
  if (managed.state === "unprocessed") return undefined;
  if (managed.inhibitedBy.length > 0) return "inhibited";
  if (managed.silencedBy.length > 0) return "silenced";
  if (managed.mutedBy.length > 0) return "muted";
  if (!managed.receivers.includes(receiver)) return "notRouted";
  return undefined;
}

/**
 * The alerts of `firing` that Alertmanager (`managed`: its answer for their namespace) inhibits,
 * silences, mutes, or routes to no `receiver`, each with its inhibiting alerts named from the
 * same answer. An alert Alertmanager does not list yet, or has not processed, is left out.
 *
 * @param firing the AppMonitor's firing alerts in Prometheus ({@link firingOf}).
 * @param managed Alertmanager's alerts of the namespace, suppressed ones included.
 * @param receiver the receiver that calls alert-receiver.
 * @returns in `firing`'s order.
 */
export function findUndelivered(firing: readonly FiringAlert[], managed: readonly ManagedAlert[], receiver = APPMONITOR_RECEIVER): Undelivered[] {
  const byFingerprint = new Map(managed.map((m) => [m.fingerprint, m]));
  const found: Undelivered[] = [];
  for (const alert of firing) {
    const copy = managed.find((m) => sameAlert(alert, m));
    const cause = copy === undefined ? undefined : causeOf(copy, receiver);
    if (copy === undefined || cause === undefined) continue;
    const inhibitors = copy.inhibitedBy.map((fp) => {
      const source = byFingerprint.get(fp);
      return source === undefined ? `an alert of fingerprint ${fp} (outside namespace ${alert.namespace ?? "?"})` : describeAlert(source.labels);
    });
    found.push({ cause, alert, managed: copy, inhibitors });
  }
  return found;
}

/** Where the routing a user installs is written out. */
const ROUTING = 'docs/install.md, "Routing and rules"';

/**
 * The Warning's note for `u`: the alert, the Pod and container, what stops it (the inhibiting
 * alerts, the silences, the time intervals or the receivers it went to) and the fix.
 *
 * @param alertmanagerUrl the Alertmanager asked, as the note names it.
 */
export function deliveryMessage(u: Undelivered, alertmanagerUrl: string): string {
  const { alert, managed } = u;
  const what = `${alert.alertname ?? "the alert"} of pod ${alert.namespace ?? "?"}/${alert.pod ?? "?"}${alert.container === undefined ? "" : `, container ${alert.container}`}`;
  const head = `${what} fires in Prometheus, but the Alertmanager at ${alertmanagerUrl}`;
  const lost = "alert-receiver never gets it, so memory-scaler does not act on it";
  switch (u.cause) {
    case "inhibited":
      return `${head} inhibits it (inhibited by ${u.inhibitors.join(", ")}): ${lost}. An inhibit rule whose source is that alert matches this one ` +
        `(kube-prometheus-stack's: InfoInhibitor mutes every severity info alert of its namespace; a critical alert mutes the warning and info alerts, ` +
        `a warning alert the info ones, of the same name and namespace). Give appmonitor's alerts a severity no inhibit rule targets (ALERT_SEVERITY, the chart's alertSeverity), ` +
        `or narrow alertmanager.config's inhibit_rules so they leave alertname=~"${GENERATED_ALERT_NAMES.join("|")}" alone (${ROUTING})`;
    case "silenced":
      return `${head} silences it (silence ${managed.silencedBy.join(", ")}): ${lost}. Expire the silence if it is not meant to stop scaling ` +
        `(amtool silence expire ${managed.silencedBy.join(" ")}, or Alertmanager's UI)`;
    case "muted":
      return `${head} mutes it (time interval ${managed.mutedBy.join(", ")} of its route): ${lost} while the interval lasts. ` +
        `Take mute_time_intervals off the route of these alerts if they should scale at any time (${ROUTING})`;
    case "notRouted": {
      const to = managed.receivers.length === 0 ? "no receiver" : `the receiver${managed.receivers.length === 1 ? "" : "s"} ${managed.receivers.join(", ")}`;
      return `${head} routes it to ${to}, not ${APPMONITOR_RECEIVER}: ${lost}. Put appmonitor's route first under the root route, matching ` +
        `alertname=~"${GENERATED_ALERT_NAMES.join("|")}", with no route before it that catches these alerts, and the ${APPMONITOR_RECEIVER} receiver (${ROUTING})`;
    }
  }
}

/**
 * What makes the Warning of `u` one per firing and cause: Alertmanager's fingerprint, when the
 * firing started, and the cause. The same alert still suppressed at the next resync gives the same
 * key (`events.ts` names the Event from it, so the API server refuses it a second time); a new
 * firing or another cause, a new one.
 */
export function deliveryEventKey(u: Undelivered): string {
  return [u.managed.fingerprint, u.managed.startsAt, u.cause].join("/");
}
