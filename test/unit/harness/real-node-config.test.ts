// The real node's configuration files, read back: what keeps Pod traffic on this machine, what
// the kubelet needs on this kind of host, and where the kubelet puts a Pod's cgroup.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  cniConflist, containerdConfig, kubeletConfig, kubeletScrapeJobs, podCgroupPath, REAL_NODE, realNodePaths, SERVICE_CIDR,
} from "../../harness/stack/real-node-config.ts";

const paths = realNodePaths("/state");

/** [first, last] address of an IPv4 CIDR, as numbers. */
function range(cidr: string): [number, number] {
  const [ip = "", bits = "32"] = cidr.split("/");
  const base = ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
  const size = 2 ** (32 - Number(bits));
  return [base - (base % size), base - (base % size) + size - 1];
}

test("the real node's address ranges overlap none of the stack's others nor podman's", () => {
  const ranges: Record<string, string> = {
    "real node Pods": REAL_NODE.podCidr,
    "real node IP": `${REAL_NODE.nodeIp}/32`,
    "kwok Pod IPs": "10.244.0.0/16",
    "Services": "10.96.0.0/16",
    "podman": "10.88.0.0/16",
  };
  const entries = Object.entries(ranges);
  for (const [i, [a, cidrA]] of entries.entries()) {
    for (const [b, cidrB] of entries.slice(i + 1)) {
      const [a0, a1] = range(cidrA);
      const [b0, b1] = range(cidrB);
      assert.ok(a1 < b0 || b1 < a0, `${a} ${cidrA} overlaps ${b} ${cidrB}`);
    }
  }
  const [p0, p1] = range(REAL_NODE.podCidr);
  const gateway = range(`${REAL_NODE.podGateway}/32`)[0];
  assert.ok(p0 < gateway && gateway < p1, "the bridge's address is inside the Pod range");
});

test("CNI: a bridge with no masquerade, no default route, routes to the Services and the node IP alone, host-local addresses from the Pod range", () => {
  const conf = JSON.parse(cniConflist(paths)) as { plugins: Record<string, unknown>[] };
  assert.equal(conf.plugins.length, 1);
  const bridge = conf.plugins[0] as { type: string; bridge: string; ipMasq: boolean; isDefaultGateway: boolean; ipam: { type: string; dataDir: string; ranges: { subnet: string }[][]; routes?: unknown } };
  assert.deepEqual(
    { type: bridge.type, bridge: bridge.bridge, ipMasq: bridge.ipMasq, isDefaultGateway: bridge.isDefaultGateway, ipam: bridge.ipam.type, routes: bridge.ipam.routes },
    {
      type: "bridge", bridge: REAL_NODE.bridge, ipMasq: false, isDefaultGateway: false, ipam: "host-local",
      routes: [{ dst: SERVICE_CIDR, gw: REAL_NODE.podGateway }, { dst: `${REAL_NODE.nodeIp}/32`, gw: REAL_NODE.podGateway }],
    },
  );
  assert.equal(bridge.ipam.ranges[0]?.[0]?.subnet, REAL_NODE.podCidr);
  assert.ok(bridge.ipam.dataDir.startsWith("/state/"), "address leases live in the state directory");
});

test("containerd: state, socket and network namespaces under the state directory; oom_score_adj restricted; our sandbox image", () => {
  const toml = containerdConfig(paths, "/usr/sbin/runc", "/usr/lib/cni");
  for (const line of [
    'root = "/state/node/containerd/root"',
    'state = "/state/node/containerd/state"',
    'address = "/state/node/containerd/containerd.sock"',
    "restrict_oom_score_adj = true",
    "netns_mounts_under_state_dir = true",
    `sandbox_image = "${REAL_NODE.sandboxImage}"`,
    "SystemdCgroup = false",
    'Root = "/state/node/runc"',
    'bin_dir = "/usr/lib/cni"',
    'conf_dir = "/state/node/cni/net.d"',
  ]) {
    assert.ok(toml.split("\n").some((l) => l.trim() === line), `${line} in\n${toml}`);
  }
});

test("kubelet: HTTPS on the node IP with webhook authentication and authorization, cgroupfs on cgroup v1, no iptables, cluster DNS on the node IP and no host resolv.conf", () => {
  const config = parse(kubeletConfig({ paths, port: 10250, healthzPort: 10248, caFile: "/pki/ca.crt", tlsCertFile: "/pki/k.crt", tlsKeyFile: "/pki/k.key" })) as Record<string, unknown>;
  assert.deepEqual(
    {
      address: config.address, readOnlyPort: config.readOnlyPort, authentication: config.authentication, authorization: (config.authorization as { mode: string }).mode,
      cgroupDriver: config.cgroupDriver, cgroupRoot: config.cgroupRoot, failCgroupV1: config.failCgroupV1, makeIPTablesUtilChains: config.makeIPTablesUtilChains,
      resolvConf: config.resolvConf, containerRuntimeEndpoint: config.containerRuntimeEndpoint, healthzBindAddress: config.healthzBindAddress,
      clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain,
    },
    {
      address: REAL_NODE.nodeIp, readOnlyPort: 0,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true, cacheTTL: "30s" }, x509: { clientCAFile: "/pki/ca.crt" } },
      authorization: "Webhook", cgroupDriver: "cgroupfs", cgroupRoot: REAL_NODE.cgroupRoot, failCgroupV1: false, makeIPTablesUtilChains: false,
      resolvConf: "", containerRuntimeEndpoint: "unix:///state/node/containerd/containerd.sock", healthzBindAddress: "127.0.0.1",
      clusterDNS: [REAL_NODE.nodeIp], clusterDomain: "cluster.local",
    },
  );
  assert.deepEqual(config.registerWithTaints, [REAL_NODE.taint]);
});

test("Prometheus scrapes the kubelet's cAdvisor and resource endpoints over HTTPS with the ServiceAccount token file, as one job", () => {
  const jobs = kubeletScrapeJobs({ address: `${REAL_NODE.nodeIp}:10250`, caFile: "/pki/ca.crt", tokenFile: paths.prometheusToken });
  assert.deepEqual(
    jobs.map((job) => ({ scheme: job.scheme, path: job.metrics_path, honorLabels: job.honor_labels, authorization: job.authorization, tls: job.tls_config })),
    ["/metrics/cadvisor", "/metrics/resource"].map((path) => (
      { scheme: "https", path, honorLabels: true, authorization: { type: "Bearer", credentials_file: "/state/prometheus/kubelet-token" }, tls: { ca_file: "/pki/ca.crt" } }
    )),
  );
  assert.equal(new Set(jobs.map((job) => job.job_name)).size, 2, "scrape config names are unique");
  for (const job of jobs) assert.deepEqual((job.relabel_configs as unknown[]).at(-1), { target_label: "job", replacement: "kubelet-real-node" });
});

test("a Pod's cgroup path follows its QoS class, as the kubelet's cgroupfs driver names it", () => {
  for (const [qosClass, container, expected] of [
    ["Guaranteed", undefined, "/appmonitor-node/kubepods/podU"],
    ["Burstable", undefined, "/appmonitor-node/kubepods/burstable/podU"],
    ["BestEffort", "abc", "/appmonitor-node/kubepods/besteffort/podU/abc"],
  ] as const) {
    assert.equal(podCgroupPath({ uid: "U", qosClass }, container), expected);
  }
});
