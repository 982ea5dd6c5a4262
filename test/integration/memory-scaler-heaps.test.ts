/**
 * memory-scaler on the local stack (a real API server with RBAC, kwok Nodes) with containers whose
 * heap a flag fixes: by default a raise the flag makes useless is held (`FixedHeap`, Warnings
 * naming the flag and its value, no patch); with `spec.heapFlags: Scale` the limit and the flag are
 * raised in one compare-and-swap patch of the template, which the API server applies and the
 * Deployment rolls out. The function runs with a token of exactly its ServiceAccount.
 */
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, deliver, eventsRegarding, monitoredDeployment, runningPods, scalerForSuite } from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

async function readDeployment(ns: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ namespace: ns, name: "web" });
}

/** A fresh namespace with AppMonitor `m` (`spec`) and the Deployment `web` (`monitoredDeployment`); its one Running Pod's name. */
async function heapCase(t: TestContext, spec: Record<string, unknown>, container: Pick<k8s.V1Container, "command" | "args" | "env">): Promise<{ ns: string; pod: string }> {
  const ns = await freshNamespace(t);
  return { ns, pod: await monitoredDeployment(ns, spec, container) };
}

describe("memory-scaler with fixed heaps", { concurrency: 4 }, () => {
  const scaler = scalerForSuite();

  const held: [string, Pick<k8s.V1Container, "command" | "args" | "env">, RegExp][] = [
    ["-Xmx in JAVA_TOOL_OPTIONS", { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-XX:+UseG1GC -Xmx256m" }] }, /heap is fixed by -Xmx256m in env JAVA_TOOL_OPTIONS \(256m\), within its memory limit 384Mi/],
    ["-Xmx in a shell's command line", { command: ["sh", "-c", "exec java -Xmx300m -jar app.jar"] }, /heap is fixed by -Xmx300m in command\[2\] \(300m\)/],
    ["Node's --max-old-space-size in the args", { command: ["node"], args: ["--max-old-space-size=256", "server.js"] }, /heap is fixed by --max-old-space-size=256 in args\[0\] \(256\)/],
    ["GOMEMLIMIT", { env: [{ name: "GOMEMLIMIT", value: "320MiB" }] }, /heap is fixed by GOMEMLIMIT=320MiB \(320MiB\)/],
  ];
  for (const [name, container, note] of held) {
    it(`Hold (the default), ${name}: not scaled, FixedHeap Warnings naming the flag`, async (t) => {
      const { ns, pod } = await heapCase(t, {}, container);
      const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
      assert.equal(answer.status, 204, describeAnswer(answer));
      assert.deepEqual([answer.outcome, answer.reason], ["skipped", "FixedHeap"], describeAnswer(answer));
      const deployment = await readDeployment(ns);
      assert.equal(deployment.metadata?.generation, 1, "not patched");
      const warnings = await waitFor("the FixedHeap Warnings", async () => {
        const both = [...(await eventsRegarding(ns, "Deployment", "web")), ...(await eventsRegarding(ns, "AppMonitor", "m"))].filter((e) => e.reason === "FixedHeap" && e.type === "Warning");
        return both.length === 2 ? both : undefined;
      }, 10_000);
      for (const warning of warnings) assert.match(warning.note ?? "", note);
    });
  }

  it("a percentage (-XX:MaxRAMPercentage) follows the limit: scaled", async (t) => {
    const { ns, pod } = await heapCase(t, {}, { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-XX:MaxRAMPercentage=75" }] });
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
  });

  it("Scale: the limit and the flag raised in one patch, and the new Pod runs both", async (t) => {
    const { ns, pod } = await heapCase(t, { heapFlags: "Scale" }, { env: [{ name: "TZ", value: "UTC" }, { name: "NODE_OPTIONS", value: "--enable-source-maps --max-old-space-size=256" }] });
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const memhog = (await readDeployment(ns)).spec?.template.spec?.containers[0];
    assert.deepEqual(JSON.parse(JSON.stringify(memhog?.resources)), { limits: { memory: "768Mi" }, requests: { memory: "512Mi" } });
    assert.deepEqual(JSON.parse(JSON.stringify(memhog?.env)), [{ name: "TZ", value: "UTC" }, { name: "NODE_OPTIONS", value: "--enable-source-maps --max-old-space-size=512" }]);
    const next = await waitFor("the new Pod Running", async () => {
      const pods = await runningPods(ns, "app=web");
      return pods.length === 1 && pods[0]?.metadata?.name !== pod ? pods[0] : undefined;
    }, 60_000);
    assert.equal(next.spec?.containers[0]?.env?.[1]?.value, "--enable-source-maps --max-old-space-size=512");
    const scaled = (await eventsRegarding(ns, "Deployment", "web")).find((e) => e.reason === "Scaled");
    assert.match(scaled?.note ?? "", /heap flags raised with the limits: container memhog: --max-old-space-size=256 → --max-old-space-size=512 in env NODE_OPTIONS/);
  });

  it("Scale, -Xmx in the args capped by maxMemory: the flag by the capped factor", async (t) => {
    const { ns, pod } = await heapCase(t, { heapFlags: "Scale", maxMemory: "576Mi" }, { command: ["java"], args: ["-Xmx256m", "-jar", "app.jar"] });
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const memhog = (await readDeployment(ns)).spec?.template.spec?.containers[0];
    assert.equal(memhog?.resources?.limits?.memory, "576Mi");
    assert.deepEqual(memhog?.args, ["-Xmx384m", "-jar", "app.jar"]);
  });
});
