// memory-scaler's configuration from the environment (functions/memory-scaler/config.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_KUBE_API_TIMEOUT_MS } from "../../../functions/lib/kubeconfig.ts";
import { readConfig } from "../../../functions/memory-scaler/config.ts";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";

/** The least a config needs to scale: a Prometheus to check the alerts against. */
const PROM = { PROMETHEUS_URL: "http://prometheus:9090" };

describe("readConfig", () => {
  it("defaults", () => {
    const config = readConfig(PROM);
    assert.equal(config.kubeconfig, undefined);
    assert.equal(config.prometheusUrl?.href, "http://prometheus:9090/");
    assert.equal(config.allowUnverifiedAlerts, false);
    assert.equal(config.paused, false);
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
    assert.deepEqual(readConfig({ ...PROM, ...env }).ceilings, { maxMemory: "4Gi", maxMemMultiplier: 1.5, minCooldownSeconds: 600, leakGuardMaxScales: 2, leakGuardMinWindowSeconds: 3600 });
    assert.deepEqual(readConfig({ ...PROM, ...env, MAX_MEMORY: "", MAX_MEM_MULTIPLIER: "" }).ceilings, { minCooldownSeconds: 600, leakGuardMaxScales: 2, leakGuardMinWindowSeconds: 3600 });
    assert.deepEqual(readConfig({ ...PROM, MAX_MEM_MULTIPLIER: "10", MIN_COOLDOWN_SECONDS: "0" }).ceilings, { maxMemMultiplier: 10, minCooldownSeconds: 0 });
  });
  it("reads DEFAULT_MAX_MEMORY and ALERTMANAGER_URL", () => {
    const config = readConfig({ ...PROM, DEFAULT_MAX_MEMORY: "16Gi", ALERTMANAGER_URL: "http://alertmanager:9093" });
    assert.deepEqual([config.defaultMaxMemory, config.alertmanagerUrl?.href], ["16Gi", "http://alertmanager:9093/"]);
  });
  it("serves every namespace unless WATCH_NAMESPACES lists some (spaces and repeats ignored)", () => {
    assert.deepEqual(readConfig(PROM).scope, { all: true });
    assert.deepEqual(readConfig({ ...PROM, WATCH_NAMESPACES: " team-a, team-b ,team-a" }).scope, { all: false, namespaces: ["team-a", "team-b"] });
  });
  it("reads KUBE_API_TIMEOUT_MS", () => {
    assert.equal(readConfig({ ...PROM, KUBE_API_TIMEOUT_MS: "2500" }).kubeApiTimeoutMs, 2500);
  });
  it("refuses to scale without PROMETHEUS_URL, naming it and the settings that lift the refusal", () => {
    for (const env of [{}, { PROMETHEUS_URL: "" }, { ALLOW_UNVERIFIED_ALERTS: "false" }, { PAUSE_SCALING: "false" }]) {
      assert.throws(() => readConfig(env), (error: unknown) => {
        assert.ok(error instanceof ConfigError, String(error));
        assert.equal(error.variable, "PROMETHEUS_URL");
        assert.match(error.message, /^PROMETHEUS_URL: is required to scale: .*anyone who can send memory-scaler an event can make it scale.*ALLOW_UNVERIFIED_ALERTS=true.*allowUnverifiedAlerts.*PAUSE_SCALING=true/);
        return true;
      }, JSON.stringify(env));
    }
  });
  it("starts without PROMETHEUS_URL when ALLOW_UNVERIFIED_ALERTS=true, or paused (which writes nothing)", () => {
    const unverified = readConfig({ ALLOW_UNVERIFIED_ALERTS: "true" });
    assert.deepEqual([unverified.prometheusUrl, unverified.allowUnverifiedAlerts, unverified.paused], [undefined, true, false]);
    const paused = readConfig({ PAUSE_SCALING: "true" });
    assert.deepEqual([paused.prometheusUrl, paused.allowUnverifiedAlerts, paused.paused], [undefined, false, true]);
    // With a Prometheus the setting changes nothing: every alert is still checked.
    assert.equal(readConfig({ ...PROM, ALLOW_UNVERIFIED_ALERTS: "true" }).prometheusUrl?.href, "http://prometheus:9090/");
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
    ["ALLOW_UNVERIFIED_ALERTS", { ALLOW_UNVERIFIED_ALERTS: "yes" }],
    ["PAUSE_SCALING", { PAUSE_SCALING: "1" }],
  ];
  for (const [variable, env] of bad) {
    it(`names ${variable} when it is invalid`, () => {
      assert.throws(() => readConfig({ ...PROM, ...env }), (error: unknown) => error instanceof ConfigError && error.variable === variable);
    });
  }
});
