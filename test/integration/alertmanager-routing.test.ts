// The three copies of appmonitor's Alertmanager routing a user takes — knative/alertmanager/
// alertmanager.yml, docs/install.md's kube-prometheus-stack values, and what `helm install` of
// the chart prints (NOTES.txt) — each accepted by the real `amtool check-config`, and each routing
// every alert the rule generator can raise to the appmonitor receiver and the chart's Watchdog to
// its null receiver (`amtool config routes test`, Alertmanager's own routing code). Why the
// values are whole: the chart's defaults with only our route and receiver over them, as Helm
// merges them, are refused. And why rule-sync refuses severity info: a real Alertmanager running
// the values inhibits our alert as info while InfoInhibitor fires, and not as warning.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { parse, stringify } from "yaml";
import { GENERATED_ALERT_NAMES } from "../../functions/rule-sync/rule.ts";
import { alertmanagerYamlPath, APPMONITOR_RECEIVER, appmonitorReceiver, appmonitorRoute, KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG, kubePrometheusStackValuesYaml } from "../../scripts/alertmanager-routing.ts";
import { buildChart } from "../../scripts/release/build-chart.ts";
import { coalesceValues, type Value } from "../harness/lib/helm-values.ts";
import { documentedKubePrometheusStackValues } from "../harness/lib/install-doc.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { buildBinaries } from "../../scripts/lib/binaries.ts";
import { startAlertmanager } from "../support/alertmanager.ts";
import { runCommand } from "../support/run-command.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const AMTOOL = process.env.AMTOOL_BIN ?? "/usr/bin/amtool";

let dir: TempDir;
before(async () => {
  dir = await tempDir("alertmanager-routing");
});
after(() => dir?.remove());

/** `amtool check-config FILE`: its exit code and output. */
async function checkConfig(file: string): Promise<{ code: number | null; output: string }> {
  const result = await runCommand(AMTOOL, ["check-config", file]);
  return { code: result.code, output: result.stdout + result.stderr };
}

/** The receiver Alertmanager's routing in `file` picks for an alert with `labels` (`amtool config routes test`). */
async function routedTo(file: string, labels: Record<string, string>): Promise<string> {
  const result = await runCommand(AMTOOL, ["config", "routes", "test", `--config.file=${file}`, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  return result.stdout.trim();
}

/** Writes `config` into a scratch file for amtool. */
async function configFile(name: string, config: unknown): Promise<string> {
  const file = path.join(dir.path, `${name}.yml`);
  await writeFile(file, stringify(config));
  return file;
}

/** Checks one copy: amtool accepts it; each generated alert goes to appmonitor, the others to `otherwise`. */
async function checkCopy(file: string, otherwise: Record<string, string>): Promise<void> {
  const { code, output } = await checkConfig(file);
  assert.equal(code, 0, output);
  assert.match(output, /SUCCESS/);
  for (const alertname of GENERATED_ALERT_NAMES) assert.equal(await routedTo(file, { alertname, namespace: "shop", severity: "warning" }), APPMONITOR_RECEIVER, alertname);
  for (const [alertname, receiver] of Object.entries(otherwise)) assert.equal(await routedTo(file, { alertname, namespace: "shop", severity: "warning" }), receiver, alertname);
}

describe("knative/alertmanager/alertmanager.yml", () => {
  test("amtool accepts it; every generated alert goes to appmonitor, any other to the default receiver", async () => {
    await checkCopy(alertmanagerYamlPath, { SomethingElse: "default", [`${GENERATED_ALERT_NAMES[0]}2`]: "default" });
  });
});

describe("docs/install.md's kube-prometheus-stack values", () => {
  test("amtool accepts their alertmanager.config; every generated alert goes to appmonitor, Watchdog and the rest to the chart's null receiver", async () => {
    const { values } = await documentedKubePrometheusStackValues();
    await checkCopy(await configFile("documented", values.alertmanager.config), { Watchdog: "null", KubePodCrashLooping: "null" });
  });

  test("run by a real Alertmanager: our alert as warning is routed to appmonitor alone and not inhibited; as info, the chart's InfoInhibitor inhibits it", async (t) => {
    const { values } = await documentedKubePrometheusStackValues();
    const config = structuredClone(values.alertmanager.config) as { receivers: { webhook_configs?: { url: string; http_config: { authorization: { credentials_file: string } } }[] }[] };
    // Only the address and the token file made local: nothing is delivered, the API shows the routing.
    const token = path.join(dir.path, "token");
    await writeFile(token, "t\n");
    for (const r of config.receivers) for (const w of r.webhook_configs ?? []) [w.url, w.http_config.authorization.credentials_file] = ["http://127.0.0.1:9/", token];
    const am = await startAlertmanager(config);
    t.after(() => am.stop());
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    const ours = (namespace: string, severity: string) => ({ labels: { alertname: GENERATED_ALERT_NAMES[0] ?? "", namespace, pod: "memhog-1", container: "memhog", appmonitor: "mymonitor", severity }, startsAt });
    await am.postAlerts([
      ours("shop", "warning"),
      ours("lab", "info"),
      // As the chart's rule raises it: a namespace with info alerts and no warning or critical one.
      { labels: { alertname: "InfoInhibitor", namespace: "lab", severity: "none" }, startsAt },
    ]);
    type Gettable = { labels: Record<string, string>; status: { inhibitedBy: string[] }; receivers: { name: string }[] };
    const alerts = await waitUntil("the info alert inhibited", async () => {
      const all = (await (await fetch(`${am.url}/api/v2/alerts`)).json()) as Gettable[];
      return all.some((a) => a.labels.namespace === "lab" && a.labels.severity === "info" && a.status.inhibitedBy.length > 0) ? all : undefined;
    }, { timeoutMs: 30_000, intervalMs: 200 });
    const warning = alerts.find((a) => a.labels.namespace === "shop");
    assert.deepEqual([warning?.status.inhibitedBy, warning?.receivers.map((r) => r.name)], [[], [APPMONITOR_RECEIVER]]);
  });

  test("the chart's defaults with only our route and receiver over them, as Helm merges values, are refused: the null receiver is gone", async () => {
    const partial = { route: { routes: [appmonitorRoute()] }, receivers: [appmonitorReceiver("appmonitor")] } as unknown as Value;
    const merged = coalesceValues(KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG as unknown as Value, partial);
    const { code, output } = await checkConfig(await configFile("partial", merged));
    assert.notEqual(code, 0);
    assert.match(output, /undefined receiver "null"/);
  });
});

describe("what `helm install` of the chart prints (NOTES.txt)", () => {
  const namespace = "team-x";
  let notes = "";
  before(async () => {
    const bin = await buildBinaries(process.env, undefined, ["kube", "helm"]);
    const chart = await buildChart(path.join(dir.path, "chart"), {}, path.join(bin, "kubectl"));
    // `helm install --dry-run` needs a cluster; `helm template` prints no notes: render NOTES.txt
    // into an object of a scratch template, with the same engine, values and release.
    await writeFile(path.join(chart, "templates", "rendered-notes.yaml"),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rendered-notes\ndata:\n  notes: {{ include (print $.Template.BasePath "/NOTES.txt") . | quote }}\n');
    const { stdout } = await promisify(execFile)(path.join(bin, "helm"), ["template", "appmonitor", chart, "--namespace", namespace, "--show-only", "templates/rendered-notes.yaml"], { maxBuffer: 32 << 20 });
    notes = (parse(stdout) as { data: { notes: string } }).data.notes;
  });

  /** The values block of the notes: from `alertmanager:` on, as long as lines keep its indentation. */
  function printedValues(): string {
    const lines = notes.split("\n");
    const start = lines.findIndex((line) => /^\s+alertmanager:$/.test(line));
    assert.ok(start >= 0, notes);
    const indent = (lines[start] ?? "").indexOf("a");
    const block: string[] = [];
    for (const line of lines.slice(start)) {
      if (!line.startsWith(" ".repeat(indent))) break;
      block.push(line.slice(indent));
    }
    return `${block.join("\n")}\n`;
  }

  test("prints the values docs/install.md gives, alert-receiver's address in the release's namespace", () => {
    assert.equal(printedValues(), kubePrometheusStackValuesYaml(namespace));
  });

  test("amtool accepts the printed alertmanager.config; every generated alert goes to appmonitor, Watchdog to null", async () => {
    const printed = parse(printedValues()) as { alertmanager: { config: unknown } };
    await checkCopy(await configFile("printed", printed.alertmanager.config), { Watchdog: "null" });
  });
});
