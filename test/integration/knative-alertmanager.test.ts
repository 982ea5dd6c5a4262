// Alertmanager wiring (knative/alertmanager/): the plain alertmanager.yml passes the real
// `amtool check-config`, says the same as the AlertmanagerConfig, points at alert-receiver's
// cluster-local address with the token alert-receiver reads, and — run by a real Alertmanager
// with only the address and the token file's path made local — routes the generated rule's alert
// to alert-receiver, authenticated, and nothing else.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parse, stringify } from "yaml";
import { fn as alertReceiver } from "../../functions/alert-receiver/index.ts";
import { FIRING_TYPE } from "../../functions/lib/alert-event.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import { ALERT_NAME, GENERATED_ALERT_NAMES, OOM_ALERT_NAME, TREND_ALERT_NAME } from "../../functions/rule-sync/rule.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { startAlertmanager, type TestAlertmanager } from "../support/alertmanager.ts";
import { startSink, type TestSink } from "../support/cloudevent-sink.ts";
import { startFunction } from "../support/function-server.ts";
import { containerOf, kustomize, servicesByFunction, validateAgainstPublishedSchema, type Manifest } from "../support/knative.ts";
import { scrape } from "../support/prometheus-text.ts";
import { runCommand } from "../support/run-command.ts";
import { tailOf } from "../support/child-process.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";

const SNIPPET = "knative/alertmanager/alertmanager.yml";
const AMTOOL = process.env.AMTOOL_BIN ?? "/usr/bin/amtool";

/** The parts of alertmanager.yml the tests read. */
interface AlertmanagerYaml {
  route: { receiver: string; routes: ChildRoute[] };
  receivers: { name: string; webhook_configs?: WebhookConfig[] }[];
}
interface ChildRoute {
  receiver: string;
  matchers: string[];
  group_by: string[];
  group_wait: string;
  group_interval: string;
  repeat_interval: string;
  continue?: boolean;
}
interface WebhookConfig {
  url: string;
  send_resolved: boolean;
  max_alerts: number;
  http_config: { authorization: { type: string; credentials_file: string } };
}

/** The AlertmanagerConfig's spec, as far as the tests read it. */
interface AlertmanagerConfigSpec {
  route: { receiver: string; matchers: { name: string; matchType: string; value: string }[]; groupBy: string[]; groupWait: string; groupInterval: string; repeatInterval: string };
  receivers: { name: string; webhookConfigs: { url: string; sendResolved: boolean; maxAlerts: number; httpConfig: { authorization: { type: string; credentials: { name: string; key: string } } } }[] }[];
}

let snippet: AlertmanagerYaml;
let route: ChildRoute;
let webhook: WebhookConfig;

before(async () => {
  snippet = parse(await readFile(path.join(repoRoot, SNIPPET), "utf8")) as AlertmanagerYaml;
  const [first, ...others] = snippet.route.routes;
  assert.ok(first && others.length === 0, "one child route");
  route = first;
  const receiver = snippet.receivers.find((r) => r.name === route.receiver);
  const [config, ...more] = receiver?.webhook_configs ?? [];
  assert.ok(config && more.length === 0, "the route's receiver has one webhook");
  webhook = config;
});

async function amtoolCheck(file: string): Promise<{ code: number | null; output: string }> {
  const result = await runCommand(AMTOOL, ["check-config", file]);
  return { code: result.code, output: result.stdout + result.stderr };
}

describe("alertmanager.yml", () => {
  test("passes amtool check-config", async () => {
    const { code, output } = await amtoolCheck(path.join(repoRoot, SNIPPET));
    assert.equal(code, 0, output);
    assert.match(output, /SUCCESS/);
  });

  test("amtool does refuse a broken copy (a route to a receiver that does not exist)", async (t) => {
    const dir = await tempDir("amtool");
    t.after(dir.remove);
    const broken = structuredClone(snippet);
    (broken.route.routes[0] as ChildRoute).receiver = "nowhere";
    const file = path.join(dir.path, "alertmanager.yml");
    await writeFile(file, stringify(broken));
    const { code, output } = await amtoolCheck(file);
    assert.notEqual(code, 0);
    assert.match(output, /undefined receiver "nowhere"/);
  });

  test("routes every alert the rule generator can raise to appmonitor, and others to the default receiver (amtool config routes test)", async () => {
    for (const [alertname, receiver] of [...GENERATED_ALERT_NAMES.map((name) => [name, "appmonitor"]), ["SomethingElse", "default"], [`${OOM_ALERT_NAME}2`, "default"]]) {
      const result = await runCommand(AMTOOL, ["config", "routes", "test", `--config.file=${path.join(repoRoot, SNIPPET)}`, `alertname=${alertname}`, "namespace=shop", "severity=warning"]);
      assert.equal(result.stdout.trim(), receiver, `${alertname}: ${result.stdout}${result.stderr}`);
    }
  });

  test("one group per container, with a short group_wait", () => {
    assert.deepEqual(route.group_by, ["namespace", "pod", "container"]);
    const seconds = Number(/^(\d+)s$/.exec(route.group_wait)?.[1]);
    assert.ok(seconds > 0 && seconds <= 10, `group_wait ${route.group_wait}`);
  });

  test("sends resolved alerts to alert-receiver's cluster-local address, with the bearer token of the Secret alert-receiver reads", async () => {
    const objects = await kustomize("knative");
    const service = servicesByFunction(objects)["alert-receiver"];
    assert.equal(webhook.url, `http://${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local/`);
    assert.equal(service.metadata.labels?.["networking.knative.dev/visibility"], "cluster-local");
    assert.equal(webhook.send_resolved, true);
    assert.equal(webhook.http_config.authorization.type, "Bearer");
    // prometheus-operator mounts an Alertmanager's spec.secrets at /etc/alertmanager/secrets/<secret>/<key>.
    const secret = service.spec.template.spec.volumes?.find((v) => v.secret)?.secret;
    const key = secret?.items?.[0]?.key;
    assert.equal(webhook.http_config.authorization.credentials_file, `/etc/alertmanager/secrets/${secret?.secretName}/${key}`);
    assert.ok(containerOf(service).env?.some((e) => e.name === "WEBHOOK_TOKEN_FILE"), "alert-receiver checks the token");
  });
});

describe("the AlertmanagerConfig (kubectl kustomize knative/alertmanager/)", () => {
  let objects: Manifest[] = [];
  before(async () => {
    objects = await kustomize("knative/alertmanager");
  });

  test("is one valid monitoring.coreos.com/v1alpha1 AlertmanagerConfig in the appmonitor namespace", async () => {
    assert.deepEqual(objects.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace}`), ["monitoring.coreos.com/v1alpha1 AlertmanagerConfig appmonitor"]);
    for (const o of objects) await validateAgainstPublishedSchema(o);
  });

  test("routes and authenticates exactly as alertmanager.yml does, with the Secret alert-receiver mounts", () => {
    const spec = objects[0]?.spec as AlertmanagerConfigSpec;
    const matchers = spec.route.matchers.map((m) => `${m.name}${m.matchType}"${m.value}"`);
    assert.deepEqual(matchers, route.matchers);
    assert.deepEqual(spec.route.groupBy, route.group_by);
    assert.deepEqual([spec.route.groupWait, spec.route.groupInterval, spec.route.repeatInterval], [route.group_wait, route.group_interval, route.repeat_interval]);
    const receiver = spec.receivers.find((r) => r.name === spec.route.receiver);
    const [config] = receiver?.webhookConfigs ?? [];
    assert.ok(config);
    assert.equal(config.url, webhook.url);
    assert.equal(config.sendResolved, webhook.send_resolved);
    assert.equal(config.maxAlerts, webhook.max_alerts);
    assert.equal(config.httpConfig.authorization.type, webhook.http_config.authorization.type);
    const [, secret, key] = /\/([^/]+)\/([^/]+)$/.exec(webhook.http_config.authorization.credentials_file) ?? [];
    assert.deepEqual(config.httpConfig.authorization.credentials, { name: secret, key });
  });
});

describe("a real Alertmanager running alertmanager.yml", () => {
  const token = "s3cret-token-for-the-test";
  let dir: TempDir;
  let sink: TestSink;
  let receiver: RunningServer;
  let alertmanager: TestAlertmanager;

  before(async () => {
    dir = await tempDir("knative-alertmanager");
    await writeFile(path.join(dir.path, "token"), `${token}\n`);
    sink = await startSink();
    // As the Service runs it: the token from a file; K_SINK as the SinkBinding would set it.
    receiver = await startFunction(alertReceiver, { WEBHOOK_TOKEN_FILE: path.join(dir.path, "token"), K_SINK: sink.url });
    // The shipped file with only the address and the token file's path made local.
    const local = structuredClone(snippet);
    const localWebhook = local.receivers.find((r) => r.name === route.receiver)?.webhook_configs?.[0] as WebhookConfig;
    localWebhook.url = `${receiver.url}/`;
    localWebhook.http_config.authorization.credentials_file = path.join(dir.path, "token");
    alertmanager = await startAlertmanager(local);
  });

  after(async () => {
    await alertmanager?.stop();
    await receiver?.close();
    await sink?.stop();
    await dir?.remove();
  });

  test("delivers the memory alerts to alert-receiver, authenticated, as firing CloudEvents; other alerts go elsewhere", async () => {
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    await alertmanager.postAlerts([
      { labels: { alertname: ALERT_NAME, namespace: "team-a", pod: "memhog-1", container: "memhog", appmonitor: "mymonitor" }, startsAt },
      { labels: { alertname: OOM_ALERT_NAME, namespace: "team-a", pod: "memhog-1", container: "memhog", appmonitor: "mymonitor" }, startsAt },
      { labels: { alertname: TREND_ALERT_NAME, namespace: "team-a", pod: "memhog-1", container: "memhog", appmonitor: "mymonitor" }, startsAt },
      { labels: { alertname: "SomethingElse", namespace: "team-a", pod: "memhog-1", container: "memhog" }, startsAt },
      { labels: { alertname: `${OOM_ALERT_NAME}2`, namespace: "team-a", pod: "memhog-1", container: "memhog" }, startsAt },
    ]);
    // The bound is generous for a loaded machine (the flush is immediate: startsAt is older than
    // group_wait); a miss reports what Alertmanager and alert-receiver did.
    const received = await waitUntil("the firing CloudEvents", () => (sink.received.length >= 3 ? sink.received : undefined), { timeoutMs: 90_000, intervalMs: 100 }).catch(
      async (error: unknown) => {
        const metrics = await fetch(`${receiver.url}/metrics`).then((r) => r.text(), (e: unknown) => String(e));
        const webhooks = metrics.split("\n").filter((line) => line.startsWith("appmonitor_alert_receiver_"));
        throw new Error(`${(error as Error).message}; sink received ${sink.received.length}, rejected ${JSON.stringify(sink.rejected)}\n${webhooks.join("\n")}\n${tailOf(alertmanager.process, 60)}`, { cause: error });
      },
    );
    const [first] = received;
    assert.equal(first?.event.type, FIRING_TYPE);
    assert.equal(first?.event.subject, "namespaces/team-a/pods/memhog-1");
    // Past another group_wait: SomethingElse and a name that merely starts with ours never reach alert-receiver.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const alertnames = new Set(sink.received.map((r) => (r.event.data as { alertname: string }).alertname));
    assert.deepEqual([...alertnames].sort(), [ALERT_NAME, OOM_ALERT_NAME, TREND_ALERT_NAME].sort());
    assert.equal(await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_webhooks_total", { outcome: "unauthorized" }), 0);
    assert.ok((await scrape(`${receiver.url}/metrics`, "appmonitor_alert_receiver_webhooks_total", { outcome: "accepted" })) >= 1);
  });

  test("has send_resolved on in the configuration Alertmanager loaded", async () => {
    const status = (await (await fetch(`${alertmanager.url}/api/v2/status`)).json()) as { config: { original: string } };
    const loaded = parse(status.config.original) as AlertmanagerYaml;
    const loadedWebhook = loaded.receivers.find((r) => r.name === route.receiver)?.webhook_configs?.[0];
    assert.equal(loadedWebhook?.send_resolved, true);
    assert.deepEqual(loaded.route.routes[0]?.group_by, ["namespace", "pod", "container"]);
  });
});
