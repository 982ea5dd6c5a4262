// Per-container caps: a container policy, then spec.maxMemory, then the install's default; Off; and the 1Gi → 1.5Gi → 2Gi ratchet.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AppMonitorSpecWithDefaults } from "../../../functions/lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../../../functions/lib/appmonitor-spec.ts";
import type { ContainerMemory } from "../../../functions/memory-scaler/model.ts";
import { capOf, DEFAULT_MAX_MEMORY, policyOf } from "../../../functions/memory-scaler/caps.ts";
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
