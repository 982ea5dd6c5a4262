// The events.k8s.io/v1 Event memory-scaler writes (functions/memory-scaler/kube/event-recorder.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { buildEvent, MAX_NOTE_LENGTH, REPORTING_CONTROLLER } from "../../../../functions/memory-scaler/kube/event-recorder.ts";

describe("buildEvent", () => {
  const regarding = { apiVersion: "apps/v1", kind: "Deployment", name: "memhog", namespace: "team-a", uid: "u1" };
  const now = new Date("2025-06-01T12:00:00.123Z");
  it("is an events.k8s.io/v1 Event with a deterministic name and a microsecond time", () => {
    const a = buildEvent({ type: "Normal", reason: "Scaled", note: "n", regarding, key: "e1" }, "i", now);
    const b = buildEvent({ type: "Normal", reason: "Scaled", note: "other", regarding, key: "e1" }, "i", now);
    const c = buildEvent({ type: "Normal", reason: "Scaled", note: "n", regarding, key: "e2" }, "i", now);
    assert.equal(a.metadata?.name, b.metadata?.name);
    assert.notEqual(a.metadata?.name, c.metadata?.name);
    assert.match(a.metadata?.name ?? "", /^memhog\.[0-9a-f]{16}$/);
    assert.equal(a.metadata?.namespace, "team-a");
    assert.equal(a.reportingController, REPORTING_CONTROLLER);
    assert.equal(JSON.parse(JSON.stringify({ t: a.eventTime })).t, "2025-06-01T12:00:00.123000Z");
  });
  it("cuts a long note to 1 kB", () => {
    const event = buildEvent({ type: "Warning", reason: "AdmissionRefused", note: "x".repeat(5000), regarding, key: "e1" }, "i", now);
    assert.equal(event.note?.length, MAX_NOTE_LENGTH);
  });
});
