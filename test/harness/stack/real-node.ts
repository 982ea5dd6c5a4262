/**
 * The stack's real node, beside the kwok Nodes: Debian's containerd 1.6 and runc, Debian's CNI
 * `bridge` + `host-local` plugins, and a kubelet built from the same k8s.io/kubernetes module as
 * the other binaries (test/harness/bins/node). Pods on it are real processes in real cgroups; the kernel
 * OOM-kills them at their memory limit, and cAdvisor (inside the kubelet) reports them. kube-proxy,
 * CoreDNS and a relay to the API server give them Services, names and the in-cluster config
 * (`real-node-services.ts`).
 *
 * What it makes outside the state directory, and what `stopRealNode` removes again: an interface
 * of its own holding the node IP (its alias names the owning state directory), the Pods' bridge,
 * one iptables chain jumped to from FORWARD, kube-proxy's chains and rules (and the netfilter
 * tables they created), a cgroup root in every cgroup hierarchy, the kernel
 * settings the kubelet rewrites (put back as they were), and /var/log/containers links. Everything
 * else (containerd's root and state, the Pods' network namespaces, the kubelet's root, their
 * mounts) lives under `<stateDir>/node/`.
 *
 * Network rule: Pods get no default route and no masquerade (routes to the Service range and the
 * node IP alone, `real-node-services.ts`), and the iptables chain drops any
 * forwarded packet from or to the Pod range whose other end is not in it; containerd runs with a
 * dead loopback proxy in `HTTP(S)_PROXY`, so an image pull can never leave the machine. The images
 * it runs come from the stack's registry (`registry.ts`), which containerd's hosts.toml files make
 * the only server of the registries they name.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { mkdir, rm, rmdir, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type * as k8s from "@kubernetes/client-node";
import { kubeconfig } from "./config-files.ts";
import { which } from "./paths.ts";
import { BINARY_SETS, buildBinaries } from "../../../scripts/lib/binaries.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { alive, startProcess, stopAll, waitReady } from "./processes.ts";
import { startKubeStateMetrics, type KubeStateMetricsPorts } from "./kube-state-metrics.ts";
import { cleanUpKubeProxy, netfilterTables, removeTablesMadeSince, resolveInCluster, startRealNodeServices, type RealNodeContext } from "./real-node-services.ts";
import {
  CLUSTER_DOMAIN, cniConflist, containerdConfig, kubeletConfig, PROMETHEUS_SERVICE_ACCOUNT, REAL_NODE, REAL_NODE_PACKAGES, realNodePaths, type RealNodePaths,
} from "./real-node-config.ts";

const run = promisify(execFile);

/** Binaries of the real node: ours from test/harness/bins/node, the rest Debian's. Absolute paths. */
export interface NodeBinaries {
  kubelet: string;
  crireset: string;
  /** kube-proxy, from test/harness/bins/proxy (the kube set's k8s.io/kubernetes version). */
  kubeProxy: string;
  /** CoreDNS with the plugins the cluster DNS uses, from test/harness/bins/dns. */
  coredns: string;
  /** The sandbox image as an OCI archive (test/harness/bins/build.sh makes it). */
  pauseImage: string;
  /** distribution's registry (test/harness/bins/registry), which serves the node's images. */
  registry: string;
  /** kube-state-metrics (test/harness/bins/ksm), the node's source of OOM kills. */
  kubeStateMetrics: string;
  /** kube-state-metrics' RBAC manifests as it ships them (build.sh copies them from its module). */
  kubeStateMetricsRbac: string;
  containerd: string;
  ctr: string;
  runc: string;
  cniBinDir: string;
}

/** What the stack's state records of its real node. */
export interface RealNodeState {
  name: string;
  ip: string;
  /** The kubelet's HTTPS API: `https://<node IP>:<port>`. */
  kubeletUrl: string;
  /** The kubelet's plain health endpoint on 127.0.0.1. */
  healthzUrl: string;
  paths: RealNodePaths;
  bins: NodeBinaries;
  /** The kernel settings the node changes ({@link HOST_SYSCTLS}), as they were before `up` (`/proc/sys` relative path → value). */
  sysctlsBefore: Record<string, string>;
  /** Directories outside the state directory that `up` created; `down` removes them when empty. */
  createdDirs: string[];
  /** The netfilter tables before `up` (`nft list tables`: `ip filter`, …); `down` deletes the empty ones made since. */
  tablesBefore: string[];
}

/**
 * The kernel settings the node changes, which `down` puts back: those the kubelet sets at start
 * (pkg/kubelet/cm setupKernelTunables), IPv4 forwarding (the CNI bridge plugin turns it on for its
 * gateway), and the bridge netfilter and localnet routing switches kube-proxy may turn on; each
 * one that this kernel has.
 */
export const HOST_SYSCTLS = ["vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
  "net/ipv4/ip_forward", "net/ipv4/conf/all/forwarding", "net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables"];

/** Where the kubelet links container logs, whatever its root directory (kubelet's ContainerLogsDir). */
const CONTAINER_LOGS_DIR = "/var/log/containers";

/**
 * Directories made outside the state directory whatever it is: the kubelet's log links, its
 * device plugin socket's (k8s.io/kubelet's DevicePluginPath), and containerd 1.6's shim sockets
 * (`/run/containerd/s`, fixed in its runtime v2 code).
 */
const FIXED_HOST_DIRS = [CONTAINER_LOGS_DIR, "/var/lib/kubelet", "/run/containerd"];

/** A proxy nobody listens on: containerd sends any registry request there, never off the machine. */
const DEAD_PROXY = "http://127.0.0.1:9";

async function cmd(file: string, args: string[], step: string): Promise<string> {
  try {
    return (await run(file, args, { maxBuffer: 16 << 20 })).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim() ?? String(error);
    throw new StepError(step, `${path.basename(file)} ${args.join(" ")}: ${stderr}`, { cause: error });
  }
}

/** Runs a clean-up command; a failure is returned as a message, never thrown. */
async function tryCmd(file: string, args: string[]): Promise<string | undefined> {
  try {
    await run(file, args, { maxBuffer: 16 << 20 });
    return undefined;
  } catch (error) {
    return `${path.basename(file)} ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() || String(error)}`;
  }
}

/**
 * Finds the real node's binaries: builds test/harness/bins/node when not cached (about a minute once the
 * kube set's Go build cache is warm), and looks for Debian's containerd, ctr, runc and CNI plugins.
 * @throws StepError naming what is missing and the one command that installs it.
 */
export async function resolveNodeBinaries(env: NodeJS.ProcessEnv = process.env, progress?: (line: string) => void): Promise<NodeBinaries> {
  const built = await buildBinaries(env, progress, BINARY_SETS.realNode);
  const ours = {
    kubelet: path.join(built, "kubelet"), crireset: path.join(built, "crireset"), pauseImage: path.join(built, "pause.oci.tar"), registry: path.join(built, "registry"),
    kubeProxy: path.join(built, "kube-proxy"), coredns: path.join(built, "coredns"),
    kubeStateMetrics: path.join(built, "kube-state-metrics"), kubeStateMetricsRbac: path.join(built, "kube-state-metrics-rbac"),
  };
  for (const file of Object.values(ours)) {
    if (!existsSync(file)) throw new StepError("find the real node's binaries", `${file} is missing; run bash test/harness/bins/build.sh`);
  }
  const find = (name: string) => which(name, { PATH: `${env.PATH ?? ""}:/usr/sbin:/usr/bin:/sbin` });
  const debian = { containerd: find("containerd"), ctr: find("ctr"), runc: find("runc") };
  const cniBinDir = ["/usr/lib/cni", "/opt/cni/bin"].find((d) => ["bridge", "host-local", "loopback"].every((p) => existsSync(path.join(d, p))));
  const tools = ["ip", "iptables", "nft", "umount", "skopeo"].filter((t) => !find(t));
  if (!debian.containerd || !debian.ctr || !debian.runc || !cniBinDir || tools.length > 0) {
    throw new StepError("find the real node's Debian packages",
      `containerd, ctr, runc, the CNI bridge/host-local/loopback plugins, ip, iptables, nft and skopeo are needed; as root run: apt-get install -y --no-install-recommends ${REAL_NODE_PACKAGES.join(" ")} (or bash scripts/install-debian.sh)`);
  }
  return { ...ours, containerd: debian.containerd, ctr: debian.ctr, runc: debian.runc, cniBinDir };
}

/** The cgroup hierarchies mounted on this machine (v1 controllers and a v2 mount): mount point and version, from /proc/self/mountinfo. */
export function cgroupMounts(): { dir: string; version: 1 | 2 }[] {
  return readFileSync("/proc/self/mountinfo", "utf8").split("\n").flatMap((line) => {
    const [left, right] = line.split(" - ");
    const fstype = right?.split(" ")[0];
    const dir = left?.split(" ")[4];
    if (!dir || (fstype !== "cgroup" && fstype !== "cgroup2")) return [];
    return [{ dir: unescapeMount(dir), version: fstype === "cgroup" ? 1 as const : 2 as const }];
  });
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Mount points at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8").split("\n")
    .map((line) => unescapeMount(line.split(" ")[4] ?? ""))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/**
 * The directory of a cgroup path such as `/appmonitor-node/kubepods/…` in the cgroup v1 memory
 * hierarchy (`/sys/fs/cgroup/memory/…`), where `memory.limit_in_bytes` and `memory.oom_control` are.
 * @throws Error when no cgroup v1 memory hierarchy is mounted.
 */
export function memoryCgroupDir(cgroupPath: string): string {
  const mount = cgroupMounts().find((m) => m.version === 1 && path.basename(m.dir).split(",").includes("memory"));
  if (!mount) throw new Error("no cgroup v1 memory hierarchy is mounted");
  return path.join(mount.dir, cgroupPath);
}

function readSysctl(name: string): string {
  return readFileSync(`/proc/sys/${name}`, "utf8").trim();
}

/**
 * The state directory of the stack whose real node is up on this machine (its interface's alias;
 * "" when the alias is unset), or undefined when none is.
 */
export function realNodeOwner(): string | undefined {
  const link = `/sys/class/net/${REAL_NODE.nodeInterface}`;
  return existsSync(link) ? readFileSync(`${link}/ifalias`, "utf8").trim() : undefined;
}

/**
 * Checks that this process may make a real node here: root, a cgroup v1 memory hierarchy, and no
 * other stack's real node (its interface would exist; its alias names that stack's directory).
 * @throws StepError saying what is wrong and what to do.
 */
export async function checkRealNodeHost(stateDir: string): Promise<void> {
  const step = "check the host for a real node";
  if (process.getuid?.() !== 0) throw new StepError(step, "the real node needs root (containerd, runc, network and cgroups): run as root");
  if (!cgroupMounts().some((m) => m.version === 1 && path.basename(m.dir).split(",").includes("memory"))) {
    throw new StepError(step, "no cgroup v1 memory hierarchy is mounted; the real node runs the kubelet with cgroupfs on cgroup v1");
  }
  const owner = realNodeOwner();
  if (owner !== undefined) {
    throw new StepError(step, owner === stateDir
      ? `a real node of a stack in ${owner} is still set up; run 'npm run stack -- down' first`
      : `another stack's real node is up (${owner || "unknown owner"}); one real node per machine: stop it with APPMONITOR_STACK_DIR=${owner || "<its dir>"} npm run stack -- down`);
  }
}

/** What {@link startRealNode} needs from the stack being started. */
export interface StartRealNodeInput extends RealNodeContext {
  stateDir: string;
  bins: NodeBinaries;
  kubeletPort: number;
  healthzPort: number;
  /** kube-state-metrics' ports (Prometheus's scrape job names the metrics one, on the node IP). */
  kubeStateMetricsPorts: KubeStateMetricsPorts;
  /** Run kube-state-metrics with kube-prometheus-stack's default flags (the operator stack). */
  kubeStateMetricsChartDefaults?: boolean;
  /** Records the node's state before anything is made outside the state directory. */
  save: (node: RealNodeState) => Promise<void>;
  core: k8s.CoreV1Api;
}

/**
 * Sets up the host, starts containerd (with the sandbox image imported into the `k8s.io`
 * namespace; every other image is pulled from the stack's registry), grants the kubelet and
 * Prometheus their rights, writes Prometheus's kubelet token, starts the kubelet and waits until
 * the Node is Ready; then the node's Services and DNS, and kube-state-metrics (its OOM-kill source).
 * @throws StepError for a failed host step; ComponentError for containerd or the kubelet
 *   exiting or not getting ready, with its log tail. The caller cleans up with {@link stopRealNode}.
 */
export async function startRealNode(input: StartRealNodeInput): Promise<RealNodeState> {
  const { bins, stateDir } = input;
  const paths = realNodePaths(stateDir);
  const node: RealNodeState = {
    name: REAL_NODE.name,
    ip: REAL_NODE.nodeIp,
    kubeletUrl: `https://${REAL_NODE.nodeIp}:${input.kubeletPort}`,
    healthzUrl: `http://127.0.0.1:${input.healthzPort}/healthz`,
    paths,
    bins,
    sysctlsBefore: Object.fromEntries(HOST_SYSCTLS.filter((s) => existsSync(`/proc/sys/${s}`)).map((s) => [s, readSysctl(s)])),
    createdDirs: FIXED_HOST_DIRS.filter((d) => !existsSync(d)),
    tablesBefore: await netfilterTables(),
  };
  await input.save(node);
  await setUpHost(stateDir);
  input.say("real node: interface, iptables chain and cgroup root made");

  for (const dir of [paths.cniConfDir, paths.cniDataDir, paths.kubeletRoot, paths.podLogs, paths.containerdHostsDir]) {
    await mkdir(dir, { recursive: true });
  }
  await writeFile(paths.containerdConfig, containerdConfig(paths, bins.runc, bins.cniBinDir));
  await writeFile(path.join(paths.cniConfDir, "10-appmonitor.conflist"), cniConflist(paths));
  const containerd = startProcess("containerd", bins.containerd, ["--config", paths.containerdConfig],
    input.log("containerd"), { ...input.env, HTTP_PROXY: DEAD_PROXY, HTTPS_PROXY: DEAD_PROXY, NO_PROXY: "" });
  await input.record(containerd, `unix://${paths.containerdSocket}`);
  const ctr = (args: string[]) => cmd(bins.ctr, ["--address", paths.containerdSocket, "--namespace", "k8s.io", ...args], "import images into containerd");
  await waitReady(containerd, async () => (await run(bins.ctr, ["--address", paths.containerdSocket, "version"])).stdout.includes("Server"), 30_000);
  await ctr(["images", "import", bins.pauseImage]);
  input.say("real node: containerd ready, sandbox image imported");

  await grantRealNode(input.rbac, input.core, paths.prometheusToken);
  await writeFile(paths.kubeletKubeconfig, kubeconfig(input.apiserverUrl, input.pki.caCert, input.nodePki.kubeletClientCert, input.nodePki.kubeletClientKey, `system:node:${REAL_NODE.name}`));
  await writeFile(paths.kubeletConfig, kubeletConfig({
    paths, port: input.kubeletPort, healthzPort: input.healthzPort, caFile: input.pki.caCert,
    tlsCertFile: input.nodePki.kubeletServingCert, tlsKeyFile: input.nodePki.kubeletServingKey,
  }));
  const kubelet = startProcess("kubelet", bins.kubelet, [
    `--config=${paths.kubeletConfig}`, `--kubeconfig=${paths.kubeletKubeconfig}`, `--root-dir=${paths.kubeletRoot}`,
    `--hostname-override=${REAL_NODE.name}`, `--node-ip=${REAL_NODE.nodeIp}`,
    `--node-labels=${REAL_NODE.label.key}=${REAL_NODE.label.value},type=real`,
    // cAdvisor's own flag: without it cAdvisor looks for containerd at /run/containerd/containerd.sock,
    // finds none, and reports Pod-level cgroups only (no `container` label).
    `--containerd=${paths.containerdSocket}`,
    "--v=0",
  ], input.log("kubelet"), input.env);
  await input.record(kubelet, node.kubeletUrl);
  await waitReady(kubelet, async () => (await fetch(node.healthzUrl, { signal: AbortSignal.timeout(2000) })).ok, 60_000);
  await waitReady(kubelet, async () => {
    const n = await input.core.readNode({ name: REAL_NODE.name });
    return n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
  }, 60_000);
  input.say("real node: kubelet registered, Node Ready");
  await startRealNodeServices({
    nodeDir: paths.dir, bins, pki: input.pki, nodePki: input.nodePki, apiserverUrl: input.apiserverUrl,
    env: input.env, log: input.log, record: input.record, rbac: input.rbac, say: input.say,
  });
  await startKubeStateMetrics({
    bin: bins.kubeStateMetrics, rbacDir: bins.kubeStateMetricsRbac, dir: paths.dir, apiserverUrl: input.apiserverUrl, caFile: input.pki.caCert,
    ports: input.kubeStateMetricsPorts, host: REAL_NODE.nodeIp, ...(input.kubeStateMetricsChartDefaults ? { chartDefaults: true } : {}),
    env: input.env, log: input.log, record: input.record, core: input.core, rbac: input.rbac,
  });
  input.say(`real node: kube-state-metrics ready on ${REAL_NODE.nodeIp}:${input.kubeStateMetricsPorts.metrics}`);
  return node;
}

/** The node's interface with the node IP, the iptables chain, the cgroup root. */
async function setUpHost(stateDir: string): Promise<void> {
  const step = "set up the real node's host network and cgroups";
  const ip = (args: string[]) => cmd("ip", args, step);
  // A bridge without ports stands in for a dummy interface (this kernel has no dummy driver).
  await ip(["link", "add", REAL_NODE.nodeInterface, "type", "bridge"]);
  await ip(["link", "set", "dev", REAL_NODE.nodeInterface, "alias", stateDir]);
  await ip(["address", "add", `${REAL_NODE.nodeIp}/32`, "dev", REAL_NODE.nodeInterface]);
  await ip(["link", "set", "dev", REAL_NODE.nodeInterface, "up"]);

  const ipt = (args: string[]) => cmd("iptables", ["-w", "-t", "filter", ...args], step);
  const chain = REAL_NODE.iptablesChain;
  const comment = ["-m", "comment", "--comment", "appmonitor real node: Pod traffic stays on this machine"];
  await ipt(["-N", chain]);
  await ipt(["-A", chain, "-s", REAL_NODE.podCidr, "-d", REAL_NODE.podCidr, ...comment, "-j", "RETURN"]);
  await ipt(["-A", chain, "-s", REAL_NODE.podCidr, ...comment, "-j", "DROP"]);
  await ipt(["-A", chain, "-d", REAL_NODE.podCidr, ...comment, "-j", "DROP"]);
  await ipt(["-I", "FORWARD", "1", "-j", chain]);

  for (const mount of cgroupMounts().filter((m) => m.version === 1)) {
    const dir = path.join(mount.dir, REAL_NODE.cgroupRoot);
    await mkdir(dir, { recursive: true });
    // A new cpuset cgroup starts with no CPUs and no memory nodes: give it its parent's.
    for (const file of ["cpuset.cpus", "cpuset.mems"]) {
      if (existsSync(path.join(mount.dir, file))) await writeFile(path.join(dir, file), readFileSync(path.join(mount.dir, file), "utf8"));
    }
  }
}

/**
 * Grants the node and Prometheus what a real cluster grants them: the kubelet's user
 * `system:node:<node>` the `system:node` ClusterRole (no Node authorizer runs here), and the
 * kube-prometheus ServiceAccount `monitoring/prometheus-k8s` `get` on `nodes/metrics` and `/metrics`;
 * writes a token of that ServiceAccount (TokenRequest, 7 days) where Prometheus reads it.
 */
async function grantRealNode(rbac: k8s.RbacAuthorizationV1Api, core: k8s.CoreV1Api, tokenFile: string): Promise<void> {
  const { namespace, name } = PROMETHEUS_SERVICE_ACCOUNT;
  await rbac.createClusterRoleBinding({ body: {
    metadata: { name: "appmonitor:real-node" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:node" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: `system:node:${REAL_NODE.name}` }],
  } });
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createClusterRole({ body: {
    metadata: { name: "appmonitor:prometheus-kubelet" },
    rules: [
      { apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"] },
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ],
  } });
  await rbac.createClusterRoleBinding({ body: {
    metadata: { name: "appmonitor:prometheus-kubelet" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "appmonitor:prometheus-kubelet" },
    subjects: [{ kind: "ServiceAccount", name, namespace }],
  } });
  const res = await core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { expirationSeconds: 7 * 24 * 3600, audiences: [] } } });
  if (!res.status?.token) throw new StepError("grant the real node", `TokenRequest for ${namespace}/${name} returned no token`);
  await mkdir(path.dirname(tokenFile), { recursive: true });
  await writeFile(tokenFile, res.status.token, { mode: 0o600 });
}

/** Processes whose command line names our containerd socket: the shims containerd left running. */
function shimsOf(socket: string): number[] {
  return readdirSync("/proc").filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      return argv.some((a) => a.includes("containerd-shim")) && argv.includes(socket) ? [Number(d)] : [];
    } catch {
      return [];
    }
  });
}

/** Every process in the cgroup directory tree `dir`, found through its cgroup.procs files. */
function processesIn(dir: string): number[] {
  if (!existsSync(dir)) return [];
  const pids = readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) pids.push(...processesIn(path.join(dir, entry.name)));
  }
  return pids;
}

/** True when `dir` holds a regular file or a link somewhere below it (directories and sockets do not count). */
function holdsFiles(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some((e) =>
    e.isDirectory() ? holdsFiles(path.join(dir, e.name)) : e.isFile() || e.isSymbolicLink());
}

/** Removes a cgroup directory tree, children first (cgroupfs allows only rmdir of empty cgroups). */
async function removeCgroupTree(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await removeCgroupTree(path.join(dir, entry.name));
  }
  await rmdir(dir);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Takes the real node down and everything it made, in an order that leaves nothing behind: the
 * kubelet first (so it restarts nothing); kube-proxy, then its iptables rules; every Pod sandbox through CRI (crireset: CNI DEL, the
 * network namespace removed, containers deleted) while containerd still runs; containerd and any
 * shim left; the processes still in our cgroups; every mount under the state directory; the cgroup
 * root in each hierarchy; the bridge, the node interface and the iptables chain; the kernel settings
 * as they were; the kubelet's log links. Each step runs even when an earlier one failed.
 * @param pids the kubelet's, kube-proxy's and containerd's process ids (absent when they never started).
 * @returns the steps that failed, one message each (empty when all is clean).
 */
export async function stopRealNode(stateDir: string, node: RealNodeState, pids: { kubelet?: number; containerd?: number; kubeProxy?: number }): Promise<string[]> {
  const problems: string[] = [];
  const note = (p: string | undefined) => void (p && problems.push(p));
  if (pids.kubelet) await stopAll([pids.kubelet], 5_000);
  if (pids.kubeProxy) {
    // Stopped before its rules go, or its next sync would write them again.
    await stopAll([pids.kubeProxy], 5_000);
    problems.push(...await cleanUpKubeProxy(node.bins.kubeProxy));
  }
  if (pids.containerd && alive(pids.containerd) && existsSync(node.bins.crireset)) {
    note(await tryCmd(node.bins.crireset, [node.paths.containerdSocket]));
  }
  if (pids.containerd) await stopAll([pids.containerd], 5_000);
  const leftovers = [...shimsOf(node.paths.containerdSocket), ...cgroupMounts().flatMap((m) => processesIn(path.join(m.dir, REAL_NODE.cgroupRoot)))];
  for (const pid of new Set(leftovers)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  if (leftovers.length > 0) await stopAll(leftovers, 2_000);

  for (const mount of mountsUnder(path.resolve(stateDir))) {
    if (await tryCmd("umount", [mount])) note(await tryCmd("umount", ["--lazy", mount]));
  }
  for (const mount of cgroupMounts()) {
    const dir = path.join(mount.dir, REAL_NODE.cgroupRoot);
    for (let attempt = 0; ; attempt++) {
      try {
        await removeCgroupTree(dir);
        break;
      } catch (error) {
        if (attempt >= 20) {
          problems.push(`remove cgroup ${dir}: ${(error as Error).message}`);
          break;
        }
        await sleep(250);
      }
    }
  }
  for (const link of [REAL_NODE.bridge, REAL_NODE.nodeInterface]) {
    if (existsSync(`/sys/class/net/${link}`)) note(await tryCmd("ip", ["link", "delete", link]));
  }
  while (!(await tryCmd("iptables", ["-w", "-t", "filter", "-C", "FORWARD", "-j", REAL_NODE.iptablesChain]))) {
    const failed = await tryCmd("iptables", ["-w", "-t", "filter", "-D", "FORWARD", "-j", REAL_NODE.iptablesChain]);
    if (failed) {
      problems.push(failed);
      break;
    }
  }
  if (!(await tryCmd("iptables", ["-w", "-t", "filter", "-S", REAL_NODE.iptablesChain]))) {
    note(await tryCmd("iptables", ["-w", "-t", "filter", "-F", REAL_NODE.iptablesChain]));
    note(await tryCmd("iptables", ["-w", "-t", "filter", "-X", REAL_NODE.iptablesChain]));
  }
  problems.push(...await removeTablesMadeSince(node.tablesBefore));
  for (const [name, value] of Object.entries(node.sysctlsBefore)) {
    try {
      if (readSysctl(name) !== value) await writeFile(`/proc/sys/${name}`, value);
    } catch (error) {
      problems.push(`restore ${name.replaceAll("/", ".")}=${value}: ${(error as Error).message}`);
    }
  }
  if (existsSync(CONTAINER_LOGS_DIR)) {
    for (const entry of readdirSync(CONTAINER_LOGS_DIR)) {
      const link = path.join(CONTAINER_LOGS_DIR, entry);
      try {
        if (readlinkSync(link).startsWith(`${path.resolve(stateDir)}/`)) await unlink(link);
      } catch {
        // not a link of ours
      }
    }
  }
  for (const dir of node.createdDirs) {
    if (existsSync(dir) && !holdsFiles(dir)) await rm(dir, { recursive: true });
    else if (existsSync(dir)) problems.push(`${dir} was made by the real node and now holds files; left in place`);
  }
  return problems;
}

/**
 * One line per part of the real node: its Node's Ready condition (read with `kubectl`), its interface and address, the bridge, the iptables
 * chain, the cgroup root and its Pods, the network namespaces, the containers that containerd
 * runs, kube-proxy's Service chains and the cluster DNS's answer for the `kubernetes` Service. A part that should be there and is not says MISSING; a Node that is not Ready says NOT READY.
 */
export async function realNodeStatusLines(node: RealNodeState, kubectl: string, kubeconfigFile: string): Promise<string[]> {
  const has = (p: string) => existsSync(p);
  const ready = await run(kubectl, [`--kubeconfig=${kubeconfigFile}`, "get", "node", node.name, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"])
    .then((r) => (r.stdout.trim() === "True" ? "Ready" : `NOT READY (${r.stdout.trim() || "no condition"})`), () => "NOT READY (the API server does not answer)");
  const lines = [
    `${"node".padEnd(24)} ${ready}  ${node.name} ${node.ip}`,
    `${"node interface".padEnd(24)} ${has(`/sys/class/net/${REAL_NODE.nodeInterface}`) ? "present" : "MISSING"}  ${REAL_NODE.nodeInterface} ${node.ip}/32`,
    `${"pod bridge".padEnd(24)} ${has(`/sys/class/net/${REAL_NODE.bridge}`) ? "present" : "absent (made with the first Pod)"}  ${REAL_NODE.bridge} ${REAL_NODE.podGateway} (${REAL_NODE.podCidr})`,
  ];
  const chain = await run("iptables", ["-w", "-t", "filter", "-S", REAL_NODE.iptablesChain]).then((r) => r.stdout.split("\n").filter((l) => l.startsWith("-A")).length, () => -1);
  lines.push(`${"iptables chain".padEnd(24)} ${chain >= 0 ? `present  ${REAL_NODE.iptablesChain}, ${chain} rules` : `MISSING  ${REAL_NODE.iptablesChain}`}`);
  const memory = memoryCgroupDir(REAL_NODE.cgroupRoot);
  const pods = ["kubepods", "kubepods/burstable", "kubepods/besteffort"].flatMap((d) => {
    const dir = path.join(memory, d);
    return has(dir) ? readdirSync(dir).filter((e) => e.startsWith("pod")) : [];
  });
  lines.push(`${"cgroup root".padEnd(24)} ${has(memory) ? "present" : "MISSING"}  ${REAL_NODE.cgroupRoot}, ${pods.length} Pod cgroups`);
  const netnsDir = path.join(node.paths.containerdState, "io.containerd.grpc.v1.cri", "netns");
  lines.push(`${"network namespaces".padEnd(24)} ${has(netnsDir) ? readdirSync(netnsDir).length : 0} under ${netnsDir}`);
  const tasks = await run(node.bins.ctr, ["--address", node.paths.containerdSocket, "--namespace", "k8s.io", "tasks", "list"])
    .then((r) => `${r.stdout.split("\n").filter((l) => /\bRUNNING\b/.test(l)).length} running`, () => "containerd not answering");
  lines.push(`${"containers".padEnd(24)} ${tasks}`);
  const services = await run("iptables", ["-w", "-t", "nat", "-S"]).then((r) => r.stdout.split("\n").filter((l) => l.startsWith("-N KUBE-SVC-")).length, () => -1);
  lines.push(`${"kube-proxy rules".padEnd(24)} ${services > 0 ? `present  ${services} Service chains in the nat table` : "MISSING  no KUBE-SVC- chain (the kubernetes Service has one)"}`);
  const answer = await resolveInCluster(`kubernetes.default.svc.${CLUSTER_DOMAIN}`);
  lines.push(`${"cluster DNS".padEnd(24)} ${answer.length > 0 ? "answers" : "MISSING (no answer)"}  ${node.ip}:53 kubernetes.default.svc.${CLUSTER_DOMAIN} → ${answer.join(", ") || "-"}`);
  return lines;
}
