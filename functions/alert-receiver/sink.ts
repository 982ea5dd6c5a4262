/**
 * Sending CloudEvents to `$K_SINK` with the CloudEvents SDK: `emitterFor` with the HTTP
 * binding in binary or structured mode
 * (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md#3-http-message-mapping).
 *
 * The transport is ours, not the SDK's `httpTransport`: that one resolves whatever the status
 * code (it does not report it), so a 503 from a broker would look delivered. Ours rejects
 * non-2xx answers with a {@link DeliveryError} that says whether a retry may help
 * ({@link isTransientStatus}), bounds each request with a timeout that covers the whole answer
 * (a sink that sends its headers and then trickles its body is cut off like one that never
 * answers), and stops at once when the caller's signal aborts (the webhook's deadline).
 */
import { CloudEvent, HTTP, Mode, emitterFor } from "cloudevents";
import type { Message, TransportFunction } from "cloudevents";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AlertEventAttributes } from "./mapping.ts";

/**
 * Whether a sink's non-2xx answer may turn into a delivery if the same event is sent again:
 * 5xx; 408, 429; 404 (a Broker not ready yet: Knative's broker ingress answers 404 for a Broker
 * it does not know yet); 409; and 1xx/3xx (a misconfigured `K_SINK`, no fault of the event).
 * Any other 4xx is the sink refusing this event (400 malformed, 401/403, 413, 415, 422…), and
 * it would refuse it again.
 *
 * @param status the HTTP status code of the answer (not 2xx).
 * @returns true when a retry may help.
 */
export function isTransientStatus(status: number): boolean {
  return status < 400 || status >= 500 || [404, 408, 409, 429].includes(status);
}

/**
 * A failed delivery. `transient` → worth retrying (see {@link isTransientStatus}; timeouts and
 * connection errors too); otherwise the sink refused the event and `status` says how.
 */
export class DeliveryError extends Error {
  /** The sink's status code; absent when no response came. */
  readonly status: number | undefined;
  readonly transient: boolean;

  constructor(message: string, options: { status?: number; transient: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "DeliveryError";
    this.status = options.status;
    this.transient = options.transient;
  }
}

/** A transport and the connections it keeps. */
export interface SinkTransport {
  readonly transport: TransportFunction;
  /** Closes the kept-alive connections (at shutdown). */
  close(): void;
}

/**
 * A TransportFunction that POSTs the encoded message to `sink` with `node:http(s)` over
 * kept-alive connections (about twice the throughput of `fetch` here) and resolves only on 2xx.
 *
 * Each request has `timeoutMs` from its start to the last byte of the answer: headers and body
 * (an answer's body is read to its end before a 2xx counts, as the sink may still fail it).
 * `options.signal` (an AbortSignal, passed through the SDK's emit options) ends it at once.
 *
 * Rejects with a DeliveryError — transient for the statuses {@link isTransientStatus} names, no
 * complete answer within `timeoutMs`, network errors, and a request stopped by the signal;
 * permanent for other 4xx (the sink refused the event itself).
 *
 * When `tokenFile` exists, each request carries its content as `Authorization: Bearer`, read at
 * each send: Knative renews the token in that file before it expires.
 *
 * @param sink `$K_SINK`.
 * @param timeoutMs per request, in ms, ≥ 1.
 * @param tokenFile the sender token's file (Knative's SinkBinding mounts it with `authentication-oidc`).
 */
export function statusCheckingTransport(sink: URL, timeoutMs: number, tokenFile?: string): SinkTransport {
  const client = sink.protocol === "https:" ? https : http;
  const agent = new client.Agent({ keepAlive: true });
  const transport = (message: Message, options?: { signal?: AbortSignal }): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const signal = options?.signal;
      if (signal?.aborted === true) return reject(new DeliveryError(`not sent: ${reasonOf(signal)}`, { transient: true, cause: signal.reason }));
      let settled = false;
      let ended = false;
      let status: number | undefined;
      const settle = (error: DeliveryError | undefined, value?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (error === undefined) return resolve(value);
        reject(error);
        // An exchange cut off half-way leaves the socket unusable: it goes, not back to the pool.
        if (!ended) request.destroy();
      };
      const onAbort = (): void =>
        settle(new DeliveryError(`stopped: ${reasonOf(signal)}`, { transient: true, ...(status === undefined ? {} : { status }), cause: signal?.reason }));
      const timer = setTimeout(() => {
        const what = status === undefined ? `no answer within ${timeoutMs} ms` : `answer ${status} not complete within ${timeoutMs} ms`;
        settle(new DeliveryError(what, { transient: true, ...(status === undefined ? {} : { status }) }));
      }, timeoutMs);
      const token = tokenFile === undefined ? undefined : readToken(tokenFile);
      const headers = token === undefined ? message.headers : { ...message.headers, authorization: `Bearer ${token}` };
      const request = client.request(sink, { method: "POST", headers, agent }, (response) => {
        status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error) => settle(new DeliveryError(`sink connection failed: ${error.message}`, { transient: true, cause: error })));
        response.on("end", () => {
          ended = true;
          const code = response.statusCode ?? 0;
          if (code >= 200 && code < 300) return settle(undefined, { status: code });
          const body = Buffer.concat(chunks).toString("utf8");
          settle(new DeliveryError(`sink answered ${code}${body === "" ? "" : `: ${body.slice(0, 200)}`}`, { status: code, transient: isTransientStatus(code) }));
        });
      });
      request.on("error", (error: NodeJS.ErrnoException) =>
        settle(new DeliveryError(`sink unreachable: ${error.code ?? error.message}`, { transient: true, cause: error })),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      request.end(message.body as string);
    });
  return { transport, close: () => agent.destroy() };
}

/** The token in `file`, trimmed; undefined when there is no such file or it is empty (no sender identity to show). */
export function readToken(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Why `signal` aborted, in words: its reason's message when that is an Error, else the reason as text. */
export function reasonOf(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason.message : String(reason ?? "aborted");
}

/**
 * Sends one event; `signal`, when given, stops it (the transport rejects at once).
 * @throws DeliveryError from the transport; the SDK's ValidationError (or TypeError) for an
 * event it will not encode.
 */
export type Send = (attributes: AlertEventAttributes, signal?: AbortSignal) => Promise<void>;

/**
 * Builds the sender: attributes → SDK CloudEvent (validated) → HTTP message in `mode` →
 * transport, the signal passed on in the emit options (`{ signal }`).
 */
export function createSender(transport: TransportFunction, mode: "binary" | "structured"): Send {
  const emit = emitterFor(transport, { binding: HTTP, mode: mode === "structured" ? Mode.STRUCTURED : Mode.BINARY });
  return async (attributes, signal) => {
    await emit(new CloudEvent<AlertEventAttributes["data"]>({ specversion: "1.0", ...attributes }), signal === undefined ? undefined : { signal });
  };
}
