// functions/lib/kubeconfig.ts against a small in-process stand-in for the API server (plain
// HTTP, bearer tokens): a 401 loads the credentials again at once and sends the request once
// more, for each way a token reaches the client; a burst of 401s loads once; a token still
// refused is the caller's 401; the authorizer's 403s are observed with the permission they name;
// a request with no complete answer (none, or a body trickled in) is given up at the timeout.
// The real API server, with a revoked token: test/integration/memory-scaler-outage.test.ts.
import assert from "node:assert/strict";
import { rename, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { classifyApiError, KubeApiTimeoutError, toHttpFailure, type DeniedPermission } from "../../../functions/lib/kube-api-errors.ts";
import { DEFAULT_KUBE_API_TIMEOUT_MS, loadKubeConfig, type FunctionKubeConfig, type KubeClientOptions } from "../../../functions/lib/kubeconfig.ts";
import { tempDir, type TempDir } from "../../support/temp-dir.ts";
import { waitUntil } from "../../harness/lib/wait-until.ts";

interface Seen {
  readonly token: string;
  readonly method: string;
  readonly path: string;
  readonly body: string;
}

/** Accepts the tokens in `valid`; `GET .../pods/forbidden` is refused by "the authorizer", `.../pods/limited` by "admission"; serves the discovery of `v1`. */
class FakeApiServer {
  valid = new Set<string>();
  seen: Seen[] = [];
  /** Answers not given (or not finished); each leaves the set when its connection closes. */
  readonly held = new Set<import("node:http").ServerResponse>();
  readonly server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      const url = req.url ?? "";
      this.seen.push({ token, method: req.method ?? "", path: url.split("?")[0] ?? "", body });
      const status = (code: number, reason: string, message: string, details: object = {}): void => {
        res.writeHead(code, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message, details }));
      };
      if (!this.valid.has(token)) return status(401, "Unauthorized", "Unauthorized");
      if (url.includes("/pods/forbidden")) {
        return status(403, "Forbidden", 'pods "forbidden" is forbidden: User "system:serviceaccount:appmonitor:memory-scaler" cannot get resource "pods" in API group "" in the namespace "team-a"', { name: "forbidden", kind: "pods" });
      }
      if (url.includes("/pods/limited")) return status(403, "Forbidden", 'pods "limited" is forbidden: exceeded quota: compute, requested: memory=1Gi');
      // A connection gone silent: no answer at all.
      if (url.includes("/pods/stalls")) {
        this.held.add(res);
        res.on("close", () => this.held.delete(res));
        return;
      }
      if (url.includes("/pods/trickles")) {
        // Headers at once, then the Pod a byte every 100 ms: never idle for long, never done.
        this.held.add(res);
        res.on("close", () => this.held.delete(res));
        res.writeHead(200, { "content-type": "application/json" });
        const pod = JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name: "trickles", namespace: "team-a" } });
        let sent = 0;
        const timer = setInterval(() => res.write(pod[sent++] ?? " "), 100);
        res.on("close", () => clearInterval(timer));
        return;
      }
      if (url === "/api/v1") {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ kind: "APIResourceList", groupVersion: "v1", resources: [{ name: "pods", singularName: "pod", namespaced: true, kind: "Pod", verbs: ["get"] }] }));
      }
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
      if (req.method === "POST") return res.end(body);
      const name = url.split("?")[0]?.split("/").pop() ?? "";
      res.end(JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "team-a" } }));
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

let api: FakeApiServer;
let server: string;
let dir: TempDir;
let files = 0;

before(async () => {
  api = new FakeApiServer();
  server = await api.start();
  dir = await tempDir("kubeconfig-test");
});
after(async () => {
  api.server.closeAllConnections();
  await new Promise((resolve) => api.server.close(resolve));
  await dir.remove();
});

/** Writes `content` as the kubelet does: a new file renamed over the old one. */
async function writeAtomically(file: string, content: string): Promise<void> {
  await writeFile(`${file}.new`, content);
  await rename(`${file}.new`, file);
}

/** How the token reaches the client; each kind is read once at load, or cached, so only a reload sees a new one. */
type TokenSource = "token-file" | "auth-provider tokenFile (in-cluster)" | "token in the kubeconfig";

/** A kubeconfig file whose user gets `token` the way `source` says; returns its path and how to rotate to another token. */
async function credentials(source: TokenSource, token: string): Promise<{ kubeconfig: string; rotate: (next: string) => Promise<void> }> {
  files += 1;
  const kubeconfig = path.join(dir.path, `kubeconfig-${files}`);
  const tokenFile = path.join(dir.path, `token-${files}`);
  const user = (value: string): string =>
    source === "token-file"
      ? `    token-file: ${tokenFile}`
      : source === "token in the kubeconfig"
        ? `    token: ${value}`
        : `    auth-provider:\n      name: tokenFile\n      config:\n        tokenFile: ${tokenFile}`;
  const config = (value: string): string =>
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n${user(value)}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n`;
  await writeFile(tokenFile, token);
  await writeFile(kubeconfig, config(token));
  return {
    kubeconfig,
    rotate: async (next) => {
      await writeAtomically(tokenFile, next);
      if (source === "token in the kubeconfig") await writeAtomically(kubeconfig, config(next));
    },
  };
}

interface Started {
  readonly creds: Awaited<ReturnType<typeof credentials>>;
  readonly kc: FunctionKubeConfig;
  readonly core: k8s.CoreV1Api;
  /** What the observer was told. */
  readonly seen: { reloads: (Error | undefined)[]; forbidden: DeniedPermission[] };
}

/** The fake accepts only `token`; a client loaded from credentials holding it, observed. */
async function start(source: TokenSource, token: string, options: KubeClientOptions = {}): Promise<Started> {
  api.valid = new Set([token]);
  const creds = await credentials(source, token);
  const kc = loadKubeConfig(creds.kubeconfig, options);
  const seen = { reloads: [] as (Error | undefined)[], forbidden: [] as DeniedPermission[] };
  kc.observe({ credentialsReloaded: (error) => seen.reloads.push(error), forbidden: (p) => seen.forbidden.push(p) });
  return { creds, kc, core: kc.makeApiClient(k8s.CoreV1Api), seen };
}

describe("a 401 loads the credentials again and sends the request once more", () => {
  const sources: TokenSource[] = ["token-file", "auth-provider tokenFile (in-cluster)", "token in the kubeconfig"];
  for (const source of sources) {
    it(`${source}: the rotated token is used at once, the old one never again`, async () => {
      const old = `old-${source.length}-${files}`;
      const next = `new-${source.length}-${files}`;
      const { creds, kc, core, seen } = await start(source, old);
      assert.equal((await core.readNamespacedPod({ namespace: "team-a", name: "a" })).metadata?.name, "a");

      // Rotated, and the old token revoked at once.
      await creds.rotate(next);
      api.valid = new Set([next]);
      api.seen = [];
      assert.equal((await core.readNamespacedPod({ namespace: "team-a", name: "b" })).metadata?.name, "b");
      assert.deepEqual(api.seen.map((s) => s.token), [old, next], "refused once, then sent again with the new token");
      assert.deepEqual(seen.reloads, [undefined]);

      api.seen = [];
      await core.readNamespacedPod({ namespace: "team-a", name: "c" });
      assert.deepEqual(api.seen.map((s) => s.token), [next]);
      kc.destroyAgents();
    });
  }

  it("sends a write's body again intact", async () => {
    const { creds, kc } = await start("token-file", "w1");
    await creds.rotate("w2");
    api.valid = new Set(["w2"]);
    api.seen = [];
    const events = kc.makeApiClient(k8s.EventsV1Api);
    const body: k8s.EventsV1Event = { metadata: { name: "e1", namespace: "team-a" }, eventTime: new k8s.V1MicroTime(0), reason: "Test", note: "x" };
    await events.createNamespacedEvent({ namespace: "team-a", body });
    assert.deepEqual(api.seen.map((s) => [s.method, s.token]), [["POST", "w1"], ["POST", "w2"]]);
    assert.equal(api.seen[0]?.body, api.seen[1]?.body);
    assert.match(api.seen[1]?.body ?? "", /"name":"e1"/);
    kc.destroyAgents();
  });

  it("a burst of refused requests loads the credentials once", async () => {
    const { creds, kc, core, seen } = await start("auth-provider tokenFile (in-cluster)", "b1");
    await core.readNamespacedPod({ namespace: "team-a", name: "warm" });
    await creds.rotate("b2");
    api.valid = new Set(["b2"]);
    const pods = await Promise.all(Array.from({ length: 8 }, (_, i) => core.readNamespacedPod({ namespace: "team-a", name: `p${i}` })));
    assert.equal(pods.length, 8);
    assert.equal(seen.reloads.length, 1);
    kc.destroyAgents();
  });

  it("a token still refused after the reload is the caller's 401, after exactly one more try", async () => {
    const { kc, core, seen } = await start("token-file", "r1");
    api.valid = new Set();
    api.seen = [];
    await assert.rejects(core.readNamespacedPod({ namespace: "team-a", name: "x" }), (error: unknown) => classifyApiError(error) === "Unauthorized");
    assert.equal(api.seen.length, 2);
    assert.equal(seen.reloads.length, 1);
    kc.destroyAgents();
  });

  it("a reload that fails keeps the previous credentials and says so", async () => {
    const { creds, kc, core, seen } = await start("token-file", "f1");
    await writeAtomically(creds.kubeconfig, "not: [a kubeconfig");
    api.valid = new Set();
    await assert.rejects(core.readNamespacedPod({ namespace: "team-a", name: "x" }));
    assert.equal(seen.reloads.length, 1);
    assert.ok(seen.reloads[0] instanceof Error);
    api.valid = new Set(["f1"]);
    assert.ok(await core.readNamespacedPod({ namespace: "team-a", name: "y" }), "still signs with f1");
    kc.destroyAgents();
  });
});

describe("the authorizer's 403s are observed", () => {
  const cases: { name: string; pod: string; permission: DeniedPermission | undefined }[] = [
    { name: "RBAC: the permission it names", pod: "forbidden", permission: { user: "system:serviceaccount:appmonitor:memory-scaler", verb: "get", resource: "pods", group: "", namespace: "team-a" } },
    { name: "admission (a quota): nothing", pod: "limited", permission: undefined },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { kc, core, seen } = await start("token-file", "o1");
      await assert.rejects(core.readNamespacedPod({ namespace: "team-a", name: c.pod }), (error: unknown) => {
        // The client still gets the whole Status: the body read for the observer is handed on.
        assert.equal(classifyApiError(error), c.permission === undefined ? "Refused" : "Forbidden");
        return true;
      });
      assert.deepEqual(seen.forbidden, c.permission === undefined ? [] : [c.permission]);
      assert.equal(seen.reloads.length, 0);
      kc.destroyAgents();
    });
  }

  it("also through KubernetesObjectApi", async () => {
    const { kc, seen } = await start("token-file", "o2");
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    await assert.rejects(objects.read({ apiVersion: "v1", kind: "Pod", metadata: { namespace: "team-a", name: "forbidden" } }));
    assert.deepEqual(seen.forbidden.map((p) => [p.verb, p.resource]), [["get", "pods"]]);
    kc.destroyAgents();
  });
});

describe("every request has a timeout, its answer's body included", () => {
  it("is 10 s unless configured", async () => {
    const { kc } = await start("token-file", "t0");
    assert.equal(kc.timeoutMs, DEFAULT_KUBE_API_TIMEOUT_MS);
    assert.equal(DEFAULT_KUBE_API_TIMEOUT_MS, 10_000);
    kc.destroyAgents();
  });

  for (const pod of ["stalls", "trickles"]) {
    it(`an API server that ${pod === "stalls" ? "never answers" : "sends headers, then trickles the body"}: KubeApiTimeoutError at the timeout, 503, the connection closed`, async () => {
      const timeoutMs = 500;
      const { kc, core } = await start("token-file", `t-${pod}`, { timeoutMs });
      assert.equal((await core.readNamespacedPod({ namespace: "team-a", name: "warm" })).metadata?.name, "warm", "a kept-alive connection to reuse");
      const started = performance.now();
      await assert.rejects(core.readNamespacedPod({ namespace: "team-a", name: pod }), (error: unknown) => {
        assert.ok(error instanceof KubeApiTimeoutError, String(error));
        assert.equal(error.message, `GET ${server}/api/v1/namespaces/team-a/pods/${pod}: no complete answer within 500 ms`);
        assert.equal(classifyApiError(error), "TimedOut");
        assert.equal(toHttpFailure(error, `read Pod team-a/${pod}`).status, 503);
        return true;
      });
      // The timeout is the contract: not given up before it; after it, the slack of a loaded machine.
      const elapsedMs = performance.now() - started;
      assert.ok(elapsedMs >= timeoutMs - 5 && elapsedMs < timeoutMs + 1_500, `${Math.round(elapsedMs)} ms`);
      await waitUntil("the held connection closed by the client", () => api.held.size === 0);
      assert.equal((await core.readNamespacedPod({ namespace: "team-a", name: "after" })).metadata?.name, "after", "the next request is answered");
      kc.destroyAgents();
    });
  }

  it("a retry after a 401 gets a timeout of its own", async () => {
    const { creds, kc, core } = await start("token-file", "t-401", { timeoutMs: 500 });
    await creds.rotate("t-401-next");
    api.valid = new Set(["t-401-next"]);
    api.seen = [];
    await assert.rejects(core.readNamespacedPod({ namespace: "team-a", name: "stalls" }), KubeApiTimeoutError);
    assert.deepEqual(api.seen.map((s) => s.token), ["t-401", "t-401-next"]);
    await waitUntil("the held connection closed by the client", () => api.held.size === 0);
    kc.destroyAgents();
  });
});
