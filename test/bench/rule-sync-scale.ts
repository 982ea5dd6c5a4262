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
 * 3. What Prometheus pays to evaluate the rules, with `--pods` kwok Pods per namespace (bare Pods
 *    bound to the fake Node, 64Mi used of a 256Mi limit, so nothing fires) whose cAdvisor series
 *    Prometheus scrapes every second. Five rule sets, one after another, alone in Prometheus:
 *    none (the baseline); every generated rule as prometheus-operator would load it (one rule file
 *    per PrometheusRule); the same groups with `interval: <--slow-interval>s`; and the joined form
 *    (test/support/joined-rules.ts: one threshold series per AppMonitor, one alert group), at the
 *    global interval and at `--slow-interval`. For
 *    each: the sum of `prometheus_rule_group_last_duration_seconds` over its groups, the missed
 *    iterations (`prometheus_rule_group_iterations_missed_total`) and Prometheus's CPU
 *    (`process_cpu_seconds_total`) over `--window` seconds, all from Prometheus's own /metrics.
 *
 * At the end it writes an SVG chart of the times against the size (`--chart`, default a file in
 * the temporary directory) and prints its path.
 *
 * Uses the stack named by APPMONITOR_STACK_DIR, else starts one (`--nodes` fake Nodes, the
 * namespaces' Pods spread over them) in a temporary directory and stops it at the end.
 *
 * Usage: node test/bench/rule-sync-scale.ts [--sizes 10,100,1000] [--concurrency 16] [--pods 10]
 *   [--nodes 1] [--slow-interval 10] [--window 10] [--chart FILE.svg]
 */
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
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
import { joinedRulesFiles, type JoinedMonitor } from "../support/joined-rules.ts";
import { sampleSum } from "../support/prometheus-text.ts";
import { adminKubeConfig, promQuery, waitFor } from "../support/stack.ts";
import { lineChartSvg, type ChartPoint } from "../support/svg-chart.ts";

const { values: options } = parseArgs({
  options: {
    sizes: { type: "string", default: "10,100,1000" },
    concurrency: { type: "string", default: "16" },
    pods: { type: "string", default: "10" },
    nodes: { type: "string", default: "1" },
    "slow-interval": { type: "string", default: "10" },
    window: { type: "string", default: "10" },
    chart: { type: "string", default: path.join(tmpdir(), `rule-sync-scale-${Date.now().toString(36)}.svg`) },
  },
});
const sizes = options.sizes.split(",").map(Number);
const concurrency = Number(options.concurrency);
const podsPerNamespace = Number(options.pods);
const nodeCount = Number(options.nodes);
const slowInterval = Number(options["slow-interval"]);
const windowSeconds = Number(options.window);
/** The bench's AppMonitor spec (forSeconds is the schema's default). */
const MONITOR = { name: "m", memThresholdPercent: 75, memMultiplier: 2, forSeconds: 60 } as const;
/** Bounds on the wait for the Pods' series: past either the bench goes on with what Prometheus has. */
const SERIES_WAIT_MS = 10 * 60_000;
const SERIES_STALL_MS = 60_000;
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

/** What evaluating one rule set costs Prometheus. */
interface RuleSetCost {
  /** Sum of the set's groups' last evaluation durations, in ms (one round of every group). */
  evalMs: number;
  /** Each group's last evaluation duration, in ms, by rule group (`<file>;<group>`). */
  groupMs: Map<string, number>;
  /** Groups Prometheus evaluated. */
  groups: number;
  /** Evaluations skipped because the previous one of the group was still running, in the window. */
  missed: number;
  /** Prometheus's CPU over the window, in cores (CPU seconds per second; scrapes included). */
  cpuCores: number;
  /** `prometheus_tsdb_head_series` at the end. */
  series: number;
}

/** Prometheus's own /metrics (the stack's Prometheus does not scrape itself). */
async function prometheusMetrics(prometheusUrl: string): Promise<string> {
  return (await fetch(`${prometheusUrl}/metrics`)).text();
}

async function reload(prometheusUrl: string): Promise<void> {
  const answer = await fetch(`${prometheusUrl}/-/reload`, { method: "POST" });
  if (answer.status !== 200) throw new Error(`Prometheus reload: HTTP ${answer.status}: ${await answer.text()}`);
}

/** Values of `metric` by rule group (`<file>;<group>`), for the groups loaded from files whose path starts with `filePrefix`. */
function groupSamples(text: string, metric: string, filePrefix: string): Map<string, number> {
  const start = `${metric}{rule_group="${filePrefix}`;
  return new Map(text.split("\n").filter((line) => line.startsWith(start)).map((line) => [line.slice(`${metric}{rule_group="`.length, line.indexOf('"}')), Number(line.slice(line.lastIndexOf(" ") + 1))]));
}

/**
 * Loads `files` (path → rules file text, every path starting with `filePrefix`) alone into
 * Prometheus, waits until each of the `groups` groups has been evaluated and then
 * `settleSeconds`, reads the costs over {@link windowSeconds}, then removes the files again.
 * With no files it measures the baseline (scrapes only).
 */
async function ruleSetCost(prometheusUrl: string, filePrefix: string, files: ReadonlyMap<string, string>, groups: number, settleSeconds: number): Promise<RuleSetCost> {
  const paths = [...files.keys()];
  await pool(paths.length, concurrency, async (i) => {
    const file = paths[i];
    if (file !== undefined) await writeFile(file, files.get(file) ?? "");
  });
  try {
    await reload(prometheusUrl);
    const evaluated = await waitFor(`Prometheus evaluating ${groups} rule groups`, async () => {
      const durations = [...groupSamples(await prometheusMetrics(prometheusUrl), "prometheus_rule_group_last_duration_seconds", filePrefix).values()];
      return durations.length >= groups && durations.every((d) => d > 0) ? durations.length : undefined;
    }, 180_000, 1_000);
    // A few more evaluation intervals, so every group's last duration is a steady one.
    await sleep(settleSeconds * 1000);
    const before = await prometheusMetrics(prometheusUrl);
    const t0 = performance.now();
    await sleep(windowSeconds * 1000);
    const after = await prometheusMetrics(prometheusUrl);
    const seconds = (performance.now() - t0) / 1000;
    const sum = (xs: Iterable<number>): number => [...xs].reduce((a, b) => a + b, 0);
    const missed = (text: string): number => sum(groupSamples(text, "prometheus_rule_group_iterations_missed_total", filePrefix).values());
    const durations = groupSamples(after, "prometheus_rule_group_last_duration_seconds", filePrefix);
    return {
      evalMs: sum(durations.values()) * 1000,
      groupMs: new Map([...durations].map(([group, seconds]) => [group, seconds * 1000])),
      groups: evaluated,
      missed: missed(after) - missed(before),
      cpuCores: (sampleSum(after, "process_cpu_seconds_total") - sampleSum(before, "process_cpu_seconds_total")) / seconds,
      series: sampleSum(after, "prometheus_tsdb_head_series"),
    };
  } finally {
    await Promise.all(paths.map((file) => rm(file, { force: true })));
    await reload(prometheusUrl);
  }
}

/** The generated groups as prometheus-operator loads them: one rules file per PrometheusRule, optionally every group with `interval`. */
function perMonitorFiles(filePrefix: string, rules: ReadonlyMap<string, k8s.KubernetesObject & { spec?: { groups?: unknown[] } }>, intervalSeconds?: number): Map<string, string> {
  const files = new Map<string, string>();
  for (const rule of rules.values()) {
    const groups = (rule.spec?.groups ?? []).map((g) => (intervalSeconds === undefined ? g : { ...(g as object), interval: `${intervalSeconds}s` }));
    files.set(`${filePrefix}${rule.metadata?.namespace}-${rule.metadata?.name}-${rule.metadata?.uid}.yml`, stringify({ groups }));
  }
  return files;
}

/**
 * Creates `count` bare kwok Pods `p-<k>` in `namespace`, bound to `node` (no scheduler, no
 * controller): one container with a 256Mi limit whose working set kwok reports as 64Mi.
 * Retries while the namespace's default ServiceAccount (which admission requires) is not there yet.
 */
async function createPods(core: k8s.CoreV1Api, namespace: string, count: number, node: string): Promise<void> {
  for (let k = 0; k < count; k++) {
    const body: k8s.V1Pod = {
      metadata: { name: `p-${k}`, labels: { app: "bench" }, annotations: { "kwok.x-k8s.io/usage-memory": "64Mi", "app-monitor.kubedemo.com/monitor": "true" } },
      spec: { nodeName: node, automountServiceAccountToken: false, containers: [{ name: "app", image: "registry.k8s.io/pause:3.10", resources: { limits: { memory: "256Mi" }, requests: { memory: "128Mi" } } }] },
    };
    await waitFor(`Pod ${namespace}/p-${k} created`, async () => {
      try {
        return await core.createNamespacedPod({ namespace, body });
      } catch (err) {
        if (err instanceof k8s.ApiException && err.code === 403 && String(err.body).includes("serviceaccount")) return undefined;
        throw err;
      }
    }, 60_000, 250);
  }
}

/** Prometheus's count of working-set series of the bench's namespaces. */
async function workingSetSeries(prefix: string): Promise<number> {
  const [sample] = await promQuery(`count(container_memory_working_set_bytes{namespace=~"${prefix}.*"})`);
  return sample?.value ?? 0;
}

const ms = (x: number): string => `${x.toFixed(1)} ms`;
const cost = (c: RuleSetCost): string => `${ms(c.evalMs)} (${c.groups} groups), ${c.cpuCores.toFixed(2)} cores, ${c.missed} missed`;

async function main(): Promise<void> {
  const prefix = `rss-${Date.now().toString(36)}-`;
  const stack = await benchStack("rule-sync", nodeCount);
  const { state } = stack;
  const ownStack = stack.own;
  const { nodes } = state;
  if (nodes.length === 0) throw new Error("the stack has no fake Node");
  const kc = await adminKubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let fn: RuleSyncUnderTest | undefined;
  let created = 0;
  const rows: string[] = [];
  const promRows: string[] = [];
  const points: ChartPoint[] = [];
  // Every rules file the bench writes starts with this; one more letter tells the rule sets apart.
  const filePrefix = path.join(state.rulesDir, prefix);
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
        await createAppMonitor(namespace, MONITOR.name, { memThresholdPercent: MONITOR.memThresholdPercent, memMultiplier: MONITOR.memMultiplier, forSeconds: MONITOR.forSeconds });
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

      // Pods, so that the rules select series: the same number in every namespace.
      const tPods = performance.now();
      // Namespaces take turns on the Nodes: each Node is one scrape of kwok's cAdvisor emulation.
      await pool(size - from, concurrency, async (i) => createPods(core, `${prefix}${from + i}`, podsPerNamespace, nodes[(from + i) % nodes.length] ?? ""));
      const podsCreatedS = (performance.now() - tPods) / 1000;
      const wanted = size * podsPerNamespace;
      let seriesSeen = 0;
      let grewAt = performance.now();
      for (const t1 = performance.now(); seriesSeen < wanted && performance.now() - t1 < SERIES_WAIT_MS && performance.now() - grewAt < SERIES_STALL_MS;) {
        await sleep(2_000);
        const count = await workingSetSeries(prefix);
        if (count > seriesSeen) grewAt = performance.now();
        seriesSeen = count;
      }
      const scrapes = await promQuery('scrape_duration_seconds{job="kubelet-cadvisor"}');
      const up = scrapes.length === 0 ? 0 : (await promQuery('sum(up{job="kubelet-cadvisor"})'))[0]?.value ?? 0;
      console.log(`  Pods: ${wanted} created in ${podsCreatedS.toFixed(1)} s; ${seriesSeen} working-set series in Prometheus ${((performance.now() - tPods) / 1000).toFixed(1)} s after the first create; ` +
        `kwok's cAdvisor scrapes up ${up} of ${nodes.length}, longest ${(Math.max(0, ...scrapes.map((x) => x.value)) * 1000).toFixed(0)} ms`);

      const monitors: JoinedMonitor[] = [...rulesAfter.values()].map((r) => ({ namespace: r.metadata?.namespace ?? "", name: r.metadata?.name ?? "", memThresholdPercent: MONITOR.memThresholdPercent, forSeconds: MONITOR.forSeconds }));
      const joinedSet = (letter: string, interval?: number): Map<string, string> => {
        const files = joinedRulesFiles(monitors, "appmonitor-joined", interval);
        return new Map([[`${filePrefix}${letter}-thresholds.yml`, files.thresholds], [`${filePrefix}${letter}-alerts.yml`, files.alerts]]);
      };
      const baseline = await ruleSetCost(state.prometheusUrl, `${filePrefix}0`, new Map(), 0, 0);
      console.log(`  Prometheus, no bench rules:          ${baseline.cpuCores.toFixed(2)} cores, ${baseline.series} head series`);
      const perMonitor = await ruleSetCost(state.prometheusUrl, `${filePrefix}a`, perMonitorFiles(`${filePrefix}a`, rulesAfter), rulesAfter.size, 3);
      console.log(`  one group per AppMonitor, every 1 s: ${cost(perMonitor)}`);
      const slow = await ruleSetCost(state.prometheusUrl, `${filePrefix}b`, perMonitorFiles(`${filePrefix}b`, rulesAfter, slowInterval), rulesAfter.size, slowInterval);
      console.log(`  the same, every ${slowInterval} s:${" ".repeat(Math.max(0, 17 - String(slowInterval).length))}${cost(slow)}`);
      const joinedCost = await ruleSetCost(state.prometheusUrl, `${filePrefix}c`, joinedSet("c"), 2, 3);
      const groupMs = (file: string): number => [...joinedCost.groupMs].find(([group]) => group.startsWith(file))?.[1] ?? Number.NaN;
      const alertMs = groupMs(`${filePrefix}c-alerts`);
      const thresholdsMs = groupMs(`${filePrefix}c-thresholds`);
      console.log(`  joined (thresholds + 1 alert group): ${cost(joinedCost)}; the alert group ${ms(alertMs)}, the thresholds group ${ms(thresholdsMs)}`);
      const joinedSlow = await ruleSetCost(state.prometheusUrl, `${filePrefix}d`, joinedSet("d", slowInterval), 2, slowInterval);
      console.log(`  the same, every ${slowInterval} s:${" ".repeat(Math.max(0, 17 - String(slowInterval).length))}${cost(joinedSlow)}`);

      const total = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
      rows.push(
        `| ${size} | ${(first.ms / 1000).toFixed(2)} s | ${total(first.requests)} (${countVerbs(first.requests, WRITES)} writes) | ${memory.rss.toFixed(0)} / ${memory.peak.toFixed(0)} MiB | ` +
          `${(second.ms / 1000).toFixed(2)} s | ${total(second.requests)} (${countVerbs(second.requests, WRITES)} writes) | ${rulesChanged + monitorsChanged} |`,
      );
      const cell = (c: RuleSetCost): string => `${ms(c.evalMs)}, ${c.cpuCores.toFixed(2)} cores, ${c.missed} missed`;
      promRows.push(`| ${size} | ${seriesSeen} | ${baseline.cpuCores.toFixed(2)} cores | ${cell(perMonitor)} | ${cell(slow)} | ${cell(joinedCost)} (alert group ${ms(alertMs)}) | ${cell(joinedSlow)} | ${perMonitor.series} |`);
      points.push(
        { series: "rule-sync: full resync", size, value: first.ms },
        { series: "rule-sync: resync, nothing changed", size, value: second.ms },
        { series: "Prometheus eval: a group per AppMonitor, every 1 s", size, value: perMonitor.evalMs },
        { series: `Prometheus eval: a group per AppMonitor, every ${slowInterval} s`, size, value: slow.evalMs },
        { series: "Prometheus eval: joined (thresholds + 1 alert group), every 1 s", size, value: joinedCost.evalMs },
        { series: `Prometheus eval: joined (thresholds + 1 alert group), every ${slowInterval} s`, size, value: joinedSlow.evalMs },
      );
    }
    console.log("\n| AppMonitors | full resync | its API requests | rule-sync RSS / peak | 2nd resync, unchanged | its API requests | resourceVersions changed |");
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const row of rows) console.log(row);
    console.log(`\nPrometheus, ${podsPerNamespace} Pods per namespace (eval: sum of the groups' last durations; cores: Prometheus's CPU over ${windowSeconds} s, scrapes included; missed iterations in that window):`);
    console.log(`| AppMonitors | working-set series | no bench rules | one group per AppMonitor, every 1 s | the same, every ${slowInterval} s | joined: thresholds + one alert group, every 1 s | the same, every ${slowInterval} s | head series |`);
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const row of promRows) console.log(row);
    await writeFile(options.chart, await lineChartSvg(points, { title: "rule-sync and Prometheus cost against AppMonitors", x: "AppMonitors (one namespace each)", y: "ms" }));
    console.log(`\nchart: ${path.resolve(options.chart)}`);
  } finally {
    await fn?.stop();
    if (ownStack !== undefined) {
      await stack.release();
    } else {
      await pool(created, concurrency, async (i) => {
        await core.deleteNamespace({ name: `${prefix}${i}` }).catch(() => undefined);
      });
    }
  }
}

await main();
