/**
 * Benchmark of memory-scaler (a script, not a test). The function runs as
 * the function bundled as its image runs it (`scripts/bundle.ts`, V8's compile cache filled, `node
 * main.mjs`; `--sources`: `node functions/run.ts memory-scaler` instead) in a child process,
 * with a token of its ServiceAccount, against the local stack's real API server.
 *
 * 1. Cold start: process spawned → first `GET /health/readiness` answering 200 (polled every
 *    2 ms), `--starts` times; a new process each time.
 * 2. Per-event latency, one event at a time: a firing event that scales a Deployment (each
 *    event a different Deployment: the full path, dry runs, patch, Events, status; the process's
 *    first scale, which reads the Nodes for the view every scale shares, timed apart), then a copy
 *    of each (same id: answered from memory, nothing read), then a new event for each (another
 *    id: read, then skipped in the cooldown); p50/p99 of the round trip seen by the sender, and
 *    each as a multiple of the API server's GET measured in the same run (and a scale's p50 as a
 *    multiple of one write's: a merge patch of a ConfigMap, measured in the same run too).
 * 3. The storm: 1,000 firing events for 100 Deployments, 10 deliveries of each Deployment's
 *    event, shuffled, 50 in flight, the Deployments paused (no rollouts), sent to a new process
 *    (nothing read yet, the Nodes included: the worst case for its memory). Counts the patches (the function's
 *    `appmonitor_memory_scaler_scales_total`, and each Deployment's `metadata.generation`, which
 *    the API server raises once per spec change), the API requests the API server served meanwhile
 *    (its `apiserver_request_total`, for the resources memory-scaler touches) and the wall time.
 * 4. Resident memory of the function process after the storm and at its peak (VmRSS, VmHWM from /proc).
 *
 * `--nodes 4,1000,5000` runs 2–4 at each number of Nodes, in one run on one stack, each with a new
 * function process: before each size, production-sized Nodes are added (`fleet-nodes.ts`: about
 * 13.6 KB of JSON each, as a production kubelet reports; nothing runs on them) until the cluster
 * has that many. It ends with a table of each size's figures as multiples of the first size's and
 * an SVG chart of them against the number of Nodes (`--chart`, default a new file in the
 * temporary directory). The fleet Nodes are deleted at the end.
 *
 * Uses the stack named by APPMONITOR_STACK_DIR (`eval "$(npm run -s stack -- env)"`), else starts
 * one with 4 fake Nodes in a temporary directory and stops it at the end.
 *
 * `--api-latency-ms N` puts the function and both yardsticks behind a TCP proxy that holds each
 * chunk a client sends N ms (`test/support/tcp-proxy.ts`), as an API server across a network
 * would: each sequential round trip then costs at least N ms, and the scale's multiple of a GET
 * approaches its count of round trips, which the loopback API server (a fraction of a ms away)
 * hides behind the function's and the server's CPU.
 *
 * Usage: node test/bench/memory-scaler.ts [--deployments 100] [--duplicates 10]
 *        [--concurrency 50] [--latency 100] [--starts 5] [--node-options="<flags>"] [--sources]
 *        [--api-latency-ms 0] [--nodes 4] [--chart FILE.svg]
 * (through npm: `npm run bench -- memory-scaler --nodes 4,1000,5000`)
 * `--node-options` runs the function's process with these Node flags (NODE_OPTIONS), to compare
 * heap settings under the same load.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { ceil, parseQuantity } from "../../functions/lib/quantity.ts";
import { loadKubeConfig } from "../../functions/lib/kubeconfig.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { apiserverRequests, requestsBetween } from "../support/apiserver-requests.ts";
import { benchStack } from "./bench-stack.ts";
import { fleetNodeBytes, growFleet, removeFleet } from "./fleet-nodes.ts";
import { lineChartSvg, type ChartPoint } from "../support/svg-chart.ts";
import { startProcess, tailOf, type TestProcess } from "../support/child-process.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { installMemoryScaler } from "../support/install.ts";
import { alertEvent, createAppMonitor, deliver, movedKubeConfig, scalerKubeConfigAt, scalerKubeconfig, UNVERIFIED, writeKubeconfig, type Answer } from "../support/memory-scaler.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { sampleSum } from "../support/prometheus-text.ts";
import { adminKubeConfig, waitFor } from "../support/stack.ts";

const { values: options } = parseArgs({
  options: {
    deployments: { type: "string", default: "100" },
    duplicates: { type: "string", default: "10" },
    concurrency: { type: "string", default: "50" },
    latency: { type: "string", default: "100" },
    starts: { type: "string", default: "5" },
    "node-options": { type: "string", default: "" },
    sources: { type: "boolean", default: false },
    "api-latency-ms": { type: "string", default: "0" },
    nodes: { type: "string", default: "4" },
    chart: { type: "string", default: path.join(tmpdir(), `memory-scaler-nodes-${Date.now().toString(36)}.svg`) },
  },
});
const deployments = Number(options.deployments);
const duplicates = Number(options.duplicates);
const concurrency = Number(options.concurrency);
const latencyEvents = Number(options.latency);
const starts = Number(options.starts);
const apiLatencyMs = Number(options["api-latency-ms"]);
const nodeCounts = options.nodes.split(",").map(Number);
if (nodeCounts.some((n) => !Number.isInteger(n) || n < 1) || nodeCounts.some((n, i) => i > 0 && n < (nodeCounts[i - 1] ?? 0))) {
  throw new Error(`--nodes: a comma-separated list of Node counts, each a positive integer, in increasing order (got ${options.nodes})`);
}
const runTs = path.join(repoRoot, "functions", "run.ts");

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}
const ms = (n: number): string => `${n.toFixed(1)} ms`;
const summary = (values: number[]): string => {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${ms(percentile(sorted, 50))}  p99 ${ms(percentile(sorted, 99))}  min ${ms(sorted[0] ?? Number.NaN)}  max ${ms(sorted.at(-1) ?? Number.NaN)}  (n=${sorted.length})`;
};

/** VmRSS (resident now) or VmHWM (the peak since the process started) of `pid`, in MiB. */
function rssMiB(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** CPU time (user + system) the process used so far, in ms (proc(5): utime and stime, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The API server's own latency, as a yardstick: sequential GETs of a namespace on one keep-alive connection. */
async function apiServerBaseline(kubeconfig: string): Promise<number[]> {
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const times: number[] = [];
  for (let i = 0; i < 200; i += 1) {
    const t0 = performance.now();
    await core.readNamespace({ name: "default" });
    if (i >= 20) times.push(performance.now() - t0);
  }
  kc.destroyAgents();
  return times;
}

/**
 * A second yardstick, for writes: sequential JSON merge patches of one annotation of a ConfigMap
 * (each a new resourceVersion, so an etcd write), on one keep-alive connection. A scale makes two
 * writes one after the other (the patch, then its Events and status), which a GET cannot stand for.
 */
async function apiServerWriteBaseline(kubeconfig: string, namespace: string): Promise<number[]> {
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = "bench-write-yardstick";
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name } } });
  const times: number[] = [];
  for (let i = 0; i < 120; i += 1) {
    const t0 = performance.now();
    await core.patchNamespacedConfigMap({ namespace, name, body: { metadata: { annotations: { n: String(i) } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    if (i >= 20) times.push(performance.now() - t0);
  }
  kc.destroyAgents();
  return times;
}

/**
 * The command that runs the function: the image's (the bundle and its compile cache, built once
 * into a temporary folder, as the Dockerfile builds them), or the sources' with `--sources`.
 */
async function functionCommand(): Promise<{ args: string[]; env: Record<string, string> }> {
  if (options.sources) return { args: [runTs, "memory-scaler"], env: {} };
  if (bundled === undefined) {
    const dir = await mkdtemp(path.join(tmpdir(), "bench-memory-scaler-"));
    const env = { NODE_COMPILE_CACHE: path.join(dir, "compile-cache") };
    await run(process.execPath, [path.join(repoRoot, "scripts", "bundle.ts"), "memory-scaler", dir]);
    await run(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(path.join(dir, "function.mjs"))})`], { ...process.env, ...env });
    bundled = { args: [path.join(dir, "main.mjs")], env };
  }
  return bundled;
}
let bundled: { args: string[]; env: Record<string, string> } | undefined;

/** The memory limit memory-scaler's shipped manifest gives its container, in bytes. */
function manifestMemoryLimit(): bigint {
  const service = parseYaml(readFileSync(path.join(repoRoot, "knative", "services", "memory-scaler.yaml"), "utf8")) as {
    spec: { template: { spec: { containers: { resources?: { limits?: { memory?: string } } }[] } } };
  };
  const limit = service.spec.template.spec.containers[0]?.resources?.limits?.memory;
  if (limit === undefined) throw new Error("knative/services/memory-scaler.yaml sets no memory limit");
  return ceil(parseQuantity(limit));
}

/**
 * A memory cgroup of the manifest's limit for the function's process, as the kubelet makes one for
 * its container: V8 sizes its heap from it (Node reads the cgroup's limit at start), so the
 * figures are those of the container, not of a process that sees this machine's whole memory.
 * Undefined where this process cannot make one (not root, or no memory controller mounted).
 */
function memoryCgroup(): string | undefined {
  const roots = ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"];
  const root = roots.find((dir) => existsSync(path.join(dir, dir.endsWith("/memory") ? "memory.limit_in_bytes" : "cgroup.controllers")));
  if (root === undefined || process.getuid?.() !== 0) return undefined;
  const dir = path.join(root, `appmonitor-bench-${process.pid}`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, root.endsWith("/memory") ? "memory.limit_in_bytes" : "memory.max"), String(memoryLimit));
  } catch {
    return undefined;
  }
  process.once("exit", () => rmdirSync(dir));
  return dir;
}
const memoryLimit = manifestMemoryLimit();
let cgroup: string | null | undefined;

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env }, (error, _stdout, stderr) => (error === null ? resolve() : reject(new Error(`${path.basename(args[0] ?? command)} failed: ${stderr}`))));
  });
}

/** Starts the function as Knative would and waits for readiness; returns it and the ms it took. */
async function startScalerProcess(kubeconfig: string): Promise<{ child: TestProcess; url: string; coldStartMs: number }> {
  const command = await functionCommand();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { ...process.env, ...command.env, KUBECONFIG: kubeconfig, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", ...UNVERIFIED, ...(options["node-options"] === "" ? {} : { NODE_OPTIONS: options["node-options"] }) };
  const t0 = performance.now();
  if (cgroup === undefined) cgroup = memoryCgroup() ?? null;
  // The shell joins the cgroup, then becomes the function (exec: the same pid, signals and all).
  const child =
    cgroup === null
      ? startProcess({ name: "memory-scaler", command: process.execPath, args: command.args, env })
      : startProcess({ name: "memory-scaler", command: "/bin/sh", args: ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, process.execPath, ...command.args], env });
  for (;;) {
    if (!child.running()) throw new Error(`memory-scaler exited during start-up\n${tailOf(child)}`);
    try {
      const response = await fetch(`${url}/health/readiness`);
      if (response.status === 200) return { child, url, coldStartMs: performance.now() - t0 };
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > 30_000) throw new Error(`memory-scaler not ready after 30 s\n${tailOf(child)}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Creates `count` memhog-like Deployments `d-<i>` (384Mi/256Mi, annotated) and waits for their Pods; returns Pod names by Deployment. */
async function memhogs(ns: string, count: number): Promise<Map<string, string>> {
  const kc = await adminKubeConfig();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const names = Array.from({ length: count }, (_, i) => `d-${i}`);
  for (let i = 0; i < names.length; i += 20) {
    await Promise.all(
      names.slice(i, i + 20).map((name) =>
        apps.createNamespacedDeployment({
          namespace: ns,
          body: {
            metadata: { name },
            spec: {
              replicas: 1,
              selector: { matchLabels: { app: name } },
              template: {
                metadata: { labels: { app: name, bench: "memhog" }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } },
                spec: { containers: [{ name: "memhog", image: "quay.io/metral/memhog:v0.0.1", resources: { limits: { memory: "384Mi" }, requests: { memory: "256Mi" } } }] },
              },
            },
          },
        }),
      ),
    );
  }
  return waitFor(`${count} Pods Running in ${ns}`, async () => {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: "bench=memhog" })).items.filter((p) => p.status?.phase === "Running");
    if (pods.length < count) return undefined;
    return new Map(pods.map((p) => [p.metadata?.labels?.app ?? "", p.metadata?.name ?? ""]));
  }, 180_000, 500);
}

async function namespace(name: string): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name } } });
  await waitFor(`ServiceAccount default in ${name}`, () => core.readNamespacedServiceAccount({ name: "default", namespace: name }));
}

async function deleteNamespace(name: string): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  await core.deleteNamespace({ name }).catch(() => undefined);
  await waitFor(`namespace ${name} gone`, async () => {
    try {
      await core.readNamespace({ name });
      return false;
    } catch {
      return true;
    }
  }, 180_000, 500);
}

async function scrapeMetric(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleSum(await (await fetch(`${url}/metrics`)).text(), name, labels);
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/** What memory-scaler reads and writes, for the API server's request count. */
const SCALER_RESOURCES = ["pods", "deployments", "replicasets", "appmonitors", "events", "resourcequotas", "nodes", "horizontalpodautoscalers", "verticalpodautoscalers"] as const;

/** What one size of the cluster measured, for the table and the chart at the end. */
interface SizeFigures {
  readonly nodes: number;
  readonly scaleP50: number;
  readonly scaleP99: number;
  readonly cpuPerScale: number;
  readonly firstScaleMs: number;
  readonly firstScaleCpuMs: number;
  readonly patches: number;
  readonly stormSeconds: number;
  readonly stormNodeLists: number;
  readonly peakMiB: number;
}

/** Per-event latency, one at a time (a scale, a copy, a cooldown skip of each Deployment), printed; returns the scale's figures. */
async function latencyPhase(url: string, pid: number, suffix: string, getP50: number, getP99: number, writeP50: number): Promise<{ scaleTimes: number[]; cpuPerScale: number; firstScaleMs: number; firstScaleCpuMs: number }> {
  const latencyNs = `bench-latency-${suffix}`;
  await namespace(latencyNs);
  await createAppMonitor(latencyNs, "m", { memThresholdPercent: 75, memMultiplier: 2 });
  const latencyPods = await memhogs(latencyNs, latencyEvents + 1);
  // The process's first scale reads the Nodes for the shared view (once per view's age, not per
  // event): timed on its own, left out of the per-scale figures.
  const [warmDeployment, warmPod] = [...latencyPods][0] ?? ["", ""];
  latencyPods.delete(warmDeployment);
  const t00 = performance.now();
  const cpu00 = cpuMs(pid);
  const warm = await deliver(url, alertEvent({ namespace: latencyNs, pod: warmPod, container: "memhog", appmonitor: "m" }));
  const firstScaleMs = performance.now() - t00;
  const firstScaleCpuMs = cpuMs(pid) - cpu00;
  const scaleTimes: number[] = [];
  const skipTimes: number[] = [];
  const sent: { event: ReturnType<typeof alertEvent> }[] = [];
  let unexpected = warm.outcome === "scaled" ? 0 : 1;
  const cpuBefore = cpuMs(pid);
  for (const pod of latencyPods.values()) {
    const event = alertEvent({ namespace: latencyNs, pod, container: "memhog", appmonitor: "m" });
    const t0 = performance.now();
    const answer = await deliver(url, event);
    scaleTimes.push(performance.now() - t0);
    if (answer.outcome !== "scaled") unexpected += 1;
    sent.push({ event });
  }
  const cpuPerScale = (cpuMs(pid) - cpuBefore) / latencyPods.size;
  const copyTimes: number[] = [];
  for (const { event } of sent) {
    const t0 = performance.now();
    const answer = await deliver(url, event);
    copyTimes.push(performance.now() - t0);
    if (answer.outcome !== "scaled") unexpected += 1;
  }
  for (const pod of latencyPods.values()) {
    const event = alertEvent({ namespace: latencyNs, pod, container: "memhog", appmonitor: "m" });
    const t0 = performance.now();
    const answer = await deliver(url, event);
    skipTimes.push(performance.now() - t0);
    if (answer.outcome !== "skipped") unexpected += 1;
  }
  const times = (values: number[], p: number, of: number): string => `${(percentile([...values].sort((a, b) => a - b), p) / of).toFixed(1)}×`;
  console.log(`the process's first scale, which reads the Nodes for the shared view: ${ms(firstScaleMs)}, function CPU ${ms(firstScaleCpuMs)}`);
  console.log(`per-event latency, sequential, sender's round trip (× the API server's GET, same percentile):`);
  console.log(`  scale (full path):          ${summary(scaleTimes)}`);
  console.log(`                              p50 ${times(scaleTimes, 50, getP50)}  p99 ${times(scaleTimes, 99, getP99)}   goal ≤ 4× each`);
  console.log(`                              p50 ${times(scaleTimes, 50, writeP50)} the write yardstick's p50 (a scale writes twice in sequence)`);
  console.log(`                              function CPU ${cpuPerScale.toFixed(1)} ms per scaled event (user + system)`);
  console.log(`  copy of a scaled event:     ${summary(copyTimes)}`);
  console.log(`                              p50 ${times(copyTimes, 50, getP50)}   (answered from memory, nothing read)`);
  console.log(`  new event in the cooldown:  ${summary(skipTimes)}`);
  console.log(`                              p50 ${times(skipTimes, 50, getP50)}   goal ≤ 2× (reads the Pod, the AppMonitors and the owners: 1 round trip)`);
  if (unexpected > 0) console.log(`  ${unexpected} events had an unexpected outcome`);
  await deleteNamespace(latencyNs);
  return { scaleTimes, cpuPerScale, firstScaleMs, firstScaleCpuMs };
}

/** The storm (`duplicates` deliveries of one event per Deployment, shuffled, `concurrency` in flight), printed; returns its figures. */
async function stormPhase(url: string, pid: number, suffix: string, scaleP50: number): Promise<{ patches: number; wallSeconds: number; nodeLists: number; peakMiB: number }> {
  const stormNs = `bench-storm-${suffix}`;
  await namespace(stormNs);
  await createAppMonitor(stormNs, "m", { memThresholdPercent: 75, memMultiplier: 2 });
  const stormPods = await memhogs(stormNs, deployments);
  // Paused, a patched Deployment starts no rollout: the requests counted are memory-scaler's
  // (and one status update per patched Deployment by its controller), not the rollouts'.
  const stormApps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
  const names = [...stormPods.keys()];
  for (let i = 0; i < names.length; i += 20) {
    await Promise.all(names.slice(i, i + 20).map((name) =>
      stormApps.patchNamespacedDeployment({ namespace: stormNs, name, body: { spec: { paused: true } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch))));
  }
  const events = [...stormPods.values()].map((pod) => alertEvent({ namespace: stormNs, pod, container: "memhog", appmonitor: "m" }));
  const queue = shuffle(events.flatMap((event) => Array.from({ length: duplicates }, () => event)));
  const scalesBefore = await scrapeMetric(url, "appmonitor_memory_scaler_scales_total");
  const admin = await adminKubeConfig();
  const requestsBefore = await apiserverRequests(admin, SCALER_RESOURCES);
  const answers: Answer[] = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < queue.length) {
        const event = queue[next];
        next += 1;
        if (event !== undefined) answers.push(await deliver(url, event, next % 2 === 0 ? "binary" : "structured"));
      }
    }),
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  const requests = requestsBetween(requestsBefore, await apiserverRequests(admin, SCALER_RESOURCES));
  const requestTotal = [...requests.values()].reduce((a, b) => a + b, 0);
  const patches = (await scrapeMetric(url, "appmonitor_memory_scaler_scales_total")) - scalesBefore;
  const list = (await stormApps.listNamespacedDeployment({ namespace: stormNs })).items;
  const generations = new Map<number, number>();
  const limits = new Map<string, number>();
  for (const d of list) {
    const g = d.metadata?.generation ?? 0;
    generations.set(g, (generations.get(g) ?? 0) + 1);
    const limit = d.spec?.template.spec?.containers[0]?.resources?.limits?.memory ?? "?";
    limits.set(limit, (limits.get(limit) ?? 0) + 1);
  }
  const byOutcome = new Map<string, number>();
  for (const a of answers) {
    const key = a.status === 204 ? `${a.outcome}/${a.reason}` : `HTTP ${a.status}`;
    byOutcome.set(key, (byOutcome.get(key) ?? 0) + 1);
  }
  const rss = rssMiB(pid);
  const peakMiB = rssMiB(pid, "VmHWM");
  console.log(`storm: ${queue.length} firing events for ${deployments} Deployments, ${duplicates} deliveries each, ${concurrency} in flight:`);
  console.log(`  patches written: ${patches} (scales_total)   goal exactly ${deployments}`);
  console.log(`  Deployment generations: ${[...generations].map(([g, n]) => `${n} at ${g}`).join(", ")}   (created at 1, paused → 2, scaled once → 3)`);
  console.log(`  template limits: ${[...limits].map(([l, n]) => `${n} × ${l}`).join(", ")}`);
  console.log(`  answers: ${[...byOutcome].sort().map(([k, n]) => `${k} ${n}`).join(", ")}`);
  console.log(`  API requests served meanwhile: ${requestTotal} (${(requestTotal / deployments).toFixed(1)} per Deployment)   goal ≤ 3 × ${deployments} + a few`);
  console.log(`    ${[...requests].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} ${n}`).join(", ")}`);
  console.log(`  wall time: ${wallSeconds.toFixed(2)} s = ${((wallSeconds * 1000) / scaleP50).toFixed(1)} × the scale p50   goal ≤ ${deployments} ×`);
  console.log(`resident memory of the function (VmRSS) after the storm: ${rss.toFixed(1)} MiB (peak ${peakMiB.toFixed(1)} MiB)   goal ≤ ${(Number(memoryLimit) / 2 / 1048576).toFixed(0)} MiB at the peak (half the ${Number(memoryLimit) / 1048576} MiB limit of knative/services/memory-scaler.yaml; ${cgroup === null ? "NOT run under that limit: not root, or no memory cgroup" : "run in a memory cgroup of that limit"})`);
  await deleteNamespace(stormNs);
  return { patches, wallSeconds, nodeLists: requests.get("LIST nodes") ?? 0, peakMiB };
}

async function main(): Promise<void> {
  const suffix = Date.now().toString(36);
  const stack = await benchStack("scaler", 4);
  const { state } = stack;
  process.env.KUBECONFIG = state.kubeconfig;
  let kubeconfig: Awaited<ReturnType<typeof scalerKubeconfig>> | undefined;
  let proxy: TcpProxy | undefined;
  let child: TestProcess | undefined;
  const kc0 = () => loadKubeConfig(state.kubeconfig);
  try {
    await installMemoryScaler();
    await removeFleet(kc0());
    let yardstickKubeconfig = state.kubeconfig;
    if (apiLatencyMs > 0) {
      const api = new URL(kc0().getCurrentCluster()?.server ?? "");
      proxy = await startTcpProxy(api.hostname, Number(api.port));
      proxy.setLatency(apiLatencyMs);
      const server = `https://127.0.0.1:${proxy.port}`;
      const dir = await mkdtemp(path.join(tmpdir(), "bench-api-latency-"));
      kubeconfig = { file: await writeKubeconfig(await scalerKubeConfigAt(server), dir, "scaler"), remove: () => rm(dir, { recursive: true, force: true }) };
      yardstickKubeconfig = await writeKubeconfig(movedKubeConfig(kc0(), server), dir, "admin");
    } else {
      kubeconfig = await scalerKubeconfig();
    }
    console.log(`memory-scaler benchmark — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}, the function ${options.sources ? "from its sources" : "bundled, as its image runs it"}${apiLatencyMs > 0 ? `, ${apiLatencyMs} ms added to each chunk sent to the API server` : ""}${options["node-options"] === "" ? "" : ` with NODE_OPTIONS=${options["node-options"]}`}`);

    // 1. Cold start.
    const coldStarts: number[] = [];
    for (let i = 0; i < starts; i += 1) {
      const started = await startScalerProcess(kubeconfig.file);
      coldStarts.push(started.coldStartMs);
      await started.child.stop("SIGTERM");
    }
    console.log(`cold start, process spawned → readiness 200 (${starts} starts):`);
    console.log(`  ${summary(coldStarts)}   goal ≤ 250 ms`);

    // 2–4 at each size of the cluster: a new process each, so its peak memory is that size's.
    const figures: SizeFigures[] = [];
    for (const [index, size] of nodeCounts.entries()) {
      const nodes = await growFleet(kc0(), size);
      console.log(`\n--- ${nodes} Nodes (${nodes > 4 ? `${nodes - 4} of them production-sized, ${(fleetNodeBytes() / 1024).toFixed(1)} KiB of JSON each` : "the stack's own"}) ---`);
      console.log(`API server yardstick, one GET on a keep-alive connection:`);
      const baseline = [...(await apiServerBaseline(yardstickKubeconfig))].sort((a, b) => a - b);
      console.log(`  ${summary(baseline)}`);
      const writeNs = `bench-write-${suffix}-${index}`;
      await namespace(writeNs);
      const writes = [...(await apiServerWriteBaseline(yardstickKubeconfig, writeNs))].sort((a, b) => a - b);
      console.log(`API server write yardstick, one merge patch (an etcd write) on a keep-alive connection:`);
      console.log(`  ${summary(writes)}`);
      await deleteNamespace(writeNs);
      const started = await startScalerProcess(kubeconfig.file);
      child = started.child;
      console.log(`resident memory of the function (VmRSS) when ready: ${rssMiB(child.pid).toFixed(1)} MiB`);
      const latency = await latencyPhase(started.url, child.pid, `${suffix}-${index}`, percentile(baseline, 50), percentile(baseline, 99), percentile(writes, 50));
      const sorted = [...latency.scaleTimes].sort((a, b) => a - b);
      // The storm meets a new process: no view of the Nodes yet, the worst case for its memory.
      await child.stop("SIGTERM");
      const stormer = await startScalerProcess(kubeconfig.file);
      child = stormer.child;
      const storm = await stormPhase(stormer.url, child.pid, `${suffix}-${index}`, percentile(sorted, 50));
      figures.push({ nodes, scaleP50: percentile(sorted, 50), scaleP99: percentile(sorted, 99), cpuPerScale: latency.cpuPerScale, firstScaleMs: latency.firstScaleMs, firstScaleCpuMs: latency.firstScaleCpuMs, patches: storm.patches, stormSeconds: storm.wallSeconds, stormNodeLists: storm.nodeLists, peakMiB: storm.peakMiB });
      await child.stop("SIGTERM");
      child = undefined;
    }
    if (figures.length > 1) await costCurve(figures);
  } finally {
    await child?.stop("SIGTERM");
    await kubeconfig?.remove();
    await proxy?.stop();
    await removeFleet(kc0()).catch(() => undefined);
    await stack.release();
  }
}

/** The figures of every size side by side, each as a multiple of the smallest size's, and their chart. */
async function costCurve(figures: readonly SizeFigures[]): Promise<void> {
  const base = figures[0] as SizeFigures;
  const ratio = (value: number, of: number): string => `${(value / of).toFixed(2)}×`;
  console.log(`\nthe cost against the number of Nodes (× the ${base.nodes}-Node figure of this run; goal ≤ 1.5× for the scale p50 and CPU):`);
  console.log("| Nodes | scale p50 | scale p99 | function CPU per scale | first scale (reads the Nodes): time / CPU | storm: patches / Deployments | storm wall time | LIST nodes in the storm | peak RSS |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const f of figures) {
    console.log(`| ${f.nodes} | ${ms(f.scaleP50)} (${ratio(f.scaleP50, base.scaleP50)}) | ${ms(f.scaleP99)} | ${ms(f.cpuPerScale)} (${ratio(f.cpuPerScale, base.cpuPerScale)}) | ${ms(f.firstScaleMs)} / ${ms(f.firstScaleCpuMs)} | ${f.patches} / ${deployments} | ${f.stormSeconds.toFixed(2)} s | ${f.stormNodeLists} | ${f.peakMiB.toFixed(1)} MiB |`);
  }
  const points: ChartPoint[] = figures.flatMap((f) => [
    { series: "scale p50, ms", size: f.nodes, value: f.scaleP50 },
    { series: "function CPU per scale, ms", size: f.nodes, value: f.cpuPerScale },
    { series: "the first scale of a process (reads the Nodes), ms", size: f.nodes, value: f.firstScaleMs },
    { series: `peak resident memory after a storm of ${concurrency} in flight, MiB`, size: f.nodes, value: f.peakMiB },
  ]);
  await writeFile(options.chart, await lineChartSvg(points, { title: "memory-scaler's cost against the number of Nodes", x: "Nodes", y: "ms / MiB" }));
  console.log(`\nchart: ${path.resolve(options.chart)}`);
}

await main();
