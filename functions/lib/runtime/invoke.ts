/**
 * Invocation: turns a raw request into the function's input (a CloudEvent or a
 * {@link FunctionRequest}), calls `handle`, and returns its answer.
 */
import { acknowledge, decodeCloudEvent } from "./cloudevent.ts";
import { HttpError } from "./errors.ts";
import type { CloudEventFunction, FunctionContext, FunctionRequest, FunctionResponse, HttpFunction } from "./types.ts";

/** The attributes of a decoded CloudEvent that name it in the request's access log line. */
export interface EventName {
  readonly id: string;
  readonly type: string;
}

/** A started function of either kind. */
export type Invocable = { readonly kind: "cloudevent"; readonly instance: CloudEventFunction } | { readonly kind: "http"; readonly instance: HttpFunction };

/**
 * Calls the function for one request.
 *
 * CloudEvent functions are served at `POST /` only (a Trigger's subscriber ref resolves to the
 * root): another method → 405, a POST to another path → 400. Not 404: Knative retries a 404
 * (its own ingress answers one while a Route is not ready yet) and a subscriber URI with a wrong
 * path never becomes right, so the event goes to the dead-letter sink at once, the path named in
 * its `knativeerrordata`. A function's `verifySender` runs next (its refusal, 401, is the answer).
 * Then the event is decoded and validated (400/415, see
 * `cloudevent.ts`; extension attributes with names CloudEvents does not allow are dropped and
 * logged), `decoded` is told its id and type, and the context's logger gains `eventId` and
 * `eventType`. What `handle` returns becomes 204 with no body and the outcome in headers
 * (`acknowledge`): the only 2xx a CloudEvent function can give, whatever it returns.
 *
 * @throws HttpError from decoding or from `handle`; anything else `handle` throws is passed on
 * unchanged (the server answers it 500), as is the RangeError of an outcome that is not a word.
 */
export async function invoke(fn: Invocable, context: FunctionContext, request: FunctionRequest, decoded?: (event: EventName) => void): Promise<FunctionResponse | void> {
  if (fn.kind === "http") return fn.instance.handle(context, request);
  if (request.method !== "POST") {
    throw new HttpError(405, `method ${request.method} not allowed: CloudEvents are POSTed to /`, { headers: { allow: "POST" } });
  }
  if (request.path !== "/") throw new HttpError(400, `CloudEvents are POSTed to /, not to ${request.path.slice(0, 100)}`);
  // Before the body is read as an event: an unverified sender learns nothing of how it is decoded.
  await fn.instance.verifySender?.(context, request.headers);
  const { event, ignored } = decodeCloudEvent(request.headers, request.body);
  decoded?.({ id: event.id, type: event.type });
  const log = context.log.child({ eventId: event.id, eventType: event.type });
  if (ignored.length > 0) log.warn({ ignoredAttributes: ignored }, "extension attributes whose names CloudEvents does not allow were ignored");
  return acknowledge(await fn.instance.handle({ ...context, log }, event));
}
