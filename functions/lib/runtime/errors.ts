/**
 * Errors that carry their HTTP status, as Knative's Node runtime and DESIGN.md want them:
 * 4xx = the request can never succeed (permanent), 5xx/429 = a retry may succeed (transient).
 */

/** Options of {@link HttpError}. */
export interface HttpErrorOptions {
  /** Machine-readable detail returned to the caller, e.g. a list of schema errors. */
  readonly details?: unknown;
  /** The lower-level failure, kept for logs, never sent to the caller. */
  readonly cause?: unknown;
  /** Extra response headers, e.g. `WWW-Authenticate`, `Allow`, `Retry-After`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * An error with an HTTP status. The runtime answers `status` with the JSON body
 * `{ error: reason, details? }` (RFC 9110 §15 for the codes).
 *
 * @throws RangeError when `status` is not 400–599.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly details: unknown;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, reason: string, options: HttpErrorOptions = {}) {
    super(reason, options.cause === undefined ? undefined : { cause: options.cause });
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new RangeError(`HttpError status must be 400-599, got ${status}`);
    }
    this.name = "HttpError";
    this.status = status;
    this.reason = reason;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }

  /** True for 5xx and 429: the sender should retry later. */
  get transient(): boolean {
    return this.status >= 500 || this.status === 429;
  }
}

/** Message returned for any error that is not an {@link HttpError}: no internals leak out. */
export const INTERNAL_ERROR_REASON = "internal error";

/**
 * Maps anything thrown to an {@link HttpError}: an HttpError as is; an error from express's
 * body parser (it carries `status`/`expose`, e.g. 413 `entity.too.large`, 415
 * `encoding.unsupported`, 400 `request.aborted`) with its 4xx status and message; anything
 * else → 500 "internal error", the original kept as `cause`.
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (typeof error === "object" && error !== null) {
    const { status, expose, message } = error as { status?: unknown; expose?: unknown; message?: unknown };
    if (typeof status === "number" && status >= 400 && status < 500 && expose === true) {
      return new HttpError(status, typeof message === "string" ? message : "bad request", { cause: error });
    }
  }
  return new HttpError(500, INTERNAL_ERROR_REASON, { cause: error });
}

/**
 * Why a request's `FunctionContext.signal` was aborted: its connection closed before the answer
 * was written in full (the client gave up, or the connection was cut). Nobody reads an answer
 * after it, whatever its status.
 */
export class RequestAbortedError extends Error {
  constructor() {
    super("the client closed the connection before the answer was written");
    this.name = "RequestAbortedError";
  }
}
