/**
 * What a failed Kubernetes API call means for memory-scaler: a missing object, a lost
 * compare-and-swap, an admission refusal, or a failure a retry may fix. The API server answers
 * errors with a `Status` object (https://kubernetes.io/docs/reference/using-api/api-concepts/#response-status-kind);
 * @kubernetes/client-node throws `ApiException` with the HTTP status in `code` and that object,
 * as text, in `body`. Anything else thrown by the client is a transport failure (refused
 * connection, reset, TLS), i.e. the API server is unreachable.
 */
import * as k8s from "@kubernetes/client-node";
import { HttpError } from "../lib/runtime/errors.ts";

/** The parts of a `Status` this module reads. */
export interface ApiStatus {
  /** HTTP status; undefined for a transport failure. */
  readonly code: number | undefined;
  /** `Status.reason`, e.g. `NotFound`, `Conflict`, `Forbidden`, `Invalid`; empty when unknown. */
  readonly reason: string;
  /** `Status.message` as the API server wrote it, else the error's own message. */
  readonly message: string;
}

/** Reads the HTTP status and the API server's `Status` out of anything the client threw. */
export function apiStatus(error: unknown): ApiStatus {
  if (error instanceof k8s.ApiException) {
    const code = typeof error.code === "number" ? error.code : undefined;
    const body: unknown = error.body;
    let parsed: { reason?: unknown; message?: unknown } | undefined;
    if (typeof body === "string") {
      try {
        parsed = JSON.parse(body) as { reason?: unknown; message?: unknown };
      } catch {
        parsed = { message: body };
      }
    } else if (typeof body === "object" && body !== null) {
      parsed = body as { reason?: unknown; message?: unknown };
    }
    const message = typeof parsed?.message === "string" && parsed.message !== "" ? parsed.message : `HTTP ${code ?? "?"}`;
    return { code, reason: typeof parsed?.reason === "string" ? parsed.reason : "", message };
  }
  return { code: undefined, reason: "", message: error instanceof Error ? error.message : String(error) };
}

/** 404: the object does not exist (any more). */
export function isNotFound(error: unknown): boolean {
  return apiStatus(error).code === 404;
}

/** 409 AlreadyExists (create) or Conflict (update with a stale resourceVersion). */
export function isConflict(error: unknown): boolean {
  return apiStatus(error).code === 409;
}

/**
 * The API server's message for a JSON Patch that did not apply to the current object (a `test`
 * operation failed, or a path it names is gone): k8s.io/apiserver/pkg/endpoints/handlers/patch.go
 * (`applyJSPatch`) answers `errors.NewGenericServerResponse(422, …)`, whose message is this
 * fixed text and whose details carry no cause — unlike a validation failure (`… is invalid: …`)
 * or an admission denial, which name the object and the rule.
 */
export const PATCH_NOT_APPLICABLE_MESSAGE = "the server rejected our request due to an error in our request";

/**
 * The JSON Patch did not apply: the object changed since it was read, a lost
 * compare-and-swap, to be answered by reading again. That is a 422 with
 * {@link PATCH_NOT_APPLICABLE_MESSAGE} (or, from API servers that pass the json-patch
 * library's text through, "testing value … failed", "… operation does not apply …"); a 409 is
 * a conflict as well.
 */
export function isPatchConflict(error: unknown): boolean {
  const { code, message } = apiStatus(error);
  if (code === 409) return true;
  return code === 422 && (message === PATCH_NOT_APPLICABLE_MESSAGE || /testing value|test operation|operation does not apply|error in test for path/i.test(message));
}

/**
 * An admission refusal of a write: 403 Forbidden (LimitRanger, ResourceQuota, PodSecurity, a
 * validating webhook or policy) or 422 Invalid / 400 BadRequest (validation, a webhook's
 * denial) that is not a lost compare-and-swap ({@link isPatchConflict}). Retrying the same
 * write would fail the same way, so the caller reports it instead.
 * https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/
 */
export function isAdmissionRefusal(error: unknown): boolean {
  const { code, message } = apiStatus(error);
  if (code === 403 && isRbacDenial(message)) return false;
  return (code === 403 || code === 422 || code === 400) && !isPatchConflict(error);
}

/**
 * The authorizer's 403, not admission's: `User "…" cannot patch resource "deployments" …`
 * (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go, `forbiddenMessage`).
 * memory-scaler's own RBAC is wrong; that is not the workload's problem to report.
 */
export function isRbacDenial(message: string): boolean {
  return /cannot [a-z]+ resource "/.test(message);
}

/**
 * The HTTP error memory-scaler answers when an API call it needed failed for another reason
 * than those above (`doing` says what it was doing, e.g. "read Pod ns/name"):
 * - transport failure or 5xx → 503: the API server is unavailable, the sender retries;
 * - 429 → 429 with the API server's `Retry-After`, if any;
 * - 401/403 → 500: memory-scaler's credentials or RBAC are wrong; an operator must act, and a
 *   5xx keeps the event (the broker retries, then dead-letters) instead of dropping it;
 * - anything else → 500.
 * The original error is kept as `cause` for the logs.
 */
export function unavailable(error: unknown, doing: string): HttpError {
  const { code, message } = apiStatus(error);
  if (code === undefined || code >= 500) {
    return new HttpError(503, `Kubernetes API server unavailable: could not ${doing}: ${message}`, { cause: error });
  }
  if (code === 429) {
    const retryAfter = error instanceof k8s.ApiException ? retryAfterOf(error.headers) : undefined;
    return new HttpError(429, `Kubernetes API server throttled: could not ${doing}`, {
      cause: error,
      ...(retryAfter === undefined ? {} : { headers: { "retry-after": retryAfter } }),
    });
  }
  if (code === 401 || code === 403) {
    return new HttpError(500, `not allowed to ${doing}: ${message}`, { cause: error });
  }
  return new HttpError(500, `could not ${doing}: HTTP ${code}: ${message}`, { cause: error });
}

function retryAfterOf(headers: unknown): string | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const value = (headers as Record<string, unknown>)["retry-after"];
  return typeof value === "string" && /^\d{1,6}$/.test(value) ? value : undefined;
}
