// The demo's chain on the monitoring stack users run: prometheus-operator with a Prometheus
// (upstream, built here) and an Alertmanager (Debian's) as its StatefulSets on the stack's real
// node, written as kube-prometheus-stack 88.5.3 renders them (the kubelet ServiceMonitor with its
// default cAdvisor endpoint and relabelings, which drop container_spec_*; the general rules,
// Watchdog among them; kube-state-metrics with the chart's default flags; the release label's
// ruleSelector; matcher strategy OnNamespace), and the functions as the Eventing-only profile
// ships them, PROMETHEUS_URL included. Nothing is configured beyond docs/install.md's steps, the
// Alertmanager by its kube-prometheus-stack values as Helm applies them: the rule rule-sync
// writes is loaded by the operator's config reloader, its alert fires for memhog, is routed to the
// appmonitor receiver alone and inhibited by none of the chart's inhibit rules, reaches
// alert-receiver, and memhog is scaled once; Watchdog goes to the chart's null receiver;
// RuleReady and MetricsReady are True though the limit's cAdvisor series is dropped; and the
// functions' PodMonitor is loaded by the operator and their Pods scraped, and the dashboard's
// queries find the run there. One real node per machine: the file takes the machine-wide lock
// first.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { runChain, type ChainResult } from "../harness/demo/chain.ts";
import { buildImages } from "../../scripts/images/build.ts";
import { binarySetsFor, buildBinaries } from "../../scripts/lib/binaries.ts";
import { FUNCTION_POD_NAMES, FUNCTIONS_NAMESPACE } from "../harness/stack/function-pods-install.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { PROMETHEUS_OPERATOR } from "../harness/stack/prometheus-operator.ts";
import { down, up } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { acquireRealNodeLock } from "../harness/stack/real-node-lock.ts";
import { SHORT_FOR_SECONDS, waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

const NAMESPACE = "shop";

let state: StackState | undefined;
let stateDir = "";
let releaseLock: (() => Promise<void>) | undefined;
let chained: ChainResult | undefined;
/** The chain's run, for the tests beside it that need its events. */
const chainRun = Promise.withResolvers<ChainResult>();
// Awaited by a test only once it needs the chain: a failed chain fails its own test first.
chainRun.promise.catch(() => undefined);

before(async () => {
  // Built before the lock: under npm test, while the file before this one holds the node.
  const images = await buildImages(["memhog", ...FUNCTION_POD_NAMES, "alertmanager"]);
  await buildBinaries(process.env, undefined, binarySetsFor({ realNode: true, prometheusOperator: true, eventing: true }));
  releaseLock = await acquireRealNodeLock();
  stateDir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-operator-chain-"));
  const t0 = Date.now();
  state = await up({
    stateDir, nodes: 1, realNode: true, prometheusOperator: true,
    memhogArchive: images.find((i) => i.name === "memhog")?.archive ?? "",
    progress: (line) => process.stderr.write(`# stack: ${line}\n`),
  });
  process.stderr.write(`# stack with the real node and the operator's Prometheus and Alertmanager on it up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  process.env.APPMONITOR_STACK_DIR = stateDir;
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  if (state) await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
  await releaseLock?.();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

// The first scrapes after the operator's reload, the chain, and the functions' PodMonitor (applied
// once the chain's install has made the functions' namespace) each wait on their own: side by side.
describe("the operator's stack and the chain on it", { concurrency: 3 }, () => {
  test("the operator's Prometheus and Alertmanager run on the real node from the images built here, at the versions the stack pins", { timeout: 300_000 }, async () => {
    const onNode = state?.prometheusOperator?.onRealNode;
    assert.ok(onNode, "the stack records the operator's Pods");
    const info = await (await fetch(`${onNode.prometheusUrl}/api/v1/status/buildinfo`)).json() as { data: { version: string } };
    assert.equal(`v${info.data.version}`, onNode.prometheusVersion);
    const status = await (await fetch(`${onNode.alertmanagerUrl}/api/v2/status`)).json() as { versionInfo: { version: string } };
    assert.equal(`v${status.versionInfo.version}`, onNode.alertmanagerVersion);
    // Scraped as the chart scrapes: the kubelet's cAdvisor with container_spec_* dropped, kube-state-metrics' limits kept.
    const query = async (q: string) => ((await (await fetch(`${onNode.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: q })}`)).json()) as { data: { result: unknown[] } }).data.result.length;
    // Each target's first scrape comes within its 30 s interval of the operator's reload.
    const deadline = Date.now() + 180_000;
    const scraped = async () => (await query('container_memory_working_set_bytes{metrics_path="/metrics/cadvisor"}')) > 0 && (await query("kube_pod_info")) > 0;
    while (Date.now() < deadline && !(await scraped())) await new Promise((r) => setTimeout(r, 2000));
    assert.ok((await query('container_memory_working_set_bytes{metrics_path="/metrics/cadvisor", job="kubelet"}')) > 0, "the kubelet's cAdvisor is scraped through the chart's ServiceMonitor");
    assert.equal(await query("container_spec_memory_limit_bytes"), 0, "the chart's cAdvisor relabelings drop container_spec_*");
    assert.ok((await query('kube_pod_container_resource_limits{resource="memory"}')) > 0, "kube-state-metrics is scraped");
  });

  test("the demo's chain on the operator stack: the rule loaded by the config reloader, the alert routed to alert-receiver alone under OnNamespace, memhog scaled once", { timeout: 20 * 60_000 }, async (t) => {
    assert.ok(state);
    const run = runChain(state, {
      namespace: NAMESPACE, realNode: true, functionPods: true, eventing: true, keep: true, operator: true, forSeconds: SHORT_FOR_SECONDS,
      onProgress: (line) => t.diagnostic(line),
    });
    run.then(chainRun.resolve, chainRun.reject);
    chained = await run;
    const crossed = chained.hops.find((h) => h.name === "usage crossed the threshold")?.at ?? 0;
    for (const h of chained.hops) t.diagnostic(`${h.at >= crossed ? `+${((h.at - crossed) / 1000).toFixed(1)} s` : ""} ${h.name}${h.detail ? `: ${h.detail}` : ""}`);
    assert.deepEqual([chained.before, chained.after], [{ request: "256Mi", limit: "384Mi" }, { request: "512Mi", limit: "768Mi" }]);
    const names = chained.hops.map((h) => h.name);
    for (const hop of ["Alertmanager configured by the operator", "rule loaded by the operator's Prometheus", "alert firing in Prometheus", "alert in Alertmanager",
      "webhook received by alert-receiver", "Deployment patched by memory-scaler", "new container's cgroup limit"]) assert.ok(names.includes(hop), `${hop}: ${names.join(", ")}`);
    assert.deepEqual(chained.decisions.filter((d) => d.outcome === "scaled").map((d) => d.pod), [`${NAMESPACE}/${chained.oldPod}`]);
    assert.equal(chained.recorded.scaleCount, 1);
  });

  test("the functions' PodMonitor (knative/monitoring/) is selected by the operator's Prometheus, which scrapes each function's /metrics", { timeout: 600_000 }, async () => {
    assert.ok(state);
    const onNode = state.prometheusOperator?.onRealNode;
    assert.ok(onNode);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    // The install's namespace, made by the chain's set-up (the PodMonitor does not render it).
    await waitFor(`namespace ${FUNCTIONS_NAMESPACE}`, () => core.readNamespace({ name: FUNCTIONS_NAMESPACE }).then(() => true, () => false), 600_000, 2000);
    const { stdout } = await promisify(execFile)(state.binaries.kubectl, [`--kubeconfig=${state.kubeconfig}`, "apply", "-k", path.join(repoRoot, "knative", "monitoring")]);
    assert.match(stdout, /podmonitor\.monitoring\.coreos\.com\/appmonitor (created|configured)/);
    const series = async (q: string) => ((await (await fetch(`${onNode.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: q })}`)).json()) as { data: { result: { metric: Record<string, string> }[] } }).data.result;
    // The operator's reload, then the PodMonitor's 30 s interval. Each target's job is its Pod's
    // app.kubernetes.io/name (the PodMonitor's jobLabel), which the alerts on appmonitor select by.
    const up = `up{namespace="${FUNCTIONS_NAMESPACE}"} == 1`;
    const deadline = Date.now() + 480_000;
    let found: string[] = [];
    // The PodMonitor selects the dead-letter sink's Pod too: wait for each function's own, not for a count.
    const each = () => FUNCTION_POD_NAMES.map((name) => found.some((target) => target.startsWith(`${name} ${name}-`)));
    while (Date.now() < deadline) {
      found = (await series(up)).map((r) => `${r.metric.job ?? ""} ${r.metric.pod ?? ""}`).sort();
      if (each().every(Boolean)) break;
      await new Promise((r) => setTimeout(r, 5000));
    }
    assert.deepEqual(each(), FUNCTION_POD_NAMES.map(() => true), `scraped targets (job pod): ${found.join(", ")}`);
    // memory-scaler's own counter, of the chain's event: in the operator's Prometheus by the next scrape.
    await chainRun.promise;
    await waitFor("memory-scaler's own counter in the operator's Prometheus", async () =>
      (await series(`appmonitor_memory_scaler_events_total{namespace="${FUNCTIONS_NAMESPACE}"}`)).length > 0, 120_000, 2000);
    // The self-alerts on the functions' health, on these real labels: each running function's Pods
    // joined to kube-state-metrics' readiness (the second half of AppMonitorFunctionNotReady), and
    // neither alert's expression finding any of them.
    const alerts = parse(await readFile(path.join(repoRoot, "knative", "monitoring", "appmonitor-alerts.yaml"), "utf8")) as { spec: { groups: { rules: { alert: string; expr: string }[] }[] } };
    const expr = (alert: string) => alerts.spec.groups.flatMap((g) => g.rules).find((r) => r.alert === alert)?.expr ?? "";
    const [, ready] = expr("AppMonitorFunctionNotReady").split(/\bunless on \(namespace, job\)\s*/);
    assert.ok(ready, "AppMonitorFunctionNotReady counts the ready Pods after its unless");
    const readyJobs = (await series(ready)).filter((r) => r.metric.namespace === FUNCTIONS_NAMESPACE).map((r) => r.metric.job ?? "");
    for (const name of FUNCTION_POD_NAMES) assert.ok(readyJobs.includes(name), `${name} has a ready Pod by kube-state-metrics: ${readyJobs.join(", ")}`);
    for (const alert of ["AppMonitorFunctionNotReady", "AppMonitorFunctionNotScraped"]) {
      const found = (await series(expr(alert))).map((r) => r.metric.job ?? "");
      assert.deepEqual(found.filter((job) => (FUNCTION_POD_NAMES as readonly string[]).includes(job)), [], `${alert}: ${JSON.stringify(found)}`);
    }
  });
});

test("the rule came through the operator: in its rule files ConfigMap, selected by the release label; Alertmanager routed the alert to appmonitor alone, uninhibited, and Watchdog to the chart's null receiver", { timeout: 180_000 }, async () => {
  assert.ok(state && chained, "the chain ran");
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const files = await core.readNamespacedConfigMap({ namespace: PROMETHEUS_OPERATOR.namespace, name: `prometheus-${PROMETHEUS_OPERATOR.prometheus}-rulefiles-0` });
  assert.ok(Object.keys(files.data ?? {}).some((k) => k.startsWith(`${NAMESPACE}-mymonitor-`)), `rule files: ${Object.keys(files.data ?? {}).join(", ")}`);
  assert.deepEqual(chained.alertmanager, { receivers: ["appmonitor"], inhibitedBy: [], silencedBy: [] });
  // The Alertmanager's Pod moved when its spec.secrets rolled it: its address now.
  const pod = await core.readNamespacedPod({ namespace: PROMETHEUS_OPERATOR.namespace, name: `alertmanager-${PROMETHEUS_OPERATOR.alertmanager}-0` });
  const url = `http://${pod.status?.podIP ?? ""}:9093`;
  const deadline = Date.now() + 120_000;
  let watchdog: { receivers: { name: string }[] } | undefined;
  while (Date.now() < deadline && watchdog === undefined) {
    [watchdog] = (await (await fetch(`${url}/api/v2/alerts?${new URLSearchParams({ filter: 'alertname="Watchdog"' })}`)).json()) as { receivers: { name: string }[] }[];
    if (watchdog === undefined) await new Promise((r) => setTimeout(r, 5000));
  }
  assert.deepEqual(watchdog?.receivers.map((r) => r.name), ["null"], "the chart's Watchdog rule fires and its route sends it to null");
});

test("RuleReady and MetricsReady are True on kube-prometheus-stack's defaults: the limit comes from kube-state-metrics, container_spec_* being dropped", async () => {
  assert.ok(state && chained, "the chain ran");
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const monitor = await custom.getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace: NAMESPACE, plural: "appmonitors", name: "mymonitor" }) as
    { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } };
  const condition = (type: string) => monitor.status?.conditions?.find((c) => c.type === type);
  assert.equal(condition("RuleReady")?.status, "True", JSON.stringify(condition("RuleReady")));
  assert.equal(condition("MetricsReady")?.status, "True", JSON.stringify(condition("MetricsReady")));
  assert.match(condition("MetricsReady")?.message ?? "", /kube_pod_container_resource_limits/);
});

test("the dashboard's queries, run against the operator's Prometheus after the chain: each is valid, and those of the run's events return series with the labels their legends use", { timeout: 300_000 }, async () => {
  assert.ok(state && chained, "the chain ran");
  const onNode = state.prometheusOperator?.onRealNode;
  assert.ok(onNode);
  const dashboard = JSON.parse(await readFile(path.join(repoRoot, "knative", "monitoring", "dashboard.json"), "utf8")) as { panels: { title: string; targets: { expr: string; legendFormat: string }[] }[] };
  // increase() and rate() need two samples of each of the functions' series, the one of the
  // chain's scale too, which its first scrape after the event brought: wait for a second scrape.
  const twice = `min(count_over_time(appmonitor_memory_scaler_events_total{type="firing"}[10m])) >= 2`;
  const deadline = Date.now() + 180_000;
  const samples = async () => ((await (await fetch(`${onNode.prometheusUrl}/api/v1/query?${new URLSearchParams({ query: twice })}`)).json()) as { data: { result: unknown[] } }).data.result.length;
  while (Date.now() < deadline && (await samples()) === 0) await new Promise((r) => setTimeout(r, 5000));
  // What the run did not have: no skip, no failure, no denied call, no dead letter.
  const eventless = new Set(["Skipped, capped, held and leak-guarded", "Failed scales and denied API calls", "Dead letters"]);
  const end = Date.now() / 1000;
  for (const panel of dashboard.panels) {
    for (const target of panel.targets) {
      const params = new URLSearchParams({ query: target.expr, start: String(end - 1200), end: String(end), step: "30" });
      const body = await (await fetch(`${onNode.prometheusUrl}/api/v1/query_range?${params}`)).json() as { status: string; error?: string; data: { result: { metric: Record<string, string> }[] } };
      assert.equal(body.status, "success", `${panel.title}: ${target.expr}: ${body.error ?? ""}`);
      if (eventless.has(panel.title)) continue;
      assert.ok(body.data.result.length > 0, `${panel.title}: no series for ${target.expr}`);
      const labels = [...target.legendFormat.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1] as string);
      for (const series of body.data.result) for (const label of labels) assert.ok(series.metric[label] !== undefined, `${panel.title}: a series without ${label}: ${JSON.stringify(series.metric)}`);
    }
  }
});
