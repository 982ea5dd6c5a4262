/**
 * The local stack: etcd, kube-apiserver (TLS, RBAC, ServiceAccount tokens), the controller
 * manager, the scheduler, kwok with fake Nodes and memory metrics emulation, Prometheus and
 * Alertmanager, all on 127.0.0.1 at free ports. `up` starts them detached and returns once
 * everything is ready; `down` stops them and removes the state directory.
 */
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { FRONT_PROXY_CLIENT, generateNodePki, generatePki, type NodePki, type Pki } from "./certs.ts";
import {
  alertmanagerConfig, kubeconfig, kwokMetricsConfig, kwokPodReadyAgainStage, nodeHeartbeat, nodeNamePrefix, prometheusConfig,
} from "./config-files.ts";
import { resolveBinaries, type Binaries } from "./paths.ts";
import { BINARY_SETS, buildBinaries } from "../../../scripts/lib/binaries.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { freePort } from "../lib/free-port.ts";
import { alive, ComponentError, startProcess, stopAll, tail, waitReady, type Started } from "./processes.ts";
import { checkRealNodeHost, realNodeStatusLines, resolveNodeBinaries, startRealNode, stopRealNode, type NodeBinaries } from "./real-node.ts";
import { kubeStateMetricsScrapeJob, type KubeStateMetricsPorts } from "./kube-state-metrics.ts";
import { kubeletScrapeJobs, REAL_NODE, REAL_NODE_PLACEMENT, realNodePaths, SERVICE_CIDR } from "./real-node-config.ts";
import { registryReadyLine, registryStatusLines, serveImages } from "./registry.ts";
import type { OperatorOnRealNode, PrometheusOperatorState } from "./prometheus-operator.ts";
import { readState, stateFile, type StackState } from "./state.ts";
import { archiveDir } from "../../../scripts/lib/paths.ts";

/**
 * The stack's Prometheus's `--rules.alert.resend-delay` (default 1m): how long before it sends a
 * firing alert to Alertmanager again. An alert stays active there for four times this (40 s).
 */
export const PROMETHEUS_RESEND_DELAY = "10s";

/** Options of `up`. Intervals are Prometheus durations (`1s`, `500ms`). */
export interface UpOptions {
  stateDir: string;
  nodes?: number;
  scrapeInterval?: string;
  evaluationInterval?: string;
  /**
   * Also start the real node (containerd, runc, CNI bridge, a kubelet; `real-node.ts`): root only,
   * one per machine. Its Pods are real processes; Prometheus scrapes its kubelet's cAdvisor and
   * kube-state-metrics (a host process: the node's OOM-kill source).
   */
  realNode?: boolean;
  /**
   * Also install every monitoring.coreos.com CRD and run prometheus-operator (a host process)
   * with a Prometheus and an Alertmanager as kube-prometheus-stack's defaults make them
   * (`prometheus-operator.ts`); with or without the real node.
   */
  prometheusOperator?: boolean;
  /** The memhog OCI archive the stack's registry serves to the real node; default `<cache>/images/memhog.oci.tar` (`npm run image`). */
  memhogArchive?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with one line per step, for progress output. */
  progress?: (line: string) => void;
}

function httpsGet(url: string, pki: { ca: Buffer; cert?: Buffer; key?: Buffer; insecure?: boolean }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, {
      ca: pki.ca, cert: pki.cert, key: pki.key, rejectUnauthorized: !pki.insecure, timeout: 2000,
    }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}

async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return res.ok;
}

/** The stack's ports on 127.0.0.1, each free when `up` began. */
interface StackPorts {
  etcd: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
  prometheus: number;
  alertmanager: number;
  /** The real node's kubelet (on the node IP, {@link REAL_NODE}.kubeletPort) and its healthz. */
  kubelet: number;
  kubeletHealthz: number;
  kubeStateMetrics: KubeStateMetricsPorts;
}

/** What the steps of one `up` share: its options, where it writes, and how it records what it started. */
interface Launch {
  readonly opts: UpOptions;
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly say: (line: string) => void;
  /** When `up` began, for the seconds its progress lines report. */
  readonly t0: number;
  readonly bins: Binaries;
  /** The real node's binaries, when `up` was asked for it. */
  readonly nodeBins: NodeBinaries | undefined;
  readonly state: StackState;
  readonly ports: StackPorts;
  /** Log file of component `name`. */
  readonly log: (name: string) => string;
  /** Records a started process in the state file (so `down` stops it and `status` shows it). */
  readonly record: (s: Started, endpoint: string) => Promise<void>;
}

/** The components that `up` checks last, once the cluster's own are up. */
interface LateChecks {
  readonly am: Started;
  readonly prom: Started;
  readonly kcm: Started;
  readonly scheduler: Started;
  readonly kwok: Started;
}

/**
 * The stack already running in `dir`, when one is and all its components live.
 * @throws StepError when that stack lacks the real node `opts` asks for, or has stopped components.
 */
async function runningStack(dir: string, opts: UpOptions): Promise<StackState | undefined> {
  const existing = await readState(dir);
  if (!existing) return undefined;
  if (opts.realNode && !existing.realNode) {
    throw new StepError("stack up", `a stack without the real node runs in ${dir}; run 'npm run stack -- down' first`);
  }
  if (opts.prometheusOperator && !existing.prometheusOperator) {
    throw new StepError("stack up", `a stack without prometheus-operator runs in ${dir}; run 'npm run stack -- down' first`);
  }
  const dead = existing.components.filter((c) => !alive(c.pid));
  if (dead.length === 0) return existing;
  throw new StepError("stack up", `a stack in ${dir} has stopped components (${dead.map((c) => c.name).join(", ")}); run 'npm run stack -- down' first`);
}

/** Eleven free ports at once, by role, and the kubelet's. */
async function freePorts(): Promise<StackPorts> {
  const [etcd, etcdPeer, apiserver, controllerManager, scheduler, kwok, prometheus, alertmanager, kubeletHealthz, ksm, ksmTelemetry] = await Promise.all(
    Array.from({ length: 11 }, () => freePort()),
  ) as [number, number, number, number, number, number, number, number, number, number, number];
  return { etcd, etcdPeer, apiserver, controllerManager, scheduler, kwok, prometheus, alertmanager, kubelet: REAL_NODE.kubeletPort, kubeletHealthz, kubeStateMetrics: { metrics: ksm, telemetry: ksmTelemetry } };
}

/** The state of a stack about to start in `dir`: its URLs, files and Nodes, no component yet. */
function initialState(dir: string, bins: Binaries, ports: StackPorts, nodes: string[]): StackState {
  return {
    stateDir: dir,
    startedAt: new Date().toISOString(),
    kubeconfig: path.join(dir, "kubeconfig"),
    apiserverUrl: `https://127.0.0.1:${ports.apiserver}`,
    prometheusUrl: `http://127.0.0.1:${ports.prometheus}`,
    alertmanagerUrl: `http://127.0.0.1:${ports.alertmanager}`,
    kwokUrl: `http://127.0.0.1:${ports.kwok}`,
    etcdUrl: `http://127.0.0.1:${ports.etcd}`,
    rulesDir: path.join(dir, "prometheus", "rules"),
    alertmanagerConfig: path.join(dir, "alertmanager", "alertmanager.yml"),
    nodes,
    kubectlDir: bins.kubectlDir,
    binaries: bins,
    components: [],
  };
}

/**
 * Writes the admin kubeconfig, Alertmanager's, Prometheus's (its kubelet and kube-state-metrics
 * jobs with the real node) and kwok's configuration files.
 * @returns the paths of Prometheus's and kwok's.
 */
async function writeConfigFiles(launch: Launch, pki: Pki): Promise<{ promConfig: string; kwokConfig: string }> {
  const { opts, dir, bins, nodeBins, state, ports } = launch;
  await writeFile(state.kubeconfig, kubeconfig(state.apiserverUrl, pki.caCert, pki.adminCert, pki.adminKey));
  await mkdir(state.rulesDir, { recursive: true });
  await mkdir(path.dirname(state.alertmanagerConfig), { recursive: true });
  await writeFile(state.alertmanagerConfig, alertmanagerConfig());
  const promConfig = path.join(dir, "prometheus", "prometheus.yml");
  await writeFile(promConfig, prometheusConfig({
    scrapeInterval: opts.scrapeInterval ?? "1s",
    evaluationInterval: opts.evaluationInterval ?? "1s",
    kwokAddress: `127.0.0.1:${ports.kwok}`,
    nodes: state.nodes,
    rulesGlob: path.join(state.rulesDir, "*.yml"),
    alertmanagerAddress: `127.0.0.1:${ports.alertmanager}`,
    extraScrapeConfigs: nodeBins ? [...kubeletScrapeJobs({
      address: `${REAL_NODE.nodeIp}:${ports.kubelet}`, caFile: pki.caCert, tokenFile: realNodePaths(dir).prometheusToken,
    }), kubeStateMetricsScrapeJob(ports.kubeStateMetrics, REAL_NODE.nodeIp)] : [],
  }));
  const kwokConfig = path.join(dir, "kwok.yaml");
  await writeFile(kwokConfig, [...kwokStages(bins), kwokPodReadyAgainStage(), kwokMetricsConfig()].join("---\n"));
  return { promConfig, kwokConfig };
}

/** Starts Alertmanager and Prometheus: they need nothing from Kubernetes, so they start first and are checked last. */
async function startMonitoring(launch: Launch, promConfig: string): Promise<{ am: Started; prom: Started }> {
  const { dir, env, bins, state, ports, log, record } = launch;
  const am = startProcess("alertmanager", bins.alertmanager, [
    `--config.file=${state.alertmanagerConfig}`, `--storage.path=${path.join(dir, "alertmanager", "data")}`,
    `--web.listen-address=127.0.0.1:${ports.alertmanager}`, "--cluster.listen-address=",
  ], log("alertmanager"), env);
  await record(am, state.alertmanagerUrl);
  // A short resend delay: a chain's reload empties Prometheus's list of Alertmanagers for a
  // moment, and an alert another chain's rule fires then is lost until the next send
  // (prometheus/prometheus#13064).
  const prom = startProcess("prometheus", bins.prometheus, [
    `--config.file=${promConfig}`, `--storage.tsdb.path=${path.join(dir, "prometheus", "data")}`,
    `--web.listen-address=127.0.0.1:${ports.prometheus}`, "--web.enable-lifecycle", "--storage.tsdb.retention.time=2h",
    `--rules.alert.resend-delay=${PROMETHEUS_RESEND_DELAY}`,
  ], log("prometheus"), env);
  await record(prom, state.prometheusUrl);
  return { am, prom };
}

/** Starts etcd and waits until it answers `/health`. */
async function startEtcd(launch: Launch): Promise<void> {
  const { dir, env, bins, state, ports, log, record, say } = launch;
  const etcd = startProcess("etcd", bins.etcd, [
    "--name=stack", `--data-dir=${path.join(dir, "etcd")}`,
    `--listen-client-urls=${state.etcdUrl}`, `--advertise-client-urls=${state.etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
    `--initial-cluster=stack=http://127.0.0.1:${ports.etcdPeer}`, "--unsafe-no-fsync", "--log-level=warn",
  ], log("etcd"), env);
  await record(etcd, state.etcdUrl);
  await waitReady(etcd, async () => (await fetch(`${state.etcdUrl}/health`)).ok, 30_000);
  say("etcd ready");
}

/**
 * Starts kube-apiserver (with the real node: advertised on the node IP, with kubelet client
 * credentials, aggregator routing and the placement admission plugins) and waits for `/readyz`.
 * @returns the admin's TLS material, for the later health checks.
 */
async function startApiserver(launch: Launch, pki: Pki, nodePki: NodePki | undefined): Promise<{ ca: Buffer; cert: Buffer; key: Buffer }> {
  const { dir, env, bins, nodeBins, state, ports, log, record, say, t0 } = launch;
  const apiserver = startProcess("kube-apiserver", bins.kubeApiserver, [
    `--etcd-servers=${state.etcdUrl}`, "--bind-address=127.0.0.1",
    // With the real node, the `kubernetes` Service's endpoint is the node IP, where a relay
    // (real-node-services.ts) passes Pods' connections on to 127.0.0.1.
    `--advertise-address=${nodeBins ? REAL_NODE.nodeIp : "127.0.0.1"}`,
    `--secure-port=${ports.apiserver}`, `--cert-dir=${path.join(dir, "apiserver")}`,
    `--tls-cert-file=${pki.servingCert}`, `--tls-private-key-file=${pki.servingKey}`, `--client-ca-file=${pki.caCert}`,
    "--authorization-mode=RBAC", "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${pki.serviceAccountPub}`, `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`, "--allow-privileged=true", "--v=0",
    ...(nodePki ? [`--kubelet-client-certificate=${nodePki.apiserverKubeletClientCert}`, `--kubelet-client-key=${nodePki.apiserverKubeletClientKey}`,
      `--kubelet-certificate-authority=${pki.caCert}`, "--kubelet-preferred-address-types=InternalIP",
      // Webhooks (Knative Eventing's) are Services of Pods on the real node. This API server runs
      // on the host, where ClusterIPs are not routed (kube-proxy serves Pods only) but Pod IPs
      // are (the Pods' bridge): aggregator routing makes it dial a Service's endpoint, for
      // admission and CRD conversion webhooks too (one service resolver, cmd/kube-apiserver).
      "--enable-aggregator-routing=true",
      // The aggregation layer (metrics-server's metrics.k8s.io, which the VPA reads): the front
      // proxy's CA and client certificate, and the headers extension API servers trust from it.
      `--requestheader-client-ca-file=${nodePki.frontProxyCaCert}`, `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
      "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
      "--requestheader-extra-headers-prefix=X-Remote-Extra-",
      `--proxy-client-cert-file=${nodePki.frontProxyClientCert}`, `--proxy-client-key-file=${nodePki.frontProxyClientKey}`,
      // Pods that controllers make later (an ApiServerSource's adapter) carry no placement of
      // their own: a namespace's annotations give them the real node's (eventing-install.ts).
      "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction"] : []),
  ], log("kube-apiserver"), env);
  await record(apiserver, state.apiserverUrl);
  const tls = { ca: await readFile(pki.caCert), cert: await readFile(pki.adminCert), key: await readFile(pki.adminKey) };
  await waitReady(apiserver, async () => (await httpsGet(`${state.apiserverUrl}/readyz`, tls)).status === 200, 60_000);
  say(`kube-apiserver ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  return tls;
}

/** Starts the controller manager, the scheduler and kwok, without waiting: {@link waitUntilReady} checks them. */
async function startControllers(launch: Launch, pki: Pki, kwokConfig: string): Promise<{ kcm: Started; scheduler: Started; kwok: Started }> {
  const { env, bins, state, ports, log, record } = launch;
  const componentAuth = [`--kubeconfig=${state.kubeconfig}`, `--authentication-kubeconfig=${state.kubeconfig}`,
    `--authorization-kubeconfig=${state.kubeconfig}`, "--bind-address=127.0.0.1", "--leader-elect=false"];
  const kcm = startProcess("kube-controller-manager", bins.kubeControllerManager, [
    ...componentAuth, `--secure-port=${ports.controllerManager}`, `--service-account-private-key-file=${pki.serviceAccountKey}`,
    `--root-ca-file=${pki.caCert}`, "--use-service-account-credentials=true",
    `--node-monitor-grace-period=${nodeHeartbeat.nodeMonitorGracePeriodSeconds}s`,
    "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
  ], log("kube-controller-manager"), env);
  await record(kcm, `https://127.0.0.1:${ports.controllerManager}`);
  const scheduler = startProcess("kube-scheduler", bins.kubeScheduler, [...componentAuth, `--secure-port=${ports.scheduler}`],
    log("kube-scheduler"), env);
  await record(scheduler, `https://127.0.0.1:${ports.scheduler}`);
  const kwok = startProcess("kwok", bins.kwok, [
    `--kubeconfig=${state.kubeconfig}`, `--config=${kwokConfig}`, "--manage-all-nodes=false",
    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", `--server-address=127.0.0.1:${ports.kwok}`,
    "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
    // Without a Lease the Nodes' only heartbeat is the node-heartbeat-with-lease stage's status
    // update about every 10 minutes, and the controller manager marks them NotReady after 50 s.
    `--node-lease-duration-seconds=${nodeHeartbeat.nodeLeaseDurationSeconds}`,
  ], log("kwok"), env);
  await record(kwok, state.kwokUrl);
  return { kcm, scheduler, kwok };
}

/**
 * With the real node: fills the stack's registry from the image archives, then starts the node
 * (recorded in the state before it makes anything on the host).
 */
async function startNode(launch: Launch, pki: Pki, nodeBins: NodeBinaries, nodePki: NodePki, core: k8s.CoreV1Api, rbac: k8s.RbacAuthorizationV1Api): Promise<void> {
  const { opts, dir, env, state, ports, log, record, say } = launch;
  const t1 = Date.now();
  state.registry = await serveImages({
    stateDir: dir, bin: nodeBins.registry, env, log, record, hostsDir: realNodePaths(dir).containerdHostsDir,
    ...(opts.memhogArchive === undefined ? {} : { memhogArchive: opts.memhogArchive }),
  });
  await writeFile(stateFile(dir), JSON.stringify(state, null, 2));
  say(registryReadyLine(state.registry, Date.now() - t1));
  await startRealNode({
    stateDir: dir, bins: nodeBins, pki, nodePki, apiserverUrl: state.apiserverUrl, kubeletPort: ports.kubelet, healthzPort: ports.kubeletHealthz,
    kubeStateMetricsPorts: ports.kubeStateMetrics, ...(opts.prometheusOperator ? { kubeStateMetricsChartDefaults: true } : {}), env, log, record,
    save: async (node) => {
      state.realNode = node;
      await writeFile(stateFile(dir), JSON.stringify(state, null, 2));
    },
    core, rbac, say,
  });
}

/**
 * Waits until the controller manager, the scheduler, kwok, Prometheus and Alertmanager answer,
 * every fake Node is Ready and the `default` ServiceAccount exists.
 */
async function waitUntilReady(launch: Launch, late: LateChecks, tls: { ca: Buffer }, core: k8s.CoreV1Api): Promise<void> {
  const { state, ports } = launch;
  const { nodes } = state;
  const insecure = { ca: tls.ca, insecure: true };
  await Promise.all([
    waitReady(late.kcm, async () => (await httpsGet(`https://127.0.0.1:${ports.controllerManager}/healthz`, insecure)).status === 200),
    waitReady(late.scheduler, async () => (await httpsGet(`https://127.0.0.1:${ports.scheduler}/healthz`, insecure)).status === 200),
    waitReady(late.kwok, () => httpOk(`${state.kwokUrl}/metrics/nodes/${nodes[0]}/metrics/cadvisor`)),
    waitReady(late.prom, () => httpOk(`${state.prometheusUrl}/-/ready`)),
    waitReady(late.am, () => httpOk(`${state.alertmanagerUrl}/-/ready`)),
  ]);
  await waitReady(late.kwok, async () => {
    const list = await core.listNode();
    const ready = list.items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    return ready.filter((n) => nodes.includes(n.metadata?.name ?? "")).length === nodes.length;
  });
  await waitReady(late.kcm, async () => {
    await core.readNamespacedServiceAccount({ name: "default", namespace: "default" });
    return true;
  });
}

/**
 * After a failed start: stops the real node and every process started, keeps the logs beside
 * the state directory (where the message then says they are), removes the state directory.
 * @throws the error again, as the same class, its message naming the kept logs.
 */
async function failedStart(dir: string, started: readonly Started[], error: unknown): Promise<never> {
  const partial = await readState(dir).catch(() => undefined);
  if (partial?.realNode) await stopRealNode(dir, partial.realNode, realNodePids(partial));
  await stopAll(started.map((s) => s.pid), 2_000);
  // Keep the logs of a failed start where the message says they are.
  const logs = path.join(dir, "logs");
  const kept = path.join(path.dirname(dir), `${path.basename(dir)}-failed-logs`);
  let message = String((error as Error).message ?? error);
  if (existsSync(logs) && readdirSync(logs).length > 0) {
    await rm(kept, { recursive: true, force: true });
    await rename(logs, kept);
    message = message.replaceAll(logs, kept);
  }
  await rm(dir, { recursive: true, force: true });
  if (error instanceof ComponentError) throw new ComponentError(error.component, message.slice(error.component.length + 2));
  if (error instanceof StepError) throw new StepError(error.step, message.slice(error.step.length + 2), { cause: error });
  throw new StepError("stack up", message, { cause: error });
}

/**
 * Starts the stack in `opts.stateDir` and waits until it is ready: the API server answers
 * `/readyz`, every fake Node is Ready, the `default` ServiceAccount exists, Prometheus and
 * Alertmanager answer `/-/ready` and kwok serves metrics.
 * @throws StepError for a missing binary or a failed build; ComponentError naming the
 *   component that exited or never became ready, with its log tail. Either way, what was
 *   started is stopped and the state directory removed.
 */
export async function up(opts: UpOptions): Promise<StackState> {
  const env = opts.env ?? process.env;
  const say = opts.progress ?? (() => {});
  const dir = path.resolve(opts.stateDir);
  const existing = await runningStack(dir, opts);
  if (existing) return existing;
  const t0 = Date.now();
  const bins = await resolveBinaries(env, (line) => say(`binaries: ${line}`));
  let nodeBins: NodeBinaries | undefined;
  if (opts.realNode) {
    await checkRealNodeHost(dir);
    nodeBins = await resolveNodeBinaries(env, (line) => say(`binaries: ${line}`));
  }
  say(`binaries ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  await mkdir(path.join(dir, "logs"), { recursive: true });
  const started: Started[] = [];
  try {
    const pki = await generatePki(path.join(dir, "pki"));
    const nodePki: NodePki | undefined = nodeBins && await generateNodePki(path.join(dir, "pki"), { name: REAL_NODE.name, ip: REAL_NODE.nodeIp });
    const ports = await freePorts();
    const nodes = Array.from({ length: opts.nodes ?? 2 }, (_, i) => `${nodeNamePrefix}${i}`);
    const state = initialState(dir, bins, ports, nodes);
    const endpoints: Record<string, string> = {};
    const launch: Launch = {
      opts, dir, env, say, t0, bins, nodeBins, state, ports,
      log: (name) => path.join(dir, "logs", `${name}.log`),
      record: async (s, endpoint) => {
        started.push(s);
        endpoints[s.name] = endpoint;
        state.components = started.map((c) => ({ name: c.name, pid: c.pid, log: c.log, endpoint: endpoints[c.name] ?? "" }));
        await writeFile(stateFile(dir), JSON.stringify(state, null, 2));
      },
    };

    const { promConfig, kwokConfig } = await writeConfigFiles(launch, pki);
    const monitoring = await startMonitoring(launch, promConfig);
    await startEtcd(launch);
    const tls = await startApiserver(launch, pki, nodePki);
    const controllers = await startControllers(launch, pki, kwokConfig);

    // Loaded here, not at the top: `down`, `status` and `env` need no client and start faster.
    const { KubeConfig, CoreV1Api, RbacAuthorizationV1Api } = await import("@kubernetes/client-node");
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await Promise.all(nodes.map((name) => core.createNode({ body: fakeNode(name) })));
    if (nodeBins && nodePki) await startNode(launch, pki, nodeBins, nodePki, core, kc.makeApiClient(RbacAuthorizationV1Api));

    await waitUntilReady(launch, { ...monitoring, ...controllers }, tls, core);
    if (opts.prometheusOperator) {
      const t1 = Date.now();
      state.prometheusOperator = await startOperator(launch, pki, kc);
      await writeFile(stateFile(dir), JSON.stringify(state, null, 2));
      say(`prometheus-operator ${state.prometheusOperator.version} ready, its Prometheus and Alertmanager configured (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
    }
    say(`stack ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    return state;
  } catch (error) {
    return failedStart(dir, started, error);
  }
}

/**
 * Starts prometheus-operator from build.sh's `prometheus-operator/` (see `prometheus-operator.ts`).
 * With the real node, its Prometheus (upstream, build.sh's `prometheus-upstream/`) and Alertmanager
 * (Debian's, `npm run image -- alertmanager`) run there: their images and the config reloader's
 * are imported into the node first.
 * @throws StepError naming a missing archive and the command that makes it.
 */
async function startOperator(launch: Launch, pki: Pki, kc: k8s.KubeConfig): Promise<PrometheusOperatorState> {
  const { env, bins, state, dir, log, record, ports } = launch;
  // Loaded here: only this option needs them.
  const { binaryVersion, startPrometheusOperator } = await import("./prometheus-operator.ts");
  const { archiveReference, importImages } = await import("./node-images.ts");
  const { CoreV1Api, RbacAuthorizationV1Api, KubernetesObjectApi } = await import("@kubernetes/client-node");
  const built = await buildBinaries(env, undefined, BINARY_SETS.prometheusOperator);
  const operatorDir = path.join(built, "prometheus-operator");
  let node: OperatorOnRealNode | undefined;
  let prometheusBin = bins.prometheus;
  if (state.realNode) {
    prometheusBin = path.join(built, "prometheus-upstream", "prometheus");
    const archives = {
      prometheus: path.join(built, "prometheus-upstream", "prometheus.oci.tar"),
      alertmanager: path.join(archiveDir(env), "alertmanager.oci.tar"),
      configReloader: path.join(operatorDir, "prometheus-config-reloader.oci.tar"),
    };
    await importImages(state.realNode, Object.values(archives), (missing) =>
      missing.some((a) => a === archives.alertmanager) ? "npm run image -- alertmanager" : "bash test/harness/bins/build.sh");
    node = {
      images: { prometheus: await archiveReference(archives.prometheus), alertmanager: await archiveReference(archives.alertmanager), configReloader: await archiveReference(archives.configReloader) },
      archives: Object.values(archives),
      placement: REAL_NODE_PLACEMENT,
      kubeStateMetrics: { ip: REAL_NODE.nodeIp, port: ports.kubeStateMetrics.metrics },
    };
  }
  return startPrometheusOperator({
    dir: operatorDir,
    stateDir: dir, kubectl: bins.kubectl, adminKubeconfig: state.kubeconfig, apiserverUrl: state.apiserverUrl, caFile: pki.caCert,
    prometheusVersion: await binaryVersion(prometheusBin), alertmanagerVersion: await binaryVersion(bins.alertmanager),
    env, log, record,
    core: kc.makeApiClient(CoreV1Api), rbac: kc.makeApiClient(RbacAuthorizationV1Api), objects: KubernetesObjectApi.makeApiClient(kc),
    ...(node ? { node } : {}),
  });
}

/** kwok's own fast Node and Pod lifecycle stages, shipped beside the kwok binary by build.sh. */
function kwokStages(bins: Binaries): string[] {
  const dir = path.join(path.dirname(bins.kwok), "kwok-stages");
  if (!existsSync(dir)) throw new StepError("find kwok stages", `${dir} is missing; run bash test/harness/bins/build.sh`);
  return readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort().map((f) => readFileSync(path.join(dir, f), "utf8"));
}

/** A Node that kwok manages (annotation `kwok.x-k8s.io/node: fake`), with room for many Pods. */
function fakeNode(name: string): k8s.V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
      labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", type: "kwok" },
    },
    status: {
      capacity: { cpu: "32", memory: "256Gi", pods: "110" },
      allocatable: { cpu: "32", memory: "256Gi", pods: "110" },
    },
  };
}

/**
 * Stops every process the stack in `stateDir` started and removes the state directory.
 * Returns the names of the components it stopped; a stack that was never started is a no-op.
 */
export async function down(stateDir: string): Promise<string[]> {
  const state = await readState(stateDir);
  // The real node first, while the rest still runs: its teardown needs containerd, and its
  // mounts must be gone before the state directory is removed.
  const problems = state?.realNode ? await stopRealNode(path.resolve(stateDir), state.realNode, realNodePids(state)) : [];
  // The state is deleted next, so nothing needs a graceful shutdown: kube-apiserver alone would
  // spend over ten seconds draining watches.
  if (state) await stopAll(state.components.map((c) => c.pid), 2_000);
  if (problems.length > 0) {
    throw new StepError("stack down", `the real node's teardown left work undone (state kept in ${stateDir}):\n  ${problems.join("\n  ")}`);
  }
  await rm(stateDir, { recursive: true, force: true });
  return state?.components.map((c) => c.name) ?? [];
}

function realNodePids(state: StackState): { kubelet?: number; containerd?: number; kubeProxy?: number } {
  const pid = (name: string) => state.components.find((c) => c.name === name)?.pid;
  return { kubelet: pid("kubelet"), containerd: pid("containerd"), kubeProxy: pid("kube-proxy") };
}

/**
 * One line per component: name, pid, running or stopped, endpoint; a stopped one adds its log tail.
 * With the real node, one line per part of it follows (interface, bridge, iptables chain, cgroups,
 * network namespaces, containers) and per image of its registry, and with Eventing one per
 * Deployment of it; a missing part says MISSING, a Node or Deployment not Ready NOT READY.
 */
export async function statusLines(state: StackState): Promise<string[]> {
  const lines = state.components.flatMap((c) => {
    const up = alive(c.pid);
    const line = `${c.name.padEnd(24)} ${up ? "running" : "STOPPED"}  pid ${String(c.pid).padEnd(8)} ${c.endpoint}`;
    return up ? [line] : [line, ...tail(c.log, 10).split("\n").map((l) => `    ${l}`)];
  });
  const registry = state.registry ? await registryStatusLines(state.registry) : [];
  // Loaded only when there is Eventing: it brings the Kubernetes client, which `status` otherwise does without.
  const eventing = state.eventing ? await (await import("./eventing-install.ts")).eventingStatusLines(state) : [];
  const serving = state.serving ? await (await import("./serving-install.ts")).servingStatusLines(state) : [];
  return state.realNode ? [...lines, ...(await realNodeStatusLines(state.realNode, state.binaries.kubectl, state.kubeconfig)), ...registry, ...eventing, ...serving] : lines;
}

/** `export` lines for a shell: KUBECONFIG, PROMETHEUS_URL, ALERTMANAGER_URL, and PATH with the stack's kubectl. */
export function envLines(state: StackState): string[] {
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  return [
    `export KUBECONFIG=${q(state.kubeconfig)}`,
    `export PROMETHEUS_URL=${q(state.prometheusUrl)}`,
    `export ALERTMANAGER_URL=${q(state.alertmanagerUrl)}`,
    `export APPMONITOR_STACK_DIR=${q(state.stateDir)}`,
    `export PATH=${q(state.kubectlDir)}:"$PATH"`,
  ];
}

