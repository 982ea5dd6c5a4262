/**
 * What Event a dead letter makes. Pure: the dead-lettered CloudEvent's attributes and data in, an
 * events.k8s.io/v1 Event out.
 *
 * Knative hands a dead letter to the sink as the event it could not deliver, with three
 * extensions added (knative.dev/eventing `pkg/kncloudevents/attributes`):
 * `knativeerrordest` (the subscriber's URL), `knativeerrorcode` (its last HTTP status) and
 * `knativeerrordata` (its answer's body, base64, at most 1024 characters).
 *
 * | the event | the Event regards |
 * | --- | --- |
 * | a memory-threshold event (`data.appmonitor` and `data.namespace`, DESIGN.md "The memory-threshold CloudEvent") | that AppMonitor |
 * | an ApiServerSource event (`dev.knative.apiserver.resource.*`: `data` is the object; `….ref.*`: a reference) | that object |
 * | anything else (a PingSource tick, a resync request, data naming nothing) | the sink's own ServiceAccount in the install's namespace |
 *
 * The ServiceAccount rather than the sink's workload: it is the same object in both install
 * profiles (a Knative Service under Serving, a Deployment without), and it is where the other
 * functions already put their Warning Events about themselves (`PermissionDenied`).
 *
 * The Event's name is `<object>.<16 hex>` from the event's `source`, `id` and
 * `knativeerrordest`: CloudEvents identify an event by source and id, and one event that failed
 * at two subscribers is two dead letters. A re-delivered dead letter has the same name, so its
 * create answers 409 AlreadyExists and no second Event is made.
 *
 * The original event (without the `knativeerror*` extensions), in the JSON event format, is kept
 * in the annotation {@link CLOUDEVENT_ANNOTATION} for `kubectl appmonitor resend`, when it fits
 * {@link MAX_STORED_EVENT_BYTES}; otherwise {@link OMITTED_ANNOTATION} says how big it was and
 * the Event's note says the event is only in the sink's log.
 *
 * API: https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/
 */
import { createHash } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND } from "../lib/appmonitor.ts";
import { isRecord } from "../lib/is-record.ts";
import { isDnsLabel, isDnsSubdomain } from "../lib/kube-names.ts";

/** `reason` of every dead letter's Event. */
export const DEAD_LETTER_REASON = "DeadLetter";
/** `action` of the Event: what failed. */
export const DEAD_LETTER_ACTION = "DeliverEvent";
/** `reportingController` of the Event. */
export const REPORTING_CONTROLLER = "kubedemo.com/dead-letter";
/** The annotation holding the original event, JSON event format (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/formats/json-format.md). */
export const CLOUDEVENT_ANNOTATION = "appmonitor.kubedemo.com/cloudevent";
/** The annotation set instead when the event was too large to keep: its size in bytes. */
export const OMITTED_ANNOTATION = "appmonitor.kubedemo.com/cloudevent-omitted-bytes";
/** The annotation naming the Broker the event came through, `<namespace>/<name>`: where `resend` sends it. */
export const BROKER_ANNOTATION = "appmonitor.kubedemo.com/broker";
/** The extensions Knative adds to a dead letter, left out of the stored event. */
export const KNATIVE_ERROR_EXTENSIONS = ["knativeerrordest", "knativeerrorcode", "knativeerrordata"] as const;
/**
 * The most bytes of the stored event: the API server refuses an object whose annotations
 * together pass 256 KiB (k8s.io/apimachinery `TotalAnnotationSizeLimitB`); the rest of the
 * Event's annotations stay well within the difference.
 */
export const MAX_STORED_EVENT_BYTES = 256 * 1024 - 1024;
/** The API server refuses a `note` longer than 1 kB. */
const MAX_NOTE_LENGTH = 1024;
/** Prefixes of the ApiServerSource's event types (Resource and Reference mode). */
const APISERVER_TYPE = /^dev\.knative\.apiserver\.(resource|ref)\./;

/** A dead-lettered event as the sink received it: its attributes (extensions included) and data. */
export interface DeadLetterInput {
  /** Every attribute, as the CloudEvents SDK's `toJSON()` gives them; `data` or `data_base64` too. */
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** The object a dead letter's Event regards. */
export interface Regarding {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

/** Where the sink runs: the fallback object and the Broker its events come through. */
export interface SinkPlace {
  /** The install's namespace. */
  readonly namespace: string;
  /** The sink's ServiceAccount there. */
  readonly serviceAccount: string;
  /** The Broker's name, in the install's namespace. */
  readonly broker: string;
}

/** Why Knative dead-lettered the event, from its extensions. */
export interface KnativeError {
  /** `knativeerrorcode`, e.g. `400`; undefined when absent (not dead-lettered by Knative). */
  readonly code: string | undefined;
  /** `knativeerrordest`: the subscriber that refused it. */
  readonly dest: string | undefined;
  /** `knativeerrordata` decoded from base64 (as it was when it is not base64 of UTF-8 text). */
  readonly data: string | undefined;
}

/** The extensions Knative added, `knativeerrordata` decoded. */
export function knativeError(attributes: Readonly<Record<string, unknown>>): KnativeError {
  const text = (name: string) => (attributes[name] === undefined || attributes[name] === null ? undefined : String(attributes[name]));
  const raw = text("knativeerrordata");
  return { code: text("knativeerrorcode"), dest: text("knativeerrordest"), data: raw === undefined ? undefined : decodeBase64Text(raw) };
}

/** `value` decoded when it is base64 (standard alphabet, padded) of valid UTF-8, else `value`. */
function decodeBase64Text(value: string): string {
  if (value.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return value;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(value, "base64"));
  } catch {
    return value;
  }
}

/** The event's `data` as a JSON object, whether the SDK parsed it or left it text or bytes; else undefined. */
function dataObject(attributes: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  let data = attributes.data;
  if (data === undefined && typeof attributes.data_base64 === "string") data = Buffer.from(attributes.data_base64, "base64").toString("utf8");
  if (typeof data === "string" || Buffer.isBuffer(data) || data instanceof Uint8Array) {
    try {
      data = JSON.parse(Buffer.from(data as string | Uint8Array).toString("utf8"));
    } catch {
      return undefined;
    }
  }
  return isRecord(data) ? data : undefined;
}

/**
 * The object the event names (this module's table), or undefined when it names none.
 * Names are checked as Kubernetes checks them (namespace a DNS label, name a DNS subdomain), so
 * a malformed event cannot make an Event the API server would refuse.
 */
export function namedObject(attributes: Readonly<Record<string, unknown>>): Regarding | undefined {
  const data = dataObject(attributes);
  if (data === undefined) return undefined;
  const valid = (namespace: unknown, name: unknown): [string, string] | undefined =>
    typeof namespace === "string" && typeof name === "string" && isDnsLabel(namespace) && isDnsSubdomain(name) ? [namespace, name] : undefined;
  const type = String(attributes.type ?? "");
  if (APISERVER_TYPE.test(type)) {
    const meta = isRecord(data.metadata) ? data.metadata : data;
    const names = valid(meta.namespace, meta.name);
    if (names === undefined || typeof data.apiVersion !== "string" || typeof data.kind !== "string" || data.apiVersion === "" || data.kind === "") return undefined;
    const uid = typeof meta.uid === "string" && meta.uid !== "" ? meta.uid : undefined;
    return { apiVersion: data.apiVersion, kind: data.kind, namespace: names[0], name: names[1], ...(uid === undefined ? {} : { uid }) };
  }
  const names = valid(data.namespace, data.appmonitor);
  return names === undefined ? undefined : { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, namespace: names[0], name: names[1] };
}

/** The sink's ServiceAccount: what an event that names no object regards. */
export function fallbackObject(place: SinkPlace): Regarding {
  return { apiVersion: "v1", kind: "ServiceAccount", namespace: place.namespace, name: place.serviceAccount };
}

/** The original event as the Broker got it: every attribute but Knative's error extensions. */
export function originalEvent(attributes: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(attributes).filter(([name, value]) => !(KNATIVE_ERROR_EXTENSIONS as readonly string[]).includes(name) && value !== undefined));
}

/**
 * The Event's name, `<object name>.<16 hex>`: deterministic in the event's `source`, `id` and
 * `knativeerrordest` (see this module's header), within the 253 characters of a name.
 */
export function eventName(regarding: Regarding, attributes: Readonly<Record<string, unknown>>): string {
  const digest = createHash("sha256")
    .update(["DeadLetter", String(attributes.source ?? ""), String(attributes.id ?? ""), String(attributes.knativeerrordest ?? "")].join("\u0000"))
    .digest("hex")
    .slice(0, 16);
  return `${regarding.name.slice(0, 200).replace(/[.-]+$/, "")}.${digest}`;
}

/** The note: what was lost and why, within the API server's 1 kB. */
export function deadLetterNote(attributes: Readonly<Record<string, unknown>>, error: KnativeError, stored: boolean): string {
  const why = error.code === undefined ? "it came without Knative's error extensions" : `${error.dest ?? "the subscriber"} answered ${error.code}${error.data === undefined || error.data === "" ? "" : `: ${error.data}`}`;
  const keep = stored ? "resend: kubectl appmonitor resend <this Event> -n <its namespace>" : "too large to keep here: only the dead-letter sink's log has it";
  const head = `${String(attributes.type)} from ${String(attributes.source)} (id ${String(attributes.id)}) was dead-lettered; ${keep}. Why: `;
  const note = `${head}${why}`;
  return note.length > MAX_NOTE_LENGTH ? `${note.slice(0, MAX_NOTE_LENGTH - 1)}…` : note;
}

/**
 * The Warning Event of one dead letter.
 * @param input the event as received.
 * @param regarding the object it goes on: {@link namedObject} when that exists, else {@link fallbackObject}.
 * @param place the install: the Broker to name for `resend`.
 * @param reportingInstance the sink's Pod (its host name).
 * @param now the Event's `eventTime`.
 */
export function deadLetterEvent(input: DeadLetterInput, regarding: Regarding, place: SinkPlace, reportingInstance: string, now: Date): k8s.EventsV1Event {
  const { attributes } = input;
  const error = knativeError(attributes);
  const stored = JSON.stringify(originalEvent(attributes));
  const size = Buffer.byteLength(stored);
  const fits = size <= MAX_STORED_EVENT_BYTES;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: {
      name: eventName(regarding, attributes),
      namespace: regarding.namespace,
      annotations: { [BROKER_ANNOTATION]: `${place.namespace}/${place.broker}`, ...(fits ? { [CLOUDEVENT_ANNOTATION]: stored } : { [OMITTED_ANNOTATION]: String(size) }) },
    },
    // Microseconds, as the API server parses an Event's time (metav1.MicroTime).
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, 128),
    action: DEAD_LETTER_ACTION,
    reason: DEAD_LETTER_REASON,
    type: "Warning",
    note: deadLetterNote(attributes, error, fits),
    regarding: { ...regarding },
  };
}
