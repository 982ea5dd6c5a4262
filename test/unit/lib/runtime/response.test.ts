// The body of a function's error answer (functions/lib/runtime/response.ts, errorBody): at most
// 768 bytes, so that its base64 fits the 1024 characters Knative keeps in a dead letter's
// `knativeerrordata`; a longer one panics Knative's Go dispatchers on the way to the dead-letter
// sink (test/integration/eventing-delivery.test.ts sends one through the real in-memory channel).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CloudEvent } from "cloudevents";
import { FIRING_TYPE, validateAlertEventData } from "../../../../functions/lib/alert-event.ts";
import { HttpError } from "../../../../functions/lib/runtime/errors.ts";
import { errorBody, MAX_ERROR_BODY_BYTES } from "../../../../functions/lib/runtime/response.ts";
import { readAlertEvent } from "../../../../functions/memory-scaler/incoming-event.ts";

/** Knative's limit on `knativeerrordata`, base64 characters (`KnativeErrorDataExtensionMaxLength`). */
const KNATIVE_ERROR_DATA_MAX = 1024;

const size = (body: object) => Buffer.byteLength(JSON.stringify(body));

/** memory-scaler's refusal of an event whose data is no alert: eleven schema errors, 790 bytes in full. */
function malformedAlert(): HttpError {
  try {
    readAlertEvent(new CloudEvent({ type: FIRING_TYPE, source: "/s", data: { not: "an alert" } }), validateAlertEventData);
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("the event was read");
}

describe("errorBody", () => {
  it("768 bytes are 1024 base64 characters, Knative's limit", () => {
    assert.equal(Buffer.alloc(MAX_ERROR_BODY_BYTES).toString("base64").length, KNATIVE_ERROR_DATA_MAX);
  });

  it("keeps a body that fits as it is", () => {
    assert.deepEqual(errorBody(new HttpError(422, "cannot handle", { details: ["reason one"] })), { error: "cannot handle", details: ["reason one"] });
    assert.deepEqual(errorBody(new HttpError(503, "unavailable")), { error: "unavailable" });
  });

  it("keeps the first details that fit and counts the rest: memory-scaler's refusal of a malformed event", () => {
    const error = malformedAlert();
    const details = error.details as unknown[];
    assert.ok(size({ error: error.reason, details }) > MAX_ERROR_BODY_BYTES, "the whole answer would not fit");
    const body = errorBody(error);
    assert.ok(size(body) <= MAX_ERROR_BODY_BYTES, `${size(body)} bytes`);
    assert.ok(Buffer.from(JSON.stringify(body)).toString("base64").length <= KNATIVE_ERROR_DATA_MAX);
    assert.equal(body.error, "malformed event data");
    const kept = body.details as unknown[];
    assert.deepEqual(kept, details.slice(0, kept.length), "the first ones, unchanged");
    assert.equal(kept.length + (body.detailsOmitted ?? 0), details.length);
    assert.ok(size({ ...body, details: details.slice(0, kept.length + 1) }) > MAX_ERROR_BODY_BYTES, "as many as fit");
  });

  it("drops details that are not a list when they do not fit, and cuts a reason too long alone", () => {
    const summary = { failed: Array.from({ length: 50 }, (_, i) => ({ namespace: "team-a", name: `monitor-${i}` })) };
    assert.deepEqual(errorBody(new HttpError(503, "resync incomplete", { details: summary })), { error: "resync incomplete", detailsOmitted: 1 });
    for (const reason of ["x".repeat(5000), "\u0007".repeat(2000), "é".repeat(2000)]) {
      const body = errorBody(new HttpError(500, reason, { details: ["d"] }));
      assert.ok(size(body) <= MAX_ERROR_BODY_BYTES, `${size(body)} bytes`);
      assert.ok(body.error.endsWith("…") && reason.startsWith(body.error.slice(0, -1)));
    }
  });
});
