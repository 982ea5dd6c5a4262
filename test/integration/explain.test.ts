/**
 * `explain` (scripts/explain/cli.ts, run as `kubectl appmonitor` would run it: the plugin
 * launcher, the stack's kubeconfig in KUBECONFIG, its Prometheus in PROMETHEUS_URL) against the
 * local stack, in four states of one Deployment: not covered (no annotation; no AppMonitor),
 * the rule not loaded (an AppMonitor without its PrometheusRule), below the threshold (the
 * PrometheusRule present and its group loaded, Prometheus's series for the Pod below it) and scaled (an alert
 * delivered to memory-scaler: the last outcome and the cooldown left).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { validateAppMonitorSpec } from "../../functions/lib/appmonitor-spec.ts";
import { DEFAULT_RULE_CONFIG } from "../../functions/rule-sync/rule-config.ts";
import { checkRuleInput } from "../../functions/rule-sync/rule-input.ts";
import { buildPrometheusRule, buildRulesFile, ruleGroupName } from "../../functions/rule-sync/rule.ts";
import { describeAnswer } from "../support/post-event.ts";
import { alertEvent, appMonitorStatus, deliver, monitoredDeployment, scalerForSuite, setWorkingSet } from "../support/memory-scaler.ts";
import { installRuleSync } from "../support/rule-sync.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../support/stack.ts";

const MI = 1024 * 1024;

/** Runs the plugin launcher with `args`; its exit code and output. */
async function explain(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { kubeconfig, prometheusUrl } = await stack();
  const child = spawn("scripts/explain/kubectl-appmonitor", ["explain", ...args], { env: { ...process.env, KUBECONFIG: kubeconfig, PROMETHEUS_URL: prometheusUrl } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

/** The line of `stdout` that starts with `what: `. */
function lineOf(stdout: string, what: string): string {
  const found = stdout.split("\n").find((l) => l.startsWith(`${what}: `));
  assert.ok(found !== undefined, `no "${what}" line in:\n${stdout}`);
  return found;
}

describe("explain against the stack", () => {
  const scaler = scalerForSuite();

  it("not covered: a Deployment without the annotation, in a namespace without AppMonitor", async (t) => {
    const ns = await freshNamespace(t);
    await (await adminKubeConfig()).makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
      namespace: ns,
      body: { metadata: { name: "web" }, spec: { replicas: 1, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "memhog", image: "registry.example/app:1" }] } } } },
    });
    const { code, stdout, stderr } = await explain("deploy/web", "-n", ns);
    assert.equal(code, 0, stderr);
    assert.match(lineOf(stdout, "coverage"), new RegExp(`^coverage: not covered: no AppMonitor in namespace ${ns} covers Deployment ${ns}/web \\(its Pod template lacks the annotation`));
    assert.equal(stdout.trim().split("\n").length, 1, stdout);

    const missing = await explain("sts/nope", "-n", ns);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`^explain: cannot read StatefulSet ${ns}/nope: HTTP 404`));
  });

  it("rule not loaded: an AppMonitor without its PrometheusRule", async (t) => {
    const ns = await freshNamespace(t);
    await installRuleSync();
    await monitoredDeployment(ns);
    const { code, stdout, stderr } = await explain("deployment/web", "-n", ns);
    assert.equal(code, 0, stderr);
    assert.match(lineOf(stdout, "coverage"), /^coverage: covered by AppMonitor m \(annotation\)/);
    assert.match(lineOf(stdout, "rule object"), new RegExp(`^rule object: absent: .*\\(PrometheusRule ${ns}/m\\)$`));
    assert.match(lineOf(stdout, "rule loaded"), /^rule loaded: not loaded: Prometheus lists no rule group .*, so no alert can fire/);
    assert.match(lineOf(stdout, "last scale"), /never scaled by memory-scaler/);
  });

  it("below threshold: the rule present, the Pod's working set at 100Mi of 384Mi", async (t) => {
    const ns = await freshNamespace(t);
    await installRuleSync();
    const pod = await monitoredDeployment(ns);
    const monitor = (await (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({ group: "kubedemo.com", version: "v1", namespace: ns, plural: "appmonitors", name: "m" })) as {
      metadata: { name: string; namespace: string; uid: string; generation: number };
      spec: unknown;
    };
    const input = checkRuleInput({ metadata: monitor.metadata, spec: validateAppMonitorSpec(monitor.spec) });
    // The object rule-sync would write, and its group loaded into the stack's Prometheus (which has no prometheus-operator) as a rules file.
    await (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: ns, plural: "prometheusrules", body: buildPrometheusRule(input, DEFAULT_RULE_CONFIG) });
    const { rulesDir, prometheusUrl } = await stack();
    const file = join(rulesDir, `explain-${ns}.yml`);
    const reload = async (): Promise<void> => void (await fetch(new URL("-/reload", `${prometheusUrl}/`), { method: "POST" }));
    t.after(async () => {
      await rm(file, { force: true });
      await reload();
    });
    await writeFile(file, buildRulesFile([input], DEFAULT_RULE_CONFIG));
    await reload();
    await waitFor("Prometheus to load the rule group", async () => (await fetch(new URL(`api/v1/rules?rule_group[]=${encodeURIComponent(ruleGroupName(input))}`, `${prometheusUrl}/`)).then((r) => r.text())).includes(ruleGroupName(input)));
    await setWorkingSet(ns, pod, "100Mi", 100 * MI);

    const { code, stdout, stderr } = await explain("deploy/web", "-n", ns);
    assert.equal(code, 0, stderr);
    assert.match(lineOf(stdout, "rule object"), /^rule object: present at generation 1/);
    assert.match(lineOf(stdout, "rule loaded"), new RegExp(`^rule loaded: loaded: group ${ruleGroupName(input)} with AppMonitorMemoryHigh`));
    assert.match(lineOf(stdout, "series"), /^series: 1 container series {2}\(100 \* max by \(namespace, pod, container\)/);
    // 100Mi of 384Mi = 26.04…%.
    assert.match(lineOf(stdout, `usage ${pod}/memhog`), /^usage \S+: 26% of its memory limit, below the threshold 75%/);
    assert.match(lineOf(stdout, "alert"), /^alert: none pending or firing for its Pods {2}\(ALERTS\{/);
  });

  it("scaled: the last outcome, the record and the cooldown left", async (t) => {
    const ns = await freshNamespace(t);
    const pod = await monitoredDeployment(ns);
    const answer = await deliver(scaler().url, alertEvent({ namespace: ns, pod, container: "memhog", appmonitor: "m" }));
    assert.equal(answer.outcome, "scaled", describeAnswer(answer));
    await waitFor("status.lastOutcome", async () => (await appMonitorStatus(ns, "m")).lastOutcome !== undefined);

    const { code, stdout, stderr } = await explain("deploy/web", "-n", ns);
    assert.equal(code, 0, stderr);
    assert.match(lineOf(stdout, "last outcome"), new RegExp(`^last outcome: scaled at \\S+ for Pod ${ns}/${pod}: Scaled: .*\\(AppMonitor ${ns}/m status\\.lastOutcome\\)$`));
    assert.match(lineOf(stdout, "last scale"), /^last scale: at \S+ by AppMonitor m: memhog: limit 384Mi → 768Mi, request 256Mi → 512Mi/);
    assert.match(lineOf(stdout, "cooldown"), /^cooldown: \d+s left of 300s since \S+: an alert that began before it is skipped \(Cooldown\); a threshold or trend alert that begins after it is a new crossing, answered/);
    assert.match(lineOf(stdout, "caps"), /^caps: memhog: limit 768Mi, cap the install's DEFAULT_MAX_MEMORY 8Gi/);
  });
});
