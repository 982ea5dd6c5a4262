/**
 * What a failed Kubernetes API call means, for memory-scaler and rule-sync alike, and the HTTP
 * status the function answers its sender with. Pure: the client's error in, a class and a status
 * out.
 *
 * The API server answers errors with a `Status` object
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#response-status-kind);
 * @kubernetes/client-node throws `ApiException` with the HTTP status in `code` and that object,
 * as text or parsed, in `body`. Anything else it throws is a transport failure (refused
 * connection, reset, TLS, a client timeout): the API server is unreachable.
 *
 * The sender is a Knative Broker (or any Knative delivery): it retries 5xx, 404, 408, 409 and
 * 429, and hands every other 4xx to the dead-letter sink at once, without a retry
 * (knative/eventing `pkg/kncloudevents/retries.go`, `SelectiveRetry`; `knative/eventing/triggers.yaml`
 * sets the retries and the sink). DESIGN.md: 4xx for an event that can never be handled,
 * 5xx/429 for a failure a retry may fix. Hence:
 *
 * | class | the API server said | answer | why |
 * | --- | --- | --- | --- |
 * | `NotFound` | 404 about one object (`details.name` set) | 503 | reads turn it into "gone" (a skip); one that escapes is a write that found its object deleted since it was read (or its namespace): a retry reads again and decides "gone" |
 * | `NotServed` | 404 without an object: the resource type is not served (a CRD missing) | 503 | the event is fine, the cluster is incomplete (install order, an uninstall): retried, then dead-lettered for a replay; readiness fails meanwhile |
 * | `Conflict` | 409 (AlreadyExists, a stale resourceVersion or uid precondition) | 503, `Retry-After: 1` | another writer won; callers read again and decide again; one that escapes means the object kept changing: a retry re-reads |
 * | `PatchConflict` | 422 whose JSON Patch `test` did not hold | 503, `Retry-After: 1` | the same lost compare-and-swap, as a JSON Patch reports it |
 * | `Refused` | 400, 422 Invalid, or admission's 403 (LimitRange, ResourceQuota, PodSecurity, a policy or webhook) | 422 | the object this event leads to is refused; the same event leads to the same object. Callers report it (a Warning Event, `RuleRejected`) and answer 204; one that escapes goes to the dead-letter sink at once, not retried |
 * | `Forbidden` | the authorizer's 403: `User "…" cannot <verb> resource "…"` | 500 | the function's own RBAC lacks a grant: not the event's fault, so not a 4xx (which would skip the retries and say the event is bad); retried — RBAC granted moments ago takes effect meanwhile — then dead-lettered for a replay once an operator grants it. The permission is named in a Warning Event and a metric (`kube-access-report.ts`) |
 * | `Unauthorized` | 401 | 503 | the credentials were refused even after reading them again and retrying at once (`kubeconfig.ts`): a token being rotated or revoked; the kubelet writes a fresh one, so a later retry may pass |
 * | `TimedOut` | no complete answer within the client's timeout (`KUBE_API_TIMEOUT_MS`, {@link KubeApiTimeoutError}) | 503 | a connection that went silent (dropped without a reset) or an API server too slow to answer: retry, on a new connection |
 * | `Unavailable` | no answer (transport failure), any 5xx, 408 | 503 (with the API server's `Retry-After`, if any) | the API server is down, overloaded or timed out: retry |
 * | `Throttled` | 429 (API Priority and Fairness, max-in-flight) | 429 with the API server's `Retry-After` | Knative retries a 429; the delay is the server's to say |
 * | `Unexpected` | any other 4xx (405, 406, 410, 413, 415, …) | 500 | our request is malformed: a bug, retried then dead-lettered like any 500 |
 */
import * as k8s from "@kubernetes/client-node";
import { HttpError } from "./runtime/errors.ts";

/**
 * A Kubernetes API request that got no complete answer (status, headers and body) within the
 * client's timeout, thrown by `FunctionKubeConfig` (`kubeconfig.ts`) instead of the transport's
 * abort error; classified `TimedOut`. The request was abandoned and its connection closed: a
 * write may or may not have been applied, which the functions' compare-and-swap writes make
 * safe to retry.
 */
export class KubeApiTimeoutError extends Error {
  /** The request, e.g. `GET https://10.96.0.1/api/v1/namespaces/a/pods/b`. */
  readonly request: string;
  /** The timeout that passed, in ms. */
  readonly timeoutMs: number;

  /**
   * @param method HTTP method of the request.
   * @param url its URL (without credentials: the client sends those in headers).
   * @param timeoutMs the timeout, in ms.
   * @param options `cause`: the transport's own error (node-fetch's AbortError).
   */
  constructor(method: string, url: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`${method} ${url}: no complete answer within ${timeoutMs} ms`, options);
    this.name = "KubeApiTimeoutError";
    this.request = `${method} ${url}`;
    this.timeoutMs = timeoutMs;
  }
}

/** The parts of a failed call this module reads. */
export interface ApiStatus {
  /** HTTP status; undefined for a transport failure. */
  readonly code: number | undefined;
  /** `Status.reason`, e.g. `NotFound`, `Conflict`, `Forbidden`, `Invalid`; empty when unknown. */
  readonly reason: string;
  /** `Status.message` as the API server wrote it, else the error's own message. */
  readonly message: string;
  /** `Status.details.name`: set when a 404 is about one object, absent when the resource type is not served. */
  readonly objectName: string | undefined;
  /** The answer's `Retry-After` header when it is a number of seconds. */
  readonly retryAfter: string | undefined;
}

/**
 * Reads an API server answer: its HTTP status, body (a `Status` as text or parsed) and headers.
 * Anything that is not a `Status` keeps its text as the message.
 */
export function readStatus(code: number | undefined, body: unknown, headers: unknown): ApiStatus {
  let parsed: unknown = body;
  if (typeof parsed === "string") {
    try {
      parsed = JSON.parse(parsed);
    } catch {
      parsed = { message: parsed };
    }
  }
  const status = (typeof parsed === "object" && parsed !== null ? parsed : {}) as { reason?: unknown; message?: unknown; details?: { name?: unknown } };
  const message = typeof status.message === "string" && status.message.trim() !== "" ? status.message.trim() : `HTTP ${code ?? "?"}`;
  const objectName = typeof status.details?.name === "string" && status.details.name !== "" ? status.details.name : undefined;
  return { code, reason: typeof status.reason === "string" ? status.reason : "", message, objectName, retryAfter: retryAfterOf(headers) };
}

/** Reads the HTTP status and the API server's `Status` out of anything the client threw. */
export function apiStatus(error: unknown): ApiStatus {
  if (error instanceof k8s.ApiException) return readStatus(typeof error.code === "number" ? error.code : undefined, error.body, error.headers);
  return { code: undefined, reason: "", message: error instanceof Error ? error.message : String(error), objectName: undefined, retryAfter: undefined };
}

/** What a failed API call means; the table in this module's header says what each is answered. */
export type ApiErrorClass =
  | "NotFound"
  | "NotServed"
  | "Conflict"
  | "PatchConflict"
  | "Refused"
  | "Forbidden"
  | "Unauthorized"
  | "TimedOut"
  | "Unavailable"
  | "Throttled"
  | "Unexpected";

/** The status the function answers for each class (this module's header says why). */
export const STATUS_OF_CLASS: Readonly<Record<ApiErrorClass, number>> = {
  NotFound: 503,
  NotServed: 503,
  Conflict: 503,
  PatchConflict: 503,
  Refused: 422,
  Forbidden: 500,
  Unauthorized: 503,
  TimedOut: 503,
  Unavailable: 503,
  Throttled: 429,
  Unexpected: 500,
};

/**
 * The API server's message for a JSON Patch that did not apply to the current object (a `test`
 * operation failed, or a path it names is gone): k8s.io/apiserver/pkg/endpoints/handlers/patch.go
 * (`applyJSPatch`) answers `errors.NewGenericServerResponse(422, …)`, whose message is this
 * fixed text and whose details carry no cause — unlike a validation failure (`… is invalid: …`)
 * or an admission denial, which name the object and the rule.
 */
export const PATCH_NOT_APPLICABLE_MESSAGE = "the server rejected our request due to an error in our request";

/** The json-patch library's own texts, which some API servers pass through. */
const PATCH_LIBRARY_MESSAGE = /testing value|test operation|operation does not apply|error in test for path/i;

/**
 * The authorizer's refusal (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go,
 * `forbiddenMessage`): `User "<user>" cannot <verb> resource "<resource>[/<subresource>]" in API
 * group "<group>" in the namespace "<ns>"` or `… at the cluster scope`.
 */
const AUTHORIZER_MESSAGE = /User "([^"]*)" cannot (\S+) resource "([^"]+)"(?: in API group "([^"]*)")?(?: in the namespace "([^"]*)"| at the cluster scope)?/;

/** Classifies what the client threw. */
export function classifyApiError(error: unknown): ApiErrorClass {
  if (error instanceof KubeApiTimeoutError) return "TimedOut";
  const { code, message, objectName } = apiStatus(error);
  if (code === undefined || code >= 500 || code === 408) return "Unavailable";
  if (code === 429) return "Throttled";
  if (code === 401) return "Unauthorized";
  if (code === 404) return objectName === undefined ? "NotServed" : "NotFound";
  if (code === 409) return "Conflict";
  if (code === 422 && (message === PATCH_NOT_APPLICABLE_MESSAGE || PATCH_LIBRARY_MESSAGE.test(message))) return "PatchConflict";
  if (code === 403) return AUTHORIZER_MESSAGE.test(message) ? "Forbidden" : "Refused";
  if (code === 400 || code === 422) return "Refused";
  return "Unexpected";
}

/** 404 about the object itself: it does not exist (any more). Not a resource type that is not served. */
export function isObjectNotFound(error: unknown): boolean {
  return classifyApiError(error) === "NotFound";
}

/** 409: AlreadyExists (create) or Conflict (a resourceVersion or uid precondition no longer holds). */
export function isConflict(error: unknown): boolean {
  return classifyApiError(error) === "Conflict";
}

/** A lost compare-and-swap: a 409, or a JSON Patch whose `test` did not hold (422); answered by reading again. */
export function isPatchConflict(error: unknown): boolean {
  const kind = classifyApiError(error);
  return kind === "Conflict" || kind === "PatchConflict";
}

/**
 * The API server refused the object itself: validation (422 Invalid, 400) or an admission
 * plugin, policy or webhook (403 that is not the authorizer's). Writing the same object again
 * fails the same way, so callers report it instead.
 * https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/
 */
export function isRefusal(error: unknown): boolean {
  return classifyApiError(error) === "Refused";
}

/** A permission the authorizer denied, as its message names it. */
export interface DeniedPermission {
  /** Who asked, e.g. `system:serviceaccount:appmonitor:rule-sync`. */
  readonly user: string;
  readonly verb: string;
  /** The resource, with `/<subresource>` when there is one, e.g. `appmonitors/status`. */
  readonly resource: string;
  /** API group; `""` is the core group. */
  readonly group: string;
  /** Undefined at the cluster scope. */
  readonly namespace: string | undefined;
}

/** The permission the authorizer denied, when `message` is its 403's message; else undefined. */
export function deniedPermission(message: string): DeniedPermission | undefined {
  const match = AUTHORIZER_MESSAGE.exec(message);
  if (match === null) return undefined;
  const [, user = "", verb = "", resource = "", group = "", namespace = ""] = match;
  return { user, verb, resource, group, namespace: namespace === "" ? undefined : namespace };
}

/**
 * As kubectl names it: `verb resource[.group][/subresource] in namespace ns` (or `at the cluster
 * scope`), e.g. `patch deployments.apps in namespace team-a`, `patch appmonitors.kubedemo.com/status …`.
 */
export function describePermission(permission: Omit<DeniedPermission, "user">): string {
  const [plural = "", ...subresource] = permission.resource.split("/");
  const resource = `${plural}${permission.group === "" ? "" : `.${permission.group}`}${subresource.length > 0 ? `/${subresource.join("/")}` : ""}`;
  return `${permission.verb} ${resource} ${permission.namespace === undefined ? "at the cluster scope" : `in namespace ${permission.namespace}`}`;
}

/**
 * The HTTP error a function answers when an API call it needed failed (`doing` says what it was
 * doing, e.g. "read Pod ns/name"): the status of {@link STATUS_OF_CLASS}, the API server's
 * `Retry-After` passed on for 429 and 503 (`Retry-After: 1` for a conflict), the original
 * error kept as `cause` for the logs. An HttpError is returned as it is.
 */
export function toHttpFailure(error: unknown, doing: string): HttpError {
  if (error instanceof HttpError) return error;
  const kind = classifyApiError(error);
  const { code, message, retryAfter } = apiStatus(error);
  const status = STATUS_OF_CLASS[kind];
  const reason = {
    NotFound: `could not ${doing}: it was deleted meanwhile: ${message}`,
    NotServed: `could not ${doing}: the resource type is not served (is its CRD installed?): ${message}`,
    Conflict: `could not ${doing}: it kept changing: ${message}`,
    PatchConflict: `could not ${doing}: it kept changing: ${message}`,
    Refused: `could not ${doing}: the API server refused it: ${message}`,
    Forbidden: `not allowed to ${doing}: ${message}`,
    Unauthorized: `could not ${doing}: the API server refused the credentials (HTTP 401), also after reading them again`,
    TimedOut: `Kubernetes API server did not answer in time: could not ${doing}: ${message}`,
    Unavailable: `Kubernetes API server unavailable: could not ${doing}: ${message}`,
    Throttled: `Kubernetes API server throttled: could not ${doing}`,
    Unexpected: `could not ${doing}: HTTP ${code ?? "?"}: ${message}`,
  }[kind];
  const wait = kind === "Conflict" || kind === "PatchConflict" ? "1" : status === 429 || status === 503 ? retryAfter : undefined;
  return new HttpError(status, reason, { cause: error, ...(wait === undefined ? {} : { headers: { "retry-after": wait } }) });
}

function retryAfterOf(headers: unknown): string | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const value = (headers as Record<string, unknown>)["retry-after"];
  return typeof value === "string" && /^\d{1,6}$/.test(value) ? value : undefined;
}
