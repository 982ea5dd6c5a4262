/**
 * The HTTP server every function runs in: express 5 wiring of the runtime's modules (health,
 * metrics, body limit, invocation, error mapping, request logs, graceful drain).
 *
 * Endpoints:
 * - `GET /health/liveness`, `GET /health/readiness` — see `health.ts`; other methods → 405.
 * - `GET /metrics` — Prometheus text format of the function's registry; other methods → 405.
 * - anything else → the function (`invoke.ts`): the body is read raw, at most 1 MiB (413
 *   beyond, logged as a warning with the body's size and sender: no sender retries it), an
 *   `HttpError` becomes its status with `{ error, details? }` (for a CloudEvent function at most
 *   768 bytes: `errorBody` in response.ts; the details in full in the log line), any other error 500
 *   `{ "error": "internal error" }` (logged with its stack, never sent). A handled CloudEvent is
 *   answered 204 without a body (`cloudevent.ts`, `acknowledge`).
 *
 * One access log line per request (`msg: "request"`), with the id and type of the CloudEvent it
 * carried once decoded (so each delivery of an event a Broker retries has its own line, failed
 * ones included) and the outcome and reason of a handled one. A request whose connection closed
 * before its answer was written in full (the client gave up) is logged at warn with
 * `aborted: true` and `status` null (or the status of an answer cut off mid-way), counted in
 * `appmonitor_http_requests_aborted_total` and not in the request counter or histogram, and the
 * function's `context.signal` is aborted. A body over the limit is counted in
 * `appmonitor_http_oversize_bodies_total` and `…_oversize_body_bytes_total`, and its warning
 * names its `contentLength` or, for a chunked upload, the `bytesRead` when it passed the limit.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import type { NextFunction, Request, Response } from "express";
import type { DestinationStream, Logger } from "pino";
import type { Registry } from "prom-client";
import { BODY_LIMIT_BYTES, READINESS_TIMEOUT_MS, readRuntimeConfig } from "./config.ts";
import { OUTCOME_HEADER, REASON_HEADER } from "./cloudevent.ts";
import { Drainer } from "./drain.ts";
import { HttpError, RequestAbortedError, toHttpError } from "./errors.ts";
import { LIVENESS_PATH, READINESS_PATH, liveness, readiness } from "./health.ts";
import { invoke } from "./invoke.ts";
import type { EventName, Invocable } from "./invoke.ts";
import { createLogger } from "./logger.ts";
import { createRuntimeMetrics } from "./metrics.ts";
import type { RouteLabel } from "./metrics.ts";
import { writeError, writeResponse } from "./response.ts";
import type { Env, FunctionContext, FunctionDefinition, FunctionRequest } from "./types.ts";

/** Path of the Prometheus endpoint. */
export const METRICS_PATH = "/metrics";

/** Options of {@link startServer} that are not configuration. */
export interface StartOptions {
  /** Where JSON log lines go; stdout when absent. */
  readonly logDestination?: DestinationStream;
}

/** A listening function server. */
export interface RunningServer {
  /** Base URL to reach it, e.g. `http://127.0.0.1:43127` (a wildcard host is given as loopback). */
  readonly url: string;
  /** The bound port (the real one when `PORT=0`). */
  readonly port: number;
  readonly log: Logger;
  readonly registry: Registry;
  /**
   * Graceful stop: readiness turns 503, no new connections, in-flight requests finish (at
   * most `SHUTDOWN_TIMEOUT_MS`), then the function's `close()`. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Configures, initialises and starts a function on `$HOST:$PORT` (defaults `0.0.0.0:8080`).
 * The launcher `functions/run.ts` calls it with `process.env`; tests call it with their own
 * env (`HOST=127.0.0.1`, `PORT=0`) to run a function in-process.
 *
 * @throws ConfigError (from `env.ts`) naming the variable when the runtime's or the
 * function's configuration is invalid; whatever `init` throws; the listen error (`EADDRINUSE`…).
 */
export async function startServer<C>(definition: FunctionDefinition<C>, env: Env, options: StartOptions = {}): Promise<RunningServer> {
  const runtimeConfig = readRuntimeConfig(env);
  const config = definition.configure(env);
  const log = createLogger(definition.name, runtimeConfig.logLevel, options.logDestination);
  const metrics = createRuntimeMetrics(definition.name);
  const deps = { log, registry: metrics.registry };
  const fn: Invocable =
    definition.kind === "cloudevent"
      ? { kind: "cloudevent", instance: await definition.init(config, deps) }
      : { kind: "http", instance: await definition.init(config, deps) };

  // A CloudEvent function's failed answer is read by a Knative dispatcher: kept within 768 bytes.
  const bounded = fn.kind === "cloudevent";
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  const server = createServer(app);
  const drainer = new Drainer(server);

  // Bookkeeping for every request: drain tracking, one log line, metrics.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const done = drainer.track();
    const started = process.hrtime.bigint();
    // One id for the access line and the function's own lines, so a request's logs join up.
    const requestId = requestIdOf(req.headers["x-request-id"]);
    const abort = new AbortController();
    res.locals.requestId = requestId;
    res.locals.signal = abort.signal;
    if (drainer.draining) res.setHeader("connection", "close");
    res.once("close", () => {
      done();
      const route = routeOf(req.path);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const event = res.locals.event as EventName | undefined;
      const named = event === undefined ? {} : { eventId: event.id, eventType: event.type };
      const durationMs = Math.round(seconds * 1e4) / 10;
      if (!res.writableFinished) {
        // Closed before the answer was written in full: the client gave up (Alertmanager, a
        // Broker at its timeout) or the connection was cut. Whatever status the function meant
        // to answer, nobody got it: no `code` is counted, and the line says so.
        abort.abort(new RequestAbortedError());
        metrics.aborted.inc({ route, method: req.method });
        log.warn({ requestId, method: req.method, path: req.path, status: res.headersSent ? res.statusCode : null, aborted: true, durationMs, ...named }, "request");
        return;
      }
      const code = String(res.statusCode);
      metrics.requests.inc({ route, method: req.method, code });
      metrics.duration.observe({ route, code }, seconds);
      const line = { requestId, method: req.method, path: req.path, status: res.statusCode, durationMs, ...named, ...outcomeOf(res) };
      // Probes and scrapes arrive every few seconds: keep them out of the info stream.
      if (route === "health" || route === "metrics") log.debug(line, "request");
      else log.info(line, "request");
    });
    next();
  });

  app.get(LIVENESS_PATH, (_req: Request, res: Response) => writeResponse(res, liveness()));
  app.get(READINESS_PATH, async (_req: Request, res: Response) => {
    writeResponse(res, await readiness(fn.instance.readiness?.bind(fn.instance), drainer.draining, READINESS_TIMEOUT_MS));
  });
  app.get(METRICS_PATH, async (_req: Request, res: Response) => {
    res.setHeader("content-type", metrics.registry.contentType);
    res.end(await metrics.registry.metrics());
  });
  app.all([LIVENESS_PATH, READINESS_PATH, METRICS_PATH], (req: Request, res: Response) => {
    writeError(res, new HttpError(405, `method ${req.method} not allowed`, { headers: { allow: "GET, HEAD" } }));
  });

  app.use(express.raw({ type: () => true, limit: BODY_LIMIT_BYTES }));
  app.use(async (req: Request, res: Response) => {
    const requestId = String(res.locals.requestId);
    const context: FunctionContext = { log: log.child({ requestId }), requestId, signal: res.locals.signal as AbortSignal };
    try {
      writeResponse(res, (await invoke(fn, context, toFunctionRequest(req), (event) => (res.locals.event = event))) ?? undefined);
    } catch (error) {
      fail(context.log, res, error, bounded);
    }
  });
  // Errors raised before the function runs: body too large, bad content-encoding, aborted upload.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (toHttpError(error).status === 413) {
      // A sender never retries a 4xx: what it sent is lost, so say what it was.
      const { contentLength, bytesRead, bytes } = oversizeBody(req, error);
      metrics.oversizeBodies.inc();
      metrics.oversizeBodyBytes.inc(bytes);
      log.warn(
        { status: 413, contentLength, bytesRead, limitBytes: BODY_LIMIT_BYTES, contentType: req.headers["content-type"], userAgent: req.headers["user-agent"], path: req.path },
        "request body over the limit: refused with 413, which senders do not retry, so its content is lost",
      );
    }
    fail(log, res, error, bounded);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(runtimeConfig.port, runtimeConfig.host, () => {
      server.off("error", reject);
      resolve();
    });
  }).catch(async (error: unknown) => {
    await fn.instance.close?.();
    throw error;
  });

  const { port } = server.address() as AddressInfo;
  const url = `http://${loopbackFor(runtimeConfig.host)}:${port}`;
  log.info({ host: runtimeConfig.host, port, url, kind: definition.kind }, "listening");

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      log.info({ inFlight: drainer.inFlight }, "draining");
      await drainer.close(runtimeConfig.shutdownTimeoutMs);
      await fn.instance.close?.();
      log.info("stopped");
    })();
    return closing;
  };
  return { url, port, log, registry: metrics.registry, close };
}

/** Answers `error` (its body within 768 bytes when `bounded`: response.ts, `errorBody`) and logs it. */
function fail(log: Logger, res: Response, error: unknown, bounded: boolean): void {
  const httpError = toHttpError(error);
  // The details in full here: a CloudEvent function's answer keeps what fits in 768 bytes.
  const details = httpError.details === undefined ? {} : { details: httpError.details };
  if (httpError.status >= 500) log.error({ err: httpError.cause ?? httpError, status: httpError.status, ...details }, httpError.reason);
  else log.info({ status: httpError.status, reason: httpError.reason, ...details }, "request refused");
  writeError(res, httpError, bounded);
}

/**
 * What is known of a body refused as too large: its declared `Content-Length` (null for a
 * chunked upload), the bytes read when the limit was passed (`received` of raw-body's
 * `entity.too.large` error: 0 when a declared length was refused before reading, at least the
 * limit + 1 for a chunked upload), and `bytes`, the better of the two, for the byte counter.
 */
function oversizeBody(req: Request, error: unknown): { contentLength: number | null; bytesRead: number; bytes: number } {
  const header = req.headers["content-length"];
  const declared = header === undefined ? Number.NaN : Number(header);
  const contentLength = Number.isSafeInteger(declared) && declared >= 0 ? declared : null;
  const received = (error as { received?: unknown }).received;
  const bytesRead = typeof received === "number" && Number.isSafeInteger(received) ? received : 0;
  return { contentLength, bytesRead, bytes: contentLength ?? bytesRead };
}

/** The outcome headers a handled CloudEvent's answer carries, for the access line; `{}` otherwise. */
function outcomeOf(res: Response): { outcome?: string; reason?: string } {
  const outcome = res.getHeader(OUTCOME_HEADER);
  const reason = res.getHeader(REASON_HEADER);
  return {
    ...(typeof outcome === "string" ? { outcome } : {}),
    ...(typeof reason === "string" ? { reason } : {}),
  };
}

function toFunctionRequest(req: Request): FunctionRequest {
  const body: unknown = req.body;
  return {
    method: req.method,
    path: req.path,
    query: new URL(req.originalUrl, "http://localhost").searchParams,
    headers: req.headers,
    body: Buffer.isBuffer(body) ? body : Buffer.alloc(0),
  };
}

function routeOf(path: string): RouteLabel {
  if (path === LIVENESS_PATH || path === READINESS_PATH) return "health";
  if (path === METRICS_PATH) return "metrics";
  return "function";
}

/** A caller's `X-Request-Id` when it is a short printable token, else a new UUID. */
function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === "string" && /^[\x21-\x7e]{1,128}$/.test(header) ? header : randomUUID();
}

/** Where a client on this machine reaches a server bound to `host`. */
function loopbackFor(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}
