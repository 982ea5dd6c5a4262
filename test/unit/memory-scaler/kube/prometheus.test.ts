/**
 * memory-scaler's Prometheus query (functions/memory-scaler/kube/prometheus.ts, `createPrometheusVerifier`)
 * against a small HTTP server of this test's own that stands in for Prometheus: an answer is read
 * as a vector; one that never comes, or whose body trickles in a byte at a time, is cut off at
 * the query's timeout and answered 503, which the Broker retries.
 */
import assert from "node:assert/strict";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { HttpError } from "../../../../functions/lib/runtime/errors.ts";
import { createPrometheusVerifier, peakQuery, predictionQuery, workingSetQuery } from "../../../../functions/memory-scaler/kube/prometheus.ts";
import { waitUntil } from "../../../harness/lib/wait-until.ts";

const VECTOR = JSON.stringify({ status: "success", data: { resultType: "vector", result: [{ metric: { container: "memhog" }, value: [1, "314572800"] }] } });

/** `answer` decides per request, by the pod named in the query. */
function behaviour(pod: string, res: ServerResponse): void {
  if (pod === "answers") {
    res.writeHead(200, { "content-type": "application/json" }).end(VECTOR);
  } else if (pod === "trickles") {
    // Headers and the first bytes at once, then a byte every 200 ms: never idle for long, never done.
    res.writeHead(200, { "content-type": "application/json" });
    let sent = 0;
    const timer = setInterval(() => res.write(VECTOR[sent++ % VECTOR.length] ?? " "), 200);
    res.on("close", () => clearInterval(timer));
  }
  // "stalls": no answer at all.
}

describe("the queries", () => {
  it("the working set: the largest series per container, the names regex-quoted", () => {
    assert.equal(workingSetQuery("ns", "p-1", ["memhog", "a.b"]), 'max by (container) (container_memory_working_set_bytes{namespace="ns",pod="p-1",container=~"memhog|a\\\\.b"})');
  });

  it("the prediction: predict_linear over the AppMonitor's window, its horizon ahead, the largest per container (the trend rule's first condition)", () => {
    assert.equal(
      predictionQuery("ns", "p-1", ["memhog"], { windowSeconds: 600, horizonSeconds: 1800 }),
      'max by (container) (predict_linear(container_memory_working_set_bytes{namespace="ns",pod="p-1",container=~"memhog"}[600s], 1800))',
    );
  });

  it("a down-step's peak: max_over_time of the rule's working-set series over the quiet period, the workload's Pods by name (rule-sync's targetRef scope)", () => {
    assert.equal(
      peakQuery("demo", "memhog", ["memhog", "a.b"], 86400),
      'max by (container) (max_over_time(container_memory_working_set_bytes{namespace="demo", pod=~"memhog-.+", container=~"memhog|a\\\\.b"}[86400s]))',
    );
  });
});

describe("createPrometheusVerifier", () => {
  const open = new Set<ServerResponse>();
  const queries: string[] = [];
  const server = createServer((req, res) => {
    open.add(res);
    res.on("close", () => open.delete(res));
    const query = new URL(req.url ?? "/", "http://prometheus").searchParams.get("query") ?? "";
    queries.push(query);
    behaviour(/pod="([^"]+)"/.exec(query)?.[1] ?? "", res);
  });
  let url: URL;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("reads the working set of each container from the vector", async () => {
    const sets = await createPrometheusVerifier(url, 1_000).workingSets("ns", "answers", ["memhog"]);
    assert.deepEqual([...sets], [["memhog", 314572800]]);
    assert.equal(queries.at(-1), workingSetQuery("ns", "answers", ["memhog"]));
  });

  it("reads the prediction of each container from the vector, asked with the prediction's query", async () => {
    const trend = { windowSeconds: 300, horizonSeconds: 900 };
    const predicted = await createPrometheusVerifier(url, 1_000).predictions("ns", "answers", ["memhog"], trend);
    assert.deepEqual([...predicted], [["memhog", 314572800]]);
    assert.equal(queries.at(-1), predictionQuery("ns", "answers", ["memhog"], trend));
  });

  for (const pod of ["stalls", "trickles"]) {
    it(`a Prometheus that ${pod === "stalls" ? "never answers" : "trickles its answer a byte at a time"}: 503 at the query's timeout, the request given up`, async () => {
      const timeoutMs = 500;
      const started = performance.now();
      await assert.rejects(createPrometheusVerifier(url, timeoutMs).workingSets("ns", pod, ["memhog"]), (error: unknown) => {
        assert.ok(error instanceof HttpError, String(error));
        assert.equal(error.status, 503);
        assert.equal(error.reason, "Prometheus unavailable: it did not answer the query within 500 ms");
        return true;
      });
      // The timeout is the contract; under it, the answer would not have been given up. Above, the slack of a loaded machine.
      const elapsedMs = performance.now() - started;
      assert.ok(elapsedMs >= timeoutMs - 5 && elapsedMs < timeoutMs + 1_500, `${Math.round(elapsedMs)} ms`);
      await waitUntil("the connection closed by the client, not left to the server", () => open.size === 0);
    });
  }
});
