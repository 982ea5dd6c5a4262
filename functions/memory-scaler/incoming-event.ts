/**
 * The memory-threshold CloudEvent as memory-scaler receives it (DESIGN.md "The
 * memory-threshold CloudEvent"): which types it acts on, and its `data` validated against
 * `schemas/alert-event.schema.json` (the schema alert-receiver writes to). The contract itself
 * (types, `data`, validator) is shared with alert-receiver in `functions/lib/alert-event.ts`.
 */
import type { CloudEvent } from "cloudevents";
import { FIRING_TYPE, RESOLVED_TYPE, type AlertEventData, type AlertEventDataValidator } from "../lib/alert-event.ts";
import { describeSchemaErrors } from "../lib/json-schema.ts";
import { HttpError } from "../lib/runtime/errors.ts";

/** A received event memory-scaler understood. */
export type AlertEvent =
  | { readonly kind: "firing"; readonly id: string; readonly data: AlertEventData }
  | { readonly kind: "resolved"; readonly id: string; readonly data: AlertEventData };

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
export function readAlertEvent(event: CloudEvent<unknown>, validate: AlertEventDataValidator): AlertEvent {
  const kind = event.type === FIRING_TYPE ? "firing" : event.type === RESOLVED_TYPE ? "resolved" : undefined;
  if (kind === undefined) {
    throw new HttpError(400, `unsupported event type ${JSON.stringify(String(event.type).slice(0, 200))}`, {
      details: [{ path: "/type", message: `must be ${FIRING_TYPE} or ${RESOLVED_TYPE}` }],
    });
  }
  const data = dataOf(event.data);
  if (!validate(data)) {
    const details = describeSchemaErrors(validate.errors, "/data");
    throw new HttpError(400, "malformed event data", { details: details.length > 0 ? details : [{ path: "/data", message: "is missing or not an object" }] });
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
