/**
 * What a failed Kubernetes API call means for rule-sync. The API server answers errors with a
 * `Status` object (https://kubernetes.io/docs/reference/using-api/api-concepts/#response-status-kind);
 * @kubernetes/client-node throws `ApiException` with the HTTP status in `code` and that object
 * (as text or parsed) in `body`. Anything else it throws is a transport failure (refused
 * connection, reset, TLS): the API server is unreachable.
 */
import * as k8s from "@kubernetes/client-node";
import { HttpError } from "../lib/runtime/errors.ts";

/** The parts of a failed call this module reads. */
export interface ApiStatus {
  /** HTTP status; undefined for a transport failure. */
  readonly code: number | undefined;
  /** `Status.reason`, e.g. `NotFound`, `Conflict`, `Invalid`; empty when unknown. */
  readonly reason: string;
  /** `Status.message`, else the error's own message. */
  readonly message: string;
  /** `Status.details.name`: set when a 404 is about one object, absent when the resource type is not served. */
  readonly objectName: string | undefined;
}

/** Reads the HTTP status and the API server's `Status` out of anything the client threw. */
export function apiStatus(error: unknown): ApiStatus {
  if (error instanceof k8s.ApiException) {
    const code = typeof error.code === "number" ? error.code : undefined;
    let body: unknown = error.body;
    if (typeof body === "string") {
      try {
        body = JSON.parse(body);
      } catch {
        body = { message: body };
      }
    }
    const status = (typeof body === "object" && body !== null ? body : {}) as { reason?: unknown; message?: unknown; details?: { name?: unknown } };
    const message = typeof status.message === "string" && status.message.trim() !== "" ? status.message.trim() : `HTTP ${code ?? "?"}`;
    const objectName = typeof status.details?.name === "string" && status.details.name !== "" ? status.details.name : undefined;
    return { code, reason: typeof status.reason === "string" ? status.reason : "", message, objectName };
  }
  return { code: undefined, reason: "", message: error instanceof Error ? error.message : String(error), objectName: undefined };
}

/**
 * 404 about the object itself (`Status.details.name` set). A 404 without it means the resource
 * type is not served (its CRD is not installed), which is not "the object is gone".
 */
export function isObjectNotFound(error: unknown): boolean {
  const status = apiStatus(error);
  return status.code === 404 && status.objectName !== undefined;
}

/** 409: a precondition (uid, resourceVersion) no longer holds, or the object was replaced. */
export function isConflict(error: unknown): boolean {
  return apiStatus(error).code === 409;
}

/**
 * The API server refused the object itself: 422 Invalid (schema validation, e.g. a second
 * controller ownerReference), 400 BadRequest, or an admission plugin's 403 (not the
 * authorizer's, whose message reads `User "…" cannot <verb> resource "…"`). Writing the same
 * object again fails the same way.
 */
export function isRefusal(error: unknown): boolean {
  const { code, message } = apiStatus(error);
  if (code === 403) return !/cannot [a-z]+ resource "/.test(message);
  return code === 422 || code === 400;
}

/**
 * The HTTP error rule-sync answers when an API call failed for another reason than the above
 * (`doing` says what, e.g. "read AppMonitor ns/name"):
 * - transport failure, 5xx, or a 404 for a resource type that is not served (a CRD missing) → 503:
 *   a retry may succeed once the API server or the CRD is back;
 * - 429 → 429 with the API server's `Retry-After`, if any;
 * - 401/403 (RBAC) → 500: the ServiceAccount's grants are wrong; an operator must act, and a 5xx
 *   keeps the event (the broker retries, then dead-letters) instead of dropping it;
 * - anything else → 500.
 * The original error is kept as `cause`, for the logs.
 */
export function toHttpFailure(error: unknown, doing: string): HttpError {
  if (error instanceof HttpError) return error;
  const { code, message } = apiStatus(error);
  if (code === undefined || code >= 500) {
    return new HttpError(503, `Kubernetes API server unavailable: could not ${doing}: ${message}`, { cause: error });
  }
  if (code === 404) {
    return new HttpError(503, `could not ${doing}: the resource type is not served (is its CRD installed?): ${message}`, { cause: error });
  }
  if (code === 429) {
    const retryAfter = error instanceof k8s.ApiException ? retryAfterOf(error.headers) : undefined;
    return new HttpError(429, `Kubernetes API server throttled: could not ${doing}`, {
      cause: error,
      ...(retryAfter === undefined ? {} : { headers: { "retry-after": retryAfter } }),
    });
  }
  if (code === 401 || code === 403) return new HttpError(500, `not allowed to ${doing}: ${message}`, { cause: error });
  return new HttpError(500, `could not ${doing}: HTTP ${code}: ${message}`, { cause: error });
}

function retryAfterOf(headers: unknown): string | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const value = (headers as Record<string, unknown>)["retry-after"];
  return typeof value === "string" && /^\d{1,6}$/.test(value) ? value : undefined;
}
