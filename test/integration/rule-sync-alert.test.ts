// The rule rule-sync writes, loaded into the stack's Prometheus as prometheus-operator would load
// it, fires for a kwok Pod at 80% of its memory limit (threshold 75), with the labels
// memory-scaler needs, and not for a container without a limit or a Pod below the threshold.
// The metrics are the default cAdvisor source: kwok emulates the kubelet's cAdvisor endpoint.
import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { before, test } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { usageMemoryAnnotation } from "../harness/stack/config-files.ts";
import { ALERT_NAME } from "../../functions/rule-sync/rule.ts";
import { RESOURCE_EVENT_PREFIX } from "../../functions/rule-sync/incoming-event.ts";
import { describeAnswer } from "../support/post-event.ts";
import { createAppMonitor, installRuleSync, readRule, startRuleSync } from "../support/rule-sync.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../support/stack.ts";

before(() => installRuleSync());

/** One entry of Prometheus's `/api/v1/alerts` (https://prometheus.io/docs/prometheus/latest/querying/api/#alerts). */
interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing";
  value: string;
}

async function alertsOf(namespace: string): Promise<PromAlert[]> {
  const { prometheusUrl } = await stack();
  const body = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: PromAlert[] } };
  return body.data.alerts.filter((a) => a.labels.namespace === namespace && a.labels.alertname === ALERT_NAME);
}

async function reloadPrometheus(): Promise<void> {
  const { prometheusUrl } = await stack();
  const response = await fetch(`${prometheusUrl}/-/reload`, { method: "POST" });
  assert.equal(response.status, 200, await response.text());
}

function pod(name: string, usage: string, containers: k8s.V1Container[]): k8s.V1Pod {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, annotations: { [usageMemoryAnnotation]: usage } }, spec: { containers } };
}

test("the generated rule, loaded into Prometheus, fires for a container at 80% of its limit", async (t) => {
  const ns = await freshNamespace(t);
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  // kwok reports the Pod's usage annotation as every container's working set.
  await core.createNamespacedPod({
    namespace: ns,
    body: pod("hog", "80Mi", [
      { name: "main", image: "registry.example/hog:1", resources: { requests: { memory: "64Mi" }, limits: { memory: "100Mi" } } },
      { name: "nolimit", image: "registry.example/sidecar:1" },
    ]),
  });
  await core.createNamespacedPod({
    namespace: ns,
    body: pod("calm", "80Mi", [{ name: "main", image: "registry.example/calm:1", resources: { limits: { memory: "200Mi" } } }]),
  });

  const fn = await startRuleSync({ WATCH_NAMESPACES: ns, RESYNC_ON_START: "false" });
  t.after(() => fn.stop());
  const monitor = await createAppMonitor(ns, "hogwatch", { memThresholdPercent: 75, memMultiplier: 2, forSeconds: 1 });
  const answer = await fn.send(`${RESOURCE_EVENT_PREFIX}add`, monitor);
  assert.equal(answer.status, 204, describeAnswer(answer));
  assert.equal(answer.outcome, "created", describeAnswer(answer));
  const rule = await readRule(ns, "hogwatch");
  assert.ok(rule?.metadata?.uid);

  // As prometheus-operator does: the PrometheusRule's groups in a rule file of their own
  // (<namespace>-<name>-<uid>), then a reload.
  const { rulesDir } = await stack();
  const file = path.join(rulesDir, `${ns}-hogwatch-${rule.metadata.uid}.yml`);
  await writeFile(file, stringify({ groups: rule.spec.groups }));
  t.after(async () => {
    await rm(file, { force: true });
    await reloadPrometheus();
  });
  await reloadPrometheus();

  const firing = await waitFor("the alert to fire", async () => {
    const alerts = await alertsOf(ns);
    return alerts.some((a) => a.state === "firing") ? alerts : undefined;
  }, 60_000, 500);
  assert.equal(firing.length, 1, JSON.stringify(firing));
  const [alert] = firing;
  assert.ok(alert);
  assert.deepEqual(alert.labels, { alertname: ALERT_NAME, appmonitor: "hogwatch", severity: "warning", namespace: ns, pod: "hog", container: "main" });
  assert.equal(Number(alert.value), 80);
  assert.match(alert.annotations.summary ?? "", new RegExp(`Container main of Pod ${ns}/hog uses 80\\.0% of its memory limit \\(AppMonitor hogwatch, threshold 75%\\)`));
});
