/** rule-sync's Alertmanager client (functions/rule-sync/alertmanager.ts): the answer parsed, failures classified, against a local HTTP server. */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AlertmanagerError, createAlertmanagerApi, parseAlerts } from "../../../functions/rule-sync/alertmanager.ts";

describe("parseAlerts", () => {
  it("reads a gettableAlert; a missing mutedBy (before 0.27) is empty; entries without fingerprint or labels are left out", () => {
    const body = [
      {
        fingerprint: "abc", labels: { alertname: "AppMonitorMemoryHigh", namespace: "lab" }, startsAt: "2026-05-01T00:00:00Z",
        status: { state: "suppressed", inhibitedBy: ["def"], silencedBy: [] }, receivers: [{ name: "appmonitor" }], annotations: {},
      },
      { labels: { alertname: "NoFingerprint" } },
      { fingerprint: "x" },
    ];
    assert.deepEqual(parseAlerts(body), [{
      fingerprint: "abc", labels: { alertname: "AppMonitorMemoryHigh", namespace: "lab" }, startsAt: "2026-05-01T00:00:00Z",
      state: "suppressed", inhibitedBy: ["def"], silencedBy: [], mutedBy: [], receivers: ["appmonitor"],
    }]);
  });

  it("refuses what is not a list", () => {
    assert.throws(() => parseAlerts({ status: "success" }), (e: unknown) => e instanceof AlertmanagerError && e.kind === "apiError");
  });
});

describe("createAlertmanagerApi", () => {
  let server: Server;
  let base = "";
  const seen: string[] = [];
  let answer: { status: number; body: string } = { status: 200, body: "[]" };
  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? "");
      res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/am`;
  });
  after(() => server.close());

  it("asks for suppressed and unprocessed alerts too, with each filter; counts each request", async () => {
    const results: string[] = [];
    const api = createAlertmanagerApi(new URL(base), 1000, (r) => results.push(r));
    assert.deepEqual(await api.alerts(['namespace="lab"']), []);
    const url = new URL(seen.at(-1) ?? "", base);
    assert.equal(url.pathname, "/am/api/v2/alerts");
    assert.deepEqual(["active", "silenced", "inhibited", "unprocessed"].map((k) => url.searchParams.get(k)), ["true", "true", "true", "true"]);
    assert.deepEqual(url.searchParams.getAll("filter"), ['namespace="lab"']);
    assert.deepEqual(results, ["ok"]);
    assert.equal(api.url, base);
  });

  it("an HTTP error or a body that is not JSON is apiError; no answer is unreachable", async () => {
    const results: string[] = [];
    const api = createAlertmanagerApi(new URL(base), 1000, (r) => results.push(r));
    answer = { status: 500, body: "boom" };
    await assert.rejects(api.alerts([]), (e: unknown) => e instanceof AlertmanagerError && e.kind === "apiError" && /HTTP 500 to GET \/api\/v2\/alerts: boom/.test(e.message));
    answer = { status: 200, body: "<html>" };
    await assert.rejects(api.alerts([]), (e: unknown) => e instanceof AlertmanagerError && e.kind === "apiError" && /not JSON/.test(e.message));
    // A port just freed: nothing listens there.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const down = createAlertmanagerApi(new URL(`http://127.0.0.1:${port}/`), 1000, (r) => results.push(r));
    await assert.rejects(down.alerts([]), (e: unknown) => e instanceof AlertmanagerError && e.kind === "unreachable" && /ECONNREFUSED/.test(e.message));
    assert.deepEqual(results, ["apiError", "apiError", "unreachable"]);
    answer = { status: 200, body: "[]" };
  });
});
