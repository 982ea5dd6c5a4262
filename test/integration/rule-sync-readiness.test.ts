// RuleReady and MetricsReady on real components: rule-sync (the launcher, under a token of
// exactly its ServiceAccount) asks a real Prometheus (Debian's, this file's own) that scrapes
// kwok's emulation of the kubelets' cAdvisor endpoint with kube-prometheus-stack's relabeling
// that drops `container_spec_*`, and later also a real kube-state-metrics (the pinned one, a host
// process). Rule groups are loaded as prometheus-operator loads them: the PrometheusRule's groups
// in a rule file of their own, then a reload.
//
// - RuleReady is False (RuleNotLoaded) until Prometheus lists the group, True once it does
//   (written by the follow-up, without another event), False again for a new generation until
//   that one is loaded, and an event that waits sees its own load;
// - MetricsReady is False naming container_spec_memory_limit_bytes and kube-state-metrics while
//   neither is in Prometheus, True once kube-state-metrics is scraped (the limit from it, as on
//   kube-prometheus-stack's defaults); with METRIC_SOURCE=kube-state-metrics it names
//   kube-state-metrics, then finds the covered Pods through its annotation allowlist; a container
//   whose heap a `heapMetrics: Watch` entry watches is HeapSeriesNotFound until a target of the
//   file's own serves its runtime's heap metrics with the Pod's labels;
// - a wrong PROMETHEUS_URL (nothing listening; an Alertmanager) shows in the status, with one
//   Warning Event per change, however many events and resyncs.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { RESOURCE_EVENT_PREFIX, RESYNC_EVENT_TYPE } from "../../functions/rule-sync/incoming-event.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { prometheusConfig, usageMemoryAnnotation } from "../harness/stack/config-files.ts";
import { kubeStateMetricsArgs, kubeStateMetricsScrapeJob, type KubeStateMetricsPorts } from "../harness/stack/kube-state-metrics.ts";
import { startProcess, tailOf, type TestProcess } from "../support/child-process.ts";
import { startAlertmanager, type TestAlertmanager } from "../support/alertmanager.ts";
import { describeAnswer } from "../support/post-event.ts";
import { startPrometheus, type TestPrometheus } from "../support/prometheus.ts";
import { APPMONITORS, createAppMonitor, installRuleSync, readAppMonitor, readRule, startRuleSync, type RuleSyncUnderTest, type StoredAppMonitor } from "../support/rule-sync.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../support/stack.ts";

const spec = { memThresholdPercent: 75, memMultiplier: 2, forSeconds: 60 };

/** kube-prometheus-stack's relabeling of the kubelet's cAdvisor job that matters here ("Drop container spec metrics that overlap with kube-state-metrics", its values' kubelet.serviceMonitor.cAdvisorMetricRelabelings). */
const CHART_DROPS_CONTAINER_SPEC = { source_labels: ["__name__"], action: "drop", regex: "container_spec.*" };

let prometheus: TestPrometheus;
let ksm: { process: TestProcess; ports: KubeStateMetricsPorts } | undefined;
/** A target serving a program's heap metrics, once a test starts it: its scrape job. */
let heapJob: Record<string, unknown> | undefined;

/** The test Prometheus's configuration: the stack's kwok cAdvisor job with the chart's drop, no Alertmanager, and kube-state-metrics when it runs. */
async function configuration(withKsm: boolean): Promise<Record<string, unknown>> {
  const state = await stack();
  const config = parse(prometheusConfig({
    scrapeInterval: "1s", evaluationInterval: "1s", kwokAddress: new URL(state.kwokUrl).host, nodes: state.nodes,
    rulesGlob: "unused", alertmanagerAddress: "unused",
    extraScrapeConfigs: [...(withKsm && ksm ? [kubeStateMetricsScrapeJob(ksm.ports)] : []), ...(heapJob === undefined ? [] : [heapJob])],
  })) as { scrape_configs: Record<string, unknown>[]; alerting?: unknown };
  delete config.alerting;
  for (const job of config.scrape_configs) if (job.job_name === "kubelet-cadvisor") job.metric_relabel_configs = [CHART_DROPS_CONTAINER_SPEC];
  return config;
}

before(async () => {
  await installRuleSync();
  prometheus = await startPrometheus(await configuration(false));
});

after(async () => {
  await ksm?.process.stop();
  await prometheus?.stop();
});

/** Starts kube-state-metrics (as the stack runs it beside the real node: Pods only, the opt-in annotation and Pod labels exported) and has the test Prometheus scrape it. */
async function startKubeStateMetrics(): Promise<void> {
  if (ksm) return;
  const state = await stack();
  const ports = { metrics: await freePort(), telemetry: await freePort() };
  const child = startProcess({ name: "kube-state-metrics", command: path.join(path.dirname(state.binaries.kubectl), "kube-state-metrics"), args: kubeStateMetricsArgs({ kubeconfig: state.kubeconfig, ports }) });
  ksm = { process: child, ports };
  await waitFor("kube-state-metrics ready", async () => {
    if (!child.running()) throw new Error(tailOf(child));
    return (await fetch(`http://127.0.0.1:${ports.telemetry}/readyz`)).ok;
  }, 60_000);
  await prometheus.configure(await configuration(true));
}

/** A kwok Pod with one container, limit 100Mi, working set 10Mi (far from any threshold: no alert fires). */
async function createPod(ns: string, name: string, annotations: Record<string, string> = {}): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, annotations: { [usageMemoryAnnotation]: "10Mi", ...annotations } },
      spec: { containers: [{ name: "main", image: "registry.example/app:1", resources: { requests: { memory: "64Mi" }, limits: { memory: "100Mi" } } }] },
    },
  });
}

/** Loads the AppMonitor's PrometheusRule into the test Prometheus as prometheus-operator does: its groups in a file `<ns>-<name>-<uid>`, then a reload. */
async function loadRule(ns: string, name: string): Promise<void> {
  const rule = await readRule(ns, name);
  assert.ok(rule?.metadata?.uid, `PrometheusRule ${ns}/${name}`);
  await prometheus.writeRules(`${ns}-${name}-${rule.metadata.uid}.yml`, rule.spec.groups);
}

const condition = (monitor: StoredAppMonitor, type: string) => monitor.status?.conditions?.find((c) => c.type === type);

/** Waits until the AppMonitor's `type` condition has `reason`; returns it. */
async function conditionBecomes(ns: string, name: string, type: string, reason: string, timeoutMs = 30_000) {
  return waitFor(`${type} ${reason} on ${ns}/${name}`, async () => {
    const found = condition(await readAppMonitor(ns, name), type);
    return found?.reason === reason ? found : undefined;
  }, timeoutMs, 200).catch(async (error: Error) => {
    throw new Error(`${error.message}; the AppMonitor says ${JSON.stringify((await readAppMonitor(ns, name)).status?.conditions)}`, { cause: error });
  });
}

/** rule-sync's Warning Events on the AppMonitor, by reason. */
async function warnings(ns: string, name: string): Promise<string[]> {
  const events = (await adminKubeConfig()).makeApiClient(k8s.EventsV1Api);
  const list = await events.listNamespacedEvent({ namespace: ns });
  return list.items.filter((e) => e.type === "Warning" && e.regarding?.kind === "AppMonitor" && e.regarding.name === name && e.reportingController === "kubedemo.com/rule-sync").map((e) => e.reason ?? "");
}

async function ruleSyncFor(t: TestContext, ns: string, env: Record<string, string>): Promise<RuleSyncUnderTest> {
  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false", ...env });
  t.after(() => fn.stop());
  return fn;
}

describe("RuleReady", () => {
  test("False until Prometheus has loaded the group, then True without another event; a new generation False until loaded; an event that waits sees its own load", { timeout: 120_000 }, async (t) => {
    const ns = await freshNamespace(t);
    await createPod(ns, "app");
    const fn = await ruleSyncFor(t, ns, { PROMETHEUS_URL: prometheus.url, RULE_LABELS: "release=prometheus", RULE_LOAD_WAIT_MS: "1500" });
    const monitor = await createAppMonitor(ns, "watch", spec);

    const added = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, monitor);
    assert.equal(added.status, 204, describeAnswer(added));
    assert.deepEqual([added.outcome, added.reason], ["created", "RuleNotLoaded"], "nothing loads it within the event's wait");
    const notLoaded = condition(await readAppMonitor(ns, "watch"), "RuleReady");
    assert.equal(notLoaded?.status, "False");
    assert.equal(
      notLoaded?.message,
      `PrometheusRule ${ns}/watch (generation 1) is applied, but Prometheus at ${prometheus.url} has not loaded its rule group appmonitor/${ns}/watch: ` +
        `prometheus-operator loads it once its Prometheus's ruleSelector matches the rule's labels (release=prometheus, app.kubernetes.io/managed-by=appmonitor-rule-sync) ` +
        `and its ruleNamespaceSelector selects namespace ${ns}, usually within two minutes; checked again at the next resync`,
    );

    // The operator's part: the file, then the reload. rule-sync follows the group and writes True by itself.
    await loadRule(ns, "watch");
    const loaded = await conditionBecomes(ns, "watch", "RuleReady", "RuleLoaded", 20_000);
    assert.equal(loaded.status, "True");
    assert.equal(loaded.message, `PrometheusRule ${ns}/watch (generation 1) is loaded by Prometheus at ${prometheus.url} as rule group appmonitor/${ns}/watch`);
    assert.equal(loaded.observedGeneration, 1);
    const groups = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as { data: { groups: { name: string; rules: { annotations: Record<string, string> }[] }[] } };
    const group = groups.data.groups.find((g) => g.name === `appmonitor/${ns}/watch`);
    assert.ok((group?.rules.length ?? 0) >= 2, "the group's rules are loaded");
    assert.deepEqual(new Set(group?.rules.map((r) => r.annotations.appmonitor_generation)), new Set(["1"]), "Prometheus shows the generation on each rule");

    // A new threshold: generation 2, applied; Prometheus still has generation 1.
    const custom = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
    await custom.patchNamespacedCustomObject({ ...APPMONITORS, namespace: ns, name: "watch", body: { spec: { memThresholdPercent: 80 } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const updated = await fn.send(`${RESOURCE_EVENT_PREFIX}update`, await readAppMonitor(ns, "watch"));
    assert.deepEqual([updated.outcome, updated.reason], ["updated", "RuleNotLoaded"], describeAnswer(updated));
    assert.match(condition(await readAppMonitor(ns, "watch"), "RuleReady")?.message ?? "", new RegExp(`has generation 1 of rule group appmonitor/${ns}/watch loaded, not this one yet`));
    await loadRule(ns, "watch");
    assert.equal((await conditionBecomes(ns, "watch", "RuleReady", "RuleLoaded", 20_000)).observedGeneration, 2);

    // Generation 3, loaded while its event waits: the event's own answer is RuleLoaded.
    await custom.patchNamespacedCustomObject({ ...APPMONITORS, namespace: ns, name: "watch", body: { spec: { memThresholdPercent: 85 } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const fn2 = await ruleSyncFor(t, ns, { PROMETHEUS_URL: prometheus.url, RULE_LOAD_WAIT_MS: "30000" });
    await fn.stop();
    const sending = fn2.send(`${RESOURCE_EVENT_PREFIX}update`, await readAppMonitor(ns, "watch"));
    await waitFor("the rule at generation 3", async () => (await readRule(ns, "watch"))?.metadata?.annotations?.["app-monitor.kubedemo.com/appmonitor-generation"] === "3");
    await loadRule(ns, "watch");
    const waited = await sending;
    assert.deepEqual([waited.outcome, waited.reason], ["updated", "RuleLoaded"], describeAnswer(waited));
    assert.equal(condition(await readAppMonitor(ns, "watch"), "RuleReady")?.observedGeneration, 3);
  });
});

describe("MetricsReady, on a Prometheus that drops container_spec_* as kube-prometheus-stack does", () => {
  test("False naming container_spec_memory_limit_bytes and kube-state-metrics (either source) while neither is there, with one Warning; True once kube-state-metrics is scraped, the covered Pods found through its annotation allowlist", { timeout: 180_000 }, async (t) => {
    assert.equal(ksm, undefined, "no kube-state-metrics yet");
    // One namespace per metric source, each with its own rule-sync.
    const cadvisor = await freshNamespace(t);
    const kubeState = await freshNamespace(t);
    await createPod(cadvisor, "app");
    await createPod(kubeState, "app", { "app-monitor.kubedemo.com/monitor": "true" });
    // The premise, as Prometheus sees it: the working set is scraped for the Pods, cAdvisor's limit nowhere, nor kube-state-metrics.
    for (const ns of [cadvisor, kubeState]) {
      await waitFor(`the working set of ${ns}/app in the test Prometheus`, async () => (await prometheus.query(`container_memory_working_set_bytes{namespace="${ns}"}`)).length > 0, 60_000);
    }
    assert.deepEqual(await prometheus.query("count(container_spec_memory_limit_bytes)"), [], "the chart's relabeling dropped it");
    assert.deepEqual(await prometheus.query("count(kube_pod_container_resource_limits)"), []);

    const fnCadvisor = await ruleSyncFor(t, cadvisor, { PROMETHEUS_URL: prometheus.url });
    const fnKubeState = await ruleSyncFor(t, kubeState, { PROMETHEUS_URL: prometheus.url, METRIC_SOURCE: "kube-state-metrics" });
    for (const [ns, fn] of [[cadvisor, fnCadvisor], [kubeState, fnKubeState]] as const) {
      await createAppMonitor(ns, "watch", spec);
      const added = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, await readAppMonitor(ns, "watch"));
      assert.equal(added.status, 204, describeAnswer(added));
    }

    const missing = condition(await readAppMonitor(cadvisor, "watch"), "MetricsReady");
    assert.deepEqual([missing?.status, missing?.reason], ["False", "LimitNotScraped"], JSON.stringify(missing));
    assert.match(missing?.message ?? "", new RegExp(
      `^no memory limit series in Prometheus at ${prometheus.url.replace(/[.]/g, "\\.")}: neither container_spec_memory_limit_bytes \\(kube-prometheus-stack drops it: its kubelet\\.serviceMonitor\\.cAdvisorMetricRelabelings drop container_spec_\\.\\*\\) ` +
      "nor kube-state-metrics' kube_pod_container_resource_limits \\(kube-state-metrics is not scraped\\); scrape kube-state-metrics",
    ));
    const missingKsm = condition(await readAppMonitor(kubeState, "watch"), "MetricsReady");
    assert.deepEqual([missingKsm?.status, missingKsm?.reason], ["False", "LimitNotScraped"], JSON.stringify(missingKsm));
    assert.match(missingKsm?.message ?? "", /^no kube_pod_container_resource_limits series in Prometheus at .*: kube-state-metrics is not scraped, and METRIC_SOURCE=kube-state-metrics reads the limit from it; .*; and no kube_pod_annotations series in Prometheus/);
    assert.deepEqual(await warnings(cadvisor, "watch"), ["LimitNotScraped"]);

    // The same facts again (a resync): nothing written, no second Warning.
    const before = (await readAppMonitor(cadvisor, "watch")).metadata.resourceVersion;
    assert.equal((await fnCadvisor.send(RESYNC_EVENT_TYPE, {})).status, 204);
    assert.equal((await readAppMonitor(cadvisor, "watch")).metadata.resourceVersion, before);
    assert.deepEqual(await warnings(cadvisor, "watch"), ["LimitNotScraped"]);

    await startKubeStateMetrics();
    for (const ns of [cadvisor, kubeState]) {
      await waitFor(`the limit of ${ns}/app in kube_pod_container_resource_limits`, async () => (await prometheus.query(`kube_pod_container_resource_limits{namespace="${ns}", resource="memory"}`)).length > 0, 60_000);
    }
    await waitFor("the Pod's annotation in kube_pod_annotations", async () => (await prometheus.query(`kube_pod_annotations{namespace="${kubeState}", annotation_app_monitor_kubedemo_com_monitor="true"}`)).length > 0, 60_000);
    assert.equal((await fnCadvisor.send(RESYNC_EVENT_TYPE, {})).status, 204);
    assert.equal((await fnKubeState.send(RESYNC_EVENT_TYPE, {})).status, 204);
    const found = condition(await readAppMonitor(cadvisor, "watch"), "MetricsReady");
    assert.deepEqual([found?.status, found?.reason], ["True", "SeriesFound"], JSON.stringify(found));
    assert.equal(found?.message, `Prometheus at ${prometheus.url} has series for every side of the rule in namespace ${cadvisor}: the working set (container_memory_working_set_bytes), the limit (kube_pod_container_resource_limits)`);
    const foundKsm = condition(await readAppMonitor(kubeState, "watch"), "MetricsReady");
    assert.deepEqual([foundKsm?.status, foundKsm?.reason], ["True", "SeriesFound"], JSON.stringify(foundKsm));
    assert.match(foundKsm?.message ?? "", /the limit \(kube_pod_container_resource_limits\), the covered Pods \(kube_pod_annotations\)$/);
    assert.deepEqual(await warnings(cadvisor, "watch"), ["LimitNotScraped"], "a condition that mends writes no Warning");
  });
});

describe("MetricsReady of a watched heap", () => {
  let target: Server | undefined;
  after(async () => {
    await new Promise<void>((resolve) => (target ? target.close(() => resolve()) : resolve()));
  });

  test("False HeapSeriesNotFound, naming the runtime's metrics and the labels, while the program's heap is not in Prometheus; True naming the heap once a PodMonitor-like scrape has it", { timeout: 180_000 }, async (t) => {
    const ns = await freshNamespace(t);
    await createPod(ns, "app");
    await startKubeStateMetrics();
    await waitFor(`the limit of ${ns}/app`, async () => (await prometheus.query(`kube_pod_container_resource_limits{namespace="${ns}", resource="memory"}`)).length > 0, 60_000);
    const fn = await ruleSyncFor(t, ns, { PROMETHEUS_URL: prometheus.url });
    await createAppMonitor(ns, "heap", { ...spec, containerPolicies: [{ containerName: "main", runtime: "Node.js", heapMetrics: "Watch" }] });
    const added = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, await readAppMonitor(ns, "heap"));
    assert.equal(added.status, 204, describeAnswer(added));
    const missing = condition(await readAppMonitor(ns, "heap"), "MetricsReady");
    assert.deepEqual([missing?.status, missing?.reason], ["False", "HeapSeriesNotFound"], JSON.stringify(missing));
    assert.match(missing?.message ?? "", new RegExp(`^no Node\\.js heap series for container main in namespace ${ns}, so heapMetrics: Watch never alerts: the program must export nodejs_heap_size_used_bytes with nodejs_heap_old_space_limit_bytes .*, scraped with the namespace, pod and container labels of its Pod`));

    // prom-client's heap and the limit gauge, labelled as a PodMonitor labels a Pod's target.
    target = createServer((_req, res) => {
      const labels = `namespace="${ns}",pod="app",container="main"`;
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(`nodejs_heap_size_used_bytes{${labels}} ${40 * 1024 * 1024}\nnodejs_heap_old_space_limit_bytes{${labels}} ${100 * 1024 * 1024}\n`);
    });
    await new Promise<void>((resolve) => target?.listen(0, "127.0.0.1", resolve));
    heapJob = { job_name: "app", honor_labels: true, static_configs: [{ targets: [`127.0.0.1:${(target.address() as { port: number }).port}`] }] };
    await prometheus.configure(await configuration(true));
    await waitFor(`the heap of ${ns}/app`, async () => (await prometheus.query(`nodejs_heap_size_used_bytes{namespace="${ns}"}`)).length > 0, 60_000);
    assert.equal((await fn.send(RESYNC_EVENT_TYPE, {})).status, 204);
    const found = condition(await readAppMonitor(ns, "heap"), "MetricsReady");
    assert.deepEqual([found?.status, found?.reason], ["True", "SeriesFound"], JSON.stringify(found));
    assert.match(found?.message ?? "", /, the heap of container main \(Node\.js\)$/);
  });
});

describe("a wrong PROMETHEUS_URL", () => {
  let alertmanager: TestAlertmanager;
  before(async () => {
    alertmanager = await startAlertmanager({ route: { receiver: "null" }, receivers: [{ name: "null" }] });
  });
  after(() => alertmanager?.stop());

  test("shows in the AppMonitor's status, with one Warning Event per change however many events and resyncs, and the events are still handled", { timeout: 120_000 }, async (t) => {
    const ns = await freshNamespace(t);
    const closed = `http://127.0.0.1:${await freePort()}`;
    const fn = await ruleSyncFor(t, ns, { PROMETHEUS_URL: closed });
    await createAppMonitor(ns, "watch", spec);
    const added = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, await readAppMonitor(ns, "watch"));
    assert.deepEqual([added.status, added.outcome, added.reason], [204, "created", "PrometheusUnreachable"], describeAnswer(added));
    assert.ok(await readRule(ns, "watch"), "the rule is written all the same");
    let monitor = await readAppMonitor(ns, "watch");
    for (const type of ["RuleReady", "MetricsReady"]) {
      const c = condition(monitor, type);
      assert.deepEqual([c?.status, c?.reason], ["Unknown", "PrometheusUnreachable"], type);
      assert.match(c?.message ?? "", new RegExp(`Prometheus at ${closed.replace(/[.]/g, "\\.")} did not answer: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+; check rule-sync's PROMETHEUS_URL`), type);
    }
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await fn.send(`${RESOURCE_EVENT_PREFIX}update`, monitor)).status, 204);
      assert.equal((await fn.send(RESYNC_EVENT_TYPE, {})).status, 204);
    }
    assert.deepEqual(await warnings(ns, "watch"), ["PrometheusUnreachable"], "one Warning for the change, none per event or tick");

    // Another wrong URL, one that answers: an Alertmanager is not Prometheus. A change: one more Warning.
    await fn.stop();
    const fn2 = await ruleSyncFor(t, ns, { PROMETHEUS_URL: alertmanager.url });
    monitor = await readAppMonitor(ns, "watch");
    const answered = await fn2.send(`${RESOURCE_EVENT_PREFIX}update`, monitor);
    assert.deepEqual([answered.status, answered.reason], [204, "PrometheusAPIError"], describeAnswer(answered));
    const c = condition(await readAppMonitor(ns, "watch"), "RuleReady");
    assert.deepEqual([c?.status, c?.reason], ["Unknown", "PrometheusAPIError"]);
    assert.match(c?.message ?? "", new RegExp(`Prometheus at ${alertmanager.url.replace(/[.]/g, "\\.")} answered something other than its HTTP API's success: HTTP 404 to GET /api/v1/rules`));
    await fn2.send(RESYNC_EVENT_TYPE, {});
    assert.deepEqual((await warnings(ns, "watch")).sort(), ["PrometheusAPIError", "PrometheusUnreachable"]);

    // Pointed at Prometheus, it mends: the conditions say what Prometheus says, and no new Warning
    // about Prometheus itself (whether this stack's Prometheus has the namespace's series, which
    // MetricsReady warns about, is not this test's).
    await fn2.stop();
    const fn3 = await ruleSyncFor(t, ns, { PROMETHEUS_URL: prometheus.url });
    await fn3.send(RESYNC_EVENT_TYPE, {});
    const mended = condition(await readAppMonitor(ns, "watch"), "RuleReady");
    assert.deepEqual([mended?.status, mended?.reason], ["False", "RuleNotLoaded"]);
    assert.deepEqual((await warnings(ns, "watch")).filter((reason) => reason.startsWith("Prometheus")).sort(), ["PrometheusAPIError", "PrometheusUnreachable"]);
  });
});
