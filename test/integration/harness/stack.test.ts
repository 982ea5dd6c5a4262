// The local stack is real: Deployments roll out on kwok Nodes, kwok's memory usage reaches
// Prometheus, and RBAC refuses a ServiceAccount without a grant.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { usageMemoryAnnotation } from "../../harness/stack/config-files.ts";
import { adminKubeConfig, freshNamespace, promQuery, serviceAccountKubeConfig, stack, waitFor } from "../../support/stack.ts";

function deployment(name: string, request: string, limit: string): k8s.V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [{ name: "main", image: "registry.example/app:1", resources: { requests: { memory: request }, limits: { memory: limit } } }],
        },
      },
    },
  };
}

function memory(pod: k8s.V1Pod): { request?: string; limit?: string } {
  const resources = pod.spec?.containers[0]?.resources;
  return { request: resources?.requests?.memory, limit: resources?.limits?.memory };
}

async function runningPods(core: k8s.CoreV1Api, namespace: string, app: string): Promise<k8s.V1Pod[]> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: `app=${app}` });
  return list.items.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
}

test("a Deployment rolls out on kwok Nodes and a template patch replaces its Pod", async (t) => {
  const ns = await freshNamespace(t);
  const kc = await adminKubeConfig();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const { nodes } = await stack();

  await apps.createNamespacedDeployment({ namespace: ns, body: deployment("web", "256Mi", "384Mi") });
  const [first] = await waitFor("first Pod Running", async () => {
    const pods = await runningPods(core, ns, "web");
    return pods.length === 1 ? pods : undefined;
  });
  assert.ok(first?.spec?.nodeName && nodes.includes(first.spec.nodeName), `scheduled on a kwok Node, got ${first?.spec?.nodeName}`);
  assert.deepEqual(memory(first), { request: "256Mi", limit: "384Mi" });

  await apps.patchNamespacedDeployment(
    {
      name: "web",
      namespace: ns,
      body: [
        { op: "replace", path: "/spec/template/spec/containers/0/resources/requests/memory", value: "512Mi" },
        { op: "replace", path: "/spec/template/spec/containers/0/resources/limits/memory", value: "768Mi" },
      ],
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
  );
  const second = await waitFor("new Pod Running and old Pod gone", async () => {
    const all = (await core.listNamespacedPod({ namespace: ns, labelSelector: "app=web" })).items;
    const running = all.filter((p) => p.status?.phase === "Running");
    const oldStillThere = all.some((p) => p.metadata?.uid === first.metadata?.uid);
    return !oldStillThere && running.length === 1 ? running[0] : undefined;
  }, 60_000);
  assert.notEqual(second.metadata?.uid, first.metadata?.uid);
  assert.deepEqual(memory(second), { request: "512Mi", limit: "768Mi" });
});

test("a Pod's memory usage reaches Prometheus as container_memory_working_set_bytes", async (t) => {
  const ns = await freshNamespace(t);
  const kc = await adminKubeConfig();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await apps.createNamespacedDeployment({ namespace: ns, body: deployment("hog", "256Mi", "384Mi") });
  const [pod] = await waitFor("Pod Running", async () => {
    const pods = await runningPods(core, ns, "hog");
    return pods.length === 1 ? pods : undefined;
  });
  const name = pod?.metadata?.name;
  assert.ok(name);

  await core.patchNamespacedPod(
    { name, namespace: ns, body: { metadata: { annotations: { [usageMemoryAnnotation]: "300Mi" } } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
  const query = `container_memory_working_set_bytes{namespace="${ns}",pod="${name}",container="main"}`;
  const samples = await waitFor("the working set in Prometheus", async () => {
    const s = await promQuery(query);
    return s.length === 1 && s[0]?.value === 300 * 1024 * 1024 ? s : undefined;
  }, 30_000);
  assert.equal(samples[0]?.metric.namespace, ns);
  assert.equal(samples[0]?.metric.pod, name);
});

test("a ServiceAccount token without an RBAC grant is refused with 403", async (t) => {
  const ns = await freshNamespace(t);
  const admin = await adminKubeConfig();
  await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "nobody" } } });
  const kc = await serviceAccountKubeConfig(ns, "nobody");
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await assert.rejects(core.listNamespacedPod({ namespace: ns }), (error: unknown) => {
    assert.equal((error as { code?: number }).code, 403);
    return true;
  });
  // The same token works once a Role grants the verb: the 403 was RBAC, not a broken token.
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: "pod-reader" }, rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["list"] }] } });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: "pod-reader" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pod-reader" },
      subjects: [{ kind: "ServiceAccount", name: "nobody", namespace: ns }],
    },
  });
  const list = await waitFor("list allowed after the grant", () => core.listNamespacedPod({ namespace: ns }), 10_000);
  assert.deepEqual(list.items, []);
});
