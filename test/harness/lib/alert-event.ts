/**
 * A memory-threshold CloudEvent as alert-receiver makes it, for whatever needs to hand
 * memory-scaler an alert without Prometheus and Alertmanager: the tests, and the harness's probes
 * of a delivery path.
 */
import { randomUUID } from "node:crypto";
import { CloudEvent } from "cloudevents";
import { FIRING_TYPE, RESOLVED_TYPE, triggerOf, type AlertEventData } from "../../../functions/lib/alert-event.ts";

/** Options of {@link alertEvent}. */
export interface AlertEventOptions {
  readonly namespace: string;
  readonly pod: string;
  readonly container?: string;
  /** The `appmonitor` label the generated rules set; absent: an alert no AppMonitor rule raised. */
  readonly appmonitor?: string;
  /** Default `AppMonitorMemoryHigh`, the generated rules' threshold alert; `AppMonitorOOMKilled` is their OOM-kill alert. */
  readonly alertname?: string;
  /** More labels of the alert, e.g. `exported_namespace` (they do not change `namespace`/`pod`). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Default: a random id (a new alert occurrence). */
  readonly id?: string;
  readonly status?: "firing" | "resolved";
  /**
   * When the alert began (RFC 3339). Default: ten minutes ago, before anything a test scaled, so
   * the event re-delivers the crossing a scale answered (the cooldown holds it); a test of a new
   * crossing of a raised limit gives a later time.
   */
  readonly startsAt?: string;
}

/** A memory-threshold CloudEvent as alert-receiver makes it (DESIGN.md "The memory-threshold CloudEvent"). */
export function alertEvent(options: AlertEventOptions): CloudEvent<AlertEventData> {
  const status = options.status ?? "firing";
  const startsAt = options.startsAt ?? new Date(Date.now() - 600_000).toISOString();
  const alertname = options.alertname ?? "AppMonitorMemoryHigh";
  const trigger = triggerOf(alertname);
  const labels: Record<string, string> = { ...options.labels, alertname, namespace: options.namespace, pod: options.pod };
  if (options.container !== undefined) labels.container = options.container;
  if (options.appmonitor !== undefined) labels.appmonitor = options.appmonitor;
  const data: AlertEventData = {
    alertname,
    status,
    namespace: options.namespace,
    pod: options.pod,
    ...(options.container === undefined ? {} : { container: options.container }),
    ...(options.appmonitor === undefined ? {} : { appmonitor: options.appmonitor }),
    trigger,
    // The OOM-kill rule sets no value annotation: a kill measures no percent.
    ...(trigger === "oomKilled" ? {} : { value: 81.25 }),
    fingerprint: "0123456789abcdef",
    startsAt,
    endsAt: status === "resolved" ? new Date().toISOString() : null,
    labels,
    annotations: { summary: `${options.pod} is near its memory limit` },
    generatorURL: "http://prometheus.test:9090/graph",
  };
  return new CloudEvent<AlertEventData>({
    specversion: "1.0",
    id: options.id ?? randomUUID(),
    type: status === "firing" ? FIRING_TYPE : RESOLVED_TYPE,
    source: "http://alertmanager.test:9093",
    subject: `namespaces/${options.namespace}/pods/${options.pod}`,
    time: startsAt,
    datacontenttype: "application/json",
    data,
  });
}
