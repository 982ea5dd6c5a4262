/**
 * The contract between the shared function runtime and a function folder.
 *
 * A function lives in `functions/<name>/` and its entry module `functions/<name>/index.ts`
 * exports `fn`, a {@link FunctionDefinition}. The launcher (`npm run function -- <name>`, i.e.
 * `node functions/run.ts <name>`) and the in-process `startServer` (`server.ts`) both do the same:
 *
 * 1. `configure(env)` turns the environment into the function's validated configuration. It
 *    throws `ConfigError` (`env.ts`) naming the offending variable; the launcher prints that one
 *    line and exits non-zero, before anything listens.
 * 2. `init(config, deps)` builds the function's adapters (clients, validators, metrics in
 *    `deps.registry`) and returns a {@link FunctionInstance}: `handle`, and optionally
 *    `readiness` and `close`.
 * 3. The runtime serves HTTP on `$HOST:$PORT`: `/health/liveness`, `/health/readiness`,
 *    `/metrics`, and everything else goes to `handle`. Business code never sees express's
 *    `req`/`res`: it gets a decoded CloudEvent or a {@link FunctionRequest}, and returns a
 *    {@link CloudEventOutcome} (CloudEvent functions: the runtime answers 204 without a body)
 *    or a {@link FunctionResponse} (HTTP functions), or throws an `HttpError` (`errors.ts`).
 *
 * Modelled on Knative's Node runtime (https://github.com/nodeshift/faas-js-runtime) and the
 * Knative container contract (https://github.com/knative/specs/blob/main/specs/serving/runtime-contract.md).
 *
 * @example A CloudEvent function folder
 * ```ts
 * export const fn: FunctionDefinition<{ greeting: string }> = {
 *   name: "hello",
 *   kind: "cloudevent",
 *   configure: (env) => ({ greeting: readString(env, "GREETING") ?? "hi" }),
 *   init: (config) => ({
 *     handle: async (context, event) => {
 *       context.log.info({ type: event.type }, config.greeting);
 *       return { outcome: "greeted" };
 *     },
 *   }),
 * };
 * ```
 */
import type { CloudEvent } from "cloudevents";
import type { Logger } from "pino";
import type { Registry } from "prom-client";

/** The process environment, or any record shaped like it (tests pass their own). */
export type Env = Readonly<Record<string, string | undefined>>;

/** Per-request context handed to `handle`. */
export interface FunctionContext {
  /** pino child logger bound to this request (`requestId`, and for CloudEvents `eventId`, `eventType`). */
  readonly log: Logger;
  /** `X-Request-Id` when the caller sent one, else a random UUID. */
  readonly requestId: string;
  /**
   * Aborted when the connection closed before the answer was written in full: the sender gave
   * up (Alertmanager at its notification timeout, a Broker at its delivery timeout) and will
   * never read the answer. Its `reason` is a `RequestAbortedError` (`errors.ts`). Work whose only
   * purpose is the answer can stop; the runtime logs and counts the request as aborted
   * (`appmonitor_http_requests_aborted_total`), whatever the function returns.
   */
  readonly signal: AbortSignal;
}


/**
 * What an HTTP function receives: the request without express. Header names are lower-case
 * (Node's `IncomingMessage.headers`); `body` is the raw bytes, at most 1 MiB (larger → 413
 * before `handle` runs); an empty body is a zero-length Buffer.
 */
export interface FunctionRequest {
  readonly method: string;
  /** URL path without the query string, e.g. `/`. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/**
 * What an HTTP function's `handle` returns. `body`: `undefined` → no body; a string →
 * `text/plain`; a Buffer → `application/octet-stream`; anything else → JSON. A `content-type`
 * in `headers` wins. Returning nothing means `204 No Content`.
 *
 * Status semantics (DESIGN.md): 2xx handled (or deliberately skipped), 4xx can never be
 * handled, 5xx/429 transient — the sender (Knative broker, Alertmanager) retries.
 */
export interface FunctionResponse {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * What a CloudEvent function's `handle` returns for an event it handled, including one it
 * deliberately skipped. The runtime answers `204 No Content` with no body and these two words
 * in the headers `X-Appmonitor-Outcome` and `X-Appmonitor-Reason`, also written on the
 * request's log line (`cloudevent.ts`, `acknowledge`): a Knative Broker fails a delivery whose
 * reply has a body that is not a CloudEvent, so details belong in the function's logs, metrics
 * and Kubernetes objects, never in the answer.
 */
export interface CloudEventOutcome {
  /** What was done, e.g. `scaled`, `skipped`, `created`: letters, digits, `.`, `_`, `-`; ≤ 64 characters. */
  readonly outcome: string;
  /** Why, e.g. `Cooldown`, `RuleLoaded`; same characters. */
  readonly reason?: string;
}

/** Readiness as reported by a function; throwing counts as `{ ready: false }` with the error's message. */
export type ReadinessResult = { readonly ready: true } | { readonly ready: false; readonly reason: string };

/** What `init` gets besides its configuration. */
export interface FunctionDeps {
  /** The process logger (JSON, level from `LOG_LEVEL`), bound to `{ function: name }`. */
  readonly log: Logger;
  /**
   * The registry `/metrics` serves. Register the function's metrics here
   * (`new Counter({ …, registers: [deps.registry] })`), never in prom-client's global
   * registry, so two functions started in one test process do not collide.
   */
  readonly registry: Registry;
}

/** Parts shared by both kinds of instance. */
interface InstanceCommon {
  /**
   * Backs `GET /health/readiness`: 200 when it resolves `{ ready: true }`, 503 with the reason
   * otherwise (also on throw or after 2 s). Absent → always ready.
   */
  readiness?(): Promise<ReadinessResult>;
  /** Called once after the server drained on SIGTERM/SIGINT or `close()`: release timers, sockets, watches. */
  close?(): Promise<void>;
}

/**
 * A CloudEvent function: the runtime decodes binary and structured mode (CloudEvents HTTP
 * binding 1.0, https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md#3-http-message-mapping)
 * with the CloudEvents SDK and validates the event before `handle` runs.
 * Malformed → 400 with the SDK's error list; a batch → 415 (see `cloudevent.ts`).
 * Served at `POST /` only. A handled event is answered 204 with its {@link CloudEventOutcome}
 * in headers; a thrown `HttpError` with its status and JSON error body.
 */
export interface CloudEventFunction extends InstanceCommon {
  handle(context: FunctionContext, event: CloudEvent<unknown>): Promise<CloudEventOutcome>;
  /**
   * Runs on each request's headers (lower-case names) before the event is decoded: throws an
   * `HttpError` (401 for a sender it refuses) to refuse the request. Absent: every sender is taken.
   */
  verifySender?(context: FunctionContext, headers: Readonly<Record<string, string | string[] | undefined>>): Promise<void>;
}

/** An HTTP function: gets every request that is not a health or metrics endpoint. */
export interface HttpFunction extends InstanceCommon {
  handle(context: FunctionContext, request: FunctionRequest): Promise<FunctionResponse | void>;
}

interface DefinitionCommon<C> {
  /** The folder name under `functions/`; used in logs and as the `function` label of every metric. */
  readonly name: string;
  /**
   * Reads and validates the function's own variables. Throws `ConfigError` naming the variable
   * (helpers in `env.ts`). Must not do I/O beyond reading mounted files (`*_FILE` secrets).
   */
  configure(env: Env): C;
}

/** A function whose input is one CloudEvent per request. */
export interface CloudEventFunctionDefinition<C> extends DefinitionCommon<C> {
  readonly kind: "cloudevent";
  init(config: C, deps: FunctionDeps): CloudEventFunction | Promise<CloudEventFunction>;
}

/** A function whose input is a plain HTTP request (e.g. a webhook). */
export interface HttpFunctionDefinition<C> extends DefinitionCommon<C> {
  readonly kind: "http";
  init(config: C, deps: FunctionDeps): HttpFunction | Promise<HttpFunction>;
}

/** What `functions/<name>/index.ts` exports as `fn`. */
export type FunctionDefinition<C = unknown> = CloudEventFunctionDefinition<C> | HttpFunctionDefinition<C>;

/** The module shape the launcher imports. */
export interface FunctionModule {
  readonly fn: FunctionDefinition<unknown>;
}
