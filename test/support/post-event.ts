/**
 * Sending one CloudEvent to a function as a Knative Broker would, and reading its answer: a
 * handled event is 204 with the outcome in headers and no body (the runtime's `acknowledge`),
 * a refused or failed one has a JSON error body.
 */
import { HTTP, type CloudEvent } from "cloudevents";
import { OUTCOME_HEADER, REASON_HEADER } from "../../functions/lib/runtime/cloudevent.ts";

/** A function's answer to one CloudEvent. */
export interface EventAnswer {
  readonly status: number;
  /** `X-Appmonitor-Outcome` of a handled event, e.g. `scaled`, `created`; undefined otherwise. */
  readonly outcome: string | undefined;
  /** `X-Appmonitor-Reason`, e.g. `Cooldown`, `RuleApplied`; undefined when none was given. */
  readonly reason: string | undefined;
  readonly headers: Headers;
  /** The body as sent: empty for every 2xx. */
  readonly text: string;
  /**
   * The JSON error body `{ error, details? }` of a 4xx/5xx; `{}` for an empty body,
   * `{ raw }` for one that is not JSON. Test code reads fields freely; shapes are asserted where
   * they matter.
   */
  readonly body: Record<string, unknown> & { error?: string };
}

/** POSTs `event` to `url` in binary (default) or structured mode (CloudEvents SDK `HTTP.binary` / `HTTP.structured`). */
export async function postEvent(url: string, event: CloudEvent<unknown>, mode: "binary" | "structured" = "binary"): Promise<EventAnswer> {
  const message = mode === "binary" ? HTTP.binary(event) : HTTP.structured(event);
  const response = await fetch(url, {
    method: "POST",
    headers: message.headers as Record<string, string>,
    body: message.body === undefined || typeof message.body === "string" ? message.body : JSON.stringify(message.body),
  });
  const text = await response.text();
  let body: EventAnswer["body"];
  try {
    body = text === "" ? {} : (JSON.parse(text) as EventAnswer["body"]);
  } catch {
    body = { raw: text };
  }
  return {
    status: response.status,
    outcome: response.headers.get(OUTCOME_HEADER) ?? undefined,
    reason: response.headers.get(REASON_HEADER) ?? undefined,
    headers: response.headers,
    text,
    body,
  };
}

/** `answer` in one line, for assertion messages. */
export function describeAnswer(answer: EventAnswer): string {
  return `${answer.status} ${answer.outcome ?? "-"}/${answer.reason ?? "-"} ${answer.text.slice(0, 500)}`;
}
