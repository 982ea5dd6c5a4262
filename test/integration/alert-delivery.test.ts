// rule-sync's delivery check against a real Prometheus sending its alerts to a real Alertmanager
// configured by docs/install.md's kube-prometheus-stack values (Debian's binaries). Prometheus fires
// appmonitor's alert in four namespaces: in `shop` as warning (delivered: no Event); in `lab` as
// info beside the chart's InfoInhibitor (inhibited); in `legacy`, where a route a user put ahead
// of appmonitor's sends it to the chart's `null` receiver (not routed); in `quiet`, under a
// silence (silenced). A resync, as the PingSource's tick runs it, writes one Warning for each of
// the three, naming the alert, the pod and the cause, and the next resync none more. An
// Alertmanager that does not answer fails nothing. The cluster is in memory: the Events are what
// is checked.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { pino } from "pino";
import { Registry } from "prom-client";
import { APPMONITOR_RECEIVER } from "../../functions/lib/alertmanager-receiver.ts";
import { createAlertmanagerApi } from "../../functions/rule-sync/alertmanager.ts";
import { DELIVERY_ACTION } from "../../functions/rule-sync/events.ts";
import { readConfig } from "../../functions/rule-sync/config.ts";
import { createLoadWatcher } from "../../functions/rule-sync/load-watcher.ts";
import { createMetrics } from "../../functions/rule-sync/metrics.ts";
import { createPrometheusApi } from "../../functions/rule-sync/prometheus.ts";
import { ALERT_NAME } from "../../functions/rule-sync/rule.ts";
import { resync, type SyncDeps } from "../../functions/rule-sync/sync.ts";
import { documentedKubePrometheusStackValues } from "../harness/lib/install-doc.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { startAlertmanager, type TestAlertmanager } from "../support/alertmanager.ts";
import { startPrometheus, type TestPrometheus } from "../support/prometheus.ts";
import { FakeCluster } from "../support/rule-sync-fakes.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const silent = pino({ level: "silent" });
const spec = { memThresholdPercent: 75, memMultiplier: 2 };
/** Namespace → the severity of appmonitor's alert there. */
const NAMESPACES: Record<string, string> = { shop: "warning", lab: "info", legacy: "warning", quiet: "warning" };

let dir: TempDir;
let alertmanager: TestAlertmanager;
let prometheus: TestPrometheus;
let silenceId = "";

type Config = { route: { routes: Record<string, unknown>[] }; receivers: { webhook_configs?: { url: string; http_config: { authorization: { credentials_file: string } } }[] }[] };

before(async () => {
  dir = await tempDir("alert-delivery");
  const { values } = await documentedKubePrometheusStackValues();
  const config = structuredClone(values.alertmanager.config) as unknown as Config;
  // Only the webhook's address and token file made local: nothing is delivered, the API shows the routing.
  const token = path.join(dir.path, "token");
  await writeFile(token, "t\n");
  for (const r of config.receivers) for (const w of r.webhook_configs ?? []) [w.url, w.http_config.authorization.credentials_file] = ["http://127.0.0.1:9/", token];
  // A user's route ahead of appmonitor's that catches its alerts in one namespace.
  config.route.routes.unshift({ receiver: "null", matchers: ['namespace="legacy"'] });
  alertmanager = await startAlertmanager(config);

  const response = await fetch(`${alertmanager.url}/api/v2/silences`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      matchers: [{ name: "namespace", value: "quiet", isRegex: false, isEqual: true }],
      startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: "test", comment: "maintenance",
    }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  silenceId = ((await response.json()) as { silenceID: string }).silenceID;

  const amPort = new URL(alertmanager.url).port;
  prometheus = await startPrometheus({
    global: { evaluation_interval: "1s", external_labels: { prometheus: "monitoring/kps-prometheus" } },
    alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${amPort}`] }] }] },
    // Its notifier drops what it sends in its first seconds, before it has the Alertmanager, and
    // sends a firing alert again only after the resend delay (1 min by default).
  }, undefined, ["--rules.alert.resend-delay=1s"]);
  // The alerts as the generated rules and the chart's InfoInhibitor raise them, without the series behind them.
  const ours = (namespace: string, severity: string) => ({
    alert: ALERT_NAME, expr: "vector(1)", labels: { namespace, pod: "memhog-1", container: "memhog", appmonitor: `${namespace}monitor`, severity },
  });
  await prometheus.writeRules("alerts.yml", [{
    name: "test",
    rules: [...Object.entries(NAMESPACES).map(([ns, severity]) => ours(ns, severity)), { alert: "InfoInhibitor", expr: "vector(1)", labels: { namespace: "lab", severity: "none" } }],
  }]);

  // Until Alertmanager holds every alert and has decided on each.
  await waitUntil("Alertmanager to hold the alerts, decided", async () => {
    const all = (await (await fetch(`${alertmanager.url}/api/v2/alerts`)).json()) as { labels: Record<string, string>; status: { state: string } }[];
    const ourAlerts = all.filter((a) => a.labels.alertname === ALERT_NAME && a.status.state !== "unprocessed");
    return ourAlerts.length === 4 && all.some((a) => a.labels.alertname === "InfoInhibitor");
  }, { timeoutMs: 60_000, intervalMs: 250 });
}, { timeout: 120_000 });

after(async () => {
  await prometheus?.stop();
  await alertmanager?.stop();
  await dir?.remove();
});

/** The Events about delivery (the series' own Warnings are there too: this Prometheus scrapes nothing). */
const deliveryEvents = (cluster: FakeCluster) => cluster.events.filter((e) => e.action === DELIVERY_ACTION);

/** rule-sync's reconcile on an in-memory cluster holding one AppMonitor per namespace, asking the real Prometheus and `alertmanagerUrl`. */
function ruleSync(alertmanagerUrl: string): { cluster: FakeCluster; deps: SyncDeps; registry: Registry; close: () => void } {
  const cluster = new FakeCluster();
  for (const ns of Object.keys(NAMESPACES)) cluster.addMonitor(`${ns}monitor`, spec, ns);
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const config = readConfig({ PROMETHEUS_URL: prometheus.url, ALERTMANAGER_URL: alertmanagerUrl, RULE_LOAD_WAIT_MS: "0" });
  assert.ok(config.prometheus && config.alertmanager);
  const api = createPrometheusApi(config.prometheus.url, config.prometheus.timeoutMs, (endpoint, result) => metrics.prometheusRequests.inc({ endpoint, result }));
  const watcher = createLoadWatcher(api, silent);
  const deps: SyncDeps = {
    cluster, config, metrics, log: silent, reportingInstance: "rule-sync-test",
    prometheus: { api, watcher, config: config.prometheus },
    alertmanager: createAlertmanagerApi(config.alertmanager.url, config.alertmanager.timeoutMs, (result) => metrics.alertmanagerRequests.inc({ result })),
  };
  return { cluster, deps, registry, close: () => watcher.close() };
}

describe("rule-sync asks the Alertmanager that the documented values configure", () => {
  test("a Warning for the inhibited, the misrouted and the silenced alert, none for the delivered one; once per firing", async (t) => {
    const { cluster, deps, close } = ruleSync(alertmanager.url);
    t.after(close);
    const result = await resync(deps);
    assert.deepEqual(result.failed, []);
    const byMonitor: Record<string, { reason: string | undefined; note: string }> = Object.fromEntries(deliveryEvents(cluster).map((e) => [e.regarding?.name ?? "", { reason: e.reason, note: e.note ?? "" }]));
    assert.deepEqual(Object.fromEntries(Object.entries(byMonitor).map(([k, v]) => [k, v.reason])), {
      labmonitor: "AlertInhibited", legacymonitor: "AlertNotRouted", quietmonitor: "AlertSilenced",
    });
    const head = (ns: string) => `${ALERT_NAME} of pod ${ns}/memhog-1, container memhog fires in Prometheus, but the Alertmanager at ${alertmanager.url}`;
    assert.ok(byMonitor.labmonitor?.note.startsWith(`${head("lab")} inhibits it (inhibited by InfoInhibitor{namespace="lab", prometheus="monitoring/kps-prometheus", severity="none"})`), byMonitor.labmonitor?.note);
    assert.ok(byMonitor.legacymonitor?.note.startsWith(`${head("legacy")} routes it to the receiver null, not ${APPMONITOR_RECEIVER}`), byMonitor.legacymonitor?.note);
    assert.ok(byMonitor.quietmonitor?.note.startsWith(`${head("quiet")} silences it (silence ${silenceId})`), byMonitor.quietmonitor?.note);

    // The next tick finds the same firings: nothing more.
    await resync(deps);
    assert.equal(deliveryEvents(cluster).length, 3);
  });

  test("an Alertmanager that does not answer fails nothing: no Event, the failure counted", async (t) => {
    const { cluster, deps, registry, close } = ruleSync(`http://127.0.0.1:${await freePort()}`);
    t.after(close);
    const result = await resync(deps);
    assert.deepEqual(result.failed, []);
    assert.deepEqual(deliveryEvents(cluster), []);
    const counted = (await registry.getSingleMetric("appmonitor_rule_sync_alertmanager_requests_total")?.get())?.values.find((v) => v.labels.result === "unreachable")?.value;
    assert.equal(counted, 4, "one request per AppMonitor with a firing alert");
  });
});
