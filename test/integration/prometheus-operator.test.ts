// The real prometheus-operator (`up --prometheus-operator`, on a stack of this file's own), with a
// Prometheus and an Alertmanager as kube-prometheus-stack's defaults make them: the PrometheusRule
// rule-sync writes (with the shipped Service's environment) for an AppMonitor in `shop` is
// selected into the operator's rule files, and promtool accepts them; and where the operator's
// generated Alertmanager configuration, run by a real Alertmanager, sends an alert of ours for a
// Pod in `shop`: to alert-receiver (the real function, checking its token) or to the default
// receiver (a webhook of this file's own, standing in for a team's Slack).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import * as k8s from "@kubernetes/client-node";
import { parse } from "yaml";
import { fn as alertReceiver } from "../../functions/alert-receiver/index.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import { RESOURCE_EVENT_PREFIX } from "../../functions/rule-sync/incoming-event.ts";
import { ALERT_NAME } from "../../functions/rule-sync/rule.ts";
import { coalesceValues, type Value } from "../harness/lib/helm-values.ts";
import { documentedKubePrometheusStackValues } from "../harness/lib/install-doc.ts";
import { alertmanagerBaseConfig, alertmanagerConfigSecret, PROMETHEUS_OPERATOR } from "../harness/stack/prometheus-operator.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { down, up } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { startAlertmanager, type TestAlertmanager } from "../support/alertmanager.ts";
import { startSink, type TestSink } from "../support/cloudevent-sink.ts";
import { installCrdFiles } from "../support/crds.ts";
import { startFunction } from "../support/function-server.ts";
import { applyFiles } from "../support/install.ts";
import { kustomize, type Manifest } from "../support/knative.ts";
import { describeAnswer } from "../support/post-event.ts";
import { createAppMonitor, readRule, startRuleSync, type RuleSyncUnderTest } from "../support/rule-sync.ts";
import { runCommand } from "../support/run-command.ts";
import { waitFor } from "../support/stack.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const PROMTOOL = process.env.PROMTOOL_BIN ?? "/usr/bin/promtool";
const WORKLOAD_NAMESPACE = "shop";
const { namespace: MONITORING, prometheus: PROMETHEUS, alertmanager: ALERTMANAGER } = PROMETHEUS_OPERATOR;
const TOKEN = "token-of-the-appmonitor-webhook-secret";

/** A webhook of the test's own: the alert names of every notification it got. */
interface Webhook {
  readonly url: string;
  readonly alertnames: () => string[];
  readonly close: () => Promise<void>;
}

async function startWebhook(): Promise<Webhook> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      const payload = JSON.parse(body) as { alerts: { labels: Record<string, string> }[] };
      for (const alert of payload.alerts) seen.push(alert.labels.alertname ?? "");
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}/`, alertnames: () => [...seen], close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let state: StackState;
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;
let objects: k8s.KubernetesObjectApi;
let ruleSync: RuleSyncUnderTest;
let dir: TempDir;

before(async () => {
  dir = await tempDir("prometheus-operator");
  // The helpers of test/support act on the stack APPMONITOR_STACK_DIR names: this file's own.
  process.env.APPMONITOR_STACK_DIR = path.join(dir.path, "stack");
  state = await up({ stateDir: process.env.APPMONITOR_STACK_DIR, nodes: 1, prometheusOperator: true });
  kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  core = kc.makeApiClient(k8s.CoreV1Api);
  objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  // The PrometheusRule CRD is the operator's own, installed by the stack.
  await installCrdFiles(path.join(repoRoot, "knative", "crd", "appmonitor.yaml"));
  await applyFiles("knative/namespace/namespace.yaml", "knative/rbac/rule-sync.yaml");
  await core.createNamespace({ body: { metadata: { name: WORKLOAD_NAMESPACE } } });
  // rule-sync with the environment its shipped Service sets (RULE_LABELS=release=prometheus, ...).
  const service = parse(await readFile(path.join(repoRoot, "knative", "services", "rule-sync.yaml"), "utf8")) as {
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  };
  const env = Object.fromEntries((service.spec.template.spec.containers[0]?.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value as string]));
  ruleSync = await startRuleSync({ ...env, RESYNC_ON_START: "false" });
  await waitFor("rule-sync ready", async () => (await fetch(`${ruleSync.url}/health/readiness`)).status === 200);
  // Minutes more when the operator's sets are built here, on a cold machine beside the suite (.ci/run).
}, { timeout: 30 * 60_000 });

after(async () => {
  await ruleSync?.stop();
  if (state) await down(state.stateDir);
  await dir?.remove();
});

/** The operator's rule files for the Prometheus: file name → content. */
async function ruleFiles(): Promise<Record<string, string>> {
  const cm = await core.readNamespacedConfigMap({ namespace: MONITORING, name: `prometheus-${PROMETHEUS}-rulefiles-0` });
  return cm.data ?? {};
}

describe("the PrometheusRule rule-sync writes", () => {
  test("is selected by the operator into its Prometheus's rule files, and promtool accepts them; one without the release label is not", { timeout: 180_000 }, async () => {
    // A PrometheusRule without the release label, written first, so the operator has seen it by the time ours is in: the ruleSelector must leave it out.
    await objects.create({
      apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule", metadata: { name: "unlabelled", namespace: WORKLOAD_NAMESPACE },
      spec: { groups: [{ name: "unlabelled", rules: [{ alert: "Unlabelled", expr: "vector(1)" }] }] },
    } as k8s.KubernetesObject);
    const example = parse(await readFile(path.join(repoRoot, "knative", "examples", "appmonitor.yaml"), "utf8")) as { metadata: { name: string }; spec: Record<string, unknown> };
    const monitor = await createAppMonitor(WORKLOAD_NAMESPACE, example.metadata.name, example.spec);
    const answer = await ruleSync.send(`${RESOURCE_EVENT_PREFIX}add`, monitor);
    assert.equal(answer.outcome, "created", describeAnswer(answer));
    const rule = await readRule(WORKLOAD_NAMESPACE, monitor.metadata.name);
    assert.ok(rule);
    assert.equal(rule.metadata?.labels?.release, PROMETHEUS_OPERATOR.release, "RULE_LABELS as shipped matches the chart's ruleSelector for the release prometheus");

    // The operator names each file <namespace>-<name>-<uid>.yaml.
    const prefix = `${WORKLOAD_NAMESPACE}-${monitor.metadata.name}-`;
    const files = await waitFor("the rule in the operator's rule files", async () => {
      const data = await ruleFiles();
      return Object.keys(data).some((f) => f.startsWith(prefix)) ? data : undefined;
    }, 60_000);
    assert.deepEqual(Object.keys(files).filter((f) => f.startsWith(`${WORKLOAD_NAMESPACE}-`)).map((f) => f.slice(0, prefix.length)), [prefix], `files: ${Object.keys(files).join(", ")}`);
    const [file, content] = Object.entries(files).find(([f]) => f.startsWith(prefix)) ?? ["", ""];
    const groups = (parse(content) as { groups: { name: string; rules: { alert?: string }[] }[] }).groups;
    assert.deepEqual(groups.map((g) => g.name), rule.spec.groups?.map((g) => g.name));
    assert.ok(groups.some((g) => g.rules.some((r) => r.alert === ALERT_NAME)));

    const local = path.join(dir.path, file);
    await writeFile(local, content);
    const checked = await runCommand(PROMTOOL, ["check", "rules", local]);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    assert.match(checked.stdout, /SUCCESS: \d+ rules found/);
  });

  test("beside the chart's general rules (Watchdog, InfoInhibitor), which promtool accepts too", async () => {
    const files = await ruleFiles();
    const [file, content] = Object.entries(files).find(([f]) => f.startsWith(`${MONITORING}-${PROMETHEUS_OPERATOR.release}-kube-prometheus-general.rules-`)) ?? ["", ""];
    assert.ok(file, `files: ${Object.keys(files).join(", ")}`);
    const alerts = (parse(content) as { groups: { rules: { alert?: string }[] }[] }).groups.flatMap((g) => g.rules.map((r) => r.alert));
    assert.ok(alerts.includes("Watchdog") && alerts.includes("InfoInhibitor"), alerts.join(", "));
    const local = path.join(dir.path, file);
    await writeFile(local, content);
    const checked = await runCommand(PROMTOOL, ["check", "rules", local]);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  });
});

describe("an alert of ours for a Pod in shop, through the operator's generated Alertmanager configuration (OnNamespace)", () => {
  let sink: TestSink;
  let receiver: RunningServer;
  let teamWebhook: Webhook;
  let severityWebhook: Webhook;
  let alertmanager: TestAlertmanager | undefined;

  before(async () => {
    const tokenFile = path.join(dir.path, "token");
    await writeFile(tokenFile, `${TOKEN}\n`);
    sink = await startSink();
    // alert-receiver as its Service runs it: the token from a file, K_SINK as the SinkBinding sets it.
    receiver = await startFunction(alertReceiver, { WEBHOOK_TOKEN_FILE: tokenFile, K_SINK: sink.url });
    teamWebhook = await startWebhook();
    severityWebhook = await startWebhook();
    await core.createNamespacedSecret({ namespace: "appmonitor", body: { metadata: { name: "appmonitor-webhook" }, stringData: { token: TOKEN } } });
  });

  after(async () => {
    await alertmanager?.stop();
    await receiver?.close();
    await sink?.stop();
    await teamWebhook?.close();
    await severityWebhook?.close();
  });

  /**
   * `base` (the chart's default configuration unless given) with its `null` receiver given the
   * team's webhook (where Slack would be), `extra` routes and receivers first, and with
   * `severityRoute` a team's route by severity after the others (`severity="warning"`, which our
   * alerts carry, to another webhook).
   */
  async function writeBaseConfig(extra: { routes?: unknown[]; receivers?: unknown[] } = {}, severityRoute = false, base = alertmanagerBaseConfig()): Promise<void> {
    const config = structuredClone(base) as { route: { routes: unknown[] }; receivers: { name: string }[] };
    const hook = (name: string, url: string) => ({ name, webhook_configs: [{ url, send_resolved: false }] });
    config.receivers = [...config.receivers.map((r) => (r.name === "null" ? hook("null", teamWebhook.url) : r)), ...(severityRoute ? [hook("team-warnings", severityWebhook.url)] : []), ...((extra.receivers ?? []) as { name: string }[])];
    config.route.routes = [...(extra.routes ?? []), ...config.route.routes, ...(severityRoute ? [{ receiver: "team-warnings", matchers: ['severity = "warning"'] }] : [])];
    const secret = alertmanagerConfigSecret(config);
    await core.replaceNamespacedSecret({ namespace: MONITORING, name: secret.metadata?.name ?? "", body: secret });
  }

  /** Waits until the operator's generated configuration satisfies `ready`, then runs it in a fresh real Alertmanager. */
  async function runGenerated(ready: (config: string) => boolean): Promise<{ config: string; am: TestAlertmanager }> {
    const config = await waitFor("the operator's generated Alertmanager configuration", async () => {
      const secret = await core.readNamespacedSecret({ namespace: MONITORING, name: `alertmanager-${ALERTMANAGER}-generated` });
      const text = gunzipSync(Buffer.from(secret.data?.["alertmanager.yaml.gz"] ?? "", "base64")).toString("utf8");
      return ready(text) ? text : undefined;
    }, 60_000);
    await alertmanager?.stop();
    alertmanager = await startAlertmanager(parse(config) as object);
    return { config, am: alertmanager };
  }

  /** Posts our alert (as the rule raises it) for a Pod in shop, started long enough ago that no group_wait holds it. */
  async function postOurs(am: TestAlertmanager): Promise<void> {
    await am.postAlerts([{
      labels: { alertname: ALERT_NAME, namespace: WORKLOAD_NAMESPACE, pod: "memhog-1", container: "memhog", appmonitor: "mymonitor", severity: "warning" },
      startsAt: new Date(Date.now() - 120_000).toISOString(),
    }]);
  }

  const atAlertReceiver = () => sink.received.map((r) => (r.event.data as { alertname: string }).alertname);

  /** Creates the shipped AlertmanagerConfig with only the address made local (alert-receiver's in-cluster URL is not reachable from here). */
  async function createShippedAlertmanagerConfig(): Promise<k8s.KubernetesObject> {
    const [shipped] = await kustomize("knative/alertmanager");
    const amConfig = structuredClone(shipped) as Manifest & { spec: { receivers: { webhookConfigs: { url: string }[] }[] } };
    for (const r of amConfig.spec.receivers) for (const w of r.webhookConfigs) w.url = `${receiver.url}/`;
    await objects.create(amConfig as k8s.KubernetesObject);
    return amConfig as k8s.KubernetesObject;
  }

  /** Sets the Alertmanager's matcher strategy (`undefined`: the default, OnNamespace). */
  async function setMatcherStrategy(type: "None" | undefined): Promise<void> {
    await objects.patch(
      { apiVersion: "monitoring.coreos.com/v1", kind: "Alertmanager", metadata: { namespace: MONITORING, name: ALERTMANAGER }, spec: { alertmanagerConfigMatcherStrategy: type ? { type } : null } } as k8s.KubernetesObject,
      undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch,
    );
  }

  // Today's shipped design, and the gap: the operator scopes the AlertmanagerConfig's route to its
  // own namespace (matcher namespace="appmonitor"), so an alert from shop never matches it and
  // goes to the default receiver. The next test is strategy None, the route's own requirement;
  // the last is the route users need.
  test("the shipped AlertmanagerConfig: its route is scoped to namespace appmonitor, so ours reaches the default receiver and never alert-receiver", { timeout: 180_000 }, async () => {
    await writeBaseConfig();
    const amConfig = await createShippedAlertmanagerConfig();
    const { config, am } = await runGenerated((text) => text.includes("appmonitor/appmonitor/alert-receiver") && !text.includes("team-warnings"));
    assert.match(config, /namespace="appmonitor"/, "the operator scoped the route to the AlertmanagerConfig's namespace");

    await postOurs(am);
    await waitFor("the default receiver's notification", async () => teamWebhook.alertnames().includes(ALERT_NAME), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    assert.deepEqual(atAlertReceiver(), [], "alert-receiver got nothing");
    await objects.delete(amConfig);
  });

  // What the AlertmanagerConfig needs instead, and its cost on a shared Alertmanager: with
  // strategy None ours arrives, and the operator's forced `continue: true` on the route passes it
  // on to every later route that matches it (here a team's route by severity). The root's default
  // receiver alone does not get it: Alertmanager uses it only for alerts no route matched.
  test("the shipped AlertmanagerConfig with matcher strategy None: ours reaches alert-receiver and, with the forced continue, a team's severity route too", { timeout: 180_000 }, async (t) => {
    await writeBaseConfig({}, true);
    const amConfig = await createShippedAlertmanagerConfig();
    await setMatcherStrategy("None");
    t.after(async () => {
      await setMatcherStrategy(undefined);
      await objects.delete(amConfig);
    });
    const defaultBefore = teamWebhook.alertnames().length;
    const severityBefore = severityWebhook.alertnames().length;
    const sinkBefore = sink.received.length;
    const { config, am } = await runGenerated((text) => text.includes("appmonitor/appmonitor/alert-receiver") && text.includes("team-warnings") && !text.includes('namespace="appmonitor"'));
    const route = (parse(config) as { route: { routes: { receiver: string; continue?: boolean }[] } }).route.routes.find((r) => r.receiver === "appmonitor/appmonitor/alert-receiver");
    assert.equal(route?.continue, true, "the operator forced continue on the route");

    await postOurs(am);
    await waitFor("our alert at alert-receiver", async () => atAlertReceiver().slice(sinkBefore).includes(ALERT_NAME), 60_000);
    await waitFor("our alert at the team's severity route too", async () => severityWebhook.alertnames().slice(severityBefore).includes(ALERT_NAME), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    assert.deepEqual(teamWebhook.alertnames().slice(defaultBefore), [], "the root's default receiver: only for alerts no route matched");
  });

  test("docs/install.md's kube-prometheus-stack values as Helm applies them: ours reaches alert-receiver, authenticated, not inhibited, and neither the default receiver nor a team's later route sees any of ours", { timeout: 180_000 }, async () => {
    const { values } = await documentedKubePrometheusStackValues();
    const documented = coalesceValues(alertmanagerBaseConfig() as Value, values.alertmanager.config) as unknown as {
      route: { routes: unknown[] };
      receivers: { name: string; webhook_configs?: { url: string; http_config: { authorization: { credentials_file: string } } }[] }[];
    };
    // Only the address and the token file's path made local (in a cluster, the Secret listed in
    // the Alertmanager's spec.secrets is mounted at the path the values name).
    for (const r of documented.receivers) for (const w of r.webhook_configs ?? []) {
      w.url = `${receiver.url}/`;
      w.http_config.authorization.credentials_file = path.join(dir.path, "token");
    }
    const before = teamWebhook.alertnames().length;
    const severityBefore = severityWebhook.alertnames().length;
    await writeBaseConfig({}, true, documented as unknown as Record<string, unknown>);
    const { am } = await runGenerated((text) => text.includes(receiver.url) && text.includes("team-warnings") && !text.includes("appmonitor/appmonitor/alert-receiver"));

    await postOurs(am);
    await waitFor("our alert at alert-receiver", async () => atAlertReceiver().includes(ALERT_NAME), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    assert.deepEqual(teamWebhook.alertnames().slice(before), [], "the default receiver got none of ours");
    assert.deepEqual(severityWebhook.alertnames().slice(severityBefore), [], "nor the team's severity route: our route has no continue");
    assert.equal(sink.received[0]?.event.subject, `namespaces/${WORKLOAD_NAMESPACE}/pods/memhog-1`);
    const [ours] = await (await fetch(`${am.url}/api/v2/alerts?${new URLSearchParams({ filter: `alertname="${ALERT_NAME}"` })}`)).json() as { status: { inhibitedBy: string[] }; receivers: { name: string }[] }[];
    assert.deepEqual([ours?.status.inhibitedBy, ours?.receivers.map((r) => r.name)], [[], ["appmonitor"]], "routed to appmonitor alone, inhibited by none of the chart's inhibit rules");
  });
});
