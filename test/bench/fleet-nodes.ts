/**
 * A fleet of Nodes the size a production cluster's are, for benches whose cost may grow with the
 * number of Nodes: each Node object about 14 KB of JSON, as a production kubelet reports it (50 images
 * with a digest and a tag each, five conditions, three addresses, nodeInfo, capacity and
 * allocatable with hugepages and ephemeral storage). Nothing runs on them: no kubelet or kwok
 * manages them (no `kwok.x-k8s.io/node` annotation), a `NoSchedule` taint keeps Pods off, and they
 * are created as the controller manager would leave a Node without heartbeats, so that it writes to
 * each at most once or twice: Ready `Unknown` with the `unreachable:NoSchedule` taint, no
 * `unreachable:NoExecute` taint (the node lifecycle controller removes it from every Node it sees
 * for the first time, and adds it back only at its zone's eviction rate), and the TTL controller's
 * annotation for the cluster's final size ({@link ttlSecondsFor}). One write per Node is left that
 * no content avoids: the API server's TaintNodesByCondition admission adds `not-ready:NoSchedule`
 * to every new Node, and the node lifecycle controller takes it off again.
 */
import * as k8s from "@kubernetes/client-node";
import { apiserverRequests } from "../support/apiserver-requests.ts";
import { waitFor } from "../support/stack.ts";

/** The label every fleet Node carries, to find and remove them. */
export const FLEET_LABEL = "bench.appmonitor.dev/fleet";

const hex = (seed: number, length: number): string => {
  let out = "";
  let x = seed * 2654435761 + 1;
  while (out.length < length) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += x.toString(16).padStart(8, "0");
  }
  return out.slice(0, length);
};

/**
 * The `node.alpha.kubernetes.io/ttl` the controller manager's TTL controller wants on every Node of
 * a cluster of `nodes` Nodes, in seconds (its `ttlBoundaries`, pkg/controller/ttl/ttl_controller.go
 * of Kubernetes 1.36, as a growing cluster steps through them). A Node created with it is not
 * patched when the controller reaches it after the cluster has grown.
 */
export function ttlSecondsFor(nodes: number): number {
  if (nodes <= 100) return 0;
  if (nodes <= 500) return 15;
  if (nodes <= 1000) return 30;
  return nodes <= 2000 ? 60 : 300;
}

/** The fleet's Node `i`: allocatable memory between 30 and 250 GiB, the whole status of a production kubelet's size; `ttlSeconds` as {@link ttlSecondsFor}. */
export function fleetNode(i: number, ttlSeconds = 0): k8s.V1Node {
  const name = `fleet-${String(i).padStart(5, "0")}`;
  const memoryGi = 32 + (i % 8) * 32;
  const stale = new Date(Date.now() - 3_600_000);
  const condition = (type: string, reason: string, message: string): k8s.V1NodeCondition => ({ type, status: "Unknown", reason, message, lastHeartbeatTime: stale, lastTransitionTime: stale });
  const images = Array.from({ length: 50 }, (_, j) => {
    const repo = `123456789012.dkr.ecr.eu-west-1.amazonaws.com/svc-${j}`;
    return { names: [`${repo}@sha256:${hex(i * 50 + j, 64)}`, `${repo}:v1.${j}.${i % 10}`], sizeBytes: 20_000_000 + j * 1_048_576 };
  });
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        [FLEET_LABEL]: "true",
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": `m6i.${memoryGi / 16}xlarge`,
        // No topology.kubernetes.io/zone: in the stack's Nodes' zone, beside its healthy kwok
        // Nodes, the node lifecycle controller sees a partial disruption and leaves the taints
        // alone; a zone of unreachable Nodes only is a full disruption, whose handling patches
        // every Node's taints away (thousands of writes during the bench).
      },
      annotations: {
        "node.alpha.kubernetes.io/ttl": String(ttlSeconds),
        "csi.volume.kubernetes.io/nodeid": JSON.stringify({ "ebs.csi.aws.com": `i-${hex(i, 17)}` }),
      },
    },
    spec: {
      providerID: `aws:///eu-west-1a/i-${hex(i, 17)}`,
      taints: [
        { key: FLEET_LABEL, value: "true", effect: "NoSchedule" },
        { key: "node.kubernetes.io/unreachable", effect: "NoSchedule" },
      ],
    },
    status: {
      capacity: { cpu: String(memoryGi / 4), memory: `${memoryGi}Gi`, pods: "110", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0" },
      allocatable: { cpu: `${memoryGi / 4 - 0.1}`, memory: `${memoryGi - 2}Gi`, pods: "110", "ephemeral-storage": "95551679124", "hugepages-1Gi": "0", "hugepages-2Mi": "0" },
      conditions: [
        condition("MemoryPressure", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        condition("DiskPressure", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        condition("PIDPressure", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        condition("Ready", "NodeStatusUnknown", "Kubelet stopped posting node status."),
        { type: "NetworkUnavailable", status: "False", reason: "RouteCreated", message: "RouteController created a route", lastHeartbeatTime: stale, lastTransitionTime: stale },
      ],
      addresses: [
        { type: "InternalIP", address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
        { type: "Hostname", address: name },
        { type: "InternalDNS", address: `ip-10-${(i >> 16) & 255}-${(i >> 8) & 255}-${i & 255}.eu-west-1.compute.internal` },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: hex(i + 1, 32), systemUUID: `ec2${hex(i + 2, 29)}`, bootID: hex(i + 3, 36),
        kernelVersion: "6.1.112-124.190.amzn2023.x86_64", osImage: "Amazon Linux 2023.6.20241031", containerRuntimeVersion: "containerd://1.7.23",
        kubeletVersion: "v1.36.0", kubeProxyVersion: "v1.36.0", operatingSystem: "linux", architecture: "amd64",
      },
      images,
    },
  };
}

/** The bytes of {@link fleetNode} as JSON: what one Node adds to a LIST of Nodes. */
export function fleetNodeBytes(): number {
  return Buffer.byteLength(JSON.stringify(fleetNode(1)));
}

/**
 * Adds fleet Nodes until the cluster has `total` Nodes in all (none when it has as many already),
 * 32 creates at a time, then waits until the controller manager has stopped writing to Nodes (at
 * most 5 Node writes counted by the API server in 5 s), so a bench measures memory-scaler and not
 * a controller catching up. Returns the number of Nodes now.
 */
export async function growFleet(kc: k8s.KubeConfig, total: number): Promise<number> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const first = await core.listNode({ limit: 1 });
  const have = first.items.length + (first.metadata?.remainingItemCount ?? 0);
  const toAdd = Math.max(0, total - have);
  // Fleet Nodes are numbered on from those already made (`removeFleet` before the first growth).
  const start = fleetAdded;
  fleetAdded += toAdd;
  for (let k = 0; k < toAdd; k += 32) {
    await Promise.all(Array.from({ length: Math.min(32, toAdd - k) }, (_, j) => core.createNode({ body: fleetNode(start + k + j, ttlSecondsFor(have + toAdd)) })));
  }
  const writes = async () => [...(await apiserverRequests(kc, ["nodes"]))].filter(([key]) => !key.startsWith("GET") && !key.startsWith("LIST")).reduce((sum, [, n]) => sum + n, 0);
  // Quiet: at most 5 Node writes in 5 s (the kwok Nodes' own heartbeats go on).
  let window = [await writes()];
  const began = Date.now();
  let reported = 0;
  await waitFor("the controller manager done writing to Nodes", async () => {
    window = [...window, await writes()].slice(-6);
    const minute = Math.floor((Date.now() - began) / 60_000);
    if (minute > reported) {
      reported = minute;
      console.error(`fleet: the controller manager still writes to Nodes (${(window.at(-1) ?? 0) - (window[0] ?? 0)} in 5 s, ${minute} min)`);
    }
    return window.length === 6 && (window.at(-1) ?? 0) - (window[0] ?? 0) <= 5 ? true : undefined;
  }, 1_800_000, 1_000);
  return have + toAdd;
}

let fleetAdded = 0;

/** Deletes every fleet Node (those {@link growFleet} added, in this process or an earlier one). */
export async function removeFleet(kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.deleteCollectionNode({ labelSelector: FLEET_LABEL });
  await waitFor("fleet Nodes gone", async () => ((await core.listNode({ labelSelector: FLEET_LABEL, limit: 1 })).items.length === 0 ? true : undefined), 600_000, 1_000);
  fleetAdded = 0;
}
