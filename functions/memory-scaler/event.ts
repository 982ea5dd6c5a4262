/**
 * The memory-threshold CloudEvent as memory-scaler receives it (DESIGN.md "The
 * memory-threshold CloudEvent"): which types it acts on, and its `data` validated against
 * `schemas/alert-event.schema.json` (the schema alert-receiver writes to).
 */
import { Ajv } from "ajv";
import type { ErrorObject, ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { CloudEvent } from "cloudevents";
import eventDataSchema from "../../schemas/alert-event.schema.json" with { type: "json" };
import { HttpError } from "../lib/runtime/errors.ts";

// ajv-formats is CommonJS with `exports.default`; under Node's ESM loader the default import is the module object or the function.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

/** Type of the event of a firing alert: decide and act. */
export const FIRING_TYPE = "com.kubedemo.appmonitor.alert.firing";
/** Type of the event of a resolved alert: acknowledged, nothing changes. */
export const RESOLVED_TYPE = "com.kubedemo.appmonitor.alert.resolved";

/** The event's `data` (`schemas/alert-event.schema.json`). Input to check, never authority. */
export interface AlertEventData {
  readonly alertname: string;
  readonly status: "firing" | "resolved";
  /** The Pod's namespace (RFC 1123 label). */
  readonly namespace: string;
  /** The Pod's name (RFC 1123 subdomain). */
  readonly pod: string;
  /** The container the alert measured, when it names one. */
  readonly container?: string;
  /** The AppMonitor whose rule fired, when the alert names one. */
  readonly appmonitor?: string;
  /** The observed percent of the memory limit in use, when known. */
  readonly value?: number;
  readonly fingerprint: string;
  /** RFC 3339. */
  readonly startsAt: string;
  /** RFC 3339, or null while the alert has not ended. */
  readonly endsAt: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly generatorURL: string;
}

/** A received event memory-scaler understood. */
export type AlertEvent =
  | { readonly kind: "firing"; readonly id: string; readonly data: AlertEventData }
  | { readonly kind: "resolved"; readonly id: string; readonly data: AlertEventData };

/** Maximum number of schema errors returned to a sender. */
export const MAX_REPORTED_ERRORS = 20;

/** Validates `data` objects; compiled once per process (a few ms, at start-up). */
export type EventDataValidator = ValidateFunction<AlertEventData>;

/** Compiles the `data` schema (draft-07, `date-time` per RFC 3339 §5.6 with ajv-formats). */
export function compileEventDataValidator(): EventDataValidator {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv.compile<AlertEventData>(eventDataSchema);
}

/**
 * Checks a decoded, attribute-valid CloudEvent (the runtime validated its attributes) and
 * returns what memory-scaler acts on.
 *
 * @throws HttpError 400 `{ error, details }`, `details` a list of `{ path, message }`, when:
 * the type is neither {@link FIRING_TYPE} nor {@link RESOLVED_TYPE}; `data` is missing, not
 * JSON or does not match the schema; `data.status` contradicts the type; or `subject`, when
 * present, is not `namespaces/<data.namespace>/pods/<data.pod>`. All permanent: the same event
 * can never be handled, so the broker must not retry it.
 */
export function readAlertEvent(event: CloudEvent<unknown>, validate: EventDataValidator): AlertEvent {
  const kind = event.type === FIRING_TYPE ? "firing" : event.type === RESOLVED_TYPE ? "resolved" : undefined;
  if (kind === undefined) {
    throw new HttpError(400, `unsupported event type ${JSON.stringify(String(event.type).slice(0, 200))}`, {
      details: [{ path: "/type", message: `must be ${FIRING_TYPE} or ${RESOLVED_TYPE}` }],
    });
  }
  const data = dataOf(event.data);
  if (!validate(data)) {
    throw new HttpError(400, "malformed event data", { details: describeErrors(validate.errors) });
  }
  if (data.status !== kind) {
    throw new HttpError(400, "event data contradicts the event type", {
      details: [{ path: "/data/status", message: `is ${data.status} but the type is ${event.type}` }],
    });
  }
  const subject = `namespaces/${data.namespace}/pods/${data.pod}`;
  if (event.subject !== undefined && event.subject !== subject) {
    throw new HttpError(400, "event subject contradicts the event data", {
      details: [{ path: "/subject", message: `must be ${subject} (from data.namespace and data.pod)` }],
    });
  }
  return { kind, id: event.id, data };
}

/**
 * The SDK parses JSON `data` for `application/json`; a sender that omitted or mislabelled the
 * content type leaves a string or bytes, which are parsed here so that only the content decides.
 */
function dataOf(data: unknown): unknown {
  if (typeof data === "string" || Buffer.isBuffer(data) || data instanceof Uint8Array) {
    const text = typeof data === "string" ? data : Buffer.from(data).toString("utf8");
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new HttpError(400, "malformed event data", { details: [{ path: "/data", message: "is not JSON" }], cause: error });
    }
  }
  return data;
}

/** ajv errors as `{ path, message }` under `/data`, at most {@link MAX_REPORTED_ERRORS}. */
function describeErrors(errors: readonly ErrorObject[] | null | undefined): { path: string; message: string }[] {
  const list = (errors ?? []).slice(0, MAX_REPORTED_ERRORS).map((error) => ({
    path: `/data${error.instancePath}`,
    message: error.message ?? error.keyword,
  }));
  return list.length > 0 ? list : [{ path: "/data", message: "is missing or not an object" }];
}
