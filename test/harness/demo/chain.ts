/**
 * The main job, end to end, on the local stack: the original demo's AppMonitor and memhog
 * Deployment; rule-sync turns the AppMonitor into a PrometheusRule, delivered to Prometheus the
 * way prometheus-operator would (its groups written to a rule file, Prometheus reloaded); the
 * Pod's usage rises past the threshold; Prometheus fires, Alertmanager calls alert-receiver,
 * whose CloudEvent reaches memory-scaler, which scales the Deployment; the new Pod runs.
 *
 * Every hop is observed from outside (API server, Prometheus and Alertmanager HTTP APIs, the
 * functions' JSON logs) and time-stamped, so a failure names the hop that did not happen.
 *
 * On a kwok Node the usage is an annotation; with `realNode`, memhog runs on the stack's real
 * node and allocates for real (320Mi at 32Mi/s), the crossing is read from memhog's own log lines
 * (the kubelet's timestamps), cAdvisor reports the working set, and the new Pod's limit is read
 * back from its container's memory cgroup.
 *
 * With `eventing` (function Pods only) the events go through Knative Eventing on the real node as
 * in a Knative install: the AppMonitor's add event from the ApiServerSource through the Broker to
 * rule-sync, the alert's CloudEvent from alert-receiver to the Broker ingress, through the
 * in-memory channel and the filter, to memory-scaler by its Trigger; the Broker's hop is read from
 * the filter's own log (`broker-filter-log.ts`).
 *
 * With `oomKill` the Pod is OOM-killed instead of crossing the threshold, and the rule's second
 * alert, AppMonitorOOMKilled (no `for`), carries it to memory-scaler. On a kwok Node the kubelet's
 * report of the kill is written into its status and kwok's cAdvisor emulation counts it. On the
 * real node the kernel kills memhog for real (its growing mode under a 128Mi limit), rule-sync
 * reads kube-state-metrics (cAdvisor misses the kill of a container's PID 1), and the chain goes
 * on after the scale until the new container is killed at its new limit too and memory-scaler
 * skips that kill's alert: one scale per cooldown, read from the kernel's own enforcement.
 *
 * With `trend` (on the real node) the AppMonitor also sets `spec.trend`, memhog grows steadily
 * without end, and the rule's early-warning alert, AppMonitorMemoryTrend, is to scale it before
 * its working set reaches the threshold: the chain reads the old Pod's working set back from
 * Prometheus, for the caller to see where the scale came on it.
 */
import { FUNCTIONS_NAMESPACE } from "../stack/function-pods-install.ts";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { CloudEvent, HTTP } from "cloudevents";
import { parse, parseAllDocuments, stringify } from "yaml";
import { LAST_SCALE_RECORD_ANNOTATION } from "../../../functions/lib/appmonitor.ts";
import { compare, floor, multiply, parseQuantity, rational } from "../../../functions/lib/quantity.ts";
import { buildImages, FUNCTION_IMAGES } from "../../../scripts/images/build.ts";
import { oomEventsAnnotation, usageMemoryAnnotation } from "../stack/config-files.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { memoryCgroupDir } from "../stack/real-node.ts";
import { podCgroupPath, REAL_NODE_PLACEMENT } from "../stack/real-node-config.ts";
import type { StackState } from "../stack/state.ts";
import { kubePrometheusStackValues, TOKEN_FILE } from "../../../scripts/alertmanager-routing.ts";
import { readFilterReceipts, type FilterReceipt } from "../stack/broker-filter-log.ts";
import { coalesceValues, type Value } from "../lib/helm-values.ts";
import { documentedKubePrometheusStackValues } from "../lib/install-doc.ts";
import { serviceAccountCredentials } from "../lib/container.ts";
import { waitUntil } from "../lib/wait-until.ts";
import { addRoute } from "../lib/alertmanager-routes.ts";
import { podFunctions, type InstalledFunctions } from "./function-pods.ts";
import type { HopClock, TimelineHop } from "./timeline.ts";
import { startFunction, type FunctionProcess, type LogLine } from "./processes.ts";

/**
 * Writes the memhog container's status as the kubelet reports it after an OOM kill just now:
 * restarted once, running again, the kill in `lastState.terminated` (exit code 137, SIGKILL).
 * The admin writes the status subresource; kwok leaves it alone (its stages match other states).
 */
async function reportOOMKill(core: k8s.CoreV1Api, namespace: string, name: string): Promise<void> {
  const pod = await core.readNamespacedPod({ name, namespace });
  const now = new Date();
  pod.status = {
    ...pod.status,
    containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({
      ...s,
      restartCount: s.restartCount + 1,
      state: { running: { startedAt: now } },
      lastState: { terminated: { reason: "OOMKilled", exitCode: 137, startedAt: pod.status?.startTime ?? now, finishedAt: now } },
    })),
  };
  await core.replaceNamespacedPodStatus({ name, namespace, body: pod });
}

/** One hop of the chain: what happened, when (ms since the epoch) and by which clock ({@link TimelineHop}). */
export type Hop = TimelineHop;

/**
 * The clock of a hop this run saw by polling (every 100 ms, `until`): it happened at or before
 * then. An upper bound: the poll for a hop begins once the chain has seen the hop before it.
 */
const POLLED: HopClock = { source: "seen by this run's poll: at or before", resolutionMs: 100 };
/** The clock of something this run did itself. */
const THIS_RUN: HopClock = { source: "this run's clock, when it did it", resolutionMs: 1 };
/** A function's JSON log line (pino's epoch ms). */
const logClock = (fn: string): HopClock => ({ source: `${fn}'s log`, resolutionMs: 1 });
/** A Kubernetes timestamp, whole seconds. */
const kubeClock = (field: string): HopClock => ({ source: field, resolutionMs: 1000 });
/** A sample's own timestamp in Prometheus (the scrape that took it). */
const SAMPLE: HopClock = { source: "the sample's timestamp in Prometheus", resolutionMs: 1 };

/** Memory request and limit of the memhog container, as quantities. */
export interface Memory {
  request?: string;
  limit?: string;
}

/** Where Alertmanager routes an alert: its receivers' names, and the alerts and silences that mute it. */
export interface AlertmanagerRouting {
  readonly receivers: string[];
  readonly inhibitedBy: string[];
  readonly silencedBy: string[];
}

/** What a successful run observed. */
export interface ChainResult {
  namespace: string;
  /** In order; the first is the moment the usage crossed the threshold. */
  hops: Hop[];
  before: Memory;
  after: Memory;
  oldPod: string;
  newPod: string;
  /**
   * What memory-scaler recorded: the AppMonitor's `status.scaleCount`, the trigger in the
   * Deployment's last-scale record (`oomKilled`; absent for a threshold scale), the trigger of the
   * newest `status.recentScales` entry (`oomKilled`, `trend`; absent for a threshold scale), the
   * Deployment's `Scaled` Events' notes.
   */
  recorded: { scaleCount?: number; trigger?: string; statusTrigger?: string; scaledEvents: string[] };
  /** Every decision memory-scaler logged, in order: Pod, the alert's trigger, outcome and reason. */
  decisions: { pod: string; trigger?: string; outcome: string; reason: string }[];
  /** Where Alertmanager routed the old Pod's alert, and what inhibited or silenced it (Alertmanager's `/api/v2/alerts`). */
  alertmanager: AlertmanagerRouting;
  /**
   * With `trend`: the old Pod's working set as Prometheus scraped it (cAdvisor's endpoint), from
   * its start to the patch, and the threshold and limit in bytes it is measured against.
   */
  workingSet?: { samples: { at: number; bytes: number }[]; threshold: number; limit: number };
  /**
   * The container's memory over the run as Prometheus scraped it, old Pod and new: the working set
   * (cAdvisor's endpoint) and the limit (kube-state-metrics' `kube_pod_container_resource_limits`
   * where it is scraped, else the Pod's spec at each sample), with the AppMonitor's percent;
   * undefined when Prometheus could not be read for it (the chart is left out, not the run).
   */
  memory?: { samples: { series: "working set" | "limit"; pod: string; at: number; bytes: number }[]; thresholdPercent: number };
}

/** The hop that did not happen: its name, and why. */
export class HopError extends Error {
  readonly hop: string;
  readonly hops: Hop[];
  constructor(hop: string, message: string, hops: Hop[]) {
    super(`hop "${hop}" failed: ${message}`);
    this.hop = hop;
    this.hops = hops;
  }
}

/** Options of {@link runChain}. */
export interface ChainOptions {
  /** Namespace for the example objects; created, and deleted at the end unless `keep`. */
  namespace: string;
  /** Called once per hop as it is observed (not in the order they happened: see `timeline.ts`). */
  onHop?: (hop: Hop) => void;
  /** Hears one line per set-up step (the Eventing install, the function Deployments) while it runs. */
  onProgress?: (line: string) => void;
  /** Leave the namespace, rule file and Alertmanager route in place. */
  keep?: boolean;
  /** Memory usage to set on the Pod (default 300Mi: 78% of 384Mi). */
  usage?: string;
  /** Run the functions from their images (`npm run image`, built first if needed) instead of from the sources. */
  containers?: boolean;
  /**
   * Run memhog on the stack's real node (`up({ realNode: true })`): its memory is real, `usage` is
   * not used, and the new Pod's limit is read from its cgroup.
   */
  realNode?: boolean;
  /**
   * Run the three functions as Pods on the real node (`function-pods.ts`; needs `realNode` and
   * `npm run image`'s archives): Alertmanager calls alert-receiver at its Pod IP, alert-receiver
   * reaches memory-scaler through its ClusterIP Service, and the functions read the API with their
   * projected ServiceAccount tokens.
   */
  functionPods?: boolean;
  /**
   * With `functionPods`: Knative Eventing runs on the real node (installed unless the stack has
   * it) with appmonitor's Broker, Triggers and sources; alert-receiver sends to the Broker and
   * rule-sync hears of the AppMonitor from the ApiServerSource, both through the Broker.
   */
  eventing?: boolean;
  /**
   * With `functionPods`: the functions are installed already (a Helm release of the chart) in
   * `installed.namespace`, with their Broker when `eventing`; the chain installs none of their
   * objects and follows their Pods. `webhookToken` is the token their Secret holds.
   */
  installed?: InstalledFunctions;
  /**
   * The Pod is OOM-killed rather than its usage raised. On a kwok Node its container status gets
   * `lastState.terminated.reason: OOMKilled` (what the kubelet reports after the kill) and the
   * cAdvisor emulation one OOM event (`kwok.x-k8s.io/oom-events`). With `realNode` memhog runs in
   * its growing mode under {@link REAL_OOM_MEMORY} and the kernel kills it (its PID 1, which
   * cAdvisor's counter misses: either metric source's rule fires from kube-state-metrics' series
   * beside the node), and after the scale the chain waits for the new
   * container's own kill at its new limit and memory-scaler's refusal to scale again (`Cooldown`).
   */
  oomKill?: boolean;
  /**
   * The AppMonitor also sets `spec.trend` and `spec.forSeconds` as given, and memhog (on the real
   * node, needs `realNode`) grows at `rate` without end: the trend alert is the one to fire and
   * to scale it, before its working set reaches the threshold.
   */
  trend?: ChainTrend;
  /**
   * The AppMonitor's `spec.forSeconds`, for a test whose subject is not the `for`: a few seconds
   * keep the alert's pending hop and skip most of the minute the example's default (60) waits.
   * Unset: the example's. With `trend`, the trend's `forSeconds` is used.
   */
  forSeconds?: number;
  /**
   * rule-sync's `METRIC_SOURCE`; default `cadvisor`, as shipped.
   */
  metricSource?: "cadvisor" | "kube-state-metrics";
  /**
   * The workload instead of the original memhog example; it must grow until the kernel kills it
   * (`oomKill`) or its runtime's heap runs out (`heapError`), so it needs `realNode` and one of
   * them (what makes it grow is its own: memhog's growing mode and log lines are memhog's).
   */
  workload?: ChainWorkload;
  /**
   * The workload's runtime runs out of heap before the container's limit (needs `realNode` and
   * `workload`): its container ends with reason `Error` and the runtime's heap error in its
   * termination message (`terminationMessagePolicy: FallbackToLogsOnError`), kube-state-metrics
   * reports the restart, the heap-error alert fires (no `for`) and memory-scaler scales once; the
   * chain then waits for the new container's log to show the program past its old heap.
   */
  heapError?: ChainHeapError;
  /**
   * The stack's prometheus-operator runs the Prometheus and the Alertmanager on the real node
   * (`up({ realNode: true, prometheusOperator: true })`; needs `functionPods` and `eventing`): the
   * operator's config reloader loads the rule rule-sync writes, and the alerts are routed by the
   * kube-prometheus-stack values docs/install.md gives, as Helm applies them: its
   * `alertmanager.config` over the chart's in the Alertmanager's base configuration, the token
   * Secret in its `spec.secrets`. The evaluation and most scrape intervals are the chart's (30 s),
   * so waits on Prometheus are longer.
   */
  operator?: boolean;
}

/**
 * The workload a chain watches: a Deployment of one replica, annotated for the AppMonitor
 * `mymonitor`, whose container `container` the alert is about and memory-scaler scales.
 */
export interface ChainWorkload {
  /** The Deployment as YAML, applied into the run's namespace (placed on the real node with `realNode`). */
  readonly manifest: string;
  /** The Deployment's name. */
  readonly name: string;
  /** The container the alert measures and memory-scaler scales. */
  readonly container: string;
  /** Selects the Deployment's Pods, e.g. `name=memhog`. */
  readonly labelSelector: string;
}

/** The heap-error run of a chain ({@link ChainOptions.heapError}). */
export interface ChainHeapError {
  /** The runtime's heap error, as its termination message shows it (e.g. `JavaScript heap out of memory`). */
  readonly message: RegExp;
  /** A line of the new container's log that says the program holds more than its old heap could. */
  readonly relieved: RegExp;
}

/** The trend run of a chain ({@link ChainOptions.trend}). */
export interface ChainTrend {
  /** The AppMonitor's `spec.trend`. */
  readonly spec: { readonly horizonSeconds: number; readonly windowSeconds: number; readonly floorPercent: number };
  /** The AppMonitor's `spec.forSeconds`: the trend alert's `for`. */
  readonly forSeconds: number;
  /** memhog's `MEMHOG_RATE`, a quantity per second. */
  readonly rate: string;
}

/** The original demo's memhog Deployment (knative/examples/memhog.yaml). */
async function memhogWorkload(): Promise<ChainWorkload> {
  return { manifest: await file("knative/examples/memhog.yaml"), name: "memhog", container: "memhog", labelSelector: "name=memhog" };
}

/**
 * memhog's memory for a real OOM kill (`oomKill` with `realNode`): a 128Mi limit (request 64Mi),
 * growing at 8Mi/s, so it is killed about 16 s after it starts, and the scaled container (256Mi)
 * about 32 s after it starts: time enough to read its cgroup while it runs.
 */
export const REAL_OOM_MEMORY = { limit: "128Mi", request: "64Mi", rate: "8Mi" } as const;

const FIELD_MANAGER = "appmonitor-demo";

/**
 * `kubectl apply --server-side` of YAML text: kubectl sends the objects as written, where the
 * typed client would drop fields its models do not know (a CRD schema's `enum`, `default`,
 * `x-kubernetes-*`).
 */
async function apply(state: StackState, yamlText: string, namespace?: string): Promise<void> {
  const args = ["apply", "--server-side", "--force-conflicts", `--field-manager=${FIELD_MANAGER}`, `--kubeconfig=${state.kubeconfig}`, "-f", "-"];
  if (namespace) args.push(`--namespace=${namespace}`);
  await new Promise<void>((resolve, reject) => {
    const child = execFile(state.binaries.kubectl, args, { timeout: 60_000 }, (error, _stdout, stderr) =>
      error ? reject(new Error(`kubectl apply failed: ${stderr || error.message}`)) : resolve());
    child.stdin?.end(yamlText);
  });
}

async function file(relativePath: string): Promise<string> {
  return readFile(path.isAbsolute(relativePath) ? relativePath : path.join(repoRoot, relativePath), "utf8");
}

/**
 * Waits for a hop; what did not happen in time becomes a HopError naming it, with what `explain`
 * then finds (what the run saw instead), when given.
 */
async function until<T>(hop: string, hops: Hop[], timeoutMs: number, check: () => Promise<T | undefined | false>, explain?: () => Promise<string>): Promise<T> {
  try {
    return await waitUntil(hop, check, { timeoutMs, intervalMs: 100 });
  } catch (error) {
    const cause = (error as Error).cause as Error | undefined;
    const seen = explain === undefined ? "" : await explain().then((text) => `; ${text}`, (e: unknown) => `; nothing more known (${(e as Error).message})`);
    throw new HopError(hop, `not observed within ${timeoutMs / 1000} s${cause ? ` (${cause.message ?? String(cause)})` : ""}${seen}`, hops);
  }
}

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${init?.method ?? "GET"} ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** A kubeconfig file that authenticates as ServiceAccount `appmonitor/<name>` (TokenRequest). */
async function serviceAccountKubeconfig(admin: k8s.KubeConfig, name: string, dir: string): Promise<string> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const token = (await core.createNamespacedServiceAccountToken({ name, namespace: "appmonitor", body: { spec: { expirationSeconds: 3600, audiences: [] } } })).status?.token;
  const cluster = admin.getCurrentCluster();
  if (!token || !cluster) throw new Error(`no token for ServiceAccount appmonitor/${name}`);
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({ clusters: [cluster], users: [{ name, token }], contexts: [{ name, cluster: cluster.name, user: name }], currentContext: name });
  const file = path.join(dir, `${name}.kubeconfig`);
  await writeFile(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

/**
 * The original memhog manifest with the real node's nodeSelector and toleration added to its Pod
 * template; with `grow`, memhog also grows without end: under {@link REAL_OOM_MEMORY} until the
 * kernel kills it (`"oom"`), or at the trend's rate under the original limit (a {@link ChainTrend}).
 */
function onRealNode(yamlText: string, grow: "oom" | ChainTrend | undefined, container = "memhog"): string {
  return parseAllDocuments(yamlText).map((doc) => {
    const obj = doc.toJS() as k8s.V1Deployment;
    const spec = obj.kind === "Deployment" ? obj.spec?.template.spec : undefined;
    if (spec) Object.assign(spec, REAL_NODE_PLACEMENT);
    const memhog = spec?.containers.find((c) => c.name === container);
    if (grow !== undefined && memhog) {
      memhog.env = [{ name: "MEMHOG_MODE", value: "grow" }, { name: "MEMHOG_RATE", value: grow === "oom" ? REAL_OOM_MEMORY.rate : grow.rate }];
      if (grow === "oom") memhog.resources = { limits: { memory: REAL_OOM_MEMORY.limit }, requests: { memory: REAL_OOM_MEMORY.request } };
    }
    return stringify(obj);
  }).join("---\n");
}

/** The container's last termination, as the kubelet reports it when it restarts the container. */
function lastTerminated(pod: k8s.V1Pod, container: string): k8s.V1ContainerStateTerminated | undefined {
  return pod.status?.containerStatuses?.find((c) => c.name === container)?.lastState?.terminated;
}

/** The container's last termination, when it ended with reason `Error` and `message` in its termination message. */
function heapErrorEnd(pod: k8s.V1Pod, container: string, message: RegExp): k8s.V1ContainerStateTerminated | undefined {
  const terminated = lastTerminated(pod, container);
  return terminated?.reason === "Error" && message.test(terminated.message ?? "") ? terminated : undefined;
}

/** The container's last termination, when it was an OOM kill (the kubelet's report of the kernel's kill). */
function oomKilled(pod: k8s.V1Pod, container: string): k8s.V1ContainerStateTerminated | undefined {
  const terminated = lastTerminated(pod, container);
  return terminated?.reason === "OOMKilled" ? terminated : undefined;
}

/** `memory.limit_in_bytes` of a real-node Pod's container, read from its cgroup; undefined when that cgroup is gone. */
function cgroupLimit(pod: k8s.V1Pod, container: string): bigint | undefined {
  const id = pod.status?.containerStatuses?.find((c) => c.name === container)?.containerID?.replace(/^containerd:\/\//, "");
  const dir = memoryCgroupDir(podCgroupPath({ uid: pod.metadata?.uid ?? "", qosClass: pod.status?.qosClass ?? "" }, id));
  try {
    return BigInt(readFileSync(path.join(dir, "memory.limit_in_bytes"), "utf8").trim());
  } catch {
    return undefined;
  }
}

function memoryOf(containers: k8s.V1Container[] | undefined, container: string): Memory {
  const c = containers?.find((x) => x.name === container);
  return { request: c?.resources?.requests?.memory, limit: c?.resources?.limits?.memory };
}

/** A log line's time in ms since the epoch (pino writes epoch ms, or ISO 8601 with isoTime). */
function logTime(line: LogLine): number {
  return typeof line.time === "number" ? line.time : Date.parse(String(line.time));
}

function firstLog(fp: FunctionProcess, match: (l: LogLine) => boolean): LogLine | undefined {
  return fp.logs.find(match);
}

/** `hh:mm:ss.mmm` (UTC) of a time in ms since the epoch, for a hop's detail. */
function clock(at: number | undefined): string {
  return at === undefined ? "?" : new Date(at).toISOString().slice(11, 23);
}

/**
 * The Broker filter's receipt of event `eventId` for Trigger `<functions' namespace>/<trigger>`, from its log,
 * with the ingress's arrival time: the proof that the event went through the Broker.
 * @throws HopError when the filter has not logged it within 10 s.
 */
async function brokerReceipt(run: Run, trigger: string, eventId: string): Promise<FilterReceipt & { arrivedAt: number }> {
  const namespace = run.options.installed?.namespace ?? FUNCTIONS_NAMESPACE;
  return until(`the Broker filter hands event ${eventId} to Trigger ${trigger}`, run.hops, 10_000, async () =>
    (await readFilterReceipts(run.admin)).find((r): r is FilterReceipt & { arrivedAt: number } => r.trigger === `${namespace}/${trigger}` && r.eventId === eventId && r.arrivedAt !== undefined));
}

/** What every step of one run shares: the stack, the options, the admin's clients and the hops so far. */
interface Run {
  /**
   * The stack, its Prometheus and Alertmanager URLs those the chain uses: with `operator`, the
   * operator's Pods (the Alertmanager's set anew when routing rolls its Pod).
   */
  state: StackState;
  /** How many times longer waits on Prometheus last: 3 on the operator stack, whose intervals are 30 s, else 1. */
  readonly slow: number;
  readonly options: ChainOptions;
  readonly namespace: string;
  /** The alert the run expects: the threshold alert, the OOM-kill alert with `oomKill`, the heap-error alert with `heapError`, the trend alert with `trend`. */
  readonly alertname: string;
  readonly hops: Hop[];
  /** Records a hop (now and {@link POLLED}, unless `at` and its clock are given) and tells `options.onHop`. */
  readonly hop: (name: string, at?: number, detail?: string, clock?: HopClock) => void;
  readonly admin: k8s.KubeConfig;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  readonly custom: k8s.CustomObjectsApi;
  /** The workload watched ({@link ChainOptions.workload}, else memhog). */
  readonly workload: ChainWorkload;
  /** Kubeconfigs and credentials of the functions; removed at the end. */
  readonly tmp: string;
}

/** The three functions as they run, and the token alert-receiver wants on Alertmanager's webhook. */
interface RunningFunctions {
  readonly scaler: FunctionProcess;
  readonly receiver: FunctionProcess;
  readonly ruleSync: FunctionProcess;
  readonly webhookToken: string;
}

/** A memhog Pod as read once Running (the old one, or the one the scale replaced it with), its name and its container's memory. */
interface MemhogPod {
  readonly pod: k8s.V1Pod;
  readonly name: string;
  readonly memory: Memory;
}

/** The decisions memory-scaler logs: scaled, skipped, or a dry run. */
const DECISIONS = ["scaled", "skipped", "dry-run"];

/** The AppMonitor's `memThresholdPercent` and `forSeconds` as the API server stored them (its defaults applied). */
type StoredAppMonitor = k8s.KubernetesObject & { spec?: { memThresholdPercent?: number; forSeconds?: number } };

/** The original demo's AppMonitor, with the trend's `spec.trend` and `forSeconds` when there is one, else `forSeconds` when given. */
async function appMonitorManifest(trend: ChainTrend | undefined, forSeconds: number | undefined): Promise<string> {
  const text = await file("knative/examples/appmonitor.yaml");
  if (trend === undefined && forSeconds === undefined) return text;
  const monitor = parseAllDocuments(text)[0]?.toJS() as { spec: Record<string, unknown> };
  const spec = trend === undefined ? { ...monitor.spec, forSeconds } : { ...monitor.spec, forSeconds: trend.forSeconds, trend: trend.spec };
  return stringify({ ...monitor, spec });
}

/** The value of an instant query's first series, as Prometheus writes it; undefined when it has none. */
async function promValue(state: StackState, query: string): Promise<string | undefined> {
  const body = await getJson<{ data: { result: { value: [number, string] }[] } }>(`${state.prometheusUrl}/api/v1/query?${new URLSearchParams({ query })}`);
  return body.data.result[0]?.value[1];
}

/**
 * What Prometheus holds of `series` and of its scrapes, for a hop that timed out: each series'
 * latest value (MiB) and age, and each scrape target's health, last error and duration.
 */
async function scrapeDiagnosis(state: StackState, series: string): Promise<string> {
  const now = Date.now() / 1000;
  const latest = await getJson<{ data: { result: { metric: Record<string, string>; values: [number, string][] }[] } }>(`${state.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: `${series}[5m]` })}`);
  const seen = latest.data.result.map((r) => {
    const last = r.values.at(-1);
    return `${r.metric.metrics_path ?? r.metric.job ?? "?"}: ${last === undefined ? "no sample" : `${(Number(last[1]) / 2 ** 20).toFixed(1)} MiB ${(now - last[0]).toFixed(0)} s ago, ${r.values.length} samples in 5 min`}`;
  });
  type Target = { labels: Record<string, string>; scrapeUrl: string; health: string; lastError: string; lastScrapeDuration: number; lastScrape: string };
  const targets = await getJson<{ data: { activeTargets: Target[] } }>(`${state.prometheusUrl}/api/v1/targets?state=active`);
  const scrapes = targets.data.activeTargets.map((t) => `${t.scrapeUrl} ${t.health} in ${t.lastScrapeDuration.toFixed(3)} s${t.lastError === "" ? "" : ` (${t.lastError})`}`);
  return `the series: ${seen.length === 0 ? "none" : seen.join("; ")}; the scrapes: ${scrapes.join("; ")}`;
}

/**
 * The timestamp (ms) of the first sample of `series` in the last 10 minutes whose value `holds`:
 * when Prometheus scraped it, not when this run noticed.
 * @throws Error when no such sample is stored (the caller has just seen one).
 */
async function firstSampleAt(state: StackState, series: string, holds: (value: number) => boolean): Promise<number> {
  const body = await getJson<{ data: { result: { values: [number, string][] }[] } }>(`${state.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: `${series}[10m]` })}`);
  const sample = body.data.result.flatMap((r) => r.values).sort((a, b) => a[0] - b[0]).find(([, v]) => holds(Number(v)));
  if (!sample) throw new Error(`no sample of ${series} in the last 10 minutes holds`);
  return Math.round(sample[0] * 1000);
}

/**
 * Installs, idempotently (server-side apply), the AppMonitor and PrometheusRule CRDs, the
 * functions' namespace, ServiceAccounts and RBAC, and creates the run's namespace.
 */
async function installPrerequisites(run: Run): Promise<void> {
  const { state, namespace, hops, core } = run;
  const ext = run.admin.makeApiClient(k8s.ApiextensionsV1Api);
  const promRuleCrd = path.join(path.dirname(state.binaries.kubectl), "crds", "monitoring.coreos.com_prometheusrules.yaml");
  // An install of its own has the AppMonitor CRD and the functions' RBAC: not ours to apply over.
  const ours = run.options.installed ? [] : ["knative/namespace/namespace.yaml", "knative/crd/appmonitor.yaml", "knative/rbac/memory-scaler.yaml", "knative/rbac/rule-sync.yaml"];
  for (const f of [...ours, promRuleCrd]) {
    await apply(state, await file(f));
  }
  for (const name of ["appmonitors.kubedemo.com", "prometheusrules.monitoring.coreos.com"]) {
    await until(`install CRD ${name}`, hops, 30_000, async () =>
      (await ext.readCustomResourceDefinition({ name })).status?.conditions?.some((c) => c.type === "Established" && c.status === "True"));
  }
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((e: { code?: number }) => {
    if (e.code !== 409) throw e;
  });
  await until("namespace ready", hops, 30_000, () => core.readNamespacedServiceAccount({ name: "default", namespace }));
}

/**
 * Starts the three functions as Knative would run them: as Pods on the real node
 * (`functionPods`), else on the host as processes with a kubeconfig of their ServiceAccount, or
 * as their images with its token mounted as in a Pod (`containers`). Each is pushed on
 * `functions` as soon as it runs, so the run stops whatever started, even when a later one fails.
 */
async function startFunctions(run: Run, functions: FunctionProcess[]): Promise<RunningFunctions> {
  const { state, options, namespace, hops, hop, admin, tmp } = run;
  const token = randomBytes(24).toString("hex");
  const start = async (name: keyof typeof FUNCTION_IMAGES, env: Record<string, string>, serviceAccount: boolean): Promise<FunctionProcess> => {
    if (!options.containers) {
      return startFunction(name, serviceAccount ? { ...env, KUBECONFIG: await serviceAccountKubeconfig(admin, name, tmp) } : env);
    }
    const api = new URL(state.apiserverUrl);
    const credentials = serviceAccount ? await serviceAccountCredentials(admin, "appmonitor", name, tmp, { host: api.hostname, port: Number(api.port) }) : undefined;
    return startFunction(name, env, 60_000, { image: FUNCTION_IMAGES[name], ...(credentials === undefined ? {} : { credentials }) });
  };
  if (options.containers) {
    await buildImages(Object.keys(FUNCTION_IMAGES) as (keyof typeof FUNCTION_IMAGES)[], options.onProgress).catch((error: unknown) => {
      throw new HopError("images built (npm run image)", (error as Error).message, hops);
    });
  }
  if (options.functionPods) {
    const pods = await podFunctions(state, { eventing: options.eventing ?? false, ...(options.onProgress ? { progress: options.onProgress } : {}), ...(options.installed ? { installed: options.installed } : {}) }).catch((error: unknown) => {
      throw new HopError(options.eventing ? "the functions run as Pods on the real node behind the Broker" : "the functions run as Pods on the real node", (error as Error).message, hops);
    });
    const { "memory-scaler": scaler, "alert-receiver": receiver, "rule-sync": ruleSync } = pods.functions;
    functions.push(scaler, receiver, ruleSync);
    hop("functions Ready as Pods on the real node", Date.now(), `memory-scaler ${scaler.url}, alert-receiver ${receiver.url}, rule-sync ${ruleSync.url}`);
    if (pods.broker) {
      const installed = pods.broker.installSeconds === undefined ? "" : `Eventing installed in ${pods.broker.installSeconds.toFixed(1)} s; `;
      const { brokerReadySeconds: ready, firstDeliverySeconds: first } = pods.broker;
      hop("Broker Ready, a probe delivered through it", Date.now(), `${installed}Broker, Triggers, ApiServerSource, PingSource, SinkBinding applied, Broker Ready in ${ready.toFixed(1)} s, first probe through ${first.toFixed(1)} s after the Pods ran; alert-receiver's K_SINK ${pods.broker.url} (SinkBinding)`);
    }
    return { scaler, receiver, ruleSync, webhookToken: pods.installed.webhookToken };
  }
  const scaler = await start("memory-scaler", { PROMETHEUS_URL: state.prometheusUrl }, true);
  functions.push(scaler);
  const receiver = await start("alert-receiver", { K_SINK: scaler.url, WEBHOOK_TOKEN: token }, false);
  functions.push(receiver);
  // The stack's Prometheus, where the demo loads the rule: rule-sync's RuleReady follows the load. No wait in the event: the rule file is written after its answer.
  const ruleSync = await start("rule-sync", { WATCH_NAMESPACES: namespace, METRIC_SOURCE: options.metricSource ?? "cadvisor", PROMETHEUS_URL: state.prometheusUrl, RULE_LOAD_WAIT_MS: "0" }, true);
  functions.push(ruleSync);
  return { scaler, receiver, ruleSync, webhookToken: token };
}

/**
 * On the operator stack, routes the alerts exactly as docs/install.md tells a kube-prometheus-stack
 * user to: its values applied as `helm upgrade -f` applies them (`alertmanager.config` coalesced
 * over the chart's configuration in the Alertmanager's base Secret, `alertmanagerSpec.secrets` on
 * the Alertmanager) and the install's token copied into the Alertmanager's namespace as the Secret
 * the values name; then waits until the Alertmanager runs that configuration (the operator
 * regenerates it, its config reloader reloads). An install in another namespace takes the values
 * `helm install` prints for it, which name alert-receiver there. The run's namespace goes with the
 * stack's file, so nothing is put back.
 */
async function routeAlertsThroughOperator(run: Run, installNamespace: string, webhookToken: string): Promise<void> {
  const { state, hops, hop, admin, core } = run;
  const operator = state.prometheusOperator;
  if (!operator?.onRealNode) throw new HopError("route the alerts through the operator's Alertmanager", "the stack runs no prometheus-operator on its real node", hops);
  const ns = operator.namespace;
  const secretName = `alertmanager-${operator.alertmanager}`;
  const baseSecret = await core.readNamespacedSecret({ namespace: ns, name: secretName });
  const chartConfig = parse(Buffer.from(baseSecret.data?.["alertmanager.yaml"] ?? "", "base64").toString("utf8")) as Value;
  const documented = (await documentedKubePrometheusStackValues()).values.alertmanager;
  const values = installNamespace === FUNCTIONS_NAMESPACE ? documented : kubePrometheusStackValues(installNamespace).alertmanager;
  const config = coalesceValues(chartConfig, values.config as unknown as Value);
  const secrets = values.alertmanagerSpec?.secrets ?? [];
  for (const name of secrets) {
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name }, stringData: { token: webhookToken } } }).catch((e: { code?: number }) => {
      if (e.code !== 409) throw e;
    });
  }
  const custom = admin.makeApiClient(k8s.CustomObjectsApi);
  await custom.patchNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: ns, plural: "alertmanagers", name: operator.alertmanager, body: { spec: { secrets } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  await core.patchNamespacedSecret({ namespace: ns, name: secretName, body: { stringData: { "alertmanager.yaml": stringify(config) } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  // spec.secrets rolls the StatefulSet: follow the Alertmanager's Pod IP while it moves.
  const amUrl = await until("the operator's Alertmanager runs the documented configuration", hops, 300_000, async () => {
    const pod = await core.readNamespacedPod({ namespace: ns, name: `alertmanager-${operator.alertmanager}-0` });
    const mounted = secrets.every((name) => pod.spec?.volumes?.some((v) => v.secret?.secretName === name));
    if (!mounted || !pod.status?.podIP || !pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return undefined;
    const url = `http://${pod.status.podIP}:9093`;
    const status = await getJson<{ config: { original: string } }>(`${url}/api/v2/status`);
    return status.config.original.includes(`credentials_file: ${TOKEN_FILE}`) ? url : undefined;
  });
  run.state = { ...state, alertmanagerUrl: amUrl };
  hop("Alertmanager configured by the operator", Date.now(), `docs/install.md's kube-prometheus-stack values: alertmanager.config over the chart's in ${ns}/${secretName}, spec.secrets [${secrets.join(", ")}]; matcher strategy OnNamespace (the default)`);
}

/**
 * Routes the namespace's alerts in Alertmanager to alert-receiver, with bearer auth, beside any
 * other chain's of this process (`alertmanager-routes.ts`), and reloads it.
 * @returns the route's removal.
 */
async function routeAlerts(run: Run, receiverUrl: string, webhookToken: string): Promise<() => Promise<void>> {
  const { state, namespace, hops } = run;
  try {
    return await addRoute(state, { namespace, receiverUrl, webhookToken });
  } catch (error) {
    throw new HopError("configure Alertmanager", (error as Error).message, hops);
  }
}

/**
 * Applies the original demo's AppMonitor, unchanged, in the namespace; rule-sync hears of it
 * through the Broker from the ApiServerSource (`eventing`), else by the event an ApiServerSource
 * would send, posted to it; waits for the PrometheusRule it writes.
 * @returns the AppMonitor as stored and the PrometheusRule's groups.
 */
async function syncRule(run: Run, ruleSync: FunctionProcess): Promise<{ stored: StoredAppMonitor; groups: { name: string }[] }> {
  const { state, options, namespace, hops, hop, custom } = run;
  await apply(state, await appMonitorManifest(options.trend, options.forSeconds), namespace);
  const stored = (await custom.getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace, plural: "appmonitors", name: "mymonitor" })) as StoredAppMonitor;
  if (options.eventing) {
    // The ApiServerSource's adapter sees the new object and sends its add event to the Broker.
    const reconciled = await until("rule-sync receives the AppMonitor's add event from the ApiServerSource", hops, 60_000, async () =>
      firstLog(ruleSync, (l) => l.msg === "AppMonitor reconciled" && l.eventType === "dev.knative.apiserver.resource.add" && l.namespace === namespace && l.name === "mymonitor"));
    const receipt = await brokerReceipt(run, "rule-sync-appmonitor-add", String(reconciled.eventId));
    hop("AppMonitor add event through the Broker to rule-sync", logTime(reconciled), `ApiServerSource appmonitors → Broker (ingress ${clock(receipt.arrivedAt)}, filter ${clock(receipt.at)}) → Trigger rule-sync-appmonitor-add`, logClock("rule-sync"));
  } else {
    // What an ApiServerSource in Resource mode sends for the new object.
    const message = HTTP.binary(new CloudEvent({
      type: "dev.knative.apiserver.resource.add",
      source: state.apiserverUrl,
      subject: `/apis/kubedemo.com/v1/namespaces/${namespace}/appmonitors/mymonitor`,
      datacontenttype: "application/json",
      data: stored,
      kind: "AppMonitor",
      name: "mymonitor",
      namespace,
    }));
    const res = await fetch(ruleSync.url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    if (!res.ok) throw new HopError("rule-sync", `answered ${res.status}: ${await res.text()}`, hops);
  }
  const rule = await until("rule-sync writes the PrometheusRule", hops, 20_000, async () =>
    (await custom.getNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace, plural: "prometheusrules", name: "mymonitor" })) as { spec: { groups: { name: string }[] } });
  hop("PrometheusRule written by rule-sync");
  return { stored, groups: rule.spec.groups };
}

/**
 * What prometheus-operator does with a PrometheusRule: its groups into a rule file, then a
 * reload (on the operator stack the operator and its config reloader do it themselves); waits
 * until Prometheus has loaded them and knows Alertmanager again.
 */
async function loadRule(run: Run, ruleFile: string, groups: { name: string }[]): Promise<void> {
  const { state, options, hops, hop } = run;
  if (!options.operator) {
    await writeFile(ruleFile, stringify({ groups }));
    const reload = await fetch(`${state.prometheusUrl}/-/reload`, { method: "POST" });
    if (!reload.ok) throw new HopError("load the rule into Prometheus", `reload answered ${reload.status}: ${await reload.text()}`, hops);
  }
  const groupNames = groups.map((g) => g.name);
  // The operator's way: its rule files ConfigMap, the kubelet's refresh of the mounted volume, the config reloader's reload.
  await until(options.operator ? "the operator's config reloader loads the rule into Prometheus" : "Prometheus loads the rule", hops, options.operator ? 300_000 : 20_000, async () => {
    const body = await getJson<{ data: { groups: { name: string }[] } }>(`${state.prometheusUrl}/api/v1/rules`);
    return groupNames.every((n) => body.data.groups.some((g) => g.name === n));
  });
  hop(options.operator ? "rule loaded by the operator's Prometheus" : "rule loaded by Prometheus");
  // Before Prometheus 2.55 a reload empties the list of Alertmanagers until discovery fills it
  // again, and an alert sent meanwhile is dropped, re-sent only a minute later
  // (prometheus/prometheus#13064; Debian's is 2.42): the OOM-kill alert, with no `for`, fires
  // within seconds of the reload.
  await until("Prometheus finds Alertmanager again after the reload", hops, 20_000, async () =>
    (await getJson<{ data: { activeAlertmanagers: unknown[] } }>(`${state.prometheusUrl}/api/v1/alertmanagers`)).data.activeAlertmanagers.length > 0);
}

/** Applies the workload's Deployment (placed on the real node with `realNode`) and waits for its one Running Pod. */
async function startMemhog(run: Run): Promise<MemhogPod> {
  const { state, options, namespace, hops, hop, core, workload } = run;
  // memhog's growing mode is memhog's: another workload grows by its own means.
  const grow = options.workload !== undefined ? undefined : options.oomKill === true ? "oom" : options.trend;
  await apply(state, options.realNode ? onRealNode(workload.manifest, grow, workload.container) : workload.manifest, namespace);
  const pod = await until(`${workload.name} Pod Running`, hops, 60_000, async () => {
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: workload.labelSelector })).items.filter((p) => p.status?.phase === "Running");
    return pods.length === 1 ? pods[0] : undefined;
  });
  const name = pod.metadata?.name ?? "";
  const memory = memoryOf(pod.spec?.containers, workload.container);
  hop(`${workload.name} Pod Running`, Date.now(), `${name}: requests ${memory.request}, limits ${memory.limit}`);
  return { pod, name, memory };
}

/**
 * Makes the alert's cause happen and waits until Prometheus has scraped it: the kernel's OOM kill
 * on the real node (`oomKill` with `realNode`), memhog's own allocation past the threshold on the
 * real node, a reported OOM kill on a kwok Node (`oomKill`), or else the usage annotation set
 * past the threshold (the AppMonitor's percent of the limit).
 */
async function causeAlert(run: Run, old: MemhogPod, stored: StoredAppMonitor): Promise<void> {
  const { state, options, namespace, hops, hop, core, workload, slow } = run;
  const { container } = workload;
  const oomSeries = `container_oom_events_total{namespace="${namespace}",pod="${old.name}",container="${container}"}`;
  // The crossing: the working set reaches the AppMonitor's percent of the limit.
  const percent = stored.spec?.memThresholdPercent ?? 75;
  const threshold = floor(multiply(parseQuantity(old.memory.limit ?? "0"), rational(BigInt(Math.round(percent * 100)), 10_000n)));
  const realKill = options.realNode && options.oomKill;
  const heapError = options.heapError;
  if (options.trend !== undefined) {
    // The trend's own cause: memhog grows from its start; the scale is to come before the crossing.
    hop("memhog grows steadily", Date.now(), `at ${options.trend.rate}/s toward its limit ${old.memory.limit} (threshold ${percent}%, ${threshold} bytes)`);
    return;
  }
  if (heapError !== undefined) {
    // The runtime gives up well under the limit; the kubelet keeps the log's tail as the termination message.
    const ended = await until(`${container} ends with its runtime's heap error`, hops, 240_000, async () =>
      heapErrorEnd(await core.readNamespacedPod({ name: old.name, namespace }), container, heapError.message));
    hop("container ended with its runtime's heap error", ended.finishedAt ? new Date(ended.finishedAt).getTime() : Date.now(),
      `lastState.terminated: ${ended.reason}, exit code ${ended.exitCode}; ${heapError.message.exec(ended.message ?? "")?.[0] ?? ""}`,
      ended.finishedAt ? kubeClock("the kubelet's lastState.terminated.finishedAt") : POLLED);
  } else if (realKill) {
    // The kernel kills the container at its limit; the kubelet reports it when it restarts the container.
    const killed = await until(`the kernel OOM-kills ${container}`, hops, 60_000, async () =>
      oomKilled(await core.readNamespacedPod({ name: old.name, namespace }), container));
    hop("container OOM-killed by the kernel", killed.finishedAt ? new Date(killed.finishedAt).getTime() : Date.now(),
      `lastState.terminated: ${killed.reason}, exit code ${killed.exitCode}`, killed.finishedAt ? kubeClock("the kubelet's lastState.terminated.finishedAt") : POLLED);
  } else if (options.realNode) {
    // memhog writes "memhog: holding N bytes" as it allocates; the kubelet time-stamps each line.
    const crossing = await until("memhog's working set crosses the threshold", hops, 60_000, async () => {
      const log = await core.readNamespacedPodLog({ name: old.name, namespace, container: "memhog", timestamps: true });
      return log.split("\n").map((l) => /^(\S+) memhog: holding (\d+) bytes/.exec(l)).find((m): m is RegExpExecArray => m !== null && BigInt(m[2] ?? "0") >= threshold);
    });
    hop("usage crossed the threshold", Date.parse(crossing[1] ?? ""), `memhog holds ${(Number(crossing[2]) / 2 ** 20).toFixed(0)}Mi of limit ${old.memory.limit}`, { source: "memhog's log line, its CRI log timestamp (containerd's)", resolutionMs: 1 });
  } else if (options.oomKill) {
    // increase() needs a sample from before the kill, as a real cAdvisor's counter has one.
    await until("Prometheus scrapes the OOM counter at 0", hops, 60_000, async () => (await promValue(state, oomSeries)) === "0");
    await reportOOMKill(core, namespace, old.name);
    await core.patchNamespacedPod(
      { name: old.name, namespace, body: { metadata: { annotations: { [oomEventsAnnotation]: "1" } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    hop("container OOM-killed", Date.now(), "lastState.terminated.reason OOMKilled; cAdvisor counts 1 OOM event", THIS_RUN);
  } else {
    const usage = options.usage ?? "300Mi";
    // Before the write: kwok's cAdvisor may serve the new usage to a scrape that began while it was under way.
    const setAt = Date.now();
    await core.patchNamespacedPod(
      { name: old.name, namespace, body: { metadata: { annotations: { [usageMemoryAnnotation]: usage } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    hop("usage crossed the threshold", setAt, `working set ${usage} of limit ${old.memory.limit}`, { source: "this run's clock, as it began to set the usage", resolutionMs: 1 });
  }

  if (realKill || heapError !== undefined) {
    const [what, why] = heapError === undefined ? ["OOM kill", "OOMKilled"] : ["heap error", "Error"];
    const reason = `kube_pod_container_status_last_terminated_reason{namespace="${namespace}",pod="${old.name}",container="${container}",reason="${why}"}`;
    await until(`Prometheus scrapes the ${what} from kube-state-metrics`, hops, 60_000 * slow, async () => (await promValue(state, reason)) === "1");
    hop(`${what} scraped by Prometheus`, await firstSampleAt(state, reason, (v) => v >= 1), `kube-state-metrics: last terminated reason ${why}`, SAMPLE);
  } else if (options.oomKill) {
    await until("Prometheus scrapes the OOM event", hops, 60_000, async () => Number(await promValue(state, oomSeries)) >= 1);
    hop("OOM event scraped by Prometheus", await firstSampleAt(state, oomSeries, (v) => v >= 1), undefined, SAMPLE);
  } else {
    const series = `container_memory_working_set_bytes{namespace="${namespace}",pod="${old.name}",container="${container}"}`;
    // The highest of the container's series, as rule-sync's rule takes it: the real node's kubelet
    // serves one from /metrics/cadvisor and one from /metrics/resource, and either may lag.
    await until("Prometheus scrapes the new working set", hops, 120_000 * slow, async () => {
      const value = await promValue(state, `max(${series})`);
      return value !== undefined && compare(parseQuantity(value), rational(threshold)) >= 0;
    }, () => scrapeDiagnosis(state, series));
    hop("working set scraped by Prometheus", await firstSampleAt(state, series, (v) => v >= Number(threshold)), undefined, SAMPLE);
  }
}

/**
 * Waits for the alert on the old Pod: pending (the threshold alert's `for`), firing in Prometheus,
 * then in Alertmanager, out of its `unprocessed` state.
 * @returns where Alertmanager routes it and what inhibits or silences it.
 */
async function alertFires(run: Run, oldName: string, stored: StoredAppMonitor): Promise<AlertmanagerRouting> {
  const { state, options, namespace, alertname, hops, hop, slow } = run;
  type PromAlert = { labels: Record<string, string>; state: string; activeAt: string };
  const alertFor = async (wanted: string) => {
    const body = await getJson<{ data: { alerts: PromAlert[] } }>(`${state.prometheusUrl}/api/v1/alerts`);
    return body.data.alerts.find((a) => a.labels.namespace === namespace && a.labels.pod === oldName && a.labels.alertname === alertname && a.state === wanted);
  };
  // The OOM-kill and heap-error alerts have no `for`: they fire at their first evaluation, never pending.
  if (!options.oomKill && options.heapError === undefined) {
    // The trend alert waits for its window to fill above the floor first.
    // A short `for` may end between two polls: a firing alert's activeAt is still when it went pending.
    const pending = await until("the alert goes pending in Prometheus", hops, (options.trend === undefined ? 30_000 : 300_000) * slow, async () => (await alertFor("pending")) ?? (await alertFor("firing")));
    hop("alert pending in Prometheus", Date.parse(pending.activeAt), `${pending.labels.alertname}{appmonitor="${pending.labels.appmonitor}"}, for ${stored.spec?.forSeconds ?? 60} s`, { source: "Prometheus's activeAt of the alert", resolutionMs: 1 });
  }
  await until("the alert fires in Prometheus", hops, 180_000 * slow, () => alertFor("firing"));
  hop("alert firing in Prometheus");
  type AmAlert = { labels: Record<string, string>; receivers: { name: string }[]; status: { state: string; inhibitedBy: string[]; silencedBy: string[] } };
  const received = await until("Alertmanager receives the alert", hops, 30_000 * slow, async () => {
    const alerts = await getJson<AmAlert[]>(`${state.alertmanagerUrl}/api/v2/alerts?${new URLSearchParams({ filter: `namespace="${namespace}"` })}`);
    return alerts.find((a) => a.labels.pod === oldName && a.labels.alertname === alertname && a.status.state !== "unprocessed");
  });
  const routing = { receivers: received.receivers.map((r) => r.name), inhibitedBy: received.status.inhibitedBy, silencedBy: received.status.silencedBy };
  hop("alert in Alertmanager", Date.now(), `receivers ${routing.receivers.join(", ")}; ${received.status.state}`);
  return routing;
}

/**
 * Reads the alert's way through the functions back from their JSON logs: memory-scaler's
 * decision for the old Pod, the request that carried it (the runtime's access line, written when
 * the request ends, after durationMs), the Broker's receipt (`eventing`), and the webhook request
 * to alert-receiver that was in flight when the event was sent.
 * @throws HopError when memory-scaler did not scale.
 */
async function observeScale(run: Run, fns: RunningFunctions, oldName: string): Promise<void> {
  const { options, namespace, hops, hop } = run;
  const { scaler, receiver } = fns;
  const podKey = `${namespace}/${oldName}`;
  const decided = await until("memory-scaler decides on the alerting Pod", hops, 30_000, async () =>
    firstLog(scaler, (l) => l.pod === podKey && DECISIONS.includes(String(l.outcome))));
  const span = (line: LogLine) => ({ end: logTime(line), start: logTime(line) - Number(line.durationMs ?? 0) });
  const scalerRequest = await until("memory-scaler's request log", hops, 5_000, async () =>
    firstLog(scaler, (l) => l.msg === "request" && l.requestId === decided.requestId));
  const eventArrived = span(scalerRequest).start;
  // Straight to memory-scaler, its request arrives while alert-receiver's webhook request is
  // in flight; through the Broker, the ingress accepts the event then (alert-receiver waits for
  // its 202) and the filter delivers it a little later.
  const receipt = options.eventing ? await brokerReceipt(run, "memory-scaler-alert-firing", String(decided.eventId)) : undefined;
  const sent = receipt?.arrivedAt ?? eventArrived;
  const webhook = await until("alert-receiver's webhook request log", hops, 5_000, async () =>
    firstLog(receiver, (l) => l.msg === "request" && l.path === "/" && span(l).start <= sent && sent <= span(l).end));
  hop("webhook received by alert-receiver", span(webhook).start, undefined, { source: "alert-receiver's access log, its end less durationMs", resolutionMs: 1 });
  if (receipt?.arrivedAt !== undefined) {
    hop("CloudEvent accepted by the Broker ingress", receipt.arrivedAt, `event ${receipt.eventId}`, { source: "the event's knativearrivaltime", resolutionMs: 1 });
    hop("CloudEvent handed to Trigger memory-scaler-alert-firing by the Broker filter", receipt.at, "through the in-memory channel", logClock("the Broker filter"));
  }
  hop("CloudEvent received by memory-scaler", eventArrived, undefined, { source: "memory-scaler's access log, its end less durationMs", resolutionMs: 1 });
  if (decided.outcome !== "scaled") throw new HopError("memory-scaler scales the Deployment", `${decided.outcome}: ${decided.reason} ${decided.msg ?? ""}`, hops);
  // memory-scaler logs its decision once the scale is whole (patch, Events, status): the patch came before.
  hop("Deployment patched by memory-scaler", logTime(decided), String(decided.msg ?? ""), { source: "memory-scaler's decision log line, written after the patch, its Events and status", resolutionMs: 1 });
}

/**
 * Waits until the new Pod runs and the old one is gone; on the real node, checks the new
 * container's cgroup limit (and that the old cgroup is gone), and with `oomKill` waits for the
 * new container's own kill at its new limit and memory-scaler's decision on it.
 */
async function awaitMemhogPod(run: Run, scaler: FunctionProcess, old: MemhogPod): Promise<MemhogPod> {
  const { options, namespace, hops, hop, core, workload } = run;
  const pod = await until("the new Pod runs and the old one is gone", hops, 60_000, async () => {
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: workload.labelSelector })).items;
    const running = pods.filter((p) => p.status?.phase === "Running" && p.metadata?.name !== old.name);
    return running.length === 1 && !pods.some((p) => p.metadata?.name === old.name) ? running[0] : undefined;
  });
  const memory = memoryOf(pod.spec?.containers, workload.container);
  hop("new Pod Running, old Pod gone", Date.now(), `${pod.metadata?.name}: requests ${memory.request}, limits ${memory.limit}`);
  if (options.realNode) {
    const limit = cgroupLimit(pod, workload.container);
    const wanted = floor(parseQuantity(memory.limit ?? "0"));
    if (limit !== wanted) throw new HopError("the new container's cgroup limit", `memory.limit_in_bytes is ${limit}, not ${wanted} (${memory.limit})`, hops);
    if (cgroupLimit(old.pod, workload.container) !== undefined) throw new HopError("the new container's cgroup limit", `the old container's cgroup is still there`, hops);
    hop("new container's cgroup limit", Date.now(), `memory.limit_in_bytes ${limit} (${memory.limit}); the old container's cgroup is gone`, THIS_RUN);
  }
  const name = pod.metadata?.name ?? "";
  const relieved = options.heapError?.relieved;
  if (relieved !== undefined) {
    // The relief reached the program: its own log says it holds more than its old heap could.
    const line = await until("the new program runs past its old heap", hops, 300_000, async () => {
      const log = await core.readNamespacedPodLog({ name, namespace, container: workload.container, timestamps: true }).catch(() => "");
      return log.split("\n").find((l) => relieved.test(l));
    });
    const [at = "", ...said] = line.split(" ");
    hop("the new program runs past its old heap", Date.parse(at), said.join(" "), { source: "the program's log line, its CRI log timestamp (containerd's)", resolutionMs: 1 });
  }
  if (options.realNode && options.oomKill) {
    // The new limit holds in the kernel: the new container grows until it is killed at it, and
    // that kill's alert is refused (one scale per cooldown), not a second scale.
    const killed = await until("the kernel OOM-kills the new container at its new limit", hops, 120_000, async () =>
      oomKilled(await core.readNamespacedPod({ name, namespace }), workload.container));
    hop("new container OOM-killed by the kernel", killed.finishedAt ? new Date(killed.finishedAt).getTime() : Date.now(), `at its limit ${memory.limit}`,
      killed.finishedAt ? kubeClock("the kubelet's lastState.terminated.finishedAt") : POLLED);
    const again = await until("memory-scaler decides on the new Pod's OOM alert", hops, 120_000, async () =>
      firstLog(scaler, (l) => l.pod === `${namespace}/${name}` && DECISIONS.includes(String(l.outcome))));
    hop("memory-scaler decides on the new Pod's kill", logTime(again), `${again.outcome}: ${again.reason}`, logClock("memory-scaler"));
  }
  return { pod, name, memory };
}

/**
 * What memory-scaler recorded of the scale: the AppMonitor's `status.scaleCount`, the trigger in
 * the Deployment's last-scale record and in the newest `recentScales` entry, the Deployment's
 * `Scaled` Events' notes.
 * @throws HopError when the new Pod's resources differ from the Deployment's template.
 */
async function recordedScale(run: Run, after: Memory): Promise<ChainResult["recorded"]> {
  const { namespace, hops, admin, apps, custom, workload } = run;
  const deployment = await apps.readNamespacedDeployment({ name: workload.name, namespace });
  const template = memoryOf(deployment.spec?.template.spec?.containers, workload.container);
  if (template.limit !== after.limit || template.request !== after.request) {
    throw new HopError("new Pod Running", `the Pod's resources ${JSON.stringify(after)} differ from the template's ${JSON.stringify(template)}`, hops);
  }
  const monitor = (await custom.getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace, plural: "appmonitors", name: "mymonitor" })) as
    { status?: { scaleCount?: number; recentScales?: { trigger?: string }[] } };
  const statusTrigger = monitor.status?.recentScales?.[0]?.trigger;
  const record = JSON.parse(deployment.metadata?.annotations?.[LAST_SCALE_RECORD_ANNOTATION] ?? "{}") as { trigger?: string };
  const events = (await admin.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace })).items
    .filter((e) => e.regarding?.kind === "Deployment" && e.regarding.name === workload.name && e.reason === "Scaled");
  return {
    ...(monitor.status?.scaleCount === undefined ? {} : { scaleCount: monitor.status.scaleCount }),
    ...(record.trigger === undefined ? {} : { trigger: record.trigger }),
    ...(statusTrigger === undefined ? {} : { statusTrigger }),
    scaledEvents: events.map((e) => e.note ?? ""),
  };
}

/**
 * The old Pod's working set as Prometheus scraped it from the kubelet's cAdvisor endpoint, from
 * its start to the patch (the hop "Deployment patched by memory-scaler"), with the threshold and
 * the limit in bytes: where the trend's scale came on the way to them.
 */
async function oldWorkingSet(run: Run, old: MemhogPod, stored: StoredAppMonitor): Promise<NonNullable<ChainResult["workingSet"]>> {
  const { state, namespace, hops, workload } = run;
  const patched = hops.find((h) => h.name === "Deployment patched by memory-scaler")?.at ?? Date.now();
  const started = hops.find((h) => h.name === `${workload.name} Pod Running`)?.at ?? patched;
  const series = `container_memory_working_set_bytes{namespace="${namespace}",pod="${old.name}",container="${workload.container}",metrics_path="/metrics/cadvisor"}`;
  const range = `${Math.ceil((patched - started) / 1000) + 30}s`;
  const body = await getJson<{ data: { result: { values: [number, string][] }[] } }>(`${state.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: `${series}[${range}]`, time: String(patched / 1000) })}`);
  const samples = body.data.result.flatMap((r) => r.values).map(([at, v]) => ({ at: Math.round(at * 1000), bytes: Number(v) })).sort((a, b) => a.at - b.at);
  const limit = Number(floor(parseQuantity(old.memory.limit ?? "0")));
  const percent = stored.spec?.memThresholdPercent ?? 75;
  return { samples, threshold: (limit * percent) / 100, limit };
}

/** Scrapes of the new Pod's working set the chart waits for: the new Pod seen under its new limit. */
const NEW_POD_SCRAPES = 3;

/**
 * The container's working set and limit, both Pods, from the old Pod's start to now, as
 * {@link ChainResult}'s `memory` says; undefined when a query fails. Reads once Prometheus holds
 * {@link NEW_POD_SCRAPES} of the new Pod's working set, or after a minute (× `slow`) with what it has.
 */
async function memoryOverTime(run: Run, old: MemhogPod, fresh: MemhogPod, stored: StoredAppMonitor): Promise<ChainResult["memory"]> {
  const { state, namespace, hops, workload, slow } = run;
  const freshWorkingSet = `container_memory_working_set_bytes{namespace="${namespace}",container="${workload.container}",pod="${fresh.name}",metrics_path="/metrics/cadvisor"}`;
  await waitUntil("the new Pod's working set scraped", async () => Number((await promValue(state, `count_over_time(${freshWorkingSet}[10m])`)) ?? 0) >= NEW_POD_SCRAPES,
    { timeoutMs: 60_000 * slow, intervalMs: 500 }).catch(() => undefined);
  const started = hops.find((h) => h.name === `${workload.name} Pod Running`)?.at ?? Date.now();
  const range = `${Math.ceil((Date.now() - started) / 1000) + 30}s`;
  const pods = `pod=~"${old.name}|${fresh.name}"`;
  const read = async (series: string) => (await getJson<{ data: { result: { metric: Record<string, string>; values: [number, string][] }[] } }>(
    `${state.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: `${series}[${range}]` })}`)).data.result;
  try {
    const base = `namespace="${namespace}",container="${workload.container}",${pods}`;
    const toSamples = (series: "working set" | "limit", result: Awaited<ReturnType<typeof read>>) =>
      result.flatMap((r) => r.values.map(([at, v]) => ({ series, pod: r.metric.pod ?? "", at: Math.round(at * 1000), bytes: Number(v) })));
    const workingSet = toSamples("working set", await read(`container_memory_working_set_bytes{${base},metrics_path="/metrics/cadvisor"}`));
    let limits = toSamples("limit", await read(`kube_pod_container_resource_limits{${base},resource="memory"}`));
    if (limits.length === 0) {
      // No kube-state-metrics: each Pod's limit is its spec's, at each of its working-set samples.
      const limitOf = (pod: string) => Number(floor(parseQuantity((pod === old.name ? old.memory.limit : fresh.memory.limit) ?? "0")));
      limits = workingSet.map((w) => ({ ...w, series: "limit" as const, bytes: limitOf(w.pod) }));
    }
    return { samples: [...workingSet, ...limits].sort((a, b) => a.at - b.at), thresholdPercent: stored.spec?.memThresholdPercent ?? 75 };
  } catch {
    return undefined;
  }
}

/**
 * Stops the functions and removes the scratch directory; unless `keep`, also puts Alertmanager's
 * configuration back, removes the rule file (reloading both) and deletes the namespace.
 */
async function cleanUp(run: Run, functions: readonly FunctionProcess[], ruleFile: string, unroute: (() => Promise<void>) | undefined): Promise<void> {
  const { state, options, namespace, core, tmp } = run;
  await Promise.all(functions.map((f) => f.stop()));
  await rm(tmp, { recursive: true, force: true });
  if (!options.keep && options.operator) {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  } else if (!options.keep) {
    await unroute?.().catch(() => undefined);
    await rm(ruleFile, { force: true });
    await fetch(`${state.prometheusUrl}/-/reload`, { method: "POST" }).catch(() => undefined);
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}

/**
 * Runs the whole chain on `state`'s stack. Installs (idempotently, by server-side apply) the
 * AppMonitor CRD, the PrometheusRule CRD, the functions' namespace and RBAC; starts the three
 * functions under their own ServiceAccounts; routes the namespace's alerts in Alertmanager to
 * alert-receiver; then drives and observes every hop.
 * @throws HopError naming the hop that did not happen (with the hops that did).
 */
export async function runChain(state: StackState, options: ChainOptions): Promise<ChainResult> {
  const { namespace } = options;
  if (options.eventing && !options.functionPods) throw new Error("eventing needs functionPods: the Broker delivers to the functions' Services");
  if (options.workload !== undefined && !(options.realNode && (options.oomKill || options.heapError !== undefined))) throw new Error("a workload of its own needs realNode and oomKill or heapError: it grows by its own means until the kernel kills it or its heap runs out");
  if (options.heapError !== undefined && (options.workload === undefined || options.oomKill)) throw new Error("heapError needs a workload of its own (a runtime with a heap) and no oomKill");
  if (options.trend !== undefined && !(options.realNode && !options.oomKill && options.workload === undefined)) throw new Error("trend needs realNode, memhog and no oomKill: memhog grows there for real");
  const onNode = state.prometheusOperator?.onRealNode;
  if (options.operator && !(options.eventing && onNode)) throw new Error("operator needs functionPods, eventing and a stack up with realNode and prometheusOperator");
  const hops: Hop[] = [];
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(state.kubeconfig);
  const run: Run = {
    state: options.operator && onNode ? { ...state, prometheusUrl: onNode.prometheusUrl, alertmanagerUrl: onNode.alertmanagerUrl } : state,
    slow: options.operator ? 3 : 1,
    options,
    namespace,
    alertname: options.oomKill ? "AppMonitorOOMKilled" : options.heapError !== undefined ? "AppMonitorHeapError" : options.trend !== undefined ? "AppMonitorMemoryTrend" : "AppMonitorMemoryHigh",
    hops,
    hop: (name, at = Date.now(), detail, clock = POLLED) => {
      const h: Hop = detail === undefined ? { name, at, ...clock } : { name, at, detail, ...clock };
      hops.push(h);
      options.onHop?.(h);
    },
    admin,
    core: admin.makeApiClient(k8s.CoreV1Api),
    apps: admin.makeApiClient(k8s.AppsV1Api),
    custom: admin.makeApiClient(k8s.CustomObjectsApi),
    workload: options.workload ?? (await memhogWorkload()),
    tmp: await mkdtemp(path.join(os.tmpdir(), "appmonitor-demo-")),
  };
  const functions: FunctionProcess[] = [];
  const ruleFile = path.join(state.rulesDir, `${namespace}-mymonitor.yml`);
  let unroute: (() => Promise<void>) | undefined;

  try {
    await installPrerequisites(run);
    const fns = await startFunctions(run, functions);
    if (options.operator) await routeAlertsThroughOperator(run, options.installed?.namespace ?? FUNCTIONS_NAMESPACE, fns.webhookToken);
    else unroute = await routeAlerts(run, fns.receiver.url, fns.webhookToken);
    const { stored, groups } = await syncRule(run, fns.ruleSync);
    await loadRule(run, ruleFile, groups);
    const old = await startMemhog(run);
    await causeAlert(run, old, stored);
    const alertmanager = await alertFires(run, old.name, stored);
    await observeScale(run, fns, old.name);
    const fresh = await awaitMemhogPod(run, fns.scaler, old);
    const recorded = await recordedScale(run, fresh.memory);
    // The decision lines name the Pod; the runtime's access lines carry the outcome too, without it.
    const decisions = fns.scaler.logs.filter((l) => l.pod !== undefined && DECISIONS.includes(String(l.outcome)))
      .map((l) => ({ pod: String(l.pod), ...(l.trigger === undefined ? {} : { trigger: String(l.trigger) }), outcome: String(l.outcome), reason: String(l.reason) }));
    const workingSet = options.trend === undefined ? undefined : await oldWorkingSet(run, old, stored);
    const memory = await memoryOverTime(run, old, fresh, stored);
    return {
      namespace, hops, before: old.memory, after: fresh.memory, oldPod: old.name, newPod: fresh.name, recorded, decisions, alertmanager,
      ...(workingSet === undefined ? {} : { workingSet }), ...(memory === undefined ? {} : { memory }),
    };
  } finally {
    await cleanUp(run, functions, ruleFile, unroute);
  }
}
