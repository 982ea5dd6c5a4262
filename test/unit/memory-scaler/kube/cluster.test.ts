// memory-scaler's API adapter (functions/memory-scaler/kube/cluster.ts) against a plain HTTP server
// that records each request: every write carries the field manager appmonitor-memory-scaler, so
// the objects' managedFields name it (what the Argo CD and Flux settings of the README refer to).
// The Deployment's managedFields after a real scale: test/integration/memory-scaler-coexist.test.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as k8s from "@kubernetes/client-node";
import { createCluster, goEscapedJson } from "../../../../functions/memory-scaler/kube/cluster.ts";
import { NODE_PAGE_SIZE } from "../../../../functions/memory-scaler/kube/node-memory.ts";
import { FIELD_MANAGER } from "../../../../functions/memory-scaler/model.ts";

/** Starts `server` on a free loopback port; a kubeconfig whose API server it is. */
async function listening(server: Server): Promise<k8s.KubeConfig> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

describe("every write of memory-scaler's adapter carries its field manager", () => {
  const requests: { method: string; path: string; fieldManager: string | null }[] = [];
  let server: Server;
  let kc: k8s.KubeConfig;

  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://localhost");
      requests.push({ method: req.method ?? "", path: url.pathname, fieldManager: url.searchParams.get("fieldManager") });
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ metadata: { name: "x", generation: 2 }, items: [] }));
      });
    });
    kc = await listening(server);
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("the patch (and its dry run), the Pod dry run, the status write and the Event", async () => {
    const cluster = createCluster(kc);
    const patch = [{ op: "test" as const, path: "/metadata/name", value: "web" }];
    for (const kind of ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"] as const) {
      await cluster.patchWorkload(kind, "ns", "web", patch, false);
      await cluster.patchWorkload(kind, "ns", "web", patch, true);
    }
    await cluster.dryRunCreatePod("ns", { metadata: { name: "p" }, spec: { containers: [{ name: "c" }] } });
    await cluster.replaceAppMonitorStatus("ns", "m", { metadata: { name: "m", resourceVersion: "1" }, status: {} });
    await cluster.createEvent("ns", { metadata: { name: "e" }, eventTime: new k8s.V1MicroTime(0) });
    const writes = requests.filter((r) => r.method !== "GET");
    assert.equal(writes.length, 11);
    for (const write of writes) assert.equal(write.fieldManager, FIELD_MANAGER, `${write.method} ${write.path}`);
    assert.equal(FIELD_MANAGER, "appmonitor-memory-scaler");
  });

  it("the reads it adds: HPAs through autoscaling/v2, VPAs through autoscaling.k8s.io/v1", async () => {
    const cluster = createCluster(kc);
    requests.length = 0;
    await cluster.listHorizontalPodAutoscalers("ns");
    await cluster.listVerticalPodAutoscalers("ns");
    assert.deepEqual(requests.map((r) => `${r.method} ${r.path}`), ["GET /apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers", "GET /apis/autoscaling.k8s.io/v1/namespaces/ns/verticalpodautoscalers"]);
  });

  it("lists and probes AppMonitors across namespaces, or in each watched namespace only", async () => {
    requests.length = 0;
    await createCluster(kc).listAllAppMonitors();
    await createCluster(kc).probe();
    await createCluster(kc, { all: false, namespaces: ["team-a", "team-b"] }).listAllAppMonitors();
    await createCluster(kc, { all: false, namespaces: ["team-a", "team-b"] }).probe();
    assert.deepEqual(requests.map((r) => `${r.method} ${r.path}`), [
      "GET /apis/kubedemo.com/v1/appmonitors", "GET /apis/kubedemo.com/v1/appmonitors",
      "GET /apis/kubedemo.com/v1/namespaces/team-a/appmonitors", "GET /apis/kubedemo.com/v1/namespaces/team-b/appmonitors",
      "GET /apis/kubedemo.com/v1/namespaces/team-a/appmonitors",
    ]);
  });
});

describe("the Node list: paged, one read shared by the calls in flight", () => {
  const requests: URL[] = [];
  let server: Server;
  let kc: k8s.KubeConfig;
  const page = (from: number, count: number, next: string | undefined) => ({
    kind: "NodeList",
    apiVersion: "v1",
    metadata: next === undefined ? {} : { continue: next },
    items: Array.from({ length: count }, (_, i) => ({ metadata: { name: `n-${from + i}` }, status: { allocatable: { memory: `${from + i + 1}Gi` } } })),
  });

  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://localhost");
      requests.push(url);
      // Two pages: NODE_PAGE_SIZE Nodes, then 10; slow enough that every caller arrives while the read is under way.
      const body = url.searchParams.get("continue") === null ? page(0, NODE_PAGE_SIZE, "next") : page(NODE_PAGE_SIZE, 10, undefined);
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      }, 20);
    });
    kc = await listening(server);
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("50 Node-fit checks in flight make one paged read: two LISTs of at most NODE_PAGE_SIZE Nodes, consistent (no resourceVersion=0, whose watch-cache answer ignores the limit)", async () => {
    const cluster = createCluster(kc);
    const answers = await Promise.all(Array.from({ length: 50 }, () => cluster.listNodeAllocatableMemory()));
    assert.deepEqual(requests.map((u) => `${u.pathname} limit=${u.searchParams.get("limit")} continue=${u.searchParams.get("continue")} resourceVersion=${u.searchParams.get("resourceVersion")}`), [
      `/api/v1/nodes limit=${NODE_PAGE_SIZE} continue=null resourceVersion=null`,
      `/api/v1/nodes limit=${NODE_PAGE_SIZE} continue=next resourceVersion=null`,
    ]);
    assert.equal(answers[0]?.length, NODE_PAGE_SIZE + 10);
    assert.equal(answers[0]?.at(-1), `${NODE_PAGE_SIZE + 10}Gi`);
    // A second check within the view's age reads nothing.
    await cluster.listNodeAllocatableMemory();
    assert.equal(requests.length, 2);
  });
});

describe("goEscapedJson", () => {
  it("writes <, > and & as Go's encoder does, and the text parses to the same value", () => {
    const body = JSON.stringify([{ op: "test", path: "/metadata/annotations/r", value: "app=384Mi>768Mi/a&b<c" }]);
    const escaped = goEscapedJson(body);
    assert.equal(escaped.includes(">") || escaped.includes("<") || escaped.includes("&"), false);
    assert.match(escaped, /app=384Mi\\u003e768Mi\/a\\u0026b\\u003cc/);
    assert.deepEqual(JSON.parse(escaped), JSON.parse(body));
  });
});
