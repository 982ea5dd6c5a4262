/**
 * memory-scaler costs nothing while nothing fires: over a minute with no event it makes no API
 * call and no Prometheus query, counted by the API server (`apiserver_request_total`) and by
 * Prometheus (`prometheus_http_requests_total`, `prometheus_engine_query_duration_seconds_count`)
 * themselves. A stack of its own, so no other test's requests land in those counters; then the
 * same counters see one readiness probe's list and one query, so a zero is not a blind counter.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { down, up } from "../harness/stack/stack.ts";
import { apiserverRequests, requestsBetween } from "../support/apiserver-requests.ts";
import { installMemoryScaler } from "../support/install.ts";
import { createAppMonitor, startScaler, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { sampleSum } from "../support/prometheus-text.ts";
import { adminKubeConfig, promQuery, stack } from "../support/stack.ts";

/** How long memory-scaler is watched with nothing firing. */
const IDLE_MS = 60_000;

/** Every resource memory-scaler's RBAC lets it touch (knative/rbac/memory-scaler.yaml). */
const SCALER_RESOURCES = ["pods", "resourcequotas", "limitranges", "deployments", "statefulsets", "daemonsets", "replicasets", "nodes", "appmonitors", "events"];

/** Prometheus's own count of the queries it answered: HTTP query calls, and engine evaluations. */
async function prometheusQueries(): Promise<{ http: number; engine: number }> {
  const text = await (await fetch(`${(await stack()).prometheusUrl}/metrics`)).text();
  const http = ["/api/v1/query", "/api/v1/query_range", "/api/v1/query_exemplars", "/api/v1/series"].reduce((sum, handler) => sum + sampleSum(text, "prometheus_http_requests_total", { handler }), 0);
  return { http, engine: sampleSum(text, "prometheus_engine_query_duration_seconds_count", { slice: "inner_eval" }) };
}

let stateDir: string;
let scaler: ScalerUnderTest | undefined;

before(async () => {
  stateDir = await mkdtemp(path.join(tmpdir(), "appmonitor-idle-"));
  // Test files run in processes of their own: this one's support modules read this stack.
  process.env.APPMONITOR_STACK_DIR = stateDir;
  await up({ stateDir, nodes: 1 });
  await installMemoryScaler();
  const { prometheusUrl } = await stack();
  await createAppMonitor("default", "idle", { memThresholdPercent: 75, memMultiplier: 2 });
  scaler = await startScaler({ PROMETHEUS_URL: prometheusUrl });
});

after(async () => {
  await scaler?.stop();
  await down(stateDir);
  await rm(stateDir, { recursive: true, force: true });
});

test("memory-scaler with nothing firing makes no API call and no Prometheus query for a minute", async () => {
  const kc = await adminKubeConfig();
  const apiBefore = await apiserverRequests(kc, SCALER_RESOURCES);
  const promBefore = await prometheusQueries();
  await sleep(IDLE_MS);
  const apiCalls = requestsBetween(apiBefore, await apiserverRequests(kc, SCALER_RESOURCES));
  const promAfter = await prometheusQueries();
  assert.deepEqual(Object.fromEntries(apiCalls), {}, "API requests while idle");
  assert.deepEqual({ http: promAfter.http - promBefore.http, engine: promAfter.engine - promBefore.engine }, { http: 0, engine: 0 }, "Prometheus queries while idle");

  // The same counters do see memory-scaler's calls: a readiness probe is one list of AppMonitors.
  const probeBefore = await apiserverRequests(kc, SCALER_RESOURCES);
  const probe = await fetch(`${scaler?.url ?? ""}/health/readiness`);
  assert.equal(probe.status, 200);
  assert.deepEqual(Object.fromEntries(requestsBetween(probeBefore, await apiserverRequests(kc, SCALER_RESOURCES))), { "LIST appmonitors": 1 });
  // …and a query: one HTTP query call, at least one engine evaluation.
  await promQuery("up");
  const queried = await prometheusQueries();
  assert.equal(queried.http - promAfter.http, 1);
  assert.ok(queried.engine > promAfter.engine, "the engine counts the query");
});
