// Per-container caps: a container policy, then spec.maxMemory, then the install's default, the
// install's ceiling MAX_MEMORY over any of them; Off; the 1Gi → 1.5Gi → 2Gi ratchet; and what the
// decision says of the bound that held.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AppMonitorSpecWithDefaults } from "../../../functions/lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../../../functions/lib/appmonitor-spec.ts";
import type { ContainerMemory } from "../../../functions/memory-scaler/model.ts";
import { capOf, DEFAULT_MAX_MEMORY, describeCap, policyOf } from "../../../functions/memory-scaler/caps.ts";
import type { HeldCeiling } from "../../../functions/memory-scaler/ceilings.ts";
import { decideScale } from "../../../functions/memory-scaler/scale/decide/decide.ts";

const NOW = new Date("2025-06-01T12:00:00Z");

function spec(over: Partial<AppMonitorSpecWithDefaults> = {}): AppMonitorSpecWithDefaults {
  return {
    memThresholdPercent: 75, memMultiplier: 2, forSeconds: 60, cooldownSeconds: 0, mode: "Scale", updateMode: "Rollout",
    selectorMode: "Widen", stuckRollout: "Report", gitOpsManaged: "Skip", heapFlags: "Hold", revertBudgetPerHour: 3, ...over,
  };
}

const app: ContainerMemory = { name: "app", limit: "1Gi" };
const envoy: ContainerMemory = { name: "envoy", limit: "128Mi" };

describe("capOf", () => {
  it("the container's own policy, else *, else spec.maxMemory, else the install's default", () => {
    const policies = spec({ maxMemory: "4Gi", containerPolicies: [{ containerName: "envoy", maxMemory: "256Mi" }, { containerName: "*", maxMemory: "3Gi" }] });
    assert.deepEqual([capOf(policies, "envoy").maxMemory, capOf(policies, "envoy").source], ["256Mi", "containerPolicy"]);
    assert.deepEqual([capOf(policies, "app").maxMemory, capOf(policies, "app").source], ["3Gi", "containerPolicy"]);
    assert.deepEqual([capOf(spec({ maxMemory: "4Gi" }), "app").maxMemory, capOf(spec({ maxMemory: "4Gi" }), "app").source], ["4Gi", "spec"]);
    assert.deepEqual([capOf(spec(), "app").maxMemory, capOf(spec(), "app").source], [DEFAULT_MAX_MEMORY, "default"]);
    assert.equal(capOf(spec(), "app", "16Gi").bytes, 16n * 1024n ** 3n);
  });

  it("a named entry without maxMemory takes spec.maxMemory, not *'s", () => {
    const s = spec({ maxMemory: "4Gi", containerPolicies: [{ containerName: "app", mode: "Auto" }, { containerName: "*", maxMemory: "1Gi" }] });
    assert.equal(policyOf(s, "app")?.containerName, "app");
    assert.equal(capOf(s, "app").maxMemory, "4Gi");
  });
});

describe("decideScale with container policies", () => {
  it("the sidecar's cap is not the app's: each container is clamped to its own", () => {
    const s = spec({ maxMemory: "8Gi", containerPolicies: [{ containerName: "envoy", maxMemory: "192Mi" }] });
    const d = decideScale({ podContainers: [app, envoy], templateContainers: [app, envoy], now: NOW, spec: s });
    assert.equal(d.action, "scale");
    assert.deepEqual(d.action === "scale" ? d.changes.map((c) => [c.container, c.to.limit]) : [], [["app", "2Gi"], ["envoy", "192Mi"]]);
  });

  it("mode Off: never changed, skipped PolicyOff; with * Off nothing is scaled", () => {
    const one = decideScale({ podContainers: [app, envoy], templateContainers: [app, envoy], now: NOW, spec: spec({ containerPolicies: [{ containerName: "envoy", mode: "Off" }] }) });
    assert.deepEqual(one.action === "scale" ? [one.changes.map((c) => c.container), one.skipped.map((s) => s.reason)] : [], [["app"], ["PolicyOff"]]);
    const all = decideScale({ podContainers: [app, envoy], templateContainers: [app, envoy], now: NOW, spec: spec({ containerPolicies: [{ containerName: "*", mode: "Off" }] }) });
    assert.deepEqual([all.action, all.action === "skip" ? all.reason : ""], ["skip", "PolicyOff"]);
  });

  it("no maxMemory anywhere: the install's default caps, and at it the skip says so", () => {
    const big: ContainerMemory = { name: "app", limit: "6Gi" };
    const d = decideScale({ podContainers: [big], templateContainers: [big], now: NOW, spec: spec() });
    assert.deepEqual(d.action === "scale" ? d.changes.map((c) => c.to.limit) : [], ["8Gi"]);
    const at: ContainerMemory = { name: "app", limit: "8Gi" };
    const skip = decideScale({ podContainers: [at], templateContainers: [at], now: NOW, spec: spec() });
    assert.equal(skip.action, "skip");
    assert.equal(skip.action === "skip" ? skip.reason : "", "AtCap");
    assert.match(skip.action === "skip" ? skip.message : "", /already at the install's DEFAULT_MAX_MEMORY 8Gi/);
    assert.deepEqual(skip.skipped[0]?.cap, { maxMemory: "8Gi", source: "default" });
  });

  it("1Gi, multiplier 1.5, maxMemory 2Gi: 1Gi → 1.5Gi → 2Gi, never 2.25Gi, then AtCap", () => {
    const s = spec({ memMultiplier: 1.5, maxMemory: "2Gi" });
    let limit = "1Gi";
    const seen: string[] = [limit];
    for (;;) {
      const c: ContainerMemory = { name: "app", limit };
      const d = decideScale({ podContainers: [c], templateContainers: [c], now: NOW, spec: s });
      if (d.action === "skip") {
        assert.equal(d.reason, "AtCap");
        break;
      }
      limit = d.changes[0]?.to.limit ?? "";
      seen.push(limit);
    }
    assert.deepEqual(seen, ["1Gi", "1536Mi", "2Gi"]);
  });
});

describe("the install's ceiling MAX_MEMORY", () => {
  const GiB = 1024n ** 3n;
  it("holds over whichever cap applies when lower, and says over which", () => {
    const cases: [AppMonitorSpecWithDefaults, string, string][] = [
      [spec({ maxMemory: "16Gi" }), "ceiling", "the install's ceiling MAX_MEMORY 4Gi (over spec.maxMemory 16Gi)"],
      [spec({ containerPolicies: [{ containerName: "app", maxMemory: "16Gi" }] }), "ceiling", "the install's ceiling MAX_MEMORY 4Gi (over spec.containerPolicies maxMemory 16Gi)"],
      [spec(), "ceiling", "the install's ceiling MAX_MEMORY 4Gi (over the install's DEFAULT_MAX_MEMORY 8Gi)"],
      [spec({ maxMemory: "2Gi" }), "spec", "spec.maxMemory 2Gi"],
      [spec({ maxMemory: "4Gi" }), "spec", "spec.maxMemory 4Gi"],
    ];
    for (const [s, source, described] of cases) {
      const cap = capOf(s, "app", DEFAULT_MAX_MEMORY, "4Gi");
      assert.deepEqual([cap.source, describeCap(cap)], [source, described], JSON.stringify(s));
      assert.ok(cap.bytes <= 4n * GiB);
    }
    assert.equal(capOf(spec({ maxMemory: "16Gi" }), "app").maxMemory, "16Gi", "no ceiling: the AppMonitor's cap");
  });

  it("a raise the ceiling clamps says so, and at the ceiling the skip names it and the cap it held", () => {
    const s = spec({ maxMemory: "16Gi" });
    const three: ContainerMemory = { name: "app", request: "2Gi", limit: "3Gi" };
    const d = decideScale({ podContainers: [three], templateContainers: [three], now: NOW, spec: s, maxMemoryCeiling: "4Gi" });
    assert.equal(d.action, "scale");
    if (d.action !== "scale") return;
    assert.deepEqual(d.changes.map((c) => c.to), [{ limit: "4Gi", request: "2863311531" }]);
    assert.deepEqual(d.bounds, [{ container: "app", message: "app capped by the install's ceiling MAX_MEMORY 4Gi (over spec.maxMemory 16Gi)" }]);
    const four: ContainerMemory = { name: "app", limit: "4Gi" };
    const at = decideScale({ podContainers: [four], templateContainers: [four], now: NOW, spec: s, maxMemoryCeiling: "4Gi" });
    assert.deepEqual([at.action, at.action === "skip" ? at.reason : ""], ["skip", "AtCap"]);
    assert.match(at.action === "skip" ? at.message : "", /memory limit 4Gi is already at the install's ceiling MAX_MEMORY 4Gi \(over spec\.maxMemory 16Gi\)/);
    assert.deepEqual(at.skipped[0]?.cap, { maxMemory: "4Gi", source: "ceiling" });
  });

  it("the AppMonitor's own cap that clamps is named as its; a raise below every cap names none", () => {
    const three: ContainerMemory = { name: "app", limit: "3Gi" };
    const own = decideScale({ podContainers: [three], templateContainers: [three], now: NOW, spec: spec({ maxMemory: "5Gi" }), maxMemoryCeiling: "16Gi" });
    assert.deepEqual(own.action === "scale" ? own.bounds : [], [{ container: "app", message: "app capped by spec.maxMemory 5Gi" }]);
    const free = decideScale({ podContainers: [three], templateContainers: [three], now: NOW, spec: spec({ maxMemory: "8Gi" }), maxMemoryCeiling: "16Gi" });
    assert.deepEqual(free.action === "scale" ? [free.changes[0]?.to.limit, free.bounds] : [], ["6Gi", undefined]);
  });
});

describe("the other ceilings in the decision's messages", () => {
  const app1: ContainerMemory = { name: "app", limit: "1Gi" };
  it("a multiplier the ceiling held is a bound of the whole scale", () => {
    const held: HeldCeiling[] = [{ variable: "MAX_MEM_MULTIPLIER", field: "spec.memMultiplier", asked: "10", bound: "3" }];
    const d = decideScale({ podContainers: [app1], templateContainers: [app1], now: NOW, spec: spec({ memMultiplier: 3 }), held });
    assert.deepEqual(d.action === "scale" ? [d.changes[0]?.to.limit, d.bounds] : [], ["3Gi", [{ message: "the multiplier is the install's ceiling MAX_MEM_MULTIPLIER 3 over spec.memMultiplier 10" }]]);
  });
  it("a cooldown the ceiling set says so in the skip", () => {
    const held: HeldCeiling[] = [{ variable: "MIN_COOLDOWN_SECONDS", field: "spec.cooldownSeconds", asked: "0", bound: "600" }];
    const lastScaleTime = new Date(NOW.getTime() - 100_000).toISOString();
    const d = decideScale({ podContainers: [app1], templateContainers: [app1], now: NOW, spec: spec({ cooldownSeconds: 600 }), held, lastScaleTime });
    assert.deepEqual([d.action, d.action === "skip" ? d.reason : ""], ["skip", "Cooldown"]);
    assert.match(d.action === "skip" ? d.message : "", /cooldown of 600s \(the install's ceiling MIN_COOLDOWN_SECONDS 600 over spec\.cooldownSeconds 0\) has 500s left$/);
  });
});

describe("spec.containerPolicies validation", () => {
  const base = { memThresholdPercent: 75, memMultiplier: 2 };
  it("accepts VPA-style entries and refuses a name twice, minMemory above maxMemory, a bad name or mode", () => {
    assert.doesNotThrow(() => validateAppMonitorSpec({ ...base, containerPolicies: [{ containerName: "app", maxMemory: "2Gi", minMemory: "256Mi" }, { containerName: "*", mode: "Off" }] }));
    for (const containerPolicies of [
      [{ containerName: "app" }, { containerName: "app" }],
      [{ containerName: "app", maxMemory: "1Gi", minMemory: "2Gi" }],
      [{ containerName: "App_1" }],
      [{ containerName: "app", mode: "Initial" }],
      [{ maxMemory: "1Gi" }],
    ]) {
      assert.throws(() => validateAppMonitorSpec({ ...base, containerPolicies }), AppMonitorSpecError, JSON.stringify(containerPolicies));
    }
  });
  it("leakGuard: maxScales 1–10, windowSeconds 60–604800", () => {
    assert.doesNotThrow(() => validateAppMonitorSpec({ ...base, leakGuard: { maxScales: 2, windowSeconds: 3600 } }));
    for (const leakGuard of [{ maxScales: 0 }, { maxScales: 11 }, { windowSeconds: 59 }]) assert.throws(() => validateAppMonitorSpec({ ...base, leakGuard }), AppMonitorSpecError);
  });
});
