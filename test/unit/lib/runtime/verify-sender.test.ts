// The runtime's sender hook (functions/lib/runtime/invoke.ts): a CloudEvent function's
// `verifySender` runs on the headers before the body is decoded, so a refused sender gets its 401
// whatever it sent, and nothing of the event reaches `handle`.
import { test } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { HttpError } from "../../../../functions/lib/runtime/errors.ts";
import { invoke } from "../../../../functions/lib/runtime/invoke.ts";
import type { CloudEventFunction, FunctionContext, FunctionRequest } from "../../../../functions/lib/runtime/types.ts";

const context: FunctionContext = { log: pino({ level: "silent" }), requestId: "r", signal: new AbortController().signal };
const request = (headers: Record<string, string>, body: string): FunctionRequest => ({ method: "POST", path: "/", query: new URLSearchParams(), headers, body: Buffer.from(body) });
const event = { "ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t", "content-type": "application/json" };

function instance(handled: string[]): CloudEventFunction {
  return {
    async verifySender(_context, headers) {
      if (headers.authorization !== "Bearer good") throw new HttpError(401, "sender not verified");
    },
    async handle(_context, e) {
      handled.push(e.id);
      return { outcome: "done" };
    },
  };
}

test("a refused sender gets 401 before its body is read, even a body that is no event", async () => {
  const handled: string[] = [];
  for (const req of [request(event, "{}"), request({}, "not an event")]) {
    await assert.rejects(invoke({ kind: "cloudevent", instance: instance(handled) }, context, req), (error: unknown) => error instanceof HttpError && error.status === 401);
  }
  assert.deepEqual(handled, []);
});

test("a verified sender's event is decoded and handled as any", async () => {
  const handled: string[] = [];
  const fn = { kind: "cloudevent" as const, instance: instance(handled) };
  const answer = await invoke(fn, context, request({ ...event, authorization: "Bearer good" }, "{}"));
  assert.equal(answer?.status, 204);
  await assert.rejects(invoke(fn, context, request({ authorization: "Bearer good" }, "not an event")), (error: unknown) => error instanceof HttpError && error.status === 400);
  assert.deepEqual(handled, ["1"]);
});
