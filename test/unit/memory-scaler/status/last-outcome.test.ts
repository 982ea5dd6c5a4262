import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_SKIP_WINDOW_SECONDS, lastOutcomeOf, MAX_MESSAGE_LENGTH, skipWindowSeconds, withLastOutcome } from "../../../../functions/memory-scaler/status/last-outcome.ts";

const skip = (time: string, over: Partial<Parameters<typeof lastOutcomeOf>[0]> = {}) =>
  lastOutcomeOf({ pod: "team-a/web-1", workload: { kind: "Deployment", name: "web" }, outcome: "skipped", reason: "Cooldown", message: "cooldown", ...over }, time);

describe("withLastOutcome", () => {
  it("records the first outcome", () => {
    const last = skip("2026-01-01T00:00:00Z");
    assert.deepEqual(withLastOutcome(undefined, last, 300), { lastOutcome: last });
  });

  it("the same skip of the same workload within the window: the status as it is (no write); past it, or another skip, recorded", () => {
    const status = { scaleCount: 1, lastOutcome: skip("2026-01-01T00:00:00Z") };
    assert.equal(withLastOutcome(status, skip("2026-01-01T00:04:59Z", { pod: "team-a/web-2", message: "other numbers" }), 300), status, "another Pod of the workload, another message");
    assert.notEqual(withLastOutcome(status, skip("2026-01-01T00:05:00Z"), 300), status);
    assert.notEqual(withLastOutcome(status, skip("2026-01-01T00:01:00Z", { reason: "BelowThreshold" }), 300), status);
    assert.notEqual(withLastOutcome(status, skip("2026-01-01T00:01:00Z", { workload: { kind: "Deployment", name: "api" } }), 300), status);
    assert.equal(withLastOutcome(status, skip("2026-01-01T00:01:00Z"), 300)?.scaleCount, 1);
  });

  it("scales and dry runs are always recorded", () => {
    const status = { lastOutcome: skip("2026-01-01T00:00:00Z", { outcome: "scaled", reason: "Scaled" }) };
    const again = skip("2026-01-01T00:00:10Z", { outcome: "scaled", reason: "Scaled" });
    assert.deepEqual(withLastOutcome(status, again, 300), { lastOutcome: again });
  });

  it("cuts a long message; the window is the cooldown, or the default without one", () => {
    assert.equal(skip("2026-01-01T00:00:00Z", { message: "x".repeat(5000) }).message.length, MAX_MESSAGE_LENGTH);
    assert.deepEqual([skipWindowSeconds(600), skipWindowSeconds(0), skipWindowSeconds(undefined)], [600, DEFAULT_SKIP_WINDOW_SECONDS, DEFAULT_SKIP_WINDOW_SECONDS]);
  });
});
