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

/**
 * A TransportFunction that POSTs the encoded message to `sink` with `fetch` (connections are
 * kept alive) and resolves only on 2xx.
 * @throws DeliveryError — transient for 408, 429, 5xx, timeouts after `timeoutMs` and network
 * errors; permanent for other statuses (the sink refused the event itself).
 */
export function statusCheckingTransport(sink: URL, timeoutMs: number): TransportFunction {
  return async (message: Message): Promise<unknown> => {
    let response: Response;
    try {
      response = await fetch(sink, {
        method: "POST",
        headers: message.headers as Record<string, string>,
        body: message.body as string,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const reason = error instanceof Error && error.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : describeNetworkError(error);
      throw new DeliveryError(`sink unreachable: ${reason}`, { transient: true, cause: error });
    }
    const body = await response.text().catch(() => "");
    if (response.ok) return { status: response.status };
    const transient = response.status >= 500 || response.status === 429 || response.status === 408;
    throw new DeliveryError(`sink answered ${response.status}${body === "" ? "" : `: ${body.slice(0, 200)}`}`, { status: response.status, transient });
  };
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

function describeNetworkError(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause !== undefined && typeof cause.code === "string") return cause.code;
  if (cause !== undefined && typeof cause.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}
