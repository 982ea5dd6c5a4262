/**
 * How rule-sync's cost grows (a script, not a test). On a local kwok stack, for each size
 * (default 10, 100, 1,000), namespaces each with one AppMonitor are created until that many
 * exist (a bounded worker pool), then:
 *
 * 1. A full resync (a `com.kubedemo.appmonitor.resync` event to rule-sync, which runs as
 *    `node functions/run.ts rule-sync` with its own ServiceAccount's token): the sender's round
 *    trip, rule-sync's resident memory (VmRSS, and its peak VmHWM, from /proc), and the API
 *    requests it made by verb and resource (the API server's `apiserver_request_total`, for
 *    `appmonitors` and `prometheusrules`, which nothing else touches meanwhile).
 * 2. A second resync with nothing changed: its writes, and how many rules' and AppMonitors'
 *    `resourceVersion` changed (0 means an identical server-side apply is a no-op on the server).
 * 3. Every generated rule loaded into the stack's Prometheus as prometheus-operator would (one
 *    rule file per PrometheusRule, then a reload): the sum of
 *    `prometheus_rule_group_last_duration_seconds` over the generated groups, and the head series
 *    (`prometheus_tsdb_head_series`), both from Prometheus's own /metrics.
 *
 * Uses the stack named by APPMONITOR_STACK_DIR, else starts one (1 fake Node) in a temporary
 * directory and stops it at the end.
 *
 * Usage: node test/bench/rule-sync-scale.ts [--sizes 10,100,1000] [--concurrency 16]
 */
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { RESYNC_EVENT_TYPE } from "../../functions/rule-sync/incoming-event.ts";
import { benchStack } from "./bench-stack.ts";
import { apiserverRequests, countVerbs, requestsBetween } from "../support/apiserver-requests.ts";
import { describeAnswer } from "../support/post-event.ts";
import { APPMONITORS, createAppMonitor, installRuleSync, startRuleSync, type RuleSyncUnderTest } from "../support/rule-sync.ts";
import { sampleSum } from "../support/prometheus-text.ts";
import { adminKubeConfig, waitFor } from "../support/stack.ts";

const { values: options } = parseArgs({
  options: {
    sizes: { type: "string", default: "10,100,1000" },
    concurrency: { type: "string", default: "16" },
  },
});
const sizes = options.sizes.split(",").map(Number);
const concurrency = Number(options.concurrency);
const RESOURCES = ["appmonitors", "prometheusrules"];
const WRITES = ["POST", "PUT", "PATCH", "APPLY", "DELETE"];

/** VmRSS and VmHWM (peak) of a process, in MiB. */
function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** Runs `work` for 0…count-1, at most `limit` at once. */
async function pool(count: number, limit: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, count) }, async () => {
    while (next < count) {
      const i = next;
      next += 1;
      await work(i);
    }
  }));
}

/** Every PrometheusRule in the bench's namespaces: namespace/name → the stored object. */
async function rulesByName(kc: k8s.KubeConfig, prefix: string): Promise<Map<string, k8s.KubernetesObject & { spec?: { groups?: unknown[] } }>> {
  // CustomObjectsApi, not KubernetesObjectApi: the latter drops a custom resource list's `continue` token.
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const rules = new Map<string, k8s.KubernetesObject & { spec?: { groups?: unknown[] } }>();
  let token: string | undefined;
  do {
    const list = (await custom.listClusterCustomObject({ group: "monitoring.coreos.com", version: "v1", plural: "prometheusrules", limit: 500, ...(token === undefined ? {} : { _continue: token }) })) as {
      items: (k8s.KubernetesObject & { spec?: { groups?: unknown[] } })[];
      metadata?: { continue?: string };
    };
    for (const rule of list.items) if (rule.metadata?.namespace?.startsWith(prefix)) rules.set(`${rule.metadata.namespace}/${rule.metadata.name ?? ""}`, rule);
    token = list.metadata?.continue || undefined;
  } while (token !== undefined);
  return rules;
}

/** resourceVersion of every AppMonitor in the bench's namespaces, by namespace/name. */
async function appMonitorVersions(kc: k8s.KubeConfig, prefix: string): Promise<Map<string, string>> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const versions = new Map<string, string>();
  let token: string | undefined;
  do {
    const list = (await custom.listClusterCustomObject({ ...APPMONITORS, limit: 500, ...(token === undefined ? {} : { _continue: token }) })) as {
      items: k8s.KubernetesObject[];
      metadata?: { continue?: string };
    };
    for (const m of list.items) if (m.metadata?.namespace?.startsWith(prefix)) versions.set(`${m.metadata.namespace}/${m.metadata.name ?? ""}`, m.metadata.resourceVersion ?? "");
    token = list.metadata?.continue || undefined;
  } while (token !== undefined);
  return versions;
}

function changed(before: ReadonlyMap<string, string | undefined>, after: ReadonlyMap<string, string | undefined>): number {
  let n = 0;
  for (const [key, version] of after) if (before.get(key) !== version) n += 1;
  return n;
}

const format = (counts: ReadonlyMap<string, number>): string => [...counts].sort().map(([k, n]) => `${k} ${n}`).join(", ") || "none";

/** One resync through rule-sync: wall time (ms) and the API requests it made. */
async function timedResync(fn: RuleSyncUnderTest, kc: k8s.KubeConfig): Promise<{ ms: number; requests: Map<string, number> }> {
  // A 429 (the API server's cache of a just-installed CRD still filling) is retried, as Knative would.
  for (let attempt = 1; ; attempt++) {
    const before = await apiserverRequests(kc, RESOURCES);
    const t0 = performance.now();
    const answer = await fn.send(RESYNC_EVENT_TYPE);
    const ms = performance.now() - t0;
    if (answer.status === 429 && attempt < 30) {
      await sleep(1_000);
      continue;
    }
    if (answer.status !== 204 || answer.outcome !== "resynced") throw new Error(`resync: ${describeAnswer(answer)}`);
    return { ms, requests: requestsBetween(before, await apiserverRequests(kc, RESOURCES)) };
  }
}

/** Loads every rule into Prometheus (one file each, as prometheus-operator does) and reads what evaluating them costs. */
async function prometheusCost(rulesDir: string, prometheusUrl: string, rules: ReadonlyMap<string, k8s.KubernetesObject & { spec?: { groups?: unknown[] } }>, written: Set<string>): Promise<{ evalMs: number; groups: number; series: number }> {
  const list = [...rules.values()];
  await pool(list.length, concurrency, async (i) => {
    const rule = list[i];
    if (rule === undefined) return;
    const file = path.join(rulesDir, `${rule.metadata?.namespace}-${rule.metadata?.name}-${rule.metadata?.uid}.yml`);
    written.add(file);
    await writeFile(file, stringify({ groups: rule.spec?.groups ?? [] }));
  });
  const reload = await fetch(`${prometheusUrl}/-/reload`, { method: "POST" });
  if (reload.status !== 200) throw new Error(`Prometheus reload: HTTP ${reload.status}: ${await reload.text()}`);
  // The stack's Prometheus does not scrape itself: its own metrics are read from its /metrics.
  const read = async (): Promise<{ durations: number[]; series: number }> => {
    const text = await (await fetch(`${prometheusUrl}/metrics`)).text();
    const durations = text
      .split("\n")
      .filter((line) => line.startsWith(`prometheus_rule_group_last_duration_seconds{rule_group="${rulesDir}/`))
      .map((line) => Number(line.slice(line.lastIndexOf(" ") + 1)));
    return { durations, series: sampleSum(text, "prometheus_tsdb_head_series") };
  };
  const groups = await waitFor(`Prometheus evaluating ${rules.size} rule groups`, async () => {
    const { durations } = await read();
    return durations.length >= rules.size && durations.every((d) => d > 0) ? durations.length : undefined;
  }, 120_000, 1_000);
  // A few more evaluation intervals, so every group's last duration is a steady one.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const { durations, series } = await read();
  const evalSeconds = durations.reduce((a, b) => a + b, 0);
  return { evalMs: evalSeconds * 1000, groups, series };
}

async function main(): Promise<void> {
  const prefix = `rss-${Date.now().toString(36)}-`;
  const stack = await benchStack("rule-sync", 1);
  const { state } = stack;
  const ownStack = stack.own;
  const kc = await adminKubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let fn: RuleSyncUnderTest | undefined;
  let created = 0;
  const written = new Set<string>();
  const rows: string[] = [];
  try {
    await installRuleSync();
    fn = await startRuleSync({ RESYNC_ON_START: "false" });
    console.log(`rule-sync scale benchmark — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
    for (const size of sizes) {
      const t0 = performance.now();
      const from = created;
      await pool(size - from, concurrency, async (i) => {
        const namespace = `${prefix}${from + i}`;
        await core.createNamespace({ body: { metadata: { name: namespace } } });
        await createAppMonitor(namespace, "m", { memThresholdPercent: 75, memMultiplier: 2 });
      });
      created = Math.max(created, size);
      console.log(`\n${size} AppMonitors (${size - from} namespaces created in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${concurrency} at once)`);

      const first = await timedResync(fn, kc);
      const memory = memoryMiB(fn.process.pid);
      console.log(`  full resync:   ${(first.ms / 1000).toFixed(2)} s; API requests ${format(first.requests)}`);
      console.log(`  rule-sync memory after it: VmRSS ${memory.rss.toFixed(0)} MiB, peak ${memory.peak.toFixed(0)} MiB`);

      const rulesBefore = await rulesByName(kc, prefix);
      const monitorsBefore = await appMonitorVersions(kc, prefix);
      const second = await timedResync(fn, kc);
      const rulesAfter = await rulesByName(kc, prefix);
      const monitorsAfter = await appMonitorVersions(kc, prefix);
      const version = (rules: typeof rulesBefore): Map<string, string | undefined> => new Map([...rules].map(([k, r]) => [k, r.metadata?.resourceVersion]));
      const rulesChanged = changed(version(rulesBefore), version(rulesAfter));
      const monitorsChanged = changed(monitorsBefore, monitorsAfter);
      console.log(`  2nd resync, nothing changed: ${(second.ms / 1000).toFixed(2)} s; API requests ${format(second.requests)}`);
      console.log(`    resourceVersion changed: ${rulesChanged} of ${rulesAfter.size} PrometheusRules, ${monitorsChanged} of ${monitorsAfter.size} AppMonitors`);

      const prom = await prometheusCost(state.rulesDir, state.prometheusUrl, rulesAfter, written);
      console.log(`  Prometheus: ${prom.groups} generated groups, evaluation ${prom.evalMs.toFixed(1)} ms summed per round, ${prom.series} head series`);

      const total = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
      rows.push(
        `| ${size} | ${(first.ms / 1000).toFixed(2)} s | ${total(first.requests)} (${countVerbs(first.requests, WRITES)} writes) | ${memory.rss.toFixed(0)} / ${memory.peak.toFixed(0)} MiB | ` +
          `${(second.ms / 1000).toFixed(2)} s | ${total(second.requests)} (${countVerbs(second.requests, WRITES)} writes) | ${rulesChanged + monitorsChanged} | ${prom.evalMs.toFixed(1)} ms | ${prom.series} |`,
      );
    }
    console.log("\n| AppMonitors | full resync | its API requests | rule-sync RSS / peak | 2nd resync, unchanged | its API requests | resourceVersions changed | Prometheus eval, all groups | head series |");
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const row of rows) console.log(row);
  } finally {
    await fn?.stop();
    if (ownStack !== undefined) {
      await stack.release();
    } else {
      for (const file of written) await rm(file, { force: true });
      await fetch(`${state.prometheusUrl}/-/reload`, { method: "POST" }).catch(() => undefined);
      await pool(created, concurrency, async (i) => {
        await core.deleteNamespace({ name: `${prefix}${i}` }).catch(() => undefined);
      });
    }
  }
}

await main();
