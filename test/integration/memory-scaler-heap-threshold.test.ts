/**
 * The heap-threshold trigger on the local stack's API server and a real Prometheus of the test's
 * own: memory-scaler with its ServiceAccount's token, a Deployment's kwok Pod whose container is
 * declared `runtime: Node.js`, `heapMetrics: Watch`, `heapThresholdPercent: 80`, and a target
 * serving prom-client's heap metrics for it with the Pod's namespace, pod and container labels (as
 * a PodMonitor's relabeling gives them; here `honor_labels`). Prometheus evaluates the generated
 * rule group, whose `AppMonitorHeapThreshold` fires for the heap at 90 %; the alert's event then
 * scales once, the limit and `NODE_OPTIONS` in one patch; a heap at 50 % is `BelowThreshold`, one
 * without series `NotMeasured`, and under `InPlace` the raise is rolled out too (`InPlaceFallback`).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { buildRuleGroup } from "../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG } from "../../functions/rule-sync/rule-config.ts";
import { checkRuleInput } from "../../functions/rule-sync/rule-input.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { installMemoryScaler } from "../support/install.ts";
import { alertEvent, appMonitorStatus, deliver, eventsRegarding, monitoredDeployment, startScaler, type ScalerUnderTest } from "../support/memory-scaler.ts";
import { describeAnswer } from "../support/post-event.ts";
import { startPrometheus, type TestPrometheus } from "../support/prometheus.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

const MI = 1024 * 1024;
const WATCHED = { updateMode: "Rollout", forSeconds: 0, containerPolicies: [{ containerName: "memhog", runtime: "Node.js", heapMetrics: "Watch", heapThresholdPercent: 80 }] };

/** The heap each Pod's program reports, in MiB of a 100 MiB heap limit, by `namespace/pod`. */
const heaps = new Map<string, number>();
let target: Server;
let prometheus: TestPrometheus;
let scaler: ScalerUnderTest;

before(async () => {
  // prom-client's nodejs_heap_size_used_bytes and the nodejs_heap_old_space_limit_bytes gauge docs/fixed-heaps.md gives.
  target = createServer((_req, res) => {
    const lines = [...heaps].flatMap(([key, used]) => {
      const [namespace, pod] = key.split("/");
      const labels = `namespace="${namespace ?? ""}",pod="${pod ?? ""}",container="memhog"`;
      return [`nodejs_heap_size_used_bytes{${labels}} ${used * MI}`, `nodejs_heap_old_space_limit_bytes{${labels}} ${100 * MI}`];
    });
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(`${lines.join("\n")}\n`);
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  const { port } = target.address() as { port: number };
  prometheus = await startPrometheus({
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    scrape_configs: [{ job_name: "app", honor_labels: true, static_configs: [{ targets: [`127.0.0.1:${port}`] }] }],
  });
  await installMemoryScaler();
  scaler = await startScaler({ PROMETHEUS_URL: prometheus.url, ALLOW_UNVERIFIED_ALERTS: "" });
}, { timeout: 300_000 });

after(async () => {
  await scaler?.stop();
  await prometheus?.stop();
  await new Promise<void>((resolve) => (target ? target.close(() => resolve()) : resolve()));
});

async function readWeb(ns: string): Promise<k8s.V1Deployment> {
  return (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ name: "web", namespace: ns });
}

/** The Pod's heap at `used` MiB, once Prometheus has scraped it. */
async function reportHeap(ns: string, pod: string, used: number): Promise<void> {
  heaps.set(`${ns}/${pod}`, used);
  await waitUntil(`Prometheus to scrape ${pod}'s heap at ${used} MiB`, async () => {
    const samples = await prometheus.query(`nodejs_heap_size_used_bytes{namespace="${ns}", pod="${pod}"}`);
    return Number(samples[0]?.value[1]) === used * MI;
  }, { timeoutMs: 20_000, intervalMs: 200 });
}

const heapEvent = (ns: string, pod: string) => alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m", alertname: "AppMonitorHeapThreshold" });

describe("memory-scaler on a heap-threshold event, confirmed by a real Prometheus", { concurrency: 3 }, () => {
  it("the generated rule fires for a heap at 90 % of its limit; the event scales once, NODE_OPTIONS in the same patch, recorded as heapThreshold", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, WATCHED);
    const group = buildRuleGroup(checkRuleInput({ metadata: { name: "m", namespace: ns, uid: "u", generation: 1 }, spec: { memThresholdPercent: 75, ...WATCHED } as never }), DEFAULT_RULE_CONFIG);
    await prometheus.writeRules(`${ns}.yml`, [group]);
    await reportHeap(ns, pod, 90);
    const alerts = await waitFor("AppMonitorHeapThreshold firing", async () => {
      const firing = await prometheus.query(`ALERTS{alertname="AppMonitorHeapThreshold", alertstate="firing", namespace="${ns}"}`);
      return firing.length > 0 ? firing : undefined;
    }, 30_000);
    assert.deepEqual(alerts.map((a) => [a.metric.pod, a.metric.container, a.metric.appmonitor]), [[pod, "memhog", "m"]]);

    const event = heapEvent(ns, pod);
    assert.equal(event.data?.trigger, "heapThreshold");
    const answer = await deliver(scaler.url, event);
    assert.deepEqual([answer.status, answer.outcome, answer.reason], [204, "scaled", "Scaled"], describeAnswer(answer));
    const web = await readWeb(ns);
    const memhog = web.spec?.template.spec?.containers[0];
    assert.equal(memhog?.resources?.limits?.memory, "768Mi");
    assert.deepEqual(JSON.parse(JSON.stringify(memhog?.env)), [{ name: "NODE_OPTIONS", value: "--max-old-space-size=576" }]);
    assert.equal(web.metadata?.generation, 2, "one patch");
    const scaled = await waitFor("the Scaled Event", async () => (await eventsRegarding(ns, "Deployment", "web")).find((e) => e.reason === "Scaled"), 10_000);
    assert.match(scaled.note ?? "", /on its heap's own threshold: memhog: limit 384Mi → 768Mi.*container memhog: NODE_OPTIONS \+= --max-old-space-size=576/);
    const status = await waitFor("the recentScales entry", async () => ((await appMonitorStatus(ns, "m")).recentScales?.length ? appMonitorStatus(ns, "m") : undefined), 10_000);
    assert.equal(status.recentScales?.[0]?.trigger, "heapThreshold");
    await prometheus.writeRules(`${ns}.yml`, undefined);
  });

  it("a heap at 50 %: BelowThreshold; no heap series: NotMeasured; nothing patched", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, WATCHED);
    const unmeasured = await deliver(scaler.url, heapEvent(ns, pod));
    assert.deepEqual([unmeasured.outcome, unmeasured.reason], ["skipped", "NotMeasured"], describeAnswer(unmeasured));
    await reportHeap(ns, pod, 50);
    const below = await deliver(scaler.url, heapEvent(ns, pod));
    assert.deepEqual([below.outcome, below.reason], ["skipped", "BelowThreshold"], describeAnswer(below));
    assert.equal((await readWeb(ns)).metadata?.generation, 1);
  });

  it("InPlace: rolled out with the heap, the running Pod not resized, InPlaceFallback naming the runtime", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns, { ...WATCHED, updateMode: "InPlace" });
    await reportHeap(ns, pod, 95);
    const answer = await deliver(scaler.url, heapEvent(ns, pod));
    assert.deepEqual([answer.outcome, answer.reason], ["scaled", "Scaled"], describeAnswer(answer));
    const memhog = (await readWeb(ns)).spec?.template.spec?.containers[0];
    assert.equal(memhog?.resources?.limits?.memory, "768Mi");
    assert.deepEqual(JSON.parse(JSON.stringify(memhog?.env)), [{ name: "NODE_OPTIONS", value: "--max-old-space-size=576" }]);
    const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
    // The rollout may already have replaced it (gone: not resized either).
    const running = await core.readNamespacedPod({ name: pod, namespace: ns }).catch((error: { code?: number }) => (error.code === 404 ? undefined : Promise.reject(error)));
    assert.ok(running === undefined || running.spec?.containers[0]?.resources?.limits?.memory === "384Mi", "the running Pod not resized");
    assert.equal((await readWeb(ns)).metadata?.annotations?.["app-monitor.kubedemo.com/in-place-memory"], undefined, "no in-place record: the template carries the raise");
    const warning = await waitFor("the InPlaceFallback Warning", async () => (await eventsRegarding(ns, "Deployment", "web")).find((e) => e.reason === "InPlaceFallback"), 10_000);
    assert.match(warning.note ?? "", /resizing in place cannot reach Node\.js's heap, sized when it starts \(container memhog\)/);
  });
});
