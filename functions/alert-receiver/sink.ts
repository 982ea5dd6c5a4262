/**
 * Sending CloudEvents to `$K_SINK` with the CloudEvents SDK: `emitterFor` with the HTTP
 * binding in binary or structured mode
 * (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md#3-http-message-mapping).
 *
 * The transport is ours, not the SDK's `httpTransport`: that one resolves whatever the status
 * code (it does not report it), so a 503 from a broker would look delivered. Ours rejects
 * non-2xx answers with a {@link DeliveryError} that says whether a retry may help
 * ({@link isTransientStatus}), and bounds each request with a timeout.
 */
import { CloudEvent, HTTP, Mode, emitterFor } from "cloudevents";
import type { Message, TransportFunction } from "cloudevents";
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
 * Rejects with a DeliveryError — transient for the statuses {@link isTransientStatus} names, a
 * socket idle for `timeoutMs` and network errors; permanent for other 4xx (the sink refused the
 * event itself).
 */
export function statusCheckingTransport(sink: URL, timeoutMs: number): SinkTransport {
  const client = sink.protocol === "https:" ? https : http;
  const agent = new client.Agent({ keepAlive: true });
  const transport = (message: Message): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const request = client.request(sink, { method: "POST", headers: message.headers, agent, timeout: timeoutMs }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error) => reject(new DeliveryError(`sink connection failed: ${error.message}`, { transient: true, cause: error })));
        response.on("end", () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve({ status });
          const body = Buffer.concat(chunks).toString("utf8");
          reject(new DeliveryError(`sink answered ${status}${body === "" ? "" : `: ${body.slice(0, 200)}`}`, { status, transient: isTransientStatus(status) }));
        });
      });
      // No answer within the timeout: abort; the error handler below reports it as transient.
      request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on("error", (error: NodeJS.ErrnoException) =>
        reject(new DeliveryError(`sink unreachable: ${error.code ?? error.message}`, { transient: true, cause: error })),
      );
      request.end(message.body as string);
    });
  return { transport, close: () => agent.destroy() };
}

/** Sends one event; rejects with a {@link DeliveryError}. */
export type Send = (attributes: AlertEventAttributes) => Promise<void>;

/** Builds the sender: attributes → SDK CloudEvent (validated) → HTTP message in `mode` → transport. */
export function createSender(transport: TransportFunction, mode: "binary" | "structured"): Send {
  const emit = emitterFor(transport, { binding: HTTP, mode: mode === "structured" ? Mode.STRUCTURED : Mode.BINARY });
  return async (attributes) => {
    await emit(new CloudEvent<AlertEventAttributes["data"]>({ specversion: "1.0", ...attributes }));
  };
}
