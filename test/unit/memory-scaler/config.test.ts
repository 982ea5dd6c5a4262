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
  ];
  for (const [variable, env] of bad) {
    it(`names ${variable} when it is invalid`, () => {
      assert.throws(() => readConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === variable);
    });
  }
});
