/**
 * rule-sync's Prometheus client (functions/rule-sync/prometheus.ts): the answers' parsing, and
 * how each wrong or unreachable PROMETHEUS_URL fails (real sockets: a closed port, a server that
 * is not Prometheus, one that never answers).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, describe, it } from "node:test";
import { createPrometheusApi, parseRuleGroups, parseVector, PrometheusError } from "../../../functions/rule-sync/prometheus.ts";
import { freePort } from "../../harness/lib/free-port.ts";

describe("parseRuleGroups", () => {
  it("reads each group's rules: name, health, last error, generation annotation", () => {
    const groups = parseRuleGroups({
      groups: [
        {
          name: "appmonitor/shop/m",
          file: "/etc/prometheus/rules/prometheus-x-rulefiles-0/shop-m-uid.yaml",
          rules: [
            { name: "AppMonitorMemoryHigh", health: "ok", lastError: "", annotations: { appmonitor_generation: "4", summary: "…" }, type: "alerting" },
            { name: "AppMonitorOOMKilled", health: "err", lastError: "many-to-many matching not allowed", annotations: {} },
          ],
        },
        { name: 7 },
        "junk",
      ],
    });
    assert.deepEqual([...groups.keys()], ["appmonitor/shop/m"]);
    assert.deepEqual(groups.get("appmonitor/shop/m"), {
      name: "appmonitor/shop/m",
      file: "/etc/prometheus/rules/prometheus-x-rulefiles-0/shop-m-uid.yaml",
      rules: [
        { name: "AppMonitorMemoryHigh", generation: "4", health: "ok", lastError: undefined },
        { name: "AppMonitorOOMKilled", generation: undefined, health: "err", lastError: "many-to-many matching not allowed" },
      ],
    });
  });

  it("refuses an answer without a groups list", () => {
    assert.throws(() => parseRuleGroups({ alerts: [] }), (e: unknown) => e instanceof PrometheusError && e.kind === "apiError");
  });
});

describe("parseVector", () => {
  it("reads samples, their labels and values", () => {
    assert.deepEqual(parseVector({ resultType: "vector", result: [{ metric: { side: "workingSet" }, value: [1700000000, "3"] }] }, "q"), [{ metric: { side: "workingSet" }, value: 3 }]);
  });

  it("refuses anything but a vector", () => {
    assert.throws(() => parseVector({ resultType: "matrix", result: [] }, "q"), (e: unknown) => e instanceof PrometheusError && e.kind === "apiError");
  });
});

describe("createPrometheusApi against real sockets", () => {
  const servers: Server[] = [];
  after(() => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve)))));

  async function serve(handler: Parameters<typeof createServer>[1]): Promise<URL> {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
  }

  it("a closed port: unreachable, naming the refused address", async () => {
    const port = await freePort();
    const api = createPrometheusApi(new URL(`http://127.0.0.1:${port}`), 2_000);
    await assert.rejects(api.ruleGroups(), (e: unknown) => e instanceof PrometheusError && e.kind === "unreachable" && e.message === `connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it("a name that does not resolve: unreachable, naming it", async () => {
    const api = createPrometheusApi(new URL("http://prometheus.invalid:9090"), 5_000);
    await assert.rejects(api.ruleGroups(), (e: unknown) => e instanceof PrometheusError && e.kind === "unreachable" && /ENOTFOUND prometheus\.invalid|EAI_AGAIN prometheus\.invalid/.test(e.message));
  });

  it("a server that is not Prometheus: an API error with the status", async () => {
    const url = await serve((_req, res) => res.writeHead(404, { "content-type": "text/html" }).end("<h1>Not Found</h1>"));
    await assert.rejects(createPrometheusApi(url, 2_000).ruleGroups(), (e: unknown) => e instanceof PrometheusError && e.kind === "apiError" && e.message === "HTTP 404 to GET /api/v1/rules, not JSON");
  });

  it("Prometheus's own error answer: an API error with its message", async () => {
    const url = await serve((_req, res) => res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ status: "error", errorType: "bad_data", error: "parse error at char 3" })));
    await assert.rejects(createPrometheusApi(url, 2_000).query("x{"), (e: unknown) => e instanceof PrometheusError && e.kind === "apiError" && e.message === "HTTP 400 to POST /api/v1/query: parse error at char 3");
  });

  it("no answer within the timeout: unreachable", async () => {
    const url = await serve(() => {
      // Never answers.
    });
    await assert.rejects(createPrometheusApi(url, 100).ruleGroups(), (e: unknown) => e instanceof PrometheusError && e.kind === "unreachable" && e.message === "no answer within 100 ms");
  });

  it("asks for the groups by name, alerting rules only, and posts queries form-encoded; a path prefix is kept", async () => {
    const seen: { method: string; url: string; body: string }[] = [];
    const url = await serve((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", body });
        const data = req.url?.includes("/api/v1/rules") ? { groups: [] } : { resultType: "vector", result: [] };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "success", data }));
      });
    });
    const results: string[] = [];
    const api = createPrometheusApi(new URL("/prom", url), 2_000, (endpoint, result) => results.push(`${endpoint}:${result}`));
    await api.ruleGroups(["appmonitor/shop/m"]);
    await api.query('count(up{job="x"})');
    assert.equal(seen[0]?.method, "GET");
    const rules = new URL(seen[0]?.url ?? "", url);
    assert.equal(rules.pathname, "/prom/api/v1/rules");
    assert.deepEqual([rules.searchParams.get("type"), rules.searchParams.getAll("rule_group[]")], ["alert", ["appmonitor/shop/m"]]);
    assert.deepEqual([seen[1]?.method, seen[1]?.url, new URLSearchParams(seen[1]?.body).get("query")], ["POST", "/prom/api/v1/query", 'count(up{job="x"})']);
    assert.deepEqual(results, ["rules:ok", "query:ok"]);
    assert.equal(api.url, `${url.origin}/prom`);
  });
});
