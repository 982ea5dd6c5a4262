/**
 * The CloudEvents HTTP binding on the receiving side: raw request → validated CloudEvent,
 * with the CloudEvents SDK's `HTTP.toEvent`. Binary and structured content modes
 * (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md#3-http-message-mapping).
 *
 * Batched mode (`application/cloudevents-batch+json`, §3.3) is refused with 415: our senders
 * (Knative brokers, alert-receiver) never batch, and handling only part of a batch would lose
 * events while answering 2xx. One event per request keeps status codes per event.
 */
import { CloudEvent, HTTP, ValidationError } from "cloudevents";
import { HttpError } from "./errors.ts";

/** Media type of the batched content mode, refused. */
export const BATCH_MEDIA_TYPE = "application/cloudevents-batch+json";

/**
 * Decodes one CloudEvent from request headers (lower-case names) and raw body, and validates
 * it against the CloudEvents 1.0 attribute rules (the SDK decodes without validating).
 *
 * @throws HttpError 415 for a batch; 400 "malformed CloudEvent" with `details` = the SDK's
 * list of schema errors (or the parse error's message) for anything that is not a valid event.
 */
export function decodeCloudEvent(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: Buffer,
): CloudEvent<unknown> {
  const contentType = headers["content-type"];
  if (typeof contentType === "string" && contentType.toLowerCase().startsWith(BATCH_MEDIA_TYPE)) {
    throw new HttpError(415, "batched CloudEvents are not accepted: send one event per request", {
      details: [`content-type ${BATCH_MEDIA_TYPE} (batched content mode) is not supported`],
    });
  }
  let decoded: CloudEvent<unknown> | CloudEvent<unknown>[];
  try {
    decoded = HTTP.toEvent<unknown>({ headers: { ...headers }, body: body.length === 0 ? undefined : body.toString("utf8") }) as
      | CloudEvent<unknown>
      | CloudEvent<unknown>[];
    if (Array.isArray(decoded)) throw new HttpError(415, "batched CloudEvents are not accepted: send one event per request");
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
  return decoded;
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
