/**
 * Services, cluster DNS and the API server for the real node's Pods: kube-proxy (iptables mode),
 * CoreDNS on the node IP, and a TCP relay that makes the API server (listening on 127.0.0.1
 * alone) reachable on the node IP, where the `kubernetes` Service's endpoint points. All three
 * are host processes recorded in the stack's state, so `status` shows them and `down` stops them;
 * kube-proxy's iptables rules are removed by {@link cleanUpKubeProxy}.
 */
import { execFile } from "node:child_process";
import { Resolver } from "node:dns/promises";
import { connect } from "node:net";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort } from "../lib/free-port.ts";
import { kubeconfig } from "./config-files.ts";
import type * as k8s from "@kubernetes/client-node";
import { StepError } from "../../../scripts/lib/step-error.ts";
import type { NodePki, Pki } from "./certs.ts";
import { startProcess, waitReady, type Started } from "./processes.ts";
import { CLUSTER_DOMAIN, KUBERNETES_SERVICE_IP, REAL_NODE } from "./real-node-config.ts";
import { COREDNS_CLUSTER_ROLE, COREDNS_USER, corefile, emptyTables, kubeChainRemoval, kubeProxyArgs } from "./real-node-services-config.ts";

const run = promisify(execFile);

/** What the real node and its Services, DNS and relay are started with alike. */
export interface RealNodeContext {
  pki: Pki;
  nodePki: NodePki;
  apiserverUrl: string;
  env: NodeJS.ProcessEnv;
  log: (name: string) => string;
  /** Records a started process in the stack's state (so `down` stops it and `status` shows it). */
  record: (s: Started, endpoint: string) => Promise<void>;
  rbac: k8s.RbacAuthorizationV1Api;
  say: (line: string) => void;
}

/** What {@link startRealNodeServices} needs: the real node's context, its directory and two binaries. */
export type StartServicesInput = RealNodeContext & {
  /** `<stateDir>/node`: kubeconfigs and the Corefile go here. */
  nodeDir: string;
  /** kube-proxy (test/harness/bins/proxy) and CoreDNS (test/harness/bins/dns), absolute paths. */
  bins: { kubeProxy: string; coredns: string };
};

/**
 * Starts the relay to the API server on the node IP, kube-proxy and CoreDNS, and waits until
 * kube-proxy has written its rules and CoreDNS answers `kubernetes.default.svc.cluster.local`.
 * Then moves the real node's iptables fence back to the head of FORWARD, ahead of the chains
 * kube-proxy prepends there.
 * @throws ComponentError when one exits or does not get ready, with its log tail; StepError for a failed host step.
 */
export async function startRealNodeServices(input: StartServicesInput): Promise<void> {
  const apiPort = new URL(input.apiserverUrl).port;
  const relay = startProcess("apiserver-relay", process.execPath, [
    fileURLToPath(new URL("./tcp-relay.ts", import.meta.url)), REAL_NODE.nodeIp, apiPort, "127.0.0.1", apiPort,
  ], input.log("apiserver-relay"), input.env);
  await input.record(relay, `https://${REAL_NODE.nodeIp}:${apiPort}`);

  const proxyKubeconfig = path.join(input.nodeDir, "kube-proxy.kubeconfig");
  await writeFile(proxyKubeconfig, kubeconfig(input.apiserverUrl, input.pki.caCert, input.nodePki.kubeProxyClientCert, input.nodePki.kubeProxyClientKey, "system:kube-proxy"));
  const [healthzPort, metricsPort, healthPort, readyPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const proxy = startProcess("kube-proxy", input.bins.kubeProxy, kubeProxyArgs({ kubeconfig: proxyKubeconfig, healthzPort, metricsPort }),
    input.log("kube-proxy"), input.env);
  await input.record(proxy, `http://127.0.0.1:${metricsPort}/metrics`);

  await input.rbac.createClusterRole({ body: COREDNS_CLUSTER_ROLE });
  await input.rbac.createClusterRoleBinding({ body: {
    metadata: { name: COREDNS_CLUSTER_ROLE.metadata.name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: COREDNS_CLUSTER_ROLE.metadata.name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: COREDNS_USER }],
  } });
  const dnsKubeconfig = path.join(input.nodeDir, "coredns.kubeconfig");
  await writeFile(dnsKubeconfig, kubeconfig(input.apiserverUrl, input.pki.caCert, input.nodePki.corednsClientCert, input.nodePki.corednsClientKey, COREDNS_USER));
  const corefilePath = path.join(input.nodeDir, "Corefile");
  await writeFile(corefilePath, corefile({ kubeconfig: dnsKubeconfig, healthPort, readyPort }));
  const dns = startProcess("coredns", input.bins.coredns, ["-conf", corefilePath], input.log("coredns"), input.env);
  await input.record(dns, `dns://${REAL_NODE.nodeIp}:53`);

  // kube-proxy's healthz turns 200 after its first full sync of Services to iptables.
  await waitReady(proxy, async () => (await fetch(`http://127.0.0.1:${healthzPort}/healthz`, { signal: AbortSignal.timeout(2000) })).ok, 60_000);
  await waitReady(dns, async () => (await fetch(`http://127.0.0.1:${readyPort}/ready`, { signal: AbortSignal.timeout(2000) })).ok, 60_000);
  await waitReady(dns, async () => (await resolveInCluster(`kubernetes.default.svc.${CLUSTER_DOMAIN}`)).includes(KUBERNETES_SERVICE_IP), 30_000);
  await waitReady(relay, () => tcpOpen(REAL_NODE.nodeIp, Number(apiPort)), 10_000);
  await fenceFirst();
  input.say(`real node: kube-proxy synced, CoreDNS answers on ${REAL_NODE.nodeIp}:53, API server relayed on ${REAL_NODE.nodeIp}:${apiPort}`);
}

/** True when a TCP connection to `host:port` opens within a second. */
function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
    socket.on("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The IPv4 addresses the cluster DNS gives for `name`; [] when it answers none. */
export async function resolveInCluster(name: string): Promise<string[]> {
  const resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([REAL_NODE.nodeIp]);
  return resolver.resolve4(name).catch(() => []);
}

/**
 * Puts the jump to the real node's chain first in FORWARD again: kube-proxy prepends its own
 * jumps (KUBE-FORWARD accepts established and marked traffic), and the fence must see every
 * forwarded packet before anything accepts it. kube-proxy only checks that its jumps exist, so
 * it leaves this order alone.
 */
/** The chains kube-proxy's iptables mode jumps to from FORWARD (pkg/proxy/iptables/proxier.go, iptablesJumpChains). */
const KUBE_PROXY_FORWARD_CHAINS = ["KUBE-PROXY-FIREWALL", "KUBE-FORWARD", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"];

async function fenceFirst(): Promise<void> {
  const step = "put the real node's iptables fence first in FORWARD";
  const jump = `-A FORWARD -j ${REAL_NODE.iptablesChain}`;
  const forwardRules = async () => (await run("iptables", ["-w", "-t", "filter", "-S", "FORWARD"])).stdout.split("\n").filter((l) => l.startsWith("-A FORWARD"));
  // kube-proxy adds its jumps one at a time during its first syncs: wait until all are there.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const rules = await forwardRules();
    if (KUBE_PROXY_FORWARD_CHAINS.every((c) => rules.some((l) => l.endsWith(`-j ${c}`)))) break;
    if (Date.now() > deadline) throw new StepError(step, `kube-proxy's jumps did not all appear in FORWARD within 30 s: ${rules.join("; ")}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  try {
    // One iptables-restore transaction: the jump moves to the head with no moment without it,
    // and kube-proxy's own restores (same xtables lock) cannot interleave.
    const child = run("iptables-restore", ["--noflush", "-w"]);
    child.child.stdin?.end(["*filter", `-D FORWARD -j ${REAL_NODE.iptablesChain}`, `-I FORWARD 1 -j ${REAL_NODE.iptablesChain}`, "COMMIT", ""].join("\n"));
    await child;
    const forward = await forwardRules();
    if (forward[0] !== jump || forward.filter((l) => l === jump).length !== 1) throw new Error(`FORWARD is now: ${forward.join("; ")}`);
  } catch (error) {
    throw new StepError(step, (error as { stderr?: string }).stderr?.trim() || (error as Error).message, { cause: error });
  }
}

/** The netfilter tables (`<family> <name>`, e.g. `ip mangle`) that exist now, from `nft list tables`. */
export async function netfilterTables(): Promise<string[]> {
  const out = (await run("nft", ["list", "tables"])).stdout;
  return out.split("\n").filter((l) => l.startsWith("table ")).map((l) => l.slice("table ".length).trim());
}

/** Runs a command (`input` on its stdin); a failure is pushed on `problems` and gives undefined. */
function attempter(problems: string[]) {
  return async (file: string, args: string[], input?: string): Promise<string | undefined> => {
    try {
      const child = run(file, args, { maxBuffer: 64 << 20 });
      if (input !== undefined) child.child.stdin?.end(input);
      return (await child).stdout;
    } catch (error) {
      problems.push(`${file} ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() || String(error)}`);
      return undefined;
    }
  };
}

/**
 * Removes every iptables rule and chain kube-proxy made (v4 and v6), after kube-proxy has
 * stopped: `kube-proxy --cleanup`; then the `KUBE-` chains it leaves on purpose, and any other
 * (see {@link kubeChainRemoval}). The tables go later, with the node's own chain
 * ({@link removeTablesMadeSince}).
 * @returns one message per step that failed (empty when all is clean).
 */
export async function cleanUpKubeProxy(kubeProxy: string): Promise<string[]> {
  const problems: string[] = [];
  const attempt = attempter(problems);
  await attempt(kubeProxy, ["--cleanup", "--v=0"]);
  for (const tool of ["iptables", "ip6tables"] as const) {
    const save = await attempt(`${tool}-save`, []);
    if (save === undefined) continue;
    for (const script of Object.values(kubeChainRemoval(save))) await attempt(`${tool}-restore`, ["--noflush", "-w"], script);
    const after = await attempt(`${tool}-save`, []);
    if (after === undefined) continue;
    const left = after.split("\n").filter((l) => l.startsWith(":KUBE-"));
    if (left.length > 0) problems.push(`${tool}: kube-proxy's chains left: ${left.map((l) => l.split(" ")[0]).join(", ")}`);
  }
  return problems;
}

/**
 * Deletes each `ip`/`ip6` table that was not there before `up` (`tablesBefore`, from
 * {@link netfilterTables}) and is empty now: an iptables call makes the table it names and the
 * kernel keeps it, empty, after its last chain goes (kube-proxy's, and the node's own in `filter`).
 * Run after every chain of the node is gone.
 * @returns one message per step that failed (empty when all is clean).
 */
export async function removeTablesMadeSince(tablesBefore: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const attempt = attempter(problems);
  for (const [family, tool] of [["ip", "iptables"], ["ip6", "ip6tables"]] as const) {
    const save = await attempt(`${tool}-save`, []);
    if (save === undefined) continue;
    for (const table of emptyTables(save).filter((t) => !tablesBefore.includes(`${family} ${t}`))) {
      await attempt("nft", ["delete", "table", family, table]);
    }
  }
  return problems;
}
