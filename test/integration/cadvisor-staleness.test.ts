// Why the operator stack's cAdvisor endpoint tracks the staleness of timestamped samples, as
// kube-prometheus-stack's does (`kubelet.serviceMonitor.trackTimestampsStaleness: true`, in
// test/harness/stack/prometheus-operator-chart.ts): cAdvisor stamps its samples, and Prometheus
// writes no staleness marker for a stamped series that disappears unless told to. After a
// container restarts in the same Pod (an OOM kill), the dead container's series (its own cgroup
// id) would keep its last working set for five minutes, and the rule's max over the container's
// series would keep the threshold alert firing. Two real Prometheus 3.16 (the stack's upstream
// build) scrape the same cAdvisor-like target and evaluate the rule rule-sync generates, one with
// the chart's setting: with it the alert resolves within a few scrapes of the restart; without
// it, it is still firing well after.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { buildRuleGroup } from "../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG } from "../../functions/rule-sync/rule-config.ts";
import { checkRuleInput } from "../../functions/rule-sync/rule-input.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { buildBinaries } from "../../scripts/lib/binaries.ts";
import { startPrometheus, type TestPrometheus } from "../support/prometheus.ts";

const MI = 1024 * 1024;
const SCRAPE_SECONDS = 1;

/** The container running now: before the restart the one that will die, at 99 % of its limit; after it, the new one at 10 %. */
let container = { id: "/kubepods/pod-1/old", workingSet: 99 * MI };
let target: Server;
const prometheus: Record<"tracked" | "untracked", TestPrometheus | undefined> = { tracked: undefined, untracked: undefined };

before(async () => {
  // As the kubelet's /metrics/cadvisor writes them: each sample stamped, one series per cgroup.
  target = createServer((_req, res) => {
    const now = Date.now();
    const labels = `namespace="shop",pod="memhog-1",container="memhog",id="${container.id}"`;
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end([
      `container_memory_working_set_bytes{${labels}} ${container.workingSet} ${now}`,
      `container_spec_memory_limit_bytes{${labels}} ${100 * MI} ${now}`,
      "",
    ].join("\n"));
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  const { port } = target.address() as { port: number };
  const bin = path.join(await buildBinaries(process.env, undefined, ["prom"]), "prometheus-upstream", "prometheus");
  const group = buildRuleGroup(checkRuleInput({ metadata: { name: "mymonitor", namespace: "shop", uid: "u", generation: 1 }, spec: { memThresholdPercent: 75, forSeconds: 0 } }), DEFAULT_RULE_CONFIG);
  for (const tracked of [true, false]) {
    const p = await startPrometheus({
      global: { scrape_interval: `${SCRAPE_SECONDS}s`, evaluation_interval: `${SCRAPE_SECONDS}s` },
      scrape_configs: [{ job_name: "kubelet", metrics_path: "/metrics/cadvisor", honor_timestamps: true, track_timestamps_staleness: tracked, static_configs: [{ targets: [`127.0.0.1:${port}`] }] }],
    }, bin);
    await p.writeRules("appmonitor.yml", [group]);
    prometheus[tracked ? "tracked" : "untracked"] = p;
  }
  // Minutes more when its set is built here, on a cold machine beside the suite (.ci/run).
}, { timeout: 30 * 60_000 });

after(async () => {
  await Promise.all(Object.values(prometheus).map((p) => p?.stop()));
  await new Promise<void>((resolve) => (target ? target.close(() => resolve()) : resolve()));
});

/** Whether the threshold alert is firing in `p`. */
async function firing(p: TestPrometheus): Promise<boolean> {
  return (await p.query('ALERTS{alertname="AppMonitorMemoryHigh", alertstate="firing"}')).length > 0;
}

test("after the container restarts in the same Pod, the dead container's threshold alert resolves within a few scrapes with trackTimestampsStaleness, and keeps firing without it", { timeout: 120_000 }, async (t) => {
  const { tracked, untracked } = prometheus;
  assert.ok(tracked && untracked);
  await waitUntil("the alert firing in both", async () => (await firing(tracked)) && (await firing(untracked)), { timeoutMs: 60_000, intervalMs: 200 });
  container = { id: "/kubepods/pod-1/new", workingSet: 10 * MI };
  const restarted = Date.now();
  await waitUntil("the alert resolved with trackTimestampsStaleness", async () => !(await firing(tracked)), { timeoutMs: 30_000, intervalMs: 200 });
  const resolvedAfter = (Date.now() - restarted) / 1000;
  t.diagnostic(`resolved ${resolvedAfter.toFixed(1)} s after the restart`);
  // A scrape finds the old series gone and marks it stale, the next evaluation resolves: a few intervals.
  assert.ok(resolvedAfter <= 5 * SCRAPE_SECONDS, `resolved after ${resolvedAfter} s`);
  await new Promise((resolve) => setTimeout(resolve, 15_000));
  assert.equal(await firing(untracked), true, "without it the old series keeps its 99 % for the lookback delta (5 minutes)");
  const series = await untracked.query('count(container_memory_working_set_bytes{pod="memhog-1"})');
  assert.equal(series[0]?.value[1], "2", "the old container's series and the new one's");
});
