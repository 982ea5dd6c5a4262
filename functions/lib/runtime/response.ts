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

/** Sends an {@link HttpError} as `{ error, details? }` with its status and headers. */
export function writeError(res: Response, error: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = error.details === undefined ? { error: error.reason } : { error: error.reason, details: error.details };
  writeResponse(res, { status: error.status, body, headers: error.headers });
}
