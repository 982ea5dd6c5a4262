/**
 * The stack's fake Nodes stay Ready for minutes, as Nodes with a live kubelet do: kwok renews
 * their Leases well within kube-controller-manager's node monitor grace period, so the node
 * lifecycle controller never marks them NotReady (nor all of them, entering disruption mode),
 * and a Deployment's Pods stay Ready and available. A Running Pod that was marked not Ready, as
 * that controller does to every Pod of a Node that goes NotReady, becomes Ready again.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { nodeHeartbeat } from "../../harness/stack/config-files.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../../support/stack.ts";

/** How long the Nodes are watched: over three node monitor grace periods, bounded. */
const watchSeconds = 210;
const pollMs = 1_000;
/** The line kube-controller-manager logs when every Node has gone NotReady. */
const disruptionLine = "Entering master disruption mode";

function deployment(name: string, replicas: number): k8s.V1Deployment {
  return {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "main", image: "registry.example/app:1" }] },
      },
    },
  };
}

const condition = (conditions: { type: string; status: string }[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type)?.status;

const millis = (t: Date | string | undefined) => (t === undefined ? NaN : t instanceof Date ? t.getTime() : Date.parse(t));

/** The Deployment's Pods (not being deleted), once it has `replicas` available and all of them Ready. */
async function availablePods(apps: k8s.AppsV1Api, core: k8s.CoreV1Api, ns: string, name: string, replicas: number): Promise<k8s.V1Pod[] | undefined> {
  const d = await apps.readNamespacedDeployment({ name, namespace: ns });
  if (d.status?.availableReplicas !== replicas || d.status?.readyReplicas !== replicas) return undefined;
  const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${name}` })).items.filter((p) => !p.metadata?.deletionTimestamp);
  return pods.length === replicas && pods.every((p) => condition(p.status?.conditions, "Ready") === "True") ? pods : undefined;
}

function kcmLogCount(log: string): number {
  return readFileSync(log, "utf8").split(disruptionLine).length - 1;
}

test("a Running Pod marked not Ready, as when its Node goes NotReady, is Ready again", async (t) => {
  const ns = await freshNamespace(t);
  const kc = await adminKubeConfig();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await apps.createNamespacedDeployment({ namespace: ns, body: deployment("web", 1) });
  const [pod] = await waitFor("the Pod Ready and available", () => availablePods(apps, core, ns, "web", 1), 60_000);
  const name = pod?.metadata?.name;
  assert.ok(name);

  // What the node lifecycle controller does to each Pod of a Node that went NotReady.
  const marked = await core.patchNamespacedPodStatus(
    { name, namespace: ns, body: { status: { conditions: [{ type: "Ready", status: "False", lastTransitionTime: new Date() }] } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
  );
  assert.equal(condition(marked.status?.conditions, "Ready"), "False");

  const again = await waitFor("the same Pod Ready again and the Deployment available", async () => {
    const [ready] = (await availablePods(apps, core, ns, "web", 1)) ?? [];
    return ready?.metadata?.uid === pod?.metadata?.uid ? ready : undefined;
  }, 30_000);
  assert.equal(again.status?.phase, "Running");
  assert.equal(condition(again.status?.conditions, "ContainersReady"), "True");
});

test(`Nodes stay Ready, their Leases renewed, and a Deployment stays available for ${watchSeconds} s`, { timeout: (watchSeconds + 120) * 1000 }, async (t) => {
  const ns = await freshNamespace(t);
  const kc = await adminKubeConfig();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const state = await stack();
  const kcmLog = state.components.find((c) => c.name === "kube-controller-manager")?.log;
  assert.ok(kcmLog, "the stack records kube-controller-manager's log");

  const replicas = 2;
  await apps.createNamespacedDeployment({ namespace: ns, body: deployment("steady", replicas) });
  const initial = await waitFor("the Deployment available", () => availablePods(apps, core, ns, "steady", replicas), 60_000);
  const uids = initial.map((p) => p.metadata?.uid).sort();

  const start = Date.now();
  const disruptionsBefore = kcmLogCount(kcmLog);
  const renewals = new Map<string, Set<number>>(state.nodes.map((n) => [n, new Set()]));
  const graceMs = nodeHeartbeat.nodeMonitorGracePeriodSeconds * 1000;
  const at = () => `${((Date.now() - start) / 1000).toFixed(0)} s in`;
  while (Date.now() - start < watchSeconds * 1000) {
    const [nodes, leases, pods] = await Promise.all([
      core.listNode(),
      coordination.listNamespacedLease({ namespace: "kube-node-lease" }),
      availablePods(apps, core, ns, "steady", replicas),
    ]);
    const now = Date.now();
    for (const name of state.nodes) {
      const node = nodes.items.find((n) => n.metadata?.name === name);
      const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True", `${at()}: Node ${name} is not Ready: ${JSON.stringify(ready)}`);
      const taints = (node?.spec?.taints ?? []).filter((x) => x.key.startsWith("node.kubernetes.io/"));
      assert.deepEqual(taints, [], `${at()}: Node ${name} is tainted`);

      const lease = leases.items.find((l) => l.metadata?.name === name);
      assert.ok(lease, `${at()}: Node ${name} has no Lease in kube-node-lease`);
      assert.equal(lease.spec?.leaseDurationSeconds, nodeHeartbeat.nodeLeaseDurationSeconds);
      const renewed = millis(lease.spec?.renewTime);
      assert.ok(now - renewed < graceMs, `${at()}: Node ${name}'s Lease was last renewed ${((now - renewed) / 1000).toFixed(1)} s ago`);
      renewals.get(name)?.add(renewed);
    }
    assert.ok(pods, `${at()}: Deployment steady has not ${replicas} Ready and available Pods`);
    assert.deepEqual(pods.map((p) => p.metadata?.uid).sort(), uids, `${at()}: the Deployment's Pods were replaced`);
    await sleep(pollMs);
  }

  // A Lease renewed every quarter of its duration: about 21 renewals in 210 s; ask for half.
  const expected = Math.floor(watchSeconds / (nodeHeartbeat.nodeLeaseDurationSeconds / 4) / 2);
  for (const [name, seen] of renewals) assert.ok(seen.size >= expected, `Node ${name}'s Lease renewed ${seen.size} times in ${watchSeconds} s`);
  // A NotReady shorter than a poll (kwok re-initializes a Node at once) still leaves its trace.
  const notReady = (await core.listEventForAllNamespaces({ fieldSelector: "involvedObject.kind=Node,reason=NodeNotReady" })).items
    .filter((e) => state.nodes.includes(e.involvedObject.name ?? "") && millis(e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp) >= start);
  assert.deepEqual(notReady.map((e) => `${e.involvedObject.name}: ${e.message}`), [], "NodeNotReady events while watched");
  assert.equal(kcmLogCount(kcmLog) - disruptionsBefore, 0, `kube-controller-manager logged '${disruptionLine}' while watched`);
});
