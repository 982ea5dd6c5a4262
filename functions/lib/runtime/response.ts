/**
 * Writing a function's answer to the wire: the only place besides `server.ts` that touches
 * express's `res`.
 */
import type { Response } from "express";
import { HttpError } from "./errors.ts";
import type { FunctionResponse } from "./types.ts";

/**
 * Sends a {@link FunctionResponse}; `undefined` → 204. Body encoding: see `FunctionResponse`.
 * @throws RangeError for a status outside 100–599 (a bug in the function → answered 500).
 */
export function writeResponse(res: Response, response: FunctionResponse | undefined): void {
  if (response === undefined) {
    res.status(204).end();
    return;
  }
  const { status, body, headers = {} } = response;
  if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError(`invalid response status ${status}`);
  res.status(status);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  if (body === undefined || status === 204 || status === 304) {
    res.end();
  } else if (Buffer.isBuffer(body)) {
    if (!res.hasHeader("content-type")) res.setHeader("content-type", "application/octet-stream");
    res.end(body);
  } else if (typeof body === "string") {
    if (!res.hasHeader("content-type")) res.setHeader("content-type", "text/plain; charset=utf-8");
    res.end(body);
  } else {
    if (!res.hasHeader("content-type")) res.setHeader("content-type", "application/json; charset=utf-8");
    res.end(JSON.stringify(body));
  }
}

/**
 * The most bytes an error answer's JSON body holds: 768, whose base64 is 1024 characters, the
 * length Knative keeps of a failed delivery's answer in a dead letter's `knativeerrordata`
 * (knative.dev/eventing `pkg/kncloudevents/attributes`, `KnativeErrorDataExtensionMaxLength`).
 * Knative's Go dispatchers (the in-memory channel's among them; `pkg/kncloudevents/event_dispatcher.go`,
 * `dispatchExecutionInfoTransformers`, v0.50.0 as earlier releases) size their base64 buffer to
 * that limit but encode the whole answer into it, so a longer one panics the dispatcher on the way
 * to the dead-letter sink ("index out of range [1024] with length 1024",
 * knative-extensions/eventing-natss#434): the dead letter and every event the dispatcher holds
 * are lost. Nothing past 768 bytes would reach the sink anyway.
 */
export const MAX_ERROR_BODY_BYTES = 768;

/**
 * The JSON body `{ error, details? }` of `error`, within {@link MAX_ERROR_BODY_BYTES}: as many of
 * its `details` (an array: its first entries; anything else: all or nothing) as fit, the number
 * left out in `detailsOmitted`, and a reason cut short (ending in `…`) only when it alone is too long.
 */
export function errorBody(error: HttpError): { error: string; details?: unknown; detailsOmitted?: number } {
  const fits = (body: object) => Buffer.byteLength(JSON.stringify(body)) <= MAX_ERROR_BODY_BYTES;
  const full = error.details === undefined ? { error: error.reason } : { error: error.reason, details: error.details };
  if (fits(full)) return full;
  const details = Array.isArray(error.details) ? error.details : [error.details];
  for (let kept = details.length - 1; kept > 0; kept -= 1) {
    const body = { error: error.reason, details: details.slice(0, kept), detailsOmitted: details.length - kept };
    if (fits(body)) return body;
  }
  const body = { error: error.reason, detailsOmitted: details.length };
  // JSON escapes can make a character longer than one byte: cut until it fits.
  for (let length = error.reason.length; !fits(body) && length > 0; length = Math.floor(length * 0.9)) body.error = `${error.reason.slice(0, length)}…`;
  return body;
}

/**
 * Sends an {@link HttpError} as `{ error, details? }` with its status and headers; `bounded`
 * (a CloudEvent function's answer, which a Knative dispatcher reads) within
 * {@link MAX_ERROR_BODY_BYTES} ({@link errorBody}).
 */
export function writeError(res: Response, error: HttpError, bounded = false): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = bounded ? errorBody(error) : error.details === undefined ? { error: error.reason } : { error: error.reason, details: error.details };
  writeResponse(res, { status: error.status, body, headers: error.headers });
}
