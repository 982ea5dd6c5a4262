// The install's ceilings over an AppMonitor's spec: the tighter of each, which held, and the
// AppMonitors as memory-scaler reads them (validAppMonitors) bounded the same way.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AppMonitorSpecWithDefaults } from "../../../../../functions/lib/appmonitor.ts";
import { validateAppMonitorSpec } from "../../../../../functions/lib/appmonitor-spec.ts";
import { type Ceilings, describeHeld, heldClause, type HeldCeiling } from "../../../../../functions/memory-scaler/ceilings.ts";
import { boundSpec } from "../../../../../functions/memory-scaler/scale/decide/bound-spec.ts";
import { validAppMonitors } from "../../../../../functions/memory-scaler/scale/decide/governing.ts";

function spec(over: Record<string, unknown> = {}): AppMonitorSpecWithDefaults {
  return validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2, ...over });
}

const ALL: Ceilings = { maxMemory: "4Gi", maxMemMultiplier: 3, minCooldownSeconds: 600, leakGuardMaxScales: 2, leakGuardMinWindowSeconds: 7200 };

interface Case {
  readonly name: string;
  readonly spec: AppMonitorSpecWithDefaults;
  readonly ceilings: Ceilings | undefined;
  /** The bounded fields: [memMultiplier, cooldownSeconds, leakGuard]. */
  readonly bounded: [number, number, AppMonitorSpecWithDefaults["leakGuard"]];
  readonly held: readonly HeldCeiling[];
}

const cases: Case[] = [
  { name: "no ceilings: the spec as written", spec: spec({ memMultiplier: 10, cooldownSeconds: 0 }), ceilings: undefined, bounded: [10, 0, undefined], held: [] },
  { name: "within every ceiling: unchanged, none held", spec: spec({ memMultiplier: 3, cooldownSeconds: 600, leakGuard: { maxScales: 2, windowSeconds: 7200 } }), ceilings: ALL, bounded: [3, 600, { maxScales: 2, windowSeconds: 7200 }], held: [] },
  {
    name: "over every ceiling: each bounded, each named",
    spec: spec({ memMultiplier: 10, cooldownSeconds: 0, leakGuard: { maxScales: 10, windowSeconds: 60 } }),
    ceilings: ALL,
    bounded: [3, 600, { maxScales: 2, windowSeconds: 7200 }],
    held: [
      { variable: "MAX_MEM_MULTIPLIER", field: "spec.memMultiplier", asked: "10", bound: "3" },
      { variable: "MIN_COOLDOWN_SECONDS", field: "spec.cooldownSeconds", asked: "0", bound: "600" },
      { variable: "LEAK_GUARD_MAX_SCALES", field: "spec.leakGuard.maxScales", asked: "10", bound: "2" },
      { variable: "LEAK_GUARD_MIN_WINDOW_SECONDS", field: "spec.leakGuard.windowSeconds", asked: "60", bound: "7200" },
    ],
  },
  {
    name: "no spec.leakGuard: its default (3 a day) counts, and a ceiling below it holds",
    spec: spec(),
    ceilings: { leakGuardMaxScales: 2 },
    bounded: [2, 300, { maxScales: 2, windowSeconds: 86_400 }],
    held: [{ variable: "LEAK_GUARD_MAX_SCALES", field: "spec.leakGuard.maxScales", asked: "3 (the default)", bound: "2" }],
  },
  { name: "no spec.leakGuard, the default within the ceilings: no leakGuard written", spec: spec(), ceilings: { leakGuardMaxScales: 5, leakGuardMinWindowSeconds: 3600 }, bounded: [2, 300, undefined], held: [] },
  { name: "a ceiling only of memory: the spec unchanged (the caps apply it)", spec: spec({ maxMemory: "16Gi" }), ceilings: { maxMemory: "4Gi" }, bounded: [2, 300, undefined], held: [] },
  {
    name: "a decimal multiplier at the ceiling is not held; above it is",
    spec: spec({ memMultiplier: 1.6 }),
    ceilings: { maxMemMultiplier: 1.5 },
    bounded: [1.5, 300, undefined],
    held: [{ variable: "MAX_MEM_MULTIPLIER", field: "spec.memMultiplier", asked: "1.6", bound: "1.5" }],
  },
];

describe("boundSpec", () => {
  for (const c of cases) {
    it(c.name, () => {
      const { spec: bounded, held } = boundSpec(c.spec, c.ceilings);
      assert.deepEqual([bounded.memMultiplier, bounded.cooldownSeconds, bounded.leakGuard], c.bounded);
      assert.deepEqual(held, c.held);
      if (held.length === 0) assert.equal(bounded, c.spec, "unchanged: the same object");
      // What the ceilings do not bound stays as written.
      assert.deepEqual({ ...bounded, memMultiplier: 0, cooldownSeconds: 0, leakGuard: undefined }, { ...c.spec, memMultiplier: 0, cooldownSeconds: 0, leakGuard: undefined });
    });
  }

  it("the multiplier at the ceiling is kept", () => {
    assert.deepEqual(boundSpec(spec({ memMultiplier: 1.5 }), { maxMemMultiplier: 1.5 }).held, []);
  });
});

describe("how a held ceiling reads", () => {
  const held: HeldCeiling = { variable: "MIN_COOLDOWN_SECONDS", field: "spec.cooldownSeconds", asked: "0", bound: "600" };
  it("names the ceiling, its value, the field and what the field asks", () => {
    assert.equal(describeHeld(held), "the install's ceiling MIN_COOLDOWN_SECONDS 600 over spec.cooldownSeconds 0");
  });
  it("a clause for its field only", () => {
    assert.equal(heldClause([held], "spec.cooldownSeconds"), " (the install's ceiling MIN_COOLDOWN_SECONDS 600 over spec.cooldownSeconds 0)");
    assert.equal(heldClause([held], "spec.memMultiplier"), "");
    assert.equal(heldClause(undefined, "spec.cooldownSeconds"), "");
  });
});

describe("validAppMonitors with ceilings", () => {
  const item = (name: string, over: Record<string, unknown>) => ({ metadata: { name, namespace: "team" }, spec: { memThresholdPercent: 80, memMultiplier: 2, ...over } });
  it("bounds each valid spec and says what held; without ceilings, nothing", () => {
    const items = [item("greedy", { memMultiplier: 8, cooldownSeconds: 0 }), item("modest", {})];
    const bounded = validAppMonitors("team", items, { maxMemMultiplier: 4, minCooldownSeconds: 120 });
    const [greedy, modest] = bounded.valid;
    assert.deepEqual([greedy?.spec.memMultiplier, greedy?.spec.cooldownSeconds, greedy?.held?.map((h) => h.variable)], [4, 120, ["MAX_MEM_MULTIPLIER", "MIN_COOLDOWN_SECONDS"]]);
    assert.deepEqual([modest?.spec.memMultiplier, modest?.spec.cooldownSeconds, modest?.held], [2, 300, undefined]);
    // The raw object is what the API server holds, untouched (status writes start from it).
    assert.deepEqual(greedy?.raw, items[0]);
    const unbounded = validAppMonitors("team", items);
    assert.deepEqual([unbounded.valid[0]?.spec.memMultiplier, unbounded.valid[0]?.held], [8, undefined]);
  });
});
