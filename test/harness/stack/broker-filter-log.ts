/**
 * What Knative Eventing's Broker filter says of each event it is handed, read from its own log:
 * the proof that an event went through the Broker (ingress → in-memory channel → filter) and
 * which Trigger it was handed to, with the Broker's own time stamps.
 *
 * The filter logs every event at debug level as "Received message", once per Trigger whose
 * channel subscription delivered it, before the Trigger's filter is applied (knative/eventing
 * v0.50.0 `pkg/broker/filter/filter_handler.go`), with the event in the CloudEvents SDK's text
 * form, which carries `knativearrivaltime`: the moment the Broker ingress accepted the event
 * (`pkg/broker/ingress/ingress_handler.go`). Debug is off by default; {@link FILTER_DEBUG_LEVEL}
 * is the `config-logging` entry that turns it on while the filter runs (it watches that
 * ConfigMap, `cmd/broker/filter/main.go`).
 */
import * as k8s from "@kubernetes/client-node";
import { EVENTING_NAMESPACE } from "./eventing-manifests.ts";

/** The `config-logging` entry (knative-eventing namespace) that makes the filter log each event: `loglevel.<component>`. */
export const FILTER_DEBUG_LEVEL = { key: "loglevel.mt_broker_filter", value: "debug" } as const;

/** One event the filter received for one Trigger. Times in ms since the epoch. */
export interface FilterReceipt {
  /** When the filter logged it (its `ts`). */
  readonly at: number;
  /** The Trigger, `<namespace>/<name>`. */
  readonly trigger: string;
  readonly eventId: string;
  readonly eventType: string;
  /** The event's `subject`, when it has one (an ApiServerSource's: `/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>`). */
  readonly subject?: string;
  /** When the Broker ingress accepted the event (its `knativearrivaltime` extension); undefined without one. */
  readonly arrivedAt?: number;
}

/** `zap.Any` of a `types.NamespacedName`: reflected as `{Namespace, Name}`, or its `ns/name` string. */
function triggerName(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value !== null && typeof value === "object") {
    const { Namespace, Name } = value as { Namespace?: unknown; Name?: unknown };
    if (typeof Namespace === "string" && typeof Name === "string") return `${Namespace}/${Name}`;
  }
  return undefined;
}

/** An attribute's value in the SDK's text form of an event (`  <name>: <value>` lines). */
function attribute(text: string, name: string): string | undefined {
  return new RegExp(`^  ${name}: (.*)$`, "m").exec(text)?.[1]?.trim();
}

/**
 * The filter's "Received message" lines in `log` (its container log: JSON lines, zap's encoder
 * with `ts` in ISO 8601); other lines, and lines that are not JSON, are skipped.
 */
export function parseFilterLog(log: string): FilterReceipt[] {
  const receipts: FilterReceipt[] = [];
  for (const line of log.split("\n")) {
    if (!line.startsWith("{")) continue;
    let entry: { msg?: unknown; ts?: unknown; trigger?: unknown; event?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.msg !== "Received message" || typeof entry.event !== "string") continue;
    const trigger = triggerName(entry.trigger);
    const eventId = attribute(entry.event, "id");
    const eventType = attribute(entry.event, "type");
    const at = typeof entry.ts === "string" ? Date.parse(entry.ts) : typeof entry.ts === "number" ? entry.ts * 1000 : NaN;
    if (!trigger || !eventId || !eventType || Number.isNaN(at)) continue;
    const arrival = attribute(entry.event, "knativearrivaltime");
    const arrivedAt = arrival === undefined ? NaN : Date.parse(arrival);
    const subject = attribute(entry.event, "subject");
    receipts.push({ at, trigger, eventId, eventType, ...(subject === undefined ? {} : { subject }), ...(Number.isNaN(arrivedAt) ? {} : { arrivedAt }) });
  }
  return receipts;
}

/**
 * Turns on the filter's per-event debug line ({@link FILTER_DEBUG_LEVEL}), by a merge patch of
 * Eventing's `config-logging`. The filter picks the level up within a second or so; events it
 * handled before are not logged.
 * @throws the API error when the ConfigMap cannot be patched.
 */
export async function logFilterReceipts(kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.patchNamespacedConfigMap(
    { name: "config-logging", namespace: EVENTING_NAMESPACE, body: { data: { [FILTER_DEBUG_LEVEL.key]: FILTER_DEBUG_LEVEL.value } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
}

/**
 * Every receipt in the logs of the filter's Pods (`mt-broker-filter-*` in knative-eventing).
 * @throws the API error when the Pods or their logs cannot be read.
 */
export async function readFilterReceipts(kc: k8s.KubeConfig): Promise<FilterReceipt[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const pods = (await core.listNamespacedPod({ namespace: EVENTING_NAMESPACE })).items.filter((p) => p.metadata?.name?.startsWith("mt-broker-filter-") && p.status?.phase === "Running");
  const logs = await Promise.all(pods.map((p) => core.readNamespacedPodLog({ name: p.metadata?.name ?? "", namespace: EVENTING_NAMESPACE })));
  return logs.flatMap(parseFilterLog);
}
