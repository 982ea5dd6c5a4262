// The release installed as a user installs it, on the stack's real node with Knative Eventing:
// `npm run release`'s directory (release()), its images pushed with its push-images.sh into the
// stack's registry under a registry name of the user's (registry.appmonitor.test/release, which the
// node's containerd pulls from that registry), then
//   - `helm install` of the packaged chart, Eventing-only profile, into the namespace `tools` (not
//     the shipped one), image.registry the one value set for the registry: every image pulled by
//     digest; the original memhog example scales 384Mi → 768Mi through the installed release
//     (the demo's chain: Prometheus, Alertmanager, alert-receiver, the Broker, memory-scaler);
//   - `helm upgrade --reuse-values --set pauseScaling=true` (the documented pause) and
//     logLevel=debug: the functions roll out with them, memory-scaler paused, the values of the
//     install (profile, registry, no Prometheus) kept; the AppMonitor and its status are kept, and
//     so is the webhook token;
//   - `helm test`, prometheusUrl the stack's Prometheus (relayed onto the node IP, which Pods
//     reach) with the alerts on appmonitor loaded, and dead-letter at 2 replicas (its
//     PodDisruptionBudget): passes; fails, naming it, when a self-alert is not loaded, and when
//     rule-sync is scaled to zero;
//   - `helm uninstall`: every object the release rendered is gone in every namespace; the CRD and
//     the AppMonitors stay, as do memory-scaler's annotations on the workload it scaled;
//   - the upgrade from the previous release, 0.2.0, built by its own commit's `npm run release`
//     (test/support/previous-release.ts, kept by commit): after the CRD's removal, `helm install`
//     of it (its values but the stack's) and memhog scaled once through it; the CRD step as
//     docs/install.md gives it (`kubectl apply --server-side --force-conflicts`; without
//     --force-conflicts it conflicts with Helm's field manager), then `helm upgrade --reuse-values`
//     to this release's chart: this release's images run and are Ready, the AppMonitor and its
//     status are kept, and a second memhog scales through them; `helm upgrade -f` of 0.2.0's
//     values.yaml passes this chart's schema.
// Figures (release, install, chain, upgrade, uninstall; the previous release's, the CRD step's and
// the upgrade's to all functions Ready) go to the diagnostics. One real node per
// machine: the file takes the machine-wide lock first.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parseAllDocuments, parseDocument, stringify } from "yaml";
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../../functions/lib/appmonitor.ts";
import { policyPath as inPlacePolicyPath } from "../../scripts/in-place-policy.ts";
import { release } from "../../scripts/release/release.ts";
import { previousRelease } from "../support/previous-release.ts";
import { runChain, type ChainResult } from "../harness/demo/chain.ts";
import { installEventing, placeNamespace, until } from "../harness/stack/eventing-install.ts";
import { binarySetsFor, buildBinaries } from "../../scripts/lib/binaries.ts";
import { REAL_NODE, realNodePaths } from "../harness/stack/real-node-config.ts";
import { hostsDirName, hostsToml } from "../harness/stack/registry-config.ts";
import { down, up } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { acquireRealNodeLock } from "../harness/stack/real-node-lock.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { startProcess, type Started } from "../harness/stack/processes.ts";
import { RELEASE_TEST_POD } from "../../scripts/release/chart-templates.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { SHORT_FOR_SECONDS } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

const run = promisify(execFile);
/** The user's registry, as the chart names it; the node's containerd pulls it from the stack's registry. */
const USER_REGISTRY = "registry.appmonitor.test/release";
/** Not the shipped namespace: every place that names it must follow. */
const NAMESPACE = "tools";
const WORKLOAD_NS = "release-demo";

let state: StackState | undefined;
let stateDir = "";
let releaseDir = "";
let helm = "";
let releaseLock: (() => Promise<void>) | undefined;
let kc: k8s.KubeConfig;
let chained: ChainResult | undefined;
/** The relay that puts the stack's Prometheus on the node IP, for the helm test Pod. */
let prometheusRelay: Started | undefined;
let uninstalled = false;
/** The release this one upgrades from, built from its commit: {@link previousRelease}. */
const PREVIOUS = "0.2.0";
let previousBuild: Promise<Awaited<ReturnType<typeof previousRelease>>> | undefined;
/** The release's and the stack's directory, removed at the end. */
let workDir = "";
const seconds: Record<string, number> = {};

async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  try {
    return await work();
  } finally {
    seconds[name] = (Date.now() - t0) / 1000;
  }
}

async function tool(file: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    return (await run(file, [...args], { maxBuffer: 64 << 20, env, timeout: 600_000 })).stdout;
  } catch (error) {
    throw new Error(`${path.basename(file)} ${args.join(" ")}: ${(error as { stderr?: string }).stderr ?? String(error)}`, { cause: error });
  }
}

const kubeconfigArg = () => `--kubeconfig=${state?.kubeconfig}`;
const chartFile = () => path.join(releaseDir, "appmonitor-0.2.0.tgz");
const helmArgs = (...args: string[]) => tool(helm, [...args, kubeconfigArg()]);
// The stack's Prometheus listens on the host, which no Pod reaches: memory-scaler is told to scale unverified.
const installValues = ["--set", "profile=eventing-only", "--set", `image.registry=${USER_REGISTRY}`, "--set", "prometheusUrl=", "--set", "allowUnverifiedAlerts=true"];

before(async () => {
  // The release is built before the lock: under npm test, while the file before this one holds the node.
  helm = path.join(await buildBinaries(process.env, undefined, binarySetsFor({ realNode: true, eventing: true, helm: true })), "helm");
  workDir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-release-helm-"));
  // 0.2.0's too (minutes from an empty cache, kept by commit after), in a podman store of its own.
  previousBuild = timed(`${PREVIOUS} release (built once per commit)`, () => previousRelease(PREVIOUS, (line) => process.stderr.write(`# ${PREVIOUS}: ${line}\n`)));
  previousBuild.catch(() => undefined); // its test awaits it, and fails on it
  releaseDir = await timed("release", () => release(path.join(workDir, "appmonitor-0.2.0"), (line) => process.stderr.write(`# release: ${line}\n`)));
  releaseLock = await acquireRealNodeLock();
  stateDir = path.join(workDir, "stack");
  await mkdir(stateDir);
  state = await timed("stack up with the real node", () => up({ stateDir, nodes: 1, realNode: true, progress: (line) => process.stderr.write(`# stack: ${line}\n`) }));
  process.env.APPMONITOR_STACK_DIR = stateDir;
  kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const registry = state.registry;
  assert.ok(registry, "the stack has its registry");
  // The user's registry is served by the stack's: containerd pulls registry.appmonitor.test from it.
  const hostsDir = path.join(realNodePaths(stateDir).containerdHostsDir, hostsDirName(USER_REGISTRY.split("/")[0] as string));
  await mkdir(hostsDir, { recursive: true });
  await writeFile(path.join(hostsDir, "hosts.toml"), hostsToml(USER_REGISTRY.split("/")[0] as string, registry.address));
  const pushed = await timed("push-images.sh", () => tool(path.join(releaseDir, "push-images.sh"), [`${registry.address}/${USER_REGISTRY}`], { ...process.env, PUSH_TOOL: "skopeo", TLS_VERIFY: "false" }));
  process.stderr.write(`# pushed:\n${pushed}`);
  await timed("Eventing install", () => installEventing(state as StackState));
  // What the cluster must have (docs/install.md, "Requirements"): prometheus-operator's PrometheusRule CRD.
  const promRuleCrd = path.join(path.dirname(state.binaries.kubectl), "crds", "monitoring.coreos.com_prometheusrules.yaml");
  await tool(state.binaries.kubectl, [kubeconfigArg(), "apply", "--server-side", "-f", promRuleCrd]);
  await tool(state.binaries.kubectl, [kubeconfigArg(), "wait", "--for=condition=Established", "--timeout=60s", "crd/prometheusrules.monitoring.coreos.com"]);
  // The namespaces first, placed on the real node, as the cluster's admin would prepare them.
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (const name of [NAMESPACE, WORKLOAD_NS]) {
    await core.createNamespace({ body: { metadata: { name } } });
    await placeNamespace(state, name);
  }
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  process.stderr.write(`# figures (s): ${JSON.stringify(seconds)}\n`);
  if (prometheusRelay) process.kill(prometheusRelay.pid, "SIGTERM");
  if (state) await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
  await releaseLock?.();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** The Pods and Warning Events of the install's namespace, for a failure's message. */
async function namespaceState(): Promise<string> {
  const kubectl = (state as StackState).binaries.kubectl;
  const pods = await tool(kubectl, [kubeconfigArg(), "get", "pods,deployments", "-n", NAMESPACE, "-o", "wide"]).catch((e: Error) => e.message);
  const events = await tool(kubectl, [kubeconfigArg(), "get", "events", "-n", NAMESPACE, "--field-selector", "type=Warning"]).catch((e: Error) => e.message);
  return `${pods}\n${events}`;
}

/** The objects of `helm get manifest`: what the release rendered and installed. */
async function releasedObjects(): Promise<{ apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }[]> {
  const text = await helmArgs("get", "manifest", "appmonitor", "-n", NAMESPACE);
  return parseAllDocuments(text).map((d) => d.toJS() as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }).filter((o) => o !== null);
}

const appMonitor = async (namespace = WORKLOAD_NS) => (await kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace, plural: "appmonitors", name: "mymonitor" })) as {
  metadata: { uid: string }; status?: { scaleCount?: number; recentScales?: unknown[] };
};

test("the release holds knative/'s in-place memory policies, and a monitoring.yaml without a Namespace (kubectl delete -f of it leaves the install)", async () => {
  assert.equal(await readFile(path.join(releaseDir, "admission", "in-place-memory.yaml"), "utf8"), await readFile(inPlacePolicyPath, "utf8"));
  const monitoring = parseAllDocuments(await readFile(path.join(releaseDir, "monitoring", "monitoring.yaml"), "utf8")).map((d) => (d.toJS() as { kind: string }).kind).sort();
  assert.deepEqual(monitoring, ["ConfigMap", "PodMonitor"]);
});

test("helm install of the release's chart, Eventing-only, into namespace tools: every image pulled by digest from the user's registry, and memhog scales through it", { timeout: 30 * 60_000 }, async (t) => {
  await timed("helm install", () => helmArgs("install", "appmonitor", chartFile(), "-n", NAMESPACE, ...installValues, "--wait", "--timeout", "5m")).catch(async (error: Error) => {
    throw new Error(`${error.message}\n${await namespaceState()}`, { cause: error });
  });
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const pods = (await core.listNamespacedPod({ namespace: NAMESPACE })).items.filter((p) => p.status?.phase === "Running");
  const byDigest = pods.flatMap((p) => p.spec?.containers.map((c) => c.image ?? "") ?? []).filter((i) => i.startsWith(`${USER_REGISTRY}/`));
  assert.ok(byDigest.length >= 4, `the function and sink Pods run images of the user's registry: ${byDigest.join(", ")}`);
  for (const image of byDigest) assert.match(image, /:[\w.-]+@sha256:[0-9a-f]{64}$/, image);
  for (const p of pods) assert.equal(p.spec?.nodeName, REAL_NODE.name, `${p.metadata?.name} on the real node`);
  const secret = await core.readNamespacedSecret({ name: "appmonitor-webhook", namespace: NAMESPACE });
  const webhookToken = Buffer.from(secret.data?.token ?? "", "base64").toString();
  assert.equal(webhookToken.length, 64, "the chart made the webhook token");

  chained = await timed("demo chain through the release", () => runChain(state as StackState, {
    namespace: WORKLOAD_NS, realNode: true, functionPods: true, eventing: true, keep: true, installed: { namespace: NAMESPACE, webhookToken }, forSeconds: SHORT_FOR_SECONDS,
    onProgress: (line) => t.diagnostic(line),
  }));
  assert.deepEqual(chained.before, { request: "256Mi", limit: "384Mi" });
  assert.deepEqual(chained.after, { request: "512Mi", limit: "768Mi" });
  assert.ok(chained.hops.some((h) => h.name === "CloudEvent handed to Trigger memory-scaler-alert-firing by the Broker filter"), "through the release's Broker");
  assert.equal(chained.recorded.scaleCount, 1);
  t.diagnostic(`images: ${[...new Set(byDigest)].join(", ")}`);
  for (const hop of chained.hops) t.diagnostic(`${hop.name}${hop.detail ? `: ${hop.detail}` : ""}`);
});

test("helm upgrade --reuse-values --set pauseScaling=true pauses memory-scaler, keeps the install's values, the AppMonitor, its status and the webhook token", { timeout: 15 * 60_000 }, async () => {
  assert.ok(chained, "the install test ran");
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const before = await appMonitor();
  const token = (await core.readNamespacedSecret({ name: "appmonitor-webhook", namespace: NAMESPACE })).data?.token;
  await timed("helm upgrade", () => helmArgs("upgrade", "appmonitor", chartFile(), "-n", NAMESPACE, "--reuse-values", "--set", "pauseScaling=true", "--set", "logLevel=debug", "--wait", "--timeout", "5m"));
  for (const name of ["alert-receiver", "memory-scaler", "rule-sync"]) {
    const d = await apps.readNamespacedDeployment({ name, namespace: NAMESPACE });
    const container = d.spec?.template.spec?.containers[0];
    assert.equal(container?.env?.find((e) => e.name === "LOG_LEVEL")?.value, "debug", name);
    assert.match(container?.image ?? "", new RegExp(`^${USER_REGISTRY}/.*@sha256:[0-9a-f]{64}$`), `${name}: still the user's registry`);
    assert.equal(d.status?.updatedReplicas, 1, `${name} rolled out`);
  }
  // The API server leaves an empty value out.
  const scalerEnv = Object.fromEntries(((await apps.readNamespacedDeployment({ name: "memory-scaler", namespace: NAMESPACE })).spec?.template.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? ""]));
  assert.deepEqual([scalerEnv.PAUSE_SCALING, scalerEnv.PROMETHEUS_URL, scalerEnv.ALLOW_UNVERIFIED_ALERTS], ["true", "", "true"], "paused, the install's values kept");
  const values = JSON.parse(await helmArgs("get", "values", "appmonitor", "-n", NAMESPACE, "-o", "json")) as Record<string, unknown>;
  assert.deepEqual(values, { profile: "eventing-only", image: { registry: USER_REGISTRY }, prometheusUrl: "", allowUnverifiedAlerts: true, pauseScaling: true, logLevel: "debug" });
  const afterUpgrade = await appMonitor();
  assert.equal(afterUpgrade.metadata.uid, before.metadata.uid, "the same AppMonitor");
  assert.equal(afterUpgrade.status?.scaleCount, 1);
  assert.deepEqual(afterUpgrade.status?.recentScales, before.status?.recentScales);
  assert.equal((await core.readNamespacedSecret({ name: "appmonitor-webhook", namespace: NAMESPACE })).data?.token, token, "the token is kept");
  assert.match(await helmArgs("status", "appmonitor", "-n", NAMESPACE), /REVISION: 2/);
});

/** `helm test` of the release: whether it passed, helm's output, and the test Pod's log (its checks, one line each). */
async function helmTest(): Promise<{ passed: boolean; output: string; log: string }> {
  const kubectl = (state as StackState).binaries.kubectl;
  const [passed, output] = await timed("helm test", () => helmArgs("test", "appmonitor", "-n", NAMESPACE, "--timeout", "3m").then((out) => [true, out] as const, (error: Error) => [false, error.message] as const));
  const log = await tool(kubectl, [kubeconfigArg(), "logs", "-n", NAMESPACE, RELEASE_TEST_POD]).catch((e: Error) => `no log: ${e.message}`);
  return { passed, output, log };
}

test("helm test passes where each function answers and Prometheus has loaded the alerts on appmonitor; it fails, naming what, when a self-alert is not loaded and when a function is scaled to zero", { timeout: 20 * 60_000 }, async (t) => {
  assert.ok(chained, "the install test ran");
  const st = state as StackState;
  const kubectl = st.binaries.kubectl;
  // The stack's Prometheus listens on 127.0.0.1, which no Pod reaches: relayed onto the node IP, which Pods do.
  const relayPort = await freePort();
  prometheusRelay = startProcess("prometheus-relay", process.execPath, [
    path.join(repoRoot, "test", "harness", "stack", "tcp-relay.ts"), REAL_NODE.nodeIp, String(relayPort), "127.0.0.1", new URL(st.prometheusUrl).port,
  ], path.join(stateDir, "prometheus-relay.log"));
  const relayed = `http://${REAL_NODE.nodeIp}:${relayPort}`;
  // The alerts on appmonitor loaded by the stack's Prometheus (a plain one: the chart's PrometheusRule, as prometheus-operator would load it).
  const rule = parseDocument(await readFile(path.join(repoRoot, "knative", "monitoring", "appmonitor-alerts.yaml"), "utf8")).toJS() as { spec: { groups: { name: string; rules: { alert?: string }[] }[] } };
  const rulesFile = path.join(st.rulesDir, "appmonitor-alerts.yml");
  const load = async (groups: typeof rule.spec.groups) => {
    await writeFile(rulesFile, stringify({ groups }));
    assert.equal((await fetch(`${st.prometheusUrl}/-/reload`, { method: "POST" })).status, 200, "Prometheus reloads its rules");
  };
  await load(rule.spec.groups);
  await timed("helm upgrade for helm test", () => helmArgs("upgrade", "appmonitor", chartFile(), "-n", NAMESPACE, "--reuse-values",
    "--set", `prometheusUrl=${relayed}`, "--set", "replicas.deadLetter=2", "--wait", "--timeout", "5m"));
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  assert.equal((await apps.readNamespacedDeployment({ name: "appmonitor-dead-letter", namespace: NAMESPACE })).status?.readyReplicas, 2);
  const readBudget = () => kc.makeApiClient(k8s.PolicyV1Api).readNamespacedPodDisruptionBudget({ name: "appmonitor-dead-letter", namespace: NAMESPACE });
  // The disruption controller writes the budget's status after the Pods are ready.
  await until(async () => (await readBudget()).status?.currentHealthy === 2, 60_000, async () => `PodDisruptionBudget appmonitor-dead-letter: ${JSON.stringify((await readBudget()).status)}`);
  const budget = await readBudget();
  assert.deepEqual([budget.spec?.maxUnavailable, budget.status?.currentHealthy, budget.status?.disruptionsAllowed], [1, 2, 1], "the budget counts both replicas and allows one eviction");

  const passed = await helmTest();
  t.diagnostic(`helm test, passing:\n${passed.log}`);
  assert.ok(passed.passed, `${passed.output}\n${passed.log}`);
  for (const name of ["alert-receiver", "memory-scaler", "rule-sync", "appmonitor-dead-letter"]) assert.match(passed.log, new RegExp(`^ok ${name}: http://${name}\\.${NAMESPACE}\\.svc\\.cluster\\.local/health/readiness answered 200$`, "m"));
  const alertCount = rule.spec.groups.flatMap((g) => g.rules.filter((r) => r.alert)).length;
  assert.match(passed.log, new RegExp(`^ok Prometheus at ${relayed} has loaded the ${alertCount} self-alerts$`, "m"));

  // A self-alert Prometheus has not loaded.
  await load(rule.spec.groups.map((g) => ({ ...g, rules: g.rules.filter((r) => r.alert !== "AppMonitorDeadLetters") })));
  const missing = await helmTest();
  t.diagnostic(`helm test, a self-alert missing:\n${missing.log}`);
  assert.equal(missing.passed, false, missing.output);
  assert.match(missing.log, /^FAIL Prometheus at \S+ has not loaded the self-alerts AppMonitorDeadLetters /m);
  await load(rule.spec.groups);

  // A function scaled to zero: its Service has no endpoint to answer.
  await tool(kubectl, [kubeconfigArg(), "scale", "deployment/rule-sync", "-n", NAMESPACE, "--replicas=0"]);
  await tool(kubectl, [kubeconfigArg(), "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=rule-sync", "-n", NAMESPACE, "--timeout=120s"]);
  const scaled = await helmTest();
  t.diagnostic(`helm test, rule-sync scaled to zero:\n${scaled.log}`);
  assert.equal(scaled.passed, false, scaled.output);
  assert.match(scaled.log, new RegExp(`^FAIL rule-sync: http://rule-sync\\.${NAMESPACE}\\.svc\\.cluster\\.local/health/readiness did not answer`, "m"));
  assert.match(scaled.log, /^ok alert-receiver: /m, "the others still answer");
  await tool(kubectl, [kubeconfigArg(), "delete", "pod", RELEASE_TEST_POD, "-n", NAMESPACE, "--wait"]);
});

test("helm uninstall removes every object the release installed, in every namespace; the CRD, the AppMonitors and memory-scaler's annotations on the workload stay", { timeout: 10 * 60_000 }, async (t) => {
  assert.ok(chained, "the install test ran");
  const installed = await releasedObjects();
  assert.ok(installed.length > 30, `${installed.length} objects`);
  await timed("helm uninstall", () => helmArgs("uninstall", "appmonitor", "-n", NAMESPACE, "--wait", "--timeout", "5m"));
  const kubectl = (state as StackState).binaries.kubectl;
  const kinds = [...new Set(installed.map((o) => `${o.kind}.${o.apiVersion.includes("/") ? o.apiVersion.split("/")[0] : ""}`.replace(/\.$/, "")))].sort();
  const left = await tool(kubectl, [kubeconfigArg(), "get", kinds.join(","), "--all-namespaces", "-o", "json"]);
  const names = new Set(installed.map((o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`));
  const remaining = (JSON.parse(left) as { items: { kind: string; metadata: { name: string; namespace?: string } }[] }).items
    .map((o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`).filter((k) => names.has(k));
  assert.deepEqual(remaining, [], "nothing the release installed is left");
  // What Eventing made for the release (the Broker's channel, the adapter's Deployment) goes with it.
  const inNamespace = JSON.parse(await tool(kubectl, [kubeconfigArg(), "get", "all,brokers,triggers,inmemorychannels,subscriptions,apiserversources,pingsources,sinkbindings", "-n", NAMESPACE, "-o", "json"])) as { items: { kind: string; metadata: { name: string } }[] };
  const eventually = inNamespace.items.filter((o) => !(o.kind === "Service" && o.metadata.name === "kubernetes"));
  t.diagnostic(`kubectl get ${kinds.join(",")} --all-namespaces: none of the release's; in ${NAMESPACE} afterwards: ${eventually.map((o) => `${o.kind}/${o.metadata.name}`).join(", ") || "nothing"}`);
  const crd = await kc.makeApiClient(k8s.ApiextensionsV1Api).readCustomResourceDefinition({ name: "appmonitors.kubedemo.com" });
  assert.equal(crd.metadata?.name, "appmonitors.kubedemo.com", "Helm keeps the CRD of crds/");
  assert.equal((await appMonitor()).status?.scaleCount, 1, "the AppMonitor and its status stay with the CRD");
  const memhog = await kc.makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
  const annotations = memhog.metadata?.annotations ?? {};
  assert.ok(annotations[LAST_SCALE_ANNOTATION] && annotations[LAST_SCALE_RECORD_ANNOTATION], "memory-scaler's record of the scale stays on the workload");
  assert.equal(memhog.spec?.template.spec?.containers[0]?.resources?.limits?.memory, "768Mi", "and so does the memory it set");
  await tool(kubectl, [kubeconfigArg(), "annotate", "deployment", "memhog", "-n", WORKLOAD_NS, `${LAST_SCALE_ANNOTATION}-`, `${LAST_SCALE_RECORD_ANNOTATION}-`]);
  const cleaned = await kc.makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "memhog", namespace: WORKLOAD_NS });
  assert.equal(Object.keys(cleaned.metadata?.annotations ?? {}).filter((k) => k.startsWith("app-monitor.kubedemo.com/")).length, 0, "the documented command removes them");
  uninstalled = true;
});

/** The stack's registry under the user's registry name, where push-images.sh pushes. */
const pushTarget = () => `${(state as StackState).registry?.address}/${USER_REGISTRY}`;

/** The webhook token of the install's Secret. */
async function webhookToken(): Promise<string> {
  const secret = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedSecret({ name: "appmonitor-webhook", namespace: NAMESPACE });
  return Buffer.from(secret.data?.token ?? "", "base64").toString();
}

/** Creates a workload namespace placed on the real node, as the cluster's admin would. */
async function workloadNamespace(name: string): Promise<void> {
  await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name } } });
  await placeNamespace(state as StackState, name);
}

const UPGRADE_NS = "upgrade-demo";
let previousDir = "";
let previousChain: ChainResult | undefined;

test(`helm install of ${PREVIOUS}, released from its commit, with its default values but the stack's: memhog scales once through it`, { timeout: 60 * 60_000 }, async (t) => {
  assert.ok(uninstalled, "the uninstall test ran");
  assert.ok(previousBuild, "before() started its build");
  const previous = await previousBuild;
  previousDir = previous.dir;
  t.diagnostic(`${PREVIOUS}: ${previous.commit.slice(0, 7)}, ${previous.built ? "built" : "kept"} in ${previous.dir}`);
  const kubectl = (state as StackState).binaries.kubectl;
  // After the uninstall, the documented full removal: the CRD goes, and 0.2.0 installs its own from crds/.
  await tool(kubectl, [kubeconfigArg(), "delete", "crd", "appmonitors.kubedemo.com", "--wait"]);
  await tool(path.join(previousDir, "push-images.sh"), [pushTarget()], { ...process.env, PUSH_TOOL: "skopeo", TLS_VERIFY: "false" });
  await workloadNamespace(UPGRADE_NS);
  // Its own values but for the stack's: the Eventing-only profile (the stack has no Serving), the registry, no Prometheus.
  await timed(`helm install ${PREVIOUS}`, () => helmArgs("install", "appmonitor", path.join(previousDir, `appmonitor-${PREVIOUS}.tgz`), "-n", NAMESPACE,
    "--set", "profile=eventing-only", "--set", `image.registry=${USER_REGISTRY}`, "--set", "prometheusUrl=", "--wait", "--timeout", "5m")).catch(async (error: Error) => {
    throw new Error(`${error.message}\n${await namespaceState()}`, { cause: error });
  });
  const chainStart = Date.now();
  previousChain = await timed(`demo chain through ${PREVIOUS}`, async () => runChain(state as StackState, {
    namespace: UPGRADE_NS, realNode: true, functionPods: true, eventing: true, keep: true, installed: { namespace: NAMESPACE, webhookToken: await webhookToken() }, forSeconds: SHORT_FOR_SECONDS,
    onProgress: (line) => t.diagnostic(line),
  }));
  // Each hop from the chain's start, its set-up (the installed functions found Ready) included.
  for (const h of previousChain.hops) t.diagnostic(`+${((h.at - chainStart) / 1000).toFixed(1)} s ${h.name}${h.detail ? `: ${h.detail}` : ""}`);
  assert.deepEqual(previousChain.after, { request: "512Mi", limit: "768Mi" });
  const status = (await appMonitor(UPGRADE_NS)).status;
  assert.equal(status?.scaleCount, 1);
  assert.ok((status?.recentScales?.length ?? 0) > 0, "status.recentScales holds the scale");
});

test(`from ${PREVIOUS}: the documented CRD step, then helm upgrade --reuse-values to this release's chart: the AppMonitor and its status kept, this release's functions Ready, and memhog scales through them`, { timeout: 30 * 60_000 }, async (t) => {
  assert.ok(previousChain, "the install of the previous release ran");
  const kubectl = (state as StackState).binaries.kubectl;
  const crdFile = path.join(releaseDir, "manifests", "appmonitor-crd.yaml");
  const crdSchema = async () => JSON.stringify((await kc.makeApiClient(k8s.ApiextensionsV1Api).readCustomResourceDefinition({ name: "appmonitors.kubedemo.com" })).spec.versions[0]?.schema);
  assert.equal((await crdSchema()).includes('"runtime"'), false, `${PREVIOUS}'s CRD: no containerPolicies[].runtime`);
  // Helm created the CRD from crds/ and owns its fields: a plain server-side apply conflicts with it.
  await assert.rejects(tool(kubectl, [kubeconfigArg(), "apply", "--server-side", "-f", crdFile]), /conflict[\s\S]*"helm"/i);
  await timed("CRD step", () => tool(kubectl, [kubeconfigArg(), "apply", "--server-side", "--force-conflicts", "-f", crdFile]));
  await tool(kubectl, [kubeconfigArg(), "wait", "--for=condition=Established", "--timeout=60s", "crd/appmonitors.kubedemo.com"]);
  assert.ok((await crdSchema()).includes('"runtime"'), "this release's CRD is served");

  const before = await appMonitor(UPGRADE_NS);
  // An empty prometheusUrl now needs allowUnverifiedAlerts (CHANGELOG): refused before anything changes.
  await assert.rejects(helmArgs("upgrade", "appmonitor", chartFile(), "-n", NAMESPACE, "--reuse-values"), /prometheusUrl is empty/);
  const t0 = Date.now();
  const notes = await helmArgs("upgrade", "appmonitor", chartFile(), "-n", NAMESPACE, "--reuse-values", "--set", "allowUnverifiedAlerts=true", "--wait", "--timeout", "5m").catch(async (error: Error) => {
    throw new Error(`${error.message}\n${await namespaceState()}`, { cause: error });
  });
  // This release's images, by the digests it pinned (images.txt), whatever digests the kept values hold.
  const digests = new Map((await readFile(path.join(releaseDir, "images.txt"), "utf8")).trim().split("\n").map((l) => l.split(" ")).map(([, name, tag, digest]) => [name, `${tag}@${digest}`]));
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  for (const name of ["alert-receiver", "memory-scaler", "rule-sync", "appmonitor-dead-letter"]) {
    const d = await apps.readNamespacedDeployment({ name, namespace: NAMESPACE });
    const image = d.spec?.template.spec?.containers[0]?.image ?? "";
    const shipped = `appmonitor-${name.replace(/^appmonitor-/, "")}`;
    assert.equal(image, `${USER_REGISTRY}/${shipped}:${digests.get(shipped)}`, `${name} runs this release's image`);
    assert.equal(d.status?.readyReplicas, d.spec?.replicas, `${name} Ready`);
    assert.equal(d.status?.updatedReplicas, d.spec?.replicas, `${name} rolled out`);
  }
  seconds["helm upgrade to all functions Ready"] = (Date.now() - t0) / 1000;
  assert.match(notes, /WARNING: values ignored[\s\S]*images\.eventDisplay/, "NOTES name what 0.2.0's values hold that this chart ignores");
  const kept = await appMonitor(UPGRADE_NS);
  assert.equal(kept.metadata.uid, before.metadata.uid, "the same AppMonitor");
  assert.deepEqual(kept.status?.recentScales, before.status?.recentScales, "its status kept");

  const again = await timed("demo chain through the upgraded release", async () => runChain(state as StackState, {
    namespace: `${UPGRADE_NS}-2`, realNode: true, functionPods: true, eventing: true, keep: true, installed: { namespace: NAMESPACE, webhookToken: await webhookToken() }, forSeconds: SHORT_FOR_SECONDS,
    onProgress: (line) => t.diagnostic(line),
  }));
  assert.deepEqual(again.after, { request: "512Mi", limit: "768Mi" });
  assert.equal(again.recorded.scaleCount, 1);
  t.diagnostic(notes.slice(notes.indexOf("WARNING")));
});

test(`helm upgrade -f ${PREVIOUS}'s values.yaml: this chart's schema takes it, and what it ignores is named`, { timeout: 5 * 60_000 }, async (t) => {
  assert.ok(previousDir, "the previous release is there");
  const file = path.join(path.dirname(releaseDir), `values-${PREVIOUS}.yaml`);
  await writeFile(file, await helmArgs("show", "values", path.join(previousDir, `appmonitor-${PREVIOUS}.tgz`)));
  const out = await helmArgs("upgrade", "appmonitor", chartFile(), "-n", NAMESPACE, "-f", file,
    "--set", "profile=eventing-only", "--set", `image.registry=${USER_REGISTRY}`, "--set", "prometheusUrl=", "--set", "allowUnverifiedAlerts=true", "--dry-run");
  assert.match(out, /WARNING: values ignored[\s\S]*images\.eventDisplay[\s\S]*resources\.deadLetter/);
  t.diagnostic(`figures (s): ${JSON.stringify(seconds)}`);
});
