// memory-scaler's memory of answers (functions/memory-scaler/answers.ts): copies of one event
// (same source and id) wait for or reuse its answer without handling it again; failures are not
// remembered; the memory is bounded in size and time.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createAnswerMemory } from "../../../functions/memory-scaler/answers.ts";
import type { Outcome } from "../../../functions/memory-scaler/outcome.ts";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";

const scaled: Outcome = { outcome: "scaled", reason: "Scaled", message: "scaled Deployment memhog by 2", pod: "ns/memhog-1", attempts: 1 };

/** A handling that counts its calls and ends when told to. */
function handling(result: Outcome | Error = scaled) {
  let calls = 0;
  let finish: () => void = () => {};
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const handle = async (): Promise<Outcome> => {
    calls += 1;
    await gate;
    if (result instanceof Error) throw result;
    return result;
  };
  return { handle, finish, calls: () => calls };
}

describe("the answers of one instance", () => {
  test("copies arriving while the event is handled wait for it and get its answer; it is handled once", async () => {
    const memory = createAnswerMemory();
    const h = handling();
    const first = memory.answer("/am", "e1", h.handle);
    const copies = Array.from({ length: 9 }, () => memory.answer("/am", "e1", h.handle));
    h.finish();
    assert.deepEqual(await first, { shared: false, outcome: scaled });
    for (const copy of await Promise.all(copies)) assert.deepEqual(copy, { shared: "inFlight", answer: { outcome: "scaled", reason: "Scaled" } });
    assert.equal(h.calls(), 1);
  });

  test("a copy after the answer gets it at once, without handling", async () => {
    const memory = createAnswerMemory();
    const h = handling();
    h.finish();
    await memory.answer("/am", "e1", h.handle);
    assert.deepEqual(await memory.answer("/am", "e1", h.handle), { shared: "remembered", answer: { outcome: "scaled", reason: "Scaled" } });
    assert.equal(h.calls(), 1);
  });

  test("another source or another id is another event", async () => {
    const memory = createAnswerMemory();
    const h = handling();
    h.finish();
    await memory.answer("/am", "e1", h.handle);
    assert.equal((await memory.answer("/other", "e1", h.handle)).shared, false);
    assert.equal((await memory.answer("/am", "e2", h.handle)).shared, false);
    assert.equal(h.calls(), 3);
  });

  test("a failed handling is not remembered: its waiting copies fail alike, the retry handles again", async () => {
    const memory = createAnswerMemory();
    const failing = handling(new HttpError(503, "the API server is unavailable"));
    const first = memory.answer("/am", "e1", failing.handle);
    const copy = memory.answer("/am", "e1", failing.handle);
    failing.finish();
    await assert.rejects(first, { status: 503 });
    await assert.rejects(copy, { status: 503 });
    const retry = handling();
    retry.finish();
    assert.deepEqual(await memory.answer("/am", "e1", retry.handle), { shared: false, outcome: scaled });
    assert.equal(failing.calls() + retry.calls(), 2);
  });

  test("a skip is not remembered past its handling (its reason can change while the alert fires), but copies in flight share it", async () => {
    const memory = createAnswerMemory();
    const cooling = handling({ outcome: "skipped", reason: "Cooldown", message: "scaled 10s ago", pod: "ns/memhog-1", attempts: 1 });
    const first = memory.answer("/am", "e1", cooling.handle);
    const copy = memory.answer("/am", "e1", cooling.handle);
    cooling.finish();
    assert.equal((await first).shared, false);
    assert.deepEqual(await copy, { shared: "inFlight", answer: { outcome: "skipped", reason: "Cooldown" } });
    assert.equal((await memory.answer("/am", "e1", cooling.handle)).shared, false, "handled again");
    assert.equal(cooling.calls(), 2);
  });

  test("an answer whose Events or status write failed is not remembered: a later copy handles again and can record them", async () => {
    const memory = createAnswerMemory();
    const partial = handling({ ...scaled, warnings: ["the status write was refused"] });
    partial.finish();
    assert.equal((await memory.answer("/am", "e1", partial.handle)).shared, false);
    assert.equal((await memory.answer("/am", "e1", partial.handle)).shared, false);
    assert.equal(partial.calls(), 2);
  });

  test("bounded: past its size the least recently used answer is forgotten, and past its time to live every one", async () => {
    const small = createAnswerMemory(2, 3600);
    const h = handling();
    h.finish();
    for (const id of ["e1", "e2", "e3"]) await small.answer("/am", id, h.handle);
    assert.equal((await small.answer("/am", "e3", h.handle)).shared, "remembered");
    assert.equal((await small.answer("/am", "e1", h.handle)).shared, false, "e1 was forgotten");

    const brief = createAnswerMemory(10, 0.05);
    await brief.answer("/am", "e1", h.handle);
    assert.equal((await brief.answer("/am", "e1", h.handle)).shared, "remembered");
    await sleep(120);
    assert.equal((await brief.answer("/am", "e1", h.handle)).shared, false, "forgotten after its time to live");
  });
});
