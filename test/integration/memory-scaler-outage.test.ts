/**
 * memory-scaler when things fail, on the local stack: the API server unreachable (503, nothing
 * written, not ready), the API server going away and coming back (503, then the same event
 * scales), its connections going silent without a reset (503 at KUBE_API_TIMEOUT_MS, then the
 * same event scales), its ServiceAccount token rotated and the old one revoked (the next event
 * reads the new token at once and scales; a revoked token with no new one is 503), a permission
 * its RBAC lacks (500, a Warning Event on the ServiceAccount naming it, a metric), its status and
 * Event writes failing after the patch (the next delivery records the scale, once), the launcher
 * as a child process, and the least privilege of its ServiceAccount.
 * The shared stack is never stopped: the function is pointed at a closed port, or at a TCP
 * proxy to the API server that the test cuts or stalls.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import { fn } from "../../functions/memory-scaler/index.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { startProcess, tailOf } from "../support/child-process.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { startFunction } from "../support/function-server.ts";
import { installMemoryScaler } from "../support/install.ts";
import { describeAnswer } from "../support/post-event.ts";
import { scrape } from "../support/prometheus-text.ts";
import { rotatingToken, type RotatingToken } from "../support/rotating-token.ts";
import {
  SCALER_NAMESPACE,
  SCALER_SERVICE_ACCOUNT,
  alertEvent,
  deliver,
  appMonitorStatus,
  eventsRegarding,
  monitoredDeployment,
  scalerBehindProxy,
  scalerKubeConfigAt,
  UNVERIFIED,
  writeKubeconfig,
} from "../support/memory-scaler.ts";
import { adminKubeConfig, freshNamespace, serviceAccountForEventsOnly, serviceAccountKubeConfig, waitFor } from "../support/stack.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

async function webDeployment(ns: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ namespace: ns, name: "web" });
}

/**
 * A ServiceAccount `name` in `namespace` with memory-scaler's ClusterRole minus the writes that
 * record a scale (AppMonitor status, Events); `grantAll` binds the whole ClusterRole as well.
 */
async function scalerWithoutRecords(namespace: string, name: string): Promise<{ grantAll: () => Promise<void> }> {
  const admin = await adminKubeConfig();
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const full = await rbac.readClusterRole({ name: "appmonitor-memory-scaler" });
  const rules = (full.rules ?? [])
    .map((rule) => ({ ...rule, resources: (rule.resources ?? []).filter((r) => r !== "appmonitors/status" && r !== "events") }))
    .filter((rule) => rule.resources.length > 0);
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: `${name}-no-records` }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: { metadata: { name: `${name}-no-records` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `${name}-no-records` }, subjects },
  });
  return {
    grantAll: async () => {
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: { metadata: { name: `${name}-all` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "appmonitor-memory-scaler" }, subjects },
      });
    },
  };
}

describe("memory-scaler when the API server is unavailable or refuses it", () => {
  let dir: TempDir;

  before(async () => {
    await installMemoryScaler();
    dir = await tempDir("memory-scaler-outage");
  });
  after(async () => {
    await dir?.remove();
  });

  it("nothing listens at the API server's address: not ready, 503, nothing written", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const kubeconfig = await writeKubeconfig(await scalerKubeConfigAt(`https://127.0.0.1:${await freePort()}`), dir.path, "closed-port");
    const server = await startFunction(fn, { ...UNVERIFIED, KUBECONFIG: kubeconfig });
    t.after(() => server.close());

    const readiness = await fetch(`${server.url}/health/readiness`);
    assert.equal(readiness.status, 503);
    assert.match(((await readiness.json()) as { reason: string }).reason, /Kubernetes API server/);

    const answer = await deliver(server.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.match(answer.body.error ?? "", /Kubernetes API server unavailable/);
    const deployment = await webDeployment(ns);
    assert.equal(deployment.metadata?.generation, 1);
    assert.equal(deployment.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"], undefined);
  });

  it("the API server goes away: 503 and nothing written; back again, the same event scales", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const { proxy, server } = await scalerBehindProxy(t, dir.path, "proxied");
    assert.equal((await fetch(`${server.url}/health/readiness`)).status, 200, "ready through the proxy");

    await proxy.cut();
    const event = alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" });
    const down = await deliver(server.url, event);
    assert.equal(down.status, 503, JSON.stringify(down.body));
    assert.equal((await fetch(`${server.url}/health/readiness`)).status, 503);
    assert.equal((await webDeployment(ns)).metadata?.generation, 1, "nothing written");

    await proxy.resume();
    await waitFor("ready again", async () => (await fetch(`${server.url}/health/readiness`)).status === 200, 10_000);
    const back = await deliver(server.url, event);
    assert.equal(back.status, 204, describeAnswer(back));
    assert.equal(back.outcome, "scaled");
    assert.equal((await webDeployment(ns)).metadata?.generation, 2);
  });

  it("the API server's connections go silent (no reset, no answer): 503 within KUBE_API_TIMEOUT_MS, nothing written; answering again, the same event scales", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const timeoutMs = 2_000;
    const { proxy, server } = await scalerBehindProxy(t, dir.path, "stalled", { KUBE_API_TIMEOUT_MS: String(timeoutMs) });
    assert.equal((await fetch(`${server.url}/health/readiness`)).status, 200, "ready through the proxy: kept-alive connections to go silent");

    proxy.stall();
    const event = alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" });
    const started = performance.now();
    const stalled = await deliver(server.url, event);
    const elapsedMs = performance.now() - started;
    assert.equal(stalled.status, 503, describeAnswer(stalled));
    assert.match(stalled.body.error ?? "", /Kubernetes API server did not answer in time: .*no complete answer within 2000 ms/);
    // The timeout is the contract: its request given up at it, not at Knative's 60 s. Above it, the slack of a loaded machine.
    assert.ok(elapsedMs >= timeoutMs && elapsedMs < timeoutMs + 1_500, `answered after ${Math.round(elapsedMs)} ms`);

    proxy.unstall();
    assert.equal((await webDeployment(ns)).metadata?.generation, 1, "nothing written");
    const back = await deliver(server.url, event);
    assert.equal(back.status, 204, describeAnswer(back));
    assert.equal(back.outcome, "scaled");
    assert.equal((await webDeployment(ns)).metadata?.generation, 2);
  });

  /** memory-scaler as its ServiceAccount with a bound token in a file, ready: the first token is read and cached (the client reads the file again only after 60 s). */
  async function scalerWithRotatingToken(t: TestContext): Promise<{ ns: string; pod: string; token: RotatingToken; server: RunningServer }> {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const token = await rotatingToken(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT, dir.path);
    t.after(() => token.remove());
    const server = await startFunction(fn, { ...UNVERIFIED, KUBECONFIG: token.kubeconfig });
    t.after(() => server.close());
    assert.equal((await fetch(`${server.url}/health/readiness`)).status, 200);
    return { ns, pod, token, server };
  }

  it("its token rotated and the old one revoked: the next event reads the new token at once and scales", async (t) => {
    const { ns, pod, token, server } = await scalerWithRotatingToken(t);
    await token.rotate();
    const answer = await deliver(server.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 204, describeAnswer(answer));
    assert.equal(answer.outcome, "scaled");
    assert.equal((await webDeployment(ns)).metadata?.generation, 2);
    assert.equal(await scrape(`${server.url}/metrics`, "appmonitor_kubernetes_credential_reloads_total", { result: "ok" }), 1, "one reload for the whole event");
  });

  it("its token revoked and no new one written: 503 (retried, then dead-lettered), nothing written", async (t) => {
    const { ns, pod, token, server } = await scalerWithRotatingToken(t);
    await token.revoke();
    const answer = await deliver(server.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 503, describeAnswer(answer));
    assert.match(answer.body.error ?? "", /refused the credentials/);
    assert.equal((await webDeployment(ns)).metadata?.generation, 1);
    assert.equal((await fetch(`${server.url}/health/readiness`)).status, 503);
  });

  it("a permission its RBAC lacks: 500, and a Warning Event on its ServiceAccount and a metric name it", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    await serviceAccountForEventsOnly(ns, "nobody");
    const kubeconfig = await writeKubeconfig(await serviceAccountKubeConfig(ns, "nobody"), dir.path, `nobody-${ns}`);
    const server = await startFunction(fn, { ...UNVERIFIED, KUBECONFIG: kubeconfig });
    t.after(() => server.close());

    const answer = await deliver(server.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.status, 500, describeAnswer(answer));
    assert.match(answer.body.error ?? "", /not allowed to/);
    const notes = await waitFor("a PermissionDenied Event on ServiceAccount nobody", async () => {
      const events = (await eventsRegarding(ns, "ServiceAccount", "nobody")).filter((e) => e.reason === "PermissionDenied" && e.type === "Warning");
      const found = events.map((e) => e.note ?? "");
      return found.some((note) => note.includes(`list appmonitors.kubedemo.com in namespace ${ns}`)) ? found : undefined;
    });
    assert.ok(notes.every((note) => note.startsWith("memory-scaler may not ")), notes.join("\n"));
    assert.ok((await scrape(`${server.url}/metrics`, "appmonitor_kubernetes_permission_denied_total", { verb: "list", group: "kubedemo.com", resource: "appmonitors" })) >= 1);
  });

  it("status and Event writes refused: scaled once; the re-delivered event records it, once", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    // Paused, the Deployment keeps the alerting Pod: its re-delivered alert still names the workload.
    const apps = (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api);
    // A merge patch: the Deployment controller's status writes cannot make it conflict, as a replace can.
    const paused = await apps.patchNamespacedDeployment(
      { namespace: ns, name: "web", body: { spec: { paused: true } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    const access = await scalerWithoutRecords(ns, "scaler");
    const kubeconfig = await writeKubeconfig(await serviceAccountKubeConfig(ns, "scaler"), dir.path, `scaler-${ns}`);
    const server = await startFunction(fn, { ...UNVERIFIED, KUBECONFIG: kubeconfig });
    t.after(() => server.close());

    const event = alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" });
    const first = await deliver(server.url, event);
    assert.equal(first.status, 204, describeAnswer(first));
    assert.equal(first.outcome, "scaled", "the scale is done although recording it failed");
    const scaled = await webDeployment(ns);
    const generation = (paused.metadata?.generation ?? 0) + 1;
    assert.equal(scaled.metadata?.generation, generation);
    const time = scaled.metadata?.annotations?.["app-monitor.kubedemo.com/last-scale"];
    assert.ok(time !== undefined);
    assert.equal((await appMonitorStatus(ns, "m")).scaleCount, undefined, "the status write was refused");
    assert.equal((await eventsRegarding(ns, "Deployment", "web")).length, 0, "the Event writes were refused");

    await access.grantAll();
    // RBAC granted takes effect within moments; every delivery of the same event is harmless.
    await waitFor("the re-delivered event records the scale", async () => {
      const again = await deliver(server.url, event);
      assert.equal(again.status, 204, describeAnswer(again));
      assert.equal(again.outcome, "skipped");
      const status = await appMonitorStatus(ns, "m");
      return status.scaleCount === 1 ? status : undefined;
    }, 20_000);
    const again = await deliver(server.url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(again.outcome, "skipped", "a new alert in the cooldown");

    const status = await appMonitorStatus(ns, "m");
    assert.equal(status.scaleCount, 1);
    assert.equal(status.lastScaleTime, time);
    assert.deepEqual(status.recentScales, [
      { time, workload: { kind: "Deployment", name: "web" }, event: event.id, container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } },
    ]);
    for (const [kind, name] of [["Deployment", "web"], ["AppMonitor", "m"]] as const) {
      const events = await eventsRegarding(ns, kind, name);
      // The scale's Events once, beside the cooldown skips' own (one per window).
      assert.deepEqual(events.map((e) => e.reason).sort(), ["Cooldown", "PodsReplaced", "Scaled"], `${kind} ${name}`);
      assert.match(events.find((e) => e.reason === "Scaled")?.note ?? "", /^scaled Deployment web by 2: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi; the rollout replaces \(restarts\) its Pods$/);
    }
    assert.equal((await webDeployment(ns)).metadata?.generation, generation, "patched once");
  });
});

describe("npm run function -- memory-scaler (the launcher)", () => {
  const runTs = path.join(repoRoot, "functions", "run.ts");
  let dir: TempDir;

  before(async () => {
    await installMemoryScaler();
    dir = await tempDir("memory-scaler-launcher");
  });
  after(async () => {
    await dir?.remove();
  });

  it("refuses an unreadable KUBECONFIG with one line naming it", async () => {
    const env = { ...process.env, KUBECONFIG: path.join(dir.path, "missing"), PORT: "0", HOST: "127.0.0.1" };
    const child = startProcess({ name: "memory-scaler", command: process.execPath, args: [runTs, "memory-scaler"], env });
    after(() => child.stop("SIGKILL"));
    const status = await child.exited;
    assert.equal(status.code, 1);
    assert.match(child.stderr().trim(), /^memory-scaler: configuration error: KUBECONFIG: cannot read /);
  });

  it("refuses to scale without PROMETHEUS_URL, with one line naming it and the setting that lifts it", async () => {
    const env = { ...process.env, PORT: "0", HOST: "127.0.0.1", PROMETHEUS_URL: "", ALLOW_UNVERIFIED_ALERTS: "", PAUSE_SCALING: "" };
    const child = startProcess({ name: "memory-scaler", command: process.execPath, args: [runTs, "memory-scaler"], env });
    after(() => child.stop("SIGKILL"));
    const status = await child.exited;
    assert.equal(status.code, 1);
    assert.match(child.stderr().trim(), /^memory-scaler: configuration error: PROMETHEUS_URL: is required to scale: .* set ALLOW_UNVERIFIED_ALERTS=true to scale without the check/);
  });

  it("serves as its ServiceAccount, logs the event id and the decision, exits 0 on SIGTERM", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const kubeconfig = await writeKubeconfig(await serviceAccountKubeConfig(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT), dir.path, "launcher");
    const port = await freePort();
    // PROMETHEUS_URL from the test environment is not for this process.
    const env = { ...process.env, KUBECONFIG: kubeconfig, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info", ...UNVERIFIED };
    const child = startProcess({ name: "memory-scaler", command: process.execPath, args: [runTs, "memory-scaler"], env });
    t.after(() => child.stop("SIGKILL"));
    const url = `http://127.0.0.1:${port}`;
    await waitFor("readiness 200", async () => (await fetch(`${url}/health/readiness`)).status === 200, 20_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${tailOf(child)}`);
    });

    const event = alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" });
    const answer = await deliver(url, event);
    assert.equal(answer.outcome, "scaled", `${describeAnswer(answer)}\n${tailOf(child)}`);
    const line = await waitFor("the decision's log line", async () =>
      child
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.eventId === event.id && l.outcome !== undefined),
    );
    assert.equal(line.outcome, "scaled");
    assert.equal(line.reason, "Scaled");
    assert.equal(line.function, "memory-scaler");
    assert.deepEqual(line.workload, { kind: "Deployment", name: "web" });

    const status = await child.stop("SIGTERM");
    assert.equal(status.code, 0, tailOf(child));
  });
});

describe("memory-scaler's ServiceAccount has least privilege", () => {
  before(() => installMemoryScaler());

  it("may dry-run a Pod but not create one, and may not delete workloads or read Secrets", async (t) => {
    const ns = await freshNamespace(t);
    const kc = await serviceAccountKubeConfig(SCALER_NAMESPACE, SCALER_SERVICE_ACCOUNT);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const pod: k8s.V1Pod = { metadata: { generateName: "probe-" }, spec: { containers: [{ name: "c", image: "registry.example/app:1" }] } };

    const dry = await core.createNamespacedPod({ namespace: ns, body: pod, dryRun: "All" });
    assert.match(dry.metadata?.name ?? "", /^probe-/);
    // The API server enforces a ValidatingAdmissionPolicy shortly after it is applied: until
    // then a real create may pass, and the Pod is removed before trying again.
    const admin = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    const refusal = await waitFor("a real Pod creation refused", async () => {
      try {
        const created = await core.createNamespacedPod({ namespace: ns, body: pod });
        await admin.deleteNamespacedPod({ namespace: ns, name: created.metadata?.name ?? "", gracePeriodSeconds: 0 });
        return undefined;
      } catch (error) {
        return error as { code?: number; body?: string };
      }
    }, 20_000);
    assert.ok(refusal.code === 403 || refusal.code === 422, String(refusal.code));
    assert.match(refusal.body ?? "", /may create Pods only with dryRun=All/);

    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await assert.rejects(apps.deleteNamespacedDeployment({ namespace: ns, name: "anything" }), (error: unknown) => (error as { code?: number }).code === 403);
    await assert.rejects(core.listNamespacedSecret({ namespace: ns }), (error: unknown) => (error as { code?: number }).code === 403);
    // It may change a Pod's resources only through the resize subresource (a bare Pod resized in
    // place), never patch the Pod itself: the authorizer refuses the latter, not the former.
    const jsonPatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch);
    const probe = { namespace: ns, name: "anything", body: [{ op: "test", path: "/metadata/name", value: "anything" }] };
    await assert.rejects(core.patchNamespacedPod(probe, jsonPatch), (error: unknown) => (error as { code?: number }).code === 403);
    await assert.rejects(core.patchNamespacedPodResize(probe, jsonPatch), (error: unknown) => (error as { code?: number }).code === 404);
    // It may delete one Pod (spec.stuckRollout: DeletePod), never a collection of them.
    await assert.rejects(core.deleteCollectionNamespacedPod({ namespace: ns }), (error: unknown) => (error as { code?: number }).code === 403);
  });
});
