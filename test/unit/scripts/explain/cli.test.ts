import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseExplainArgs, UsageError } from "../../../../scripts/explain/cli.ts";

describe("explain: the command line", () => {
  const kinds: [string, string][] = [
    ["deploy", "Deployment"],
    ["deployment", "Deployment"],
    ["sts", "StatefulSet"],
    ["statefulset", "StatefulSet"],
    ["ds", "DaemonSet"],
    ["daemonset", "DaemonSet"],
    ["rs", "ReplicaSet"],
    ["replicaset", "ReplicaSet"],
  ];
  for (const [word, kind] of kinds) {
    it(`${word}/web → ${kind}`, () => {
      assert.deepEqual(parseExplainArgs([`${word}/web`, "-n", "shop"], {}), { kind, name: "web", namespace: "shop", prometheusUrl: undefined, source: "cadvisor" });
    });
  }

  it("drops the leading explain kubectl passes, and takes the Prometheus URL from the option over PROMETHEUS_URL", () => {
    assert.equal(parseExplainArgs(["explain", "deploy/web", "-n", "shop"], { PROMETHEUS_URL: "http://p:9090" }).prometheusUrl, "http://p:9090");
    assert.equal(parseExplainArgs(["deploy/web", "--prometheus-url", "http://q:9090"], { PROMETHEUS_URL: "http://p:9090" }).prometheusUrl, "http://q:9090");
    assert.equal(parseExplainArgs(["deploy/web"], {}).namespace, "default");
  });

  const bad: [string[], RegExp][] = [
    [[], /expected one KIND\/NAME, got 0/],
    [["pod/web"], /unknown kind "pod"/],
    [["deploy"], /expected KIND\/NAME/],
    [["deploy/web/x"], /expected KIND\/NAME/],
    [["deploy/web", "--source", "x"], /--source must be one of/],
    [["deploy/web", "--bogus"], /bogus/],
  ];
  for (const [argv, message] of bad) {
    it(`refuses ${JSON.stringify(argv)}`, () => assert.throws(() => parseExplainArgs(argv, {}), (e: unknown) => e instanceof UsageError && message.test(e.message)));
  }

  it("exits 2 on a usage error, with the usage on stderr, through the kubectl plugin launcher", () => {
    const result = spawnSync("scripts/explain/kubectl-appmonitor", ["explain", "pod/web"], { encoding: "utf8" });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /^explain: unknown kind "pod"\nusage: npm run explain/);
  });

  it("exits 1 naming the kubeconfig it cannot read", () => {
    const result = spawnSync(process.execPath, ["scripts/explain/cli.ts", "deploy/web", "-n", "shop"], { encoding: "utf8", env: { ...process.env, KUBECONFIG: "/nonexistent/kubeconfig" } });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /^explain: cannot read the kubeconfig \(KUBECONFIG=\/nonexistent\/kubeconfig\): ENOENT/);
  });

  it("exits 1 naming the workload it cannot read", async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "explain-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, "kubeconfig");
    // Port 1 on the loopback: nothing listens, so the read fails at once.
    await writeFile(
      file,
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    );
    const result = spawnSync(process.execPath, ["scripts/explain/cli.ts", "deploy/web", "-n", "shop"], { encoding: "utf8", env: { ...process.env, KUBECONFIG: file } });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /^explain: cannot read Deployment shop\/web: /);
  });
});
