// The main job end to end on the real chain: Prometheus → Alertmanager → alert-receiver →
// memory-scaler → a new Pod with twice the memory. The same path as `npm run demo`, once with the
// functions as processes and once as their images (`npm run demo -- --containers`); and once
// with the Pod OOM-killed instead, which the rule's second alert, AppMonitorOOMKilled, carries.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { runChain, type ChainResult } from "../harness/demo/chain.ts";
import { SHORT_FOR_SECONDS, stack } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

for (const containers of [false, true]) {
  test(`the original demo's memhog is scaled 384Mi/256Mi → 768Mi/512Mi through the whole chain, functions ${containers ? "as containers" : "as processes"}`, { timeout: REAL_NODE_SETUP_TIMEOUT_MS }, async () => {
    assertScaledThroughTheChain(await runChain(await stack(), { namespace: `e2e-${randomBytes(3).toString("hex")}`, containers, forSeconds: SHORT_FOR_SECONDS }));
  });
}

test("the original demo's memhog, OOM-killed before any threshold alert, is scaled 384Mi/256Mi → 768Mi/512Mi by the OOM-kill alert through the whole chain", { timeout: REAL_NODE_SETUP_TIMEOUT_MS }, async () => {
  const result = await runChain(await stack(), { namespace: `e2e-oom-${randomBytes(3).toString("hex")}`, oomKill: true });
  assertScaledThroughTheChain(result, "oomKilled");
  const scaled = result.hops.find((h) => h.name === "Deployment patched by memory-scaler");
  assert.match(scaled?.detail ?? "", /after an OOM kill/);
});

/** The hops before Alertmanager: the threshold alert's crossing and `for`, or the OOM kill's (no `for`). */
const FIRST_HOPS = {
  threshold: ["usage crossed the threshold", "working set scraped by Prometheus", "alert pending in Prometheus"],
  oomKilled: ["container OOM-killed", "OOM event scraped by Prometheus"],
} as const;

function assertScaledThroughTheChain(result: ChainResult, trigger: keyof typeof FIRST_HOPS = "threshold"): void {
  assert.deepEqual(result.before, { request: "256Mi", limit: "384Mi" });
  assert.deepEqual(result.after, { request: "512Mi", limit: "768Mi" });
  assert.notEqual(result.newPod, result.oldPod);
  const names = result.hops.map((h) => h.name);
  const [cause] = FIRST_HOPS[trigger];
  const expected = [
    "PrometheusRule written by rule-sync",
    "rule loaded by Prometheus",
    "memhog Pod Running",
    ...FIRST_HOPS[trigger],
    "alert firing in Prometheus",
    "alert in Alertmanager",
    "webhook received by alert-receiver",
    "CloudEvent received by memory-scaler",
    "Deployment patched by memory-scaler",
    "new Pod Running, old Pod gone",
  ];
  assert.deepEqual(names, expected);
  const at = Object.fromEntries(result.hops.map((h) => [h.name, h.at]));
  // Causality: each hop of the alert path happens after the one that feeds it. Times read from
  // the functions' logs are compared with each other or with the crossing, never with when a
  // poll happened to notice a hop.
  for (const [earlier, later] of [
    [cause, "alert firing in Prometheus"],
    [cause, "webhook received by alert-receiver"],
    ["webhook received by alert-receiver", "CloudEvent received by memory-scaler"],
    ["CloudEvent received by memory-scaler", "Deployment patched by memory-scaler"],
    ["Deployment patched by memory-scaler", "new Pod Running, old Pod gone"],
  ] as const) {
    assert.ok((at[earlier] ?? NaN) <= (at[later] ?? NaN), `${earlier} before ${later}: ${JSON.stringify(result.hops)}`);
  }
}
