// The leak guard's verdict, from plain data: the Nth scale inside the window, the hold, and what ends it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { RecordedScale } from "../../../../../functions/memory-scaler/model.ts";
import { DEFAULT_LEAK_MAX_SCALES, DEFAULT_LEAK_WINDOW_SECONDS, guardLeak, type LeakInput, templateHash } from "../../../../../functions/memory-scaler/scale/decide/leak-guard.ts";
import { LEAK_CONDITION, withLeak, withoutEndedLeaks } from "../../../../../functions/memory-scaler/status/leaks.ts";

const NOW = new Date("2025-06-01T12:00:00Z");
const ago = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
const web = { kind: "Deployment", name: "web" };
const TEMPLATE = templateHash({ spec: { containers: [{ name: "app", image: "app:1" }] } });

function recent(times: readonly string[]): RecordedScale[] {
  return times.map((time, i) => ({ time, workload: web, event: `e${i}`, container: "app", from: { limit: `${2 ** i}Gi` }, to: { limit: `${2 ** (i + 1)}Gi` } }));
}

function input(marks: readonly string[], over: Partial<LeakInput> = {}): LeakInput {
  return { workload: web, spec: { leakGuard: { maxScales: 2, windowSeconds: 3600 } }, generation: 1, template: TEMPLATE, marks: marks.map((time, i) => ({ time, event: `e${i}` })), recent: recent(marks), listed: undefined, now: NOW, ...over };
}

describe("guardLeak", () => {
  it("defaults: three scales a day", () => {
    assert.deepEqual([DEFAULT_LEAK_MAX_SCALES, DEFAULT_LEAK_WINDOW_SECONDS], [3, 86_400]);
    assert.equal(guardLeak(input([ago(60), ago(120)], { spec: {} })).action, "scale");
    assert.equal(guardLeak(input([ago(60), ago(120), ago(80_000)], { spec: {} })).action, "hold");
  });

  it("below maxScales it scales; at maxScales the alert is held, the entry listing the scales oldest first", () => {
    assert.deepEqual(guardLeak(input([ago(60)])), { action: "scale" });
    const verdict = guardLeak(input([ago(60), ago(600)]));
    assert.equal(verdict.action, "hold");
    if (verdict.action !== "hold") return;
    assert.equal(verdict.tripped, true);
    assert.deepEqual(verdict.entry, {
      workload: web,
      since: "2025-06-01T12:00:00Z",
      until: "2025-06-01T13:00:00Z",
      generation: 1,
      template: TEMPLATE,
      scales: [`${ago(600)} app 2Gi → 4Gi`, `${ago(60)} app 1Gi → 2Gi`],
    });
    assert.match(verdict.message, /scaled 2 times within 3600s \(spec\.leakGuard allows 2\): a probable memory leak, not scaled until 2025-06-01T13:00:00Z/);
  });

  it("a hold the install's ceilings tightened names them beside the spec", () => {
    const held = [{ variable: "LEAK_GUARD_MAX_SCALES", field: "spec.leakGuard.maxScales", asked: "10", bound: "2" }, { variable: "MAX_MEM_MULTIPLIER", field: "spec.memMultiplier", asked: "10", bound: "3" }];
    const verdict = guardLeak(input([ago(60), ago(600)], { held }));
    assert.equal(verdict.action, "hold");
    assert.match(verdict.action === "hold" ? verdict.message : "", /scaled 2 times within 3600s \(spec\.leakGuard allows 2: the install's ceiling LEAK_GUARD_MAX_SCALES 2 over spec\.leakGuard\.maxScales 10\): a probable/);
    assert.doesNotMatch(verdict.action === "hold" ? verdict.message : "", /MAX_MEM_MULTIPLIER/);
  });

  it("a listed hold holds while the spec and the template are unchanged, tripped only once", () => {
    const held = guardLeak(input([ago(60), ago(600)]));
    assert.equal(held.action, "hold");
    if (held.action !== "hold") return;
    const later = new Date(NOW.getTime() + 1_800_000);
    const again = guardLeak(input([ago(60), ago(600)], { listed: held.entry, now: later }));
    assert.deepEqual([again.action, again.action === "hold" && again.tripped], ["hold", false]);
  });

  it("the spec's generation or the Pod template changed: the hold is cleared, the scales before it not counted again", () => {
    const held = guardLeak(input([ago(60), ago(600)]));
    if (held.action !== "hold") throw new Error("not held");
    for (const [over, why] of [[{ generation: 2 }, "the AppMonitor's spec changed"], [{ template: templateHash({ spec: { containers: [{ name: "app", image: "app:2" }] } }) }, "the Pod template changed"]] as const) {
      const verdict = guardLeak(input([ago(60), ago(600)], { ...over, listed: held.entry }));
      assert.deepEqual(verdict, { action: "scale", change: { entry: { ...held.entry, cleared: why }, drop: false } });
      // The cleared entry stays listed: the next alert counts only the scales after the hold.
      const next = guardLeak(input([ago(60), ago(600)], { ...over, listed: { ...held.entry, cleared: why } }));
      assert.deepEqual(next, { action: "scale" });
    }
  });

  it("past its window the entry is dropped and the scales counted afresh", () => {
    const listed = { workload: web, since: ago(7200), until: ago(3600), generation: 1, template: TEMPLATE, scales: [] };
    assert.deepEqual(guardLeak(input([ago(60)], { listed })), { action: "scale", change: { entry: listed, drop: true } });
  });

  it("the template hash ignores key order", () => {
    assert.equal(templateHash({ a: 1, b: { c: 2, d: 3 } }), templateHash({ b: { d: 3, c: 2 }, a: 1 }));
    assert.notEqual(templateHash({ a: 1 }), templateHash({ a: 2 }));
  });
});

describe("withLeak", () => {
  const entry = { workload: web, since: ago(0), until: ago(-3600), template: TEMPLATE, scales: ["x"] };
  it("a hold sets the condition True; cleared, False; dropped, the list goes; the same entry again writes nothing", () => {
    const held = withLeak(undefined, entry, false, ago(0));
    assert.deepEqual(held?.conditions?.map((c) => [c.type, c.status, c.reason]), [[LEAK_CONDITION, "True", "ProbableLeak"]]);
    assert.equal(withLeak(held, entry, false, ago(0)), held);
    const cleared = withLeak(held, { ...entry, cleared: "the Pod template changed" }, false, ago(0));
    assert.deepEqual(cleared?.conditions?.map((c) => [c.status, c.reason]), [["False", "NoLeak"]]);
    const dropped = withLeak(cleared, entry, true, ago(0)) as { probableLeaks?: unknown };
    assert.equal(dropped.probableLeaks, undefined);
  });
});

describe("withoutEndedLeaks", () => {
  it("drops the holds whose window has ended, the condition False once none holds; none ended: the same status", () => {
    const ended = { workload: web, since: ago(7200), until: ago(3600), template: TEMPLATE, scales: [] };
    const open = { workload: { kind: "StatefulSet", name: "db" }, since: ago(60), until: ago(-3600), template: TEMPLATE, scales: [] };
    const both = withLeak(withLeak(undefined, ended, false, ago(7200)), open, false, ago(60));
    const after = withoutEndedLeaks(both, ago(0));
    assert.deepEqual((after as { probableLeaks?: { workload: unknown }[] }).probableLeaks?.map((l) => l.workload), [open.workload]);
    assert.equal(withoutEndedLeaks(after, ago(0)), after);
    const none = withoutEndedLeaks(withLeak(undefined, ended, false, ago(7200)), ago(0));
    assert.deepEqual([(none as { probableLeaks?: unknown }).probableLeaks, none?.conditions?.[0]?.status], [undefined, "False"]);
  });
});
