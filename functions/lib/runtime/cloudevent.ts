/**
 * The CloudEvents HTTP binding on the receiving side: raw request → validated CloudEvent,
 * with the CloudEvents SDK's `HTTP.toEvent`. Binary and structured content modes
 * (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md#3-http-message-mapping).
 *
 * Batched mode (`application/cloudevents-batch+json`, §3.3) is refused with 415: our senders
 * (Knative brokers, alert-receiver) never batch, and handling only part of a batch would lose
 * events while answering 2xx. One event per request keeps status codes per event.
 *
 * Extension attributes whose names break the naming convention are dropped, not the event:
 * {@link decodeCloudEvent}.
 *
 * And the answer to a handled event: {@link acknowledge}.
 */
import { CloudEvent, HTTP, ValidationError } from "cloudevents";
import { HttpError } from "./errors.ts";
import type { CloudEventOutcome, FunctionResponse } from "./types.ts";

/** Media type of the batched content mode, refused. */
export const BATCH_MEDIA_TYPE = "application/cloudevents-batch+json";

/** A decoded event, and the extension attributes dropped from it. */
export interface DecodedCloudEvent {
  readonly event: CloudEvent<unknown>;
  /** Names of the extension attributes ignored for breaking the naming convention (at most 50 characters each). */
  readonly ignored: readonly string[];
}

/**
 * An attribute name as CloudEvents 1.0.2 allows it ("Attribute Naming Convention": lower-case
 * ASCII letters and digits), as the SDK's `validate()` checks it.
 */
const ATTRIBUTE_NAME = /^[a-z0-9]+$/;

/**
 * Decodes one CloudEvent from request headers (lower-case names) and raw body, and validates
 * it against the CloudEvents 1.0 attribute rules (the SDK decodes without validating).
 *
 * An extension attribute whose name breaks the naming convention (`ce-trace_id`, `ce-x-b3`, a
 * structured event's `"Foo.Bar"`) is dropped and the rest of the event handled. The naming rule
 * (CloudEvents 1.0.2, "Attribute Naming Convention") binds whoever creates the attribute and
 * says nothing of receivers; extension attributes are OPTIONAL, and for an OPTIONAL feature a
 * receiver does not support, the spec's "Notational Conventions" let it do anything that breaks
 * no other rule but RECOMMEND ignoring it. None of our functions reads an extension, and a 400
 * would make Knative hand the whole event to the dead-letter sink, unretried, because some hop
 * on the way added a header. The CloudEvents JS SDK decodes such
 * names without complaint (`HTTP.toEvent` builds the event non-strictly) and only its
 * `validate()` refuses them, along with the event; so they are removed before validating.
 * Required and optional context attributes are still checked in full.
 *
 * @returns the event and the ignored names, for the caller to log.
 * @throws HttpError 415 for a batch; 400 "malformed CloudEvent" with `details` = the SDK's
 * list of schema errors (or the parse error's message) for anything that is not a valid event.
 */
export function decodeCloudEvent(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: Buffer,
): DecodedCloudEvent {
  const contentType = headers["content-type"];
  if (typeof contentType === "string" && contentType.toLowerCase().startsWith(BATCH_MEDIA_TYPE)) {
    throw new HttpError(415, "batched CloudEvents are not accepted: send one event per request", {
      details: [`content-type ${BATCH_MEDIA_TYPE} (batched content mode) is not supported`],
    });
  }
  let decoded: CloudEvent<unknown> | CloudEvent<unknown>[];
  let ignored: string[] = [];
  try {
    decoded = HTTP.toEvent<unknown>({ headers: { ...headers }, body: body.length === 0 ? undefined : body.toString("utf8") }) as
      | CloudEvent<unknown>
      | CloudEvent<unknown>[];
    if (Array.isArray(decoded)) throw new HttpError(415, "batched CloudEvents are not accepted: send one event per request");
    // `data_base64` is the JSON format's member for binary data, not an attribute (the SDK's own exception).
    ignored = Object.keys(decoded).filter((name) => name !== "data_base64" && !ATTRIBUTE_NAME.test(name));
    if (ignored.length > 0) {
      const kept = Object.fromEntries(Object.entries(decoded).filter(([name]) => !ignored.includes(name)));
      decoded = new CloudEvent<unknown>(kept, false);
    }
    // validate() throws for an invalid 1.0 event, but merely returns false for any other
    // specversion (the SDK's validateCloudEvent): such an event has no checked attributes at all.
    if (!decoded.validate()) {
      throw new HttpError(400, "malformed CloudEvent", {
        details: [`unsupported specversion ${JSON.stringify(String(decoded.specversion).slice(0, 50))}: only 1.0 is accepted`],
      });
    }
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, "malformed CloudEvent", { details: errorList(error), cause: error });
  }
  return { event: decoded, ignored: ignored.map((name) => name.slice(0, 50)) };
}

/** The SDK's schema errors when it has them, else the error's message: always a non-empty list. */
function errorList(error: unknown): unknown[] {
  if (error instanceof ValidationError && Array.isArray(error.errors) && error.errors.length > 0) {
    return error.errors.map((item) => (typeof item === "object" && item !== null ? stripSchemaPath(item) : item));
  }
  return [error instanceof Error ? error.message.split("\n")[0] : String(error)];
}

function stripSchemaPath(item: object): object {
  const { instancePath, message, params } = item as { instancePath?: unknown; message?: unknown; params?: unknown };
  return { instancePath, message, params };
}

/**
 * Status of every answer to a handled CloudEvent (including a deliberate skip): 204 No Content.
 *
 * Knative's Broker filter (knative/eventing pkg/broker/filter/filter_handler.go, `writeResponse`)
 * takes a reply with neither a `ce-specversion` header nor a CloudEvents content type for "no
 * reply event" only when its body is empty; a non-empty body makes it answer 502, so the
 * delivery is retried and finally dead-lettered although it succeeded. 204 is the 2xx whose
 * body HTTP itself rules out (RFC 9110 §15.3.5; Node never writes one), and it says the
 * request was fulfilled — 202 would claim the work is still pending, which it never is here.
 */
export const HANDLED_STATUS = 204;
/** Response header naming what the function did with the event, e.g. `scaled`, `skipped`. */
export const OUTCOME_HEADER = "x-appmonitor-outcome";
/** Response header naming why, e.g. `Cooldown`; absent when the function gives no reason. */
export const REASON_HEADER = "x-appmonitor-reason";

/** One header-safe word: letters, digits, `.`, `_`, `-`; at most 64 characters. */
const WORD = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * The answer to a handled CloudEvent: {@link HANDLED_STATUS}, no body, and the outcome in
 * {@link OUTCOME_HEADER} / {@link REASON_HEADER} — never a `ce-*` header or a content type, so
 * a Broker never takes it for a reply event.
 *
 * @throws RangeError when `outcome` or `reason` is not one header-safe word (a bug in the
 * function → answered 500).
 */
export function acknowledge(result: CloudEventOutcome): FunctionResponse {
  const { outcome, reason } = (result ?? {}) as Partial<CloudEventOutcome>;
  if (typeof outcome !== "string" || !WORD.test(outcome)) {
    throw new RangeError(`a CloudEvent function must return { outcome, reason? } of header-safe words, got outcome ${JSON.stringify(outcome)}`);
  }
  if (reason !== undefined && (typeof reason !== "string" || !WORD.test(reason))) {
    throw new RangeError(`a CloudEvent function must return { outcome, reason? } of header-safe words, got reason ${JSON.stringify(reason)}`);
  }
  return { status: HANDLED_STATUS, headers: reason === undefined ? { [OUTCOME_HEADER]: outcome } : { [OUTCOME_HEADER]: outcome, [REASON_HEADER]: reason } };
}
