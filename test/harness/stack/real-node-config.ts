/**
 * The real node's fixed facts and the configuration files it runs with: containerd's
 * config.toml, the CNI network, the kubelet's KubeletConfiguration, and Prometheus's scrape job
 * for its kubelet. Pure text from plain data, so the choices are visible and testable here; the
 * processes, interfaces and rules are made by `real-node.ts`.
 *
 * One real node at a time per machine: its interface, bridge, iptables chain and cgroup root
 * have fixed names (so `down` and a test can find every one of them).
 */
import { stringify } from "yaml";

/** Names and addresses of the real node; none of them overlaps the stack's other ranges. */
export const REAL_NODE = {
  /** The Node's name (and `kubernetes.io/hostname`). */
  name: "real-node",
  /** An interface the stack creates (a bridge with no ports), holding the node's own address. */
  nodeInterface: "appmon-node",
  /** The node's InternalIP: the kubelet refuses a loopback one. Lives on `nodeInterface`, a /32. */
  nodeIp: "10.245.255.1",
  /**
   * The kubelet's port on the node IP: its default, 10250, which prometheus-operator writes into
   * the kubelet Service's endpoints whatever port a Node reports. Free: the node IP is the real
   * node's own, and one real node runs per machine.
   */
  kubeletPort: 10250,
  /** The Pods' bridge, created by the CNI bridge plugin on the first Pod. */
  bridge: "appmon-br0",
  /** The Pods' addresses (kwok's fake Pod IPs are 10.244.0.0/16, Services 10.96.0.0/16, podman's 10.88.0.0/16). */
  podCidr: "10.245.0.0/24",
  /** The bridge's own address, the Pods' gateway to the host alone (no default route is given to Pods). */
  podGateway: "10.245.0.1",
  /** Our filter-table chain, jumped to first from FORWARD: Pod traffic never leaves the machine. */
  iptablesChain: "APPMON-NODE",
  /** The kubelet's cgroup root in every cgroup v1 hierarchy; Pods go under `<root>/kubepods`. */
  cgroupRoot: "/appmonitor-node",
  /** The sandbox image, built by test/harness/bins/build.sh as pause.oci.tar. */
  sandboxImage: "localhost/appmonitor/pause:1",
  /** The taint that keeps ordinary Pods on the kwok Nodes; a Pod for the real node tolerates it. */
  taint: { key: "appmonitor.kubedemo.com/real-node", value: "true", effect: "NoSchedule" },
  /** Label of the real node, for a Pod's nodeSelector. */
  label: { key: "appmonitor.kubedemo.com/node", value: "real" },
} as const;

/** The stack's Service range (kube-apiserver's `--service-cluster-ip-range`); kube-proxy routes it on the real node. */
export const SERVICE_CIDR = "10.96.0.0/16";

/** The ClusterIP of the `kubernetes` Service: the first address of {@link SERVICE_CIDR}, what in-cluster clients dial. */
export const KUBERNETES_SERVICE_IP = "10.96.0.1";

/** The cluster's DNS domain (the kubelet's `clusterDomain`, CoreDNS's zone). */
export const CLUSTER_DOMAIN = "cluster.local";

/**
 * Where a Pod on the real node may send packets besides the Pod range: the Service range (which
 * kube-proxy rewrites to Pod or host addresses) and the node IP (cluster DNS, the API server).
 * Each is a route via the bridge's address; nothing else is routed, so there is no default route.
 */
export const POD_ROUTES = [SERVICE_CIDR, `${REAL_NODE.nodeIp}/32`] as const;

/** What puts a Pod on the real node: its label as nodeSelector and a toleration of its taint. */
export const REAL_NODE_PLACEMENT = {
  nodeSelector: { [REAL_NODE.label.key]: REAL_NODE.label.value },
  tolerations: [{ key: REAL_NODE.taint.key, operator: "Exists", effect: REAL_NODE.taint.effect }],
};

/**
 * The cgroup path (relative to a hierarchy's root) of a Pod on the real node, as the kubelet's
 * cgroupfs driver names it: `<cgroupRoot>/kubepods[/burstable|/besteffort]/pod<uid>`; with a
 * container ID (without its `containerd://` prefix), that container's cgroup inside it.
 */
export function podCgroupPath(pod: { uid: string; qosClass: string }, containerId?: string): string {
  const qos = pod.qosClass === "Guaranteed" ? "" : `/${pod.qosClass.toLowerCase()}`;
  return `${REAL_NODE.cgroupRoot}/kubepods${qos}/pod${pod.uid}${containerId ? `/${containerId}` : ""}`;
}

/**
 * The Debian packages the real node needs (containerd 1.6, runc, the CNI plugins, iproute2,
 * iptables, nftables's nft, which deletes the tables kube-proxy leaves, and skopeo, which puts
 * the images it pulls into the stack's registry).
 */
export const REAL_NODE_PACKAGES = ["containerd", "runc", "containernetworking-plugins", "iproute2", "iptables", "nftables", "skopeo"] as const;

/** Where the real node keeps its state: everything under `<stateDir>/node/`. */
export interface RealNodePaths {
  readonly dir: string;
  readonly containerdConfig: string;
  readonly containerdRoot: string;
  readonly containerdState: string;
  /** containerd's gRPC socket (also the CRI endpoint and cAdvisor's `--containerd`). */
  readonly containerdSocket: string;
  /** containerd's registry `config_path`: one `<host>/hosts.toml` per registry it pulls from (`registry.ts`). */
  readonly containerdHostsDir: string;
  readonly cniConfDir: string;
  readonly cniDataDir: string;
  readonly kubeletRoot: string;
  readonly kubeletConfig: string;
  readonly kubeletKubeconfig: string;
  readonly podLogs: string;
  /** The ServiceAccount token Prometheus sends to the kubelet. */
  readonly prometheusToken: string;
}

/** The real node's paths under `stateDir`. */
export function realNodePaths(stateDir: string): RealNodePaths {
  const dir = `${stateDir}/node`;
  return {
    dir,
    containerdConfig: `${dir}/containerd/config.toml`,
    containerdRoot: `${dir}/containerd/root`,
    containerdState: `${dir}/containerd/state`,
    containerdSocket: `${dir}/containerd/containerd.sock`,
    containerdHostsDir: `${dir}/containerd/certs.d`,
    cniConfDir: `${dir}/cni/net.d`,
    cniDataDir: `${dir}/cni/ipam`,
    kubeletRoot: `${dir}/kubelet`,
    kubeletConfig: `${dir}/kubelet-config.yaml`,
    kubeletKubeconfig: `${dir}/kubelet.kubeconfig`,
    podLogs: `${dir}/pod-logs`,
    prometheusToken: `${stateDir}/prometheus/kubelet-token`,
  };
}

const q = (s: string) => JSON.stringify(s);

/**
 * containerd's config.toml (version 2, for Debian's containerd 1.6): root, state, socket and the
 * Pods' network namespaces under the stack's directory; `restrict_oom_score_adj` (this machine
 * refuses to lower an oom_score_adj, and runc's sandboxes fail without it); our sandbox image;
 * runc through the v2 shim with cgroupfs; CNI from Debian's plugin directory and our conf dir;
 * registry hosts from `containerdHostsDir` (where `registry.ts` writes the stack registry's mirrors).
 */
export function containerdConfig(paths: RealNodePaths, runc = "/usr/sbin/runc", cniBinDir = "/usr/lib/cni"): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return [
    "# Written by test/harness/stack/real-node-config.ts for the appmonitor local stack's real node.",
    "version = 2",
    `root = ${q(paths.containerdRoot)}`,
    `state = ${q(paths.containerdState)}`,
    "[grpc]",
    `  address = ${q(paths.containerdSocket)}`,
    "[metrics]",
    '  address = ""',
    '[plugins."io.containerd.internal.v1.opt"]',
    `  path = ${q(`${paths.dir}/containerd/opt`)}`,
    `[${cri}]`,
    `  sandbox_image = ${q(REAL_NODE.sandboxImage)}`,
    "  restrict_oom_score_adj = true",
    "  netns_mounts_under_state_dir = true",
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.containerd.runtimes.runc.options]`,
    `  BinaryName = ${q(runc)}`,
    `  Root = ${q(`${paths.dir}/runc`)}`,
    "  SystemdCgroup = false",
    `[${cri}.cni]`,
    `  bin_dir = ${q(cniBinDir)}`,
    `  conf_dir = ${q(paths.cniConfDir)}`,
    "  max_conf_num = 1",
    `[${cri}.registry]`,
    `  config_path = ${q(paths.containerdHostsDir)}`,
    "",
  ].join("\n");
}

/**
 * The Pods' CNI network: Debian's `bridge` plugin on our bridge with `host-local` addresses from
 * the Pod range. No masquerade and no default route in the Pods: they reach each other, the host's
 * bridge address and, through {@link POD_ROUTES} via the bridge, Services and the node IP; nothing
 * else (the iptables chain drops the rest as a second fence).
 */
export function cniConflist(paths: RealNodePaths): string {
  return JSON.stringify({
    cniVersion: "1.0.0",
    name: "appmonitor",
    plugins: [{
      type: "bridge",
      bridge: REAL_NODE.bridge,
      isGateway: true,
      isDefaultGateway: false,
      ipMasq: false,
      hairpinMode: true,
      ipam: {
        type: "host-local",
        dataDir: paths.cniDataDir,
        ranges: [[{ subnet: REAL_NODE.podCidr, gateway: REAL_NODE.podGateway }]],
        routes: POD_ROUTES.map((dst) => ({ dst, gw: REAL_NODE.podGateway })),
      },
    }],
  }, null, 2);
}

/** What the kubelet's configuration is made of besides the fixed choices. */
export interface KubeletConfigInput {
  readonly paths: RealNodePaths;
  /** Port of the kubelet's HTTPS API on the node IP. */
  readonly port: number;
  /** Port of its plain `/healthz` on 127.0.0.1. */
  readonly healthzPort: number;
  readonly caFile: string;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
}

/**
 * The KubeletConfiguration (kubelet.config.k8s.io/v1beta1): HTTPS on the node IP with a serving
 * certificate from the stack's CA, webhook authentication and authorization (a bearer token is
 * checked with a TokenReview, its rights with a SubjectAccessReview, as on a real cluster), x509
 * clients from the stack's CA; cgroupfs on cgroup v1 (`failCgroupV1: false`) under our cgroup root;
 * containerd's socket; no iptables chains of its own; cluster DNS at the node IP (CoreDNS on the
 * host, `real-node-services.ts`) and no host resolv.conf (nothing outside may be asked); eviction and image garbage collection off, as kind does, so a full disk never evicts the
 * demo's Pods or deletes their imported images; Pods synced every 10 s (`syncFrequency`, 1m by
 * default), so a changed ConfigMap or Secret reaches their volumes within seconds.
 */
export function kubeletConfig(input: KubeletConfigInput): string {
  const endpoint = `unix://${input.paths.containerdSocket}`;
  return stringify({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: REAL_NODE.nodeIp,
    port: input.port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: input.healthzPort,
    tlsCertFile: input.tlsCertFile,
    tlsPrivateKeyFile: input.tlsKeyFile,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true, cacheTTL: "30s" },
      x509: { clientCAFile: input.caFile },
    },
    authorization: { mode: "Webhook", webhook: { cacheAuthorizedTTL: "30s", cacheUnauthorizedTTL: "5s" } },
    cgroupDriver: "cgroupfs",
    cgroupRoot: REAL_NODE.cgroupRoot,
    cgroupsPerQOS: true,
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: endpoint,
    imageServiceEndpoint: endpoint,
    podLogsDir: input.paths.podLogs,
    makeIPTablesUtilChains: false,
    oomScoreAdj: 0,
    resolvConf: "",
    clusterDomain: CLUSTER_DOMAIN,
    clusterDNS: [REAL_NODE.nodeIp],
    registerWithTaints: [REAL_NODE.taint],
    evictionHard: { "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%" },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    // Mounted ConfigMaps and Secrets (the operator's rule files, Alertmanager's configuration)
    // are refreshed at a Pod's sync: every 10 s here, every minute by default.
    syncFrequency: "10s",
    nodeStatusUpdateFrequency: "2s",
    nodeStatusReportFrequency: "10s",
  });
}

/** The kube-prometheus ServiceAccount whose token Prometheus sends to the kubelet. */
export const PROMETHEUS_SERVICE_ACCOUNT = { namespace: "monitoring", name: "prometheus-k8s" } as const;

/**
 * Prometheus's scrape jobs for the real node's kubelet, as kube-prometheus's kubelet ServiceMonitor
 * makes them: one per endpoint, `/metrics/cadvisor` (per-container series, the OOM counter) and
 * `/metrics/resource` (the kubelet's own working set per container, what metrics-server reads),
 * both labelled `job="kubelet-real-node"` and told apart by a `metrics_path` label, as
 * kube-prometheus does with `job="kubelet"`. HTTPS to the node's InternalIP and kubelet port,
 * the ServiceAccount's bearer token (re-read from the file at each scrape), the cluster CA,
 * `honor_labels` so the `namespace`, `pod` and `container` labels stay as the kubelet wrote them,
 * `honor_timestamps: false`. Rules that read `container_memory_working_set_bytes` get it from both
 * endpoints and take the `max` per container (rule-sync's rule does).
 */
export function kubeletScrapeJobs(opts: { address: string; caFile: string; tokenFile: string }): Record<string, unknown>[] {
  return (["/metrics/cadvisor", "/metrics/resource"] as const).map((metricsPath) => ({
    job_name: metricsPath === "/metrics/cadvisor" ? "kubelet-real-node" : "kubelet-real-node-resource",
    scheme: "https",
    metrics_path: metricsPath,
    honor_labels: true,
    honor_timestamps: false,
    authorization: { type: "Bearer", credentials_file: opts.tokenFile },
    tls_config: { ca_file: opts.caFile },
    static_configs: [{ targets: [opts.address], labels: { node: REAL_NODE.name } }],
    relabel_configs: [
      { source_labels: ["__metrics_path__"], target_label: "metrics_path" },
      { target_label: "job", replacement: "kubelet-real-node" },
    ],
  }));
}
