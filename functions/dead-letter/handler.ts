/**
 * The dead-letter sink's endpoint: `POST /`, one dead-lettered CloudEvent (binary or structured
 * mode), answered by the contract a Knative dispatcher reads:
 *
 * | answer | when |
 * | --- | --- |
 * | 204, `X-Appmonitor-Outcome: recorded` | its Warning Event was written (`letter.ts` says which object it goes on) |
 * | 204, `X-Appmonitor-Outcome: duplicate` | the Event of this dead letter was there already: a re-delivery |
 * | 5xx, 429 | the API server could not be read or written (`functions/lib/kube-api-errors.ts`): Knative sends it again |
 * | 422 | the API server refused the Event (`Refused` in `functions/lib/kube-api-errors.ts`: validation or admission): not sent again, only the log line keeps it |
 * | 400, 415 | not a CloudEvent (`functions/lib/runtime/cloudevent.ts`), or not POSTed to `/` |
 * | 405 | another method |
 *
 * Nothing is lost to a refusal: every request that reaches the endpoint is logged whole before
 * it is answered: a dead letter at `warn` (`"dead letter"`, every attribute and the data), one
 * that cannot be read at `error` (`"unreadable dead letter"`, its headers and body: text, or
 * base64 when it is not UTF-8).
 */
import { hostname } from "node:os";
import { APPMONITOR_KIND } from "../lib/appmonitor.ts";
import { toHttpFailure } from "../lib/kube-api-errors.ts";
import { acknowledge, decodeCloudEvent } from "../lib/runtime/cloudevent.ts";
import { HttpError } from "../lib/runtime/errors.ts";
import type { FunctionContext, FunctionRequest, FunctionResponse } from "../lib/runtime/types.ts";
import type { Cluster } from "./cluster.ts";
import { deadLetterEvent, fallbackObject, knativeError, namedObject, type Regarding, type SinkPlace } from "./letter.ts";
import type { DeadLetterMetrics } from "./metrics.ts";

/** What the handler needs. */
export interface HandlerDeps {
  /** The API server (`cluster.ts`). */
  readonly cluster: Cluster;
  readonly metrics: DeadLetterMetrics;
  /** The install's namespace, the sink's ServiceAccount and the Broker (`letter.ts`). */
  readonly place: SinkPlace;
  /** The Events' `eventTime`; default the system clock. */
  readonly now?: () => Date;
  /** `reportingInstance` of the Events; default the host name (the Pod's name). */
  readonly reportingInstance?: string;
}

/** The request as it came, for a log line: headers, and the body as text or base64. */
function wholeRequest(request: FunctionRequest): Record<string, unknown> {
  let body: Record<string, string>;
  try {
    body = { text: new TextDecoder("utf-8", { fatal: true }).decode(request.body) };
  } catch {
    body = { base64: request.body.toString("base64") };
  }
  return { method: request.method, path: request.path, headers: request.headers, body };
}

/**
 * The handler of `POST /` (this module's header).
 * @throws HttpError with the statuses of the table above.
 */
export function createHandler(deps: HandlerDeps): (context: FunctionContext, request: FunctionRequest) => Promise<FunctionResponse> {
  const now = deps.now ?? (() => new Date());
  const instance = deps.reportingInstance ?? hostname();
  return async (context, request) => {
    let attributes: Record<string, unknown>;
    try {
      if (request.method !== "POST") throw new HttpError(405, `method ${request.method} not allowed: dead letters are POSTed to /`, { headers: { allow: "POST" } });
      if (request.path !== "/") throw new HttpError(400, `dead letters are POSTed to /, not to ${request.path.slice(0, 100)}`);
      attributes = decodeCloudEvent(request.headers, request.body).event.toJSON();
    } catch (error) {
      context.log.error({ request: wholeRequest(request), problem: error instanceof HttpError ? { status: error.status, reason: error.reason, details: error.details } : String(error) }, "unreadable dead letter");
      throw error;
    }
    const log = context.log.child({ eventId: attributes.id, eventType: attributes.type });
    const why = knativeError(attributes);
    log.warn({ deadLetter: attributes, knativeError: why }, "dead letter");

    const regarding = await regardingOf(deps, attributes);
    const event = deadLetterEvent({ attributes }, regarding, deps.place, instance, now());
    let result: "created" | "exists";
    try {
      result = await deps.cluster.createEvent(event);
    } catch (error) {
      throw toHttpFailure(error, `create the Event ${regarding.namespace}/${event.metadata?.name ?? ""} of the dead letter`);
    }
    if (result === "created") deps.metrics.deadLetters.inc({ type: String(attributes.type).slice(0, 100), code: why.code ?? "none" });
    log.info({ event: `${regarding.namespace}/${event.metadata?.name ?? ""}`, regarding: `${regarding.kind} ${regarding.namespace}/${regarding.name}`, result }, result === "created" ? "dead letter recorded" : "dead letter was recorded already");
    return acknowledge({ outcome: result === "created" ? "recorded" : "duplicate", reason: regarding.kind });
  };
}

/**
 * The object the Event goes on: the one the event names when it exists (an AppMonitor is read
 * for that, and for its uid), else the sink's ServiceAccount.
 * @throws HttpError 5xx/429 when the AppMonitor could not be read.
 */
async function regardingOf(deps: HandlerDeps, attributes: Record<string, unknown>): Promise<Regarding> {
  const named = namedObject(attributes);
  if (named === undefined) return fallbackObject(deps.place);
  if (named.kind !== APPMONITOR_KIND) return named;
  let uid: string | undefined;
  try {
    uid = await deps.cluster.appMonitorUid(named.namespace, named.name);
  } catch (error) {
    throw toHttpFailure(error, `read the AppMonitor ${named.namespace}/${named.name} the dead letter names`);
  }
  if (uid === undefined) return fallbackObject(deps.place);
  return uid === "" ? named : { ...named, uid };
}
