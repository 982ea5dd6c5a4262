// memory-scaler's configuration from the environment (functions/memory-scaler/config.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_KUBE_API_TIMEOUT_MS } from "../../../functions/lib/kubeconfig.ts";
import { readConfig } from "../../../functions/memory-scaler/config.ts";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";

describe("readConfig", () => {
  it("defaults", () => {
    const config = readConfig({});
    assert.equal(config.kubeconfig, undefined);
    assert.equal(config.prometheusUrl, undefined);
    assert.equal(config.scaleMaxAttempts, 5);
    assert.equal(config.recentScalesLimit, 10);
    assert.equal(config.kubeApiTimeoutMs, DEFAULT_KUBE_API_TIMEOUT_MS);
    assert.equal(config.prometheusTimeoutMs, 2_000);
    assert.equal(config.defaultMaxMemory, "8Gi");
    assert.equal(config.alertmanagerUrl, undefined);
    assert.deepEqual(config.ceilings, {}, "no ceilings: no install-wide bound");
  });
  it("reads the ceilings; an empty one (the ConfigMap's unset key) is no bound", () => {
    const env = { MAX_MEMORY: "4Gi", MAX_MEM_MULTIPLIER: "1.5", MIN_COOLDOWN_SECONDS: "600", LEAK_GUARD_MAX_SCALES: "2", LEAK_GUARD_MIN_WINDOW_SECONDS: "3600" };
    assert.deepEqual(readConfig(env).ceilings, { maxMemory: "4Gi", maxMemMultiplier: 1.5, minCooldownSeconds: 600, leakGuardMaxScales: 2, leakGuardMinWindowSeconds: 3600 });
    assert.deepEqual(readConfig({ ...env, MAX_MEMORY: "", MAX_MEM_MULTIPLIER: "" }).ceilings, { minCooldownSeconds: 600, leakGuardMaxScales: 2, leakGuardMinWindowSeconds: 3600 });
    assert.deepEqual(readConfig({ MAX_MEM_MULTIPLIER: "10", MIN_COOLDOWN_SECONDS: "0" }).ceilings, { maxMemMultiplier: 10, minCooldownSeconds: 0 });
  });
  it("reads DEFAULT_MAX_MEMORY and ALERTMANAGER_URL", () => {
    const config = readConfig({ DEFAULT_MAX_MEMORY: "16Gi", ALERTMANAGER_URL: "http://alertmanager:9093" });
    assert.deepEqual([config.defaultMaxMemory, config.alertmanagerUrl?.href], ["16Gi", "http://alertmanager:9093/"]);
  });
  it("serves every namespace unless WATCH_NAMESPACES lists some (spaces and repeats ignored)", () => {
    assert.deepEqual(readConfig({}).scope, { all: true });
    assert.deepEqual(readConfig({ WATCH_NAMESPACES: " team-a, team-b ,team-a" }).scope, { all: false, namespaces: ["team-a", "team-b"] });
  });
  it("reads KUBE_API_TIMEOUT_MS", () => {
    assert.equal(readConfig({ KUBE_API_TIMEOUT_MS: "2500" }).kubeApiTimeoutMs, 2500);
  });
  const bad: [string, Record<string, string>][] = [
    ["KUBECONFIG", { KUBECONFIG: "/nonexistent/kubeconfig" }],
    ["KUBE_API_TIMEOUT_MS", { KUBE_API_TIMEOUT_MS: "99" }],
    ["KUBE_API_TIMEOUT_MS", { KUBE_API_TIMEOUT_MS: "10s" }],
    ["PROMETHEUS_URL", { PROMETHEUS_URL: "ftp://prometheus" }],
    ["RECENT_SCALES_LIMIT", { RECENT_SCALES_LIMIT: "21" }],
    ["SCALE_MAX_ATTEMPTS", { SCALE_MAX_ATTEMPTS: "0" }],
    ["WATCH_NAMESPACES", { WATCH_NAMESPACES: "team-a,Team_B" }],
    ["DEFAULT_MAX_MEMORY", { DEFAULT_MAX_MEMORY: "lots" }],
    ["DEFAULT_MAX_MEMORY", { DEFAULT_MAX_MEMORY: "0" }],
    ["ALERTMANAGER_URL", { ALERTMANAGER_URL: "alertmanager:9093" }],
    ["MAX_MEMORY", { MAX_MEMORY: "4 GiB" }],
    ["MAX_MEMORY", { MAX_MEMORY: "-1Gi" }],
    ["MAX_MEM_MULTIPLIER", { MAX_MEM_MULTIPLIER: "1" }],
    ["MAX_MEM_MULTIPLIER", { MAX_MEM_MULTIPLIER: "10.5" }],
    ["MAX_MEM_MULTIPLIER", { MAX_MEM_MULTIPLIER: "2x" }],
    ["MAX_MEM_MULTIPLIER", { MAX_MEM_MULTIPLIER: "1e1" }],
    ["MIN_COOLDOWN_SECONDS", { MIN_COOLDOWN_SECONDS: "-1" }],
    ["MIN_COOLDOWN_SECONDS", { MIN_COOLDOWN_SECONDS: "604801" }],
    ["LEAK_GUARD_MAX_SCALES", { LEAK_GUARD_MAX_SCALES: "0" }],
    ["LEAK_GUARD_MAX_SCALES", { LEAK_GUARD_MAX_SCALES: "11" }],
    ["LEAK_GUARD_MIN_WINDOW_SECONDS", { LEAK_GUARD_MIN_WINDOW_SECONDS: "59" }],
  ];
  for (const [variable, env] of bad) {
    it(`names ${variable} when it is invalid`, () => {
      assert.throws(() => readConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === variable);
    });
  }
});
