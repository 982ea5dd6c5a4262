/**
 * Invocation: turns a raw request into the function's input (a CloudEvent or a
 * {@link FunctionRequest}), calls `handle`, and returns its answer.
 */
import { acknowledge, decodeCloudEvent } from "./cloudevent.ts";
import { HttpError } from "./errors.ts";
import type { CloudEventFunction, FunctionContext, FunctionRequest, FunctionResponse, HttpFunction } from "./types.ts";

/** A started function of either kind. */
export type Invocable = { readonly kind: "cloudevent"; readonly instance: CloudEventFunction } | { readonly kind: "http"; readonly instance: HttpFunction };

/**
 * Calls the function for one request.
 *
 * CloudEvent functions are served at `POST /` only (Knative delivers there): another path
 * → 404, another method → 405. The event is decoded and validated first (400/415, see
 * `cloudevent.ts`; extension attributes with names CloudEvents does not allow are dropped and
 * logged), and the context's logger gains `eventId` and `eventType`. What `handle`
 * returns becomes 204 with no body and the outcome in headers (`acknowledge`): the only
 * 2xx a CloudEvent function can give, whatever it returns.
 *
 * @throws HttpError from decoding or from `handle`; anything else `handle` throws is passed on
 * unchanged (the server answers it 500), as is the RangeError of an outcome that is not a word.
 */
export async function invoke(fn: Invocable, context: FunctionContext, request: FunctionRequest): Promise<FunctionResponse | void> {
  if (fn.kind === "http") return fn.instance.handle(context, request);
  if (request.path !== "/") throw new HttpError(404, `not found: ${request.path}`);
  if (request.method !== "POST") {
    throw new HttpError(405, `method ${request.method} not allowed: CloudEvents are POSTed to /`, { headers: { allow: "POST" } });
  }
  const { event, ignored } = decodeCloudEvent(request.headers, request.body);
  const log = context.log.child({ eventId: event.id, eventType: event.type });
  if (ignored.length > 0) log.warn({ ignoredAttributes: ignored }, "extension attributes whose names CloudEvents does not allow were ignored");
  return acknowledge(await fn.instance.handle({ ...context, log }, event));
}
