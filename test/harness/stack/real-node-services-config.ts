/**
 * How the real node gets Services and cluster DNS: kube-proxy's command line, CoreDNS's Corefile
 * and its ClusterRole. Pure text and data from plain inputs, so the choices are visible and
 * testable here; `real-node-services.ts` starts the processes.
 *
 * Both run as host processes, as kube-proxy does on every node; CoreDNS is a host process too
 * (not a Pod behind a Service) so that it needs no image, no Deployment and no ClusterIP of its
 * own, and the kubelet's `clusterDNS` is simply the node IP it binds.
 */
import { CLUSTER_DOMAIN, REAL_NODE } from "./real-node-config.ts";

/** What kube-proxy's command line is made of. */
export interface KubeProxyArgsInput {
  /** Its kubeconfig: the stack's CA and the `system:kube-proxy` client certificate. */
  readonly kubeconfig: string;
  /** Port of its `/healthz` on 127.0.0.1. */
  readonly healthzPort: number;
  /** Port of its `/metrics` on 127.0.0.1. */
  readonly metricsPort: number;
}

/**
 * kube-proxy's flags: iptables mode for the real node (`--hostname-override`, primary IP the node
 * IP); traffic from the Pod range is local (`--cluster-cidr`), from anywhere else masqueraded;
 * health and metrics on 127.0.0.1 only; NodePorts only on the node IP (never every address), and
 * none on localhost, which would need `route_localnet=1`. The conntrack settings are 0 ("leave
 * as is"): kube-proxy would otherwise raise the host's `nf_conntrack_max` and timeouts, kernel
 * settings `down` would have to put back.
 */
export function kubeProxyArgs(input: KubeProxyArgsInput): string[] {
  return [
    `--kubeconfig=${input.kubeconfig}`,
    "--proxy-mode=iptables",
    `--hostname-override=${REAL_NODE.name}`,
    `--bind-address=${REAL_NODE.nodeIp}`,
    `--cluster-cidr=${REAL_NODE.podCidr}`,
    `--healthz-bind-address=127.0.0.1:${input.healthzPort}`,
    `--metrics-bind-address=127.0.0.1:${input.metricsPort}`,
    `--nodeport-addresses=${REAL_NODE.nodeIp}/32`,
    "--iptables-localhost-nodeports=false",
    "--conntrack-max-per-core=0",
    "--conntrack-min=0",
    "--conntrack-tcp-timeout-established=0",
    "--conntrack-tcp-timeout-close-wait=0",
    "--v=0",
  ];
}

/** What the Corefile is made of. */
export interface CorefileInput {
  /** CoreDNS's kubeconfig: the stack's CA and the `appmonitor:coredns` client certificate. */
  readonly kubeconfig: string;
  /** Port of its `/health` on 127.0.0.1. */
  readonly healthPort: number;
  /** Port of its `/ready` on 127.0.0.1 (200 once the kubernetes plugin has synced). */
  readonly readyPort: number;
}

/**
 * The Corefile: one server for the cluster domain, bound to the node IP alone on port 53, whose
 * names the kubernetes plugin answers from the API (Services, their endpoints, headless records).
 * No other zone is served and no forward plugin is linked in: a query for any other name is
 * refused, so a Pod's lookup never leaves the machine.
 */
export function corefile(input: CorefileInput): string {
  return [
    "# Written by test/harness/stack/real-node-services-config.ts for the appmonitor local stack's real node.",
    `${CLUSTER_DOMAIN}:53 {`,
    `    bind ${REAL_NODE.nodeIp}`,
    "    errors",
    `    health 127.0.0.1:${input.healthPort}`,
    `    ready 127.0.0.1:${input.readyPort}`,
    `    kubernetes ${CLUSTER_DOMAIN} {`,
    `        kubeconfig ${input.kubeconfig}`,
    "        ttl 5",
    "    }",
    "    cache 5",
    "}",
    "",
  ].join("\n");
}

/** The user of CoreDNS's client certificate (certs.ts). */
export const COREDNS_USER = "appmonitor:coredns";

/**
 * What CoreDNS's kubernetes plugin reads, as the `system:coredns` ClusterRole of a kubeadm
 * cluster grants it: list and watch Services, EndpointSlices, Namespaces (and Endpoints, Pods).
 */
export const COREDNS_CLUSTER_ROLE = {
  metadata: { name: "appmonitor:coredns" },
  rules: [
    { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
    { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
  ],
};

/** The tables iptables-save prints, each with the text of its `*<table>` … `COMMIT` block. */
function saveTables(save: string): Map<string, string[]> {
  const tables = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of save.split("\n")) {
    if (line.startsWith("*")) tables.set(line.slice(1).trim(), (current = []));
    else if (line === "COMMIT") current = undefined;
    else if (current && !line.startsWith("#")) current.push(line);
  }
  return tables;
}

/**
 * What removes every `KUBE-` chain left in an `iptables-save` (or `ip6tables-save`) output, as
 * `iptables-restore --noflush` input per table: each jump to a `KUBE-` chain from another chain
 * deleted (`-D`, the saved rule as written), then each `KUBE-` chain flushed and deleted.
 * `kube-proxy --cleanup` leaves some on purpose: `KUBE-FIREWALL` and its jumps from INPUT and
 * OUTPUT, which a kubelet shares on a real cluster (pkg/proxy/iptables/proxier.go,
 * iptablesKubeletJumpChains). A table without `KUBE-` chains gets no entry.
 */
export function kubeChainRemoval(save: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [table, lines] of saveTables(save)) {
    const chains = lines.filter((l) => l.startsWith(":KUBE-")).map((l) => l.slice(1).split(" ")[0] ?? "");
    if (chains.length === 0) continue;
    const jumps = lines.filter((l) => /^-A (?!KUBE-)\S+ .*-j KUBE-/.test(l)).map((l) => `-D${l.slice(2)}`);
    result[table] = [`*${table}`, ...chains.map((c) => `:${c} - [0:0]`), ...jumps, ...chains.map((c) => `-X ${c}`), "COMMIT", ""].join("\n");
  }
  return result;
}

/**
 * The tables of an `iptables-save` output that hold nothing: no rule and no chain of their own
 * (only built-in chains, whose policy is not `-`). With iptables' nf_tables backend such a table
 * stays in the kernel once a program has touched it (kube-proxy's canary chain does, in `mangle`);
 * `down` deletes the ones that were not there before `up`.
 */
export function emptyTables(save: string): string[] {
  return [...saveTables(save)].filter(([, lines]) => !lines.some((l) => l.startsWith("-A") || / - \[/.test(l) || / -$/.test(l))).map(([t]) => t);
}
