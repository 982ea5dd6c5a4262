// The Alertmanager routes of concurrent chains (test/harness/lib/alertmanager-routes.ts) on a real
// Alertmanager of the test's own: each namespace's alerts reach its own alert-receiver with its
// token, a route taken off leaves the others, a reload for one namespace sends nothing again for
// another, and the last one off puts the configuration back as it was.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { addRoute } from "../../harness/lib/alertmanager-routes.ts";
import { receiverName } from "../../harness/lib/alertmanager-route.ts";
import { startAlertmanager, type TestAlertmanager } from "../../support/alertmanager.ts";
import { waitFor } from "../../support/stack.ts";

/** A webhook receiver that keeps what it was sent: each alert's alertname and the Authorization header. */
interface Receiver {
  readonly url: string;
  readonly received: { alertname: string; authorization: string | undefined; status: string }[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Receiver["received"] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const payload = JSON.parse(body) as { alerts: { status: string; labels: Record<string, string> }[] };
      for (const a of payload.alerts) received.push({ alertname: a.labels.alertname ?? "", authorization: req.headers.authorization, status: a.status });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const BASE = { route: { receiver: "null" }, receivers: [{ name: "null" }] };
let am: TestAlertmanager;
const receivers: Receiver[] = [];

before(async () => {
  am = await startAlertmanager(BASE);
  for (let i = 0; i < 3; i++) receivers.push(await startReceiver());
});
after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await am?.stop();
});

const firing = (namespace: string, alertname: string) => ({ labels: { alertname, namespace, pod: "p", container: "c" } });
const receiversOf = async () => (await (await fetch(`${am.url}/api/v2/status`)).json() as { config: { original: string } }).config.original;

test("chains in namespaces of their own route at once; taking one off leaves the others; the last off puts the configuration back", { timeout: 120_000 }, async () => {
  const target = { alertmanagerConfig: am.configFile, alertmanagerUrl: am.url };
  const before = await readFile(am.configFile, "utf8");
  const [a, b, c] = receivers as [Receiver, Receiver, Receiver];
  const [offA, offB] = await Promise.all([
    addRoute(target, { namespace: "ns-a", receiverUrl: a.url, webhookToken: "token-a" }),
    addRoute(target, { namespace: "ns-b", receiverUrl: b.url, webhookToken: "token-b" }),
  ]);
  const config = await receiversOf();
  assert.ok(config.includes(receiverName("ns-a")) && config.includes(receiverName("ns-b")), config);

  await am.postAlerts([firing("ns-a", "A1"), firing("ns-b", "B1"), firing("elsewhere", "X1")]);
  await waitFor("each namespace's alert at its own receiver", async () => a.received.length > 0 && b.received.length > 0, 20_000, 100);
  assert.deepEqual(a.received.map((r) => [r.alertname, r.authorization]), [["A1", "Bearer token-a"]]);
  assert.deepEqual(b.received.map((r) => [r.alertname, r.authorization]), [["B1", "Bearer token-b"]]);

  // A third chain's route reloads Alertmanager: B1, notified, is not sent again (its group_interval is 5 s).
  const offC = await addRoute(target, { namespace: "ns-c", receiverUrl: c.url, webhookToken: "token-c" });
  await offA();
  assert.ok(!(await receiversOf()).includes(receiverName("ns-a")), "ns-a's route is off");
  await am.postAlerts([firing("ns-c", "C1")]);
  await waitFor("ns-c's alert at its receiver", async () => c.received.length > 0, 20_000, 100);
  await new Promise((resolve) => setTimeout(resolve, 7_000));
  assert.deepEqual(b.received.map((r) => r.alertname), ["B1"], "nothing sent again to ns-b after the reloads");
  assert.deepEqual(a.received.map((r) => r.alertname), ["A1"]);

  await offB();
  await offC();
  assert.equal(await readFile(am.configFile, "utf8"), before, "the configuration from before the first route");
  assert.ok(!(await receiversOf()).includes(receiverName("ns-b")), "reloaded");
});
