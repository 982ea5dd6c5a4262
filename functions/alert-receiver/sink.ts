/**
 * Sending CloudEvents to `$K_SINK` with the CloudEvents SDK: `emitterFor` with the HTTP
 * binding in binary or structured mode
 * (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md#3-http-message-mapping).
 *
 * The transport is ours, not the SDK's `httpTransport`: that one resolves whatever the status
 * code (it does not report it), so a 503 from a broker would look delivered. Ours rejects
 * non-2xx answers with a {@link DeliveryError} that says whether a retry may help, and bounds
 * each request with a timeout.
 */
import { CloudEvent, HTTP, Mode, emitterFor } from "cloudevents";
import type { Message, TransportFunction } from "cloudevents";
import http from "node:http";
import https from "node:https";
import type { AlertEventAttributes } from "./mapping.ts";

/** A failed delivery; `transient` → worth retrying (5xx, 429, 408, timeouts, connection errors). */
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
 * Rejects with a DeliveryError — transient for 408, 429, 5xx, a socket idle for `timeoutMs`
 * and network errors; permanent for other statuses (the sink refused the event itself).
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
          const transient = status >= 500 || status === 429 || status === 408;
          reject(new DeliveryError(`sink answered ${status}${body === "" ? "" : `: ${body.slice(0, 200)}`}`, { status, transient }));
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
