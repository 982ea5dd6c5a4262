/**
 * What a CloudEvent asks rule-sync to do. Pure: the event's attributes and data in, a
 * {@link Trigger} out.
 *
 * Knative's ApiServerSource (https://knative.dev/docs/eventing/sources/apiserversource/,
 * event construction in knative.dev/eventing pkg/adapter/apiserver/events) sends, per watched
 * object change:
 *
 * | type | `data` |
 * | --- | --- |
 * | `dev.knative.apiserver.resource.add` / `.update` / `.delete` (`spec.mode: Resource`) | the whole object, as the watch delivered it |
 * | `dev.knative.apiserver.ref.add` / `.update` / `.delete` (`spec.mode: Reference`, the default) | an ObjectReference: `{ apiVersion, kind, name, namespace }` |
 *
 * with `source` = the API server's URL, `subject` = `/apis/<apiVersion>/namespaces/<ns>/<kind>s/<name>`,
 * `datacontenttype: application/json`, and the extensions `kind`, `name` and `namespace`.
 *
 * A resync is asked for with an event of type {@link RESYNC_EVENT_TYPE} (any data), or by a
 * Knative PingSource pointed at rule-sync, whose events have the fixed type
 * {@link PING_EVENT_TYPE} (https://knative.dev/docs/eventing/sources/ping-source/).
 */
import { PING_EVENT_TYPE } from "../lib/ping-event.ts";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND } from "../lib/appmonitor.ts";
import { isRecord } from "../lib/is-record.ts";
import { isDnsLabel, isDnsSubdomain } from "../lib/kube-names.ts";

/** Prefix of ApiServerSource event types in Resource mode. */
export const RESOURCE_EVENT_PREFIX = "dev.knative.apiserver.resource.";
/** Prefix of ApiServerSource event types in Reference mode. */
export const REF_EVENT_PREFIX = "dev.knative.apiserver.ref.";
/** Our own event type that asks for a reconcile of every AppMonitor in scope. */
export const RESYNC_EVENT_TYPE = "com.kubedemo.appmonitor.resync";

/** What changed, per the ApiServerSource event type's last segment. */
export type ObjectAction = "add" | "update" | "delete";

/** What an event asks for. */
export type Trigger =
  | {
      readonly kind: "object";
      readonly action: ObjectAction;
      /** `resource`: data held the object; `reference`: only a reference. */
      readonly mode: "resource" | "reference";
      readonly namespace: string;
      readonly name: string;
      /** The object's uid, when data held the object. */
      readonly uid: string | undefined;
    }
  | { readonly kind: "resync" };

/** An event that can never be handled (→ HTTP 400); the message says why. */
export class EventInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EventInputError";
  }
}

/** The parts of a CloudEvent this module reads (the SDK's `CloudEvent` fits). */
export interface EventLike {
  readonly type: string;
  readonly data?: unknown;
}

const ACTIONS: readonly ObjectAction[] = ["add", "update", "delete"];

/**
 * Reads an event.
 *
 * @param event type and data; data may be a parsed object, or JSON as a string or bytes (a sender
 *   that did not say `application/json`).
 * @returns the trigger.
 * @throws {EventInputError} for an unknown type; data that is not a JSON object; an object or
 *   reference that is not `kubedemo.com/v1` `AppMonitor`; a missing or invalid name (DNS
 *   subdomain) or namespace (DNS label).
 */
export function readTrigger(event: EventLike): Trigger {
  const { type } = event;
  if (type === RESYNC_EVENT_TYPE || type === PING_EVENT_TYPE) return { kind: "resync" };
  const mode = type.startsWith(RESOURCE_EVENT_PREFIX) ? "resource" : type.startsWith(REF_EVENT_PREFIX) ? "reference" : undefined;
  const action = ACTIONS.find((candidate) => type === `${mode === "resource" ? RESOURCE_EVENT_PREFIX : REF_EVENT_PREFIX}${candidate}`);
  if (mode === undefined || action === undefined) {
    throw new EventInputError(
      `unsupported event type ${JSON.stringify(type.slice(0, 200))}: expected ${RESOURCE_EVENT_PREFIX}{add,update,delete}, ${REF_EVENT_PREFIX}{add,update,delete}, ${RESYNC_EVENT_TYPE} or ${PING_EVENT_TYPE}`,
    );
  }
  const data = jsonObject(event.data);
  const metadata = mode === "resource" ? (isRecord(data.metadata) ? data.metadata : {}) : data;
  const where = mode === "resource" ? "data.metadata" : "data";
  if (data.apiVersion !== APPMONITOR_API_VERSION || data.kind !== APPMONITOR_KIND) {
    throw new EventInputError(
      `data is ${describe(data.apiVersion)} ${describe(data.kind)}, not ${APPMONITOR_API_VERSION} ${APPMONITOR_KIND}: point the ApiServerSource at AppMonitors only`,
    );
  }
  const { name, namespace, uid } = metadata;
  if (typeof name !== "string" || !isDnsSubdomain(name)) throw new EventInputError(`${where}.name must be an AppMonitor name (a DNS subdomain), got ${describe(name)}`);
  if (typeof namespace !== "string" || !isDnsLabel(namespace)) throw new EventInputError(`${where}.namespace must be a namespace name (a DNS label), got ${describe(namespace)}`);
  return { kind: "object", action, mode, namespace, name, uid: typeof uid === "string" && uid !== "" ? uid : undefined };
}

function jsonObject(data: unknown): Record<string, unknown> {
  let value = data;
  if (value instanceof Uint8Array) value = Buffer.from(value).toString("utf8");
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      throw new EventInputError("data is not JSON");
    }
  }
  if (!isRecord(value)) throw new EventInputError(`data must be a JSON object, got ${value === undefined ? "no data" : value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`);
  return value;
}

function describe(value: unknown): string {
  return value === undefined ? "(none)" : JSON.stringify(value)?.slice(0, 100) ?? String(value);
}
