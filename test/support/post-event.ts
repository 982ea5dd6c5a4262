/**
 * Sending one CloudEvent to a function as a Knative Broker would, and reading its answer: a
 * handled event is 204 with the outcome in headers and no body (the runtime's `acknowledge`),
 * a refused or failed one has a JSON error body.
 */
import assert from "node:assert/strict";
import { HTTP, type CloudEvent } from "cloudevents";
import { OUTCOME_HEADER, REASON_HEADER } from "../../functions/lib/runtime/cloudevent.ts";

/** A function's answer to one CloudEvent. */
export interface EventAnswer {
  readonly status: number;
  /** `X-Appmonitor-Outcome` of a handled event, e.g. `scaled`, `created`; undefined otherwise. */
  readonly outcome: string | undefined;
  /** `X-Appmonitor-Reason`, e.g. `Cooldown`, `RuleLoaded`; undefined when none was given. */
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

/**
 * POSTs `event` to `url` in binary (default) or structured mode (CloudEvents SDK `HTTP.binary` /
 * `HTTP.structured`), with `headers` besides the event's (an `authorization`, as Knative's OIDC sender).
 */
export async function postEvent(url: string, event: CloudEvent<unknown>, mode: "binary" | "structured" = "binary", headers: Readonly<Record<string, string>> = {}): Promise<EventAnswer> {
  const message = mode === "binary" ? HTTP.binary(event) : HTTP.structured(event);
  const response = await fetch(url, {
    method: "POST",
    headers: { ...(message.headers as Record<string, string>), ...headers },
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

/**
 * Asserts that `answer` is a handled event's and carries nothing a Knative Broker would take for
 * a reply event to route again (knative/eventing pkg/kncloudevents/event_dispatcher.go sends any
 * response message it can read back to the Broker): 204, no body, no content type (a CloudEvents
 * one would make a structured event of it), no `ce-*` header (a binary one).
 */
export function assertNoReplyEvent(answer: EventAnswer): void {
  assert.equal(answer.status, 204, describeAnswer(answer));
  assert.equal(answer.text, "", "no body");
  assert.equal(answer.headers.get("content-type"), null, "no content type (a CloudEvents one would make it a structured reply event)");
  assert.ok((answer.headers.get("content-length") ?? "0") === "0", "no content length");
  assert.deepEqual([...answer.headers.keys()].filter((name) => name.startsWith("ce-")), [], "no ce-* header (it would make it a binary reply event)");
}
