/**
 * Benchmark of alert-receiver (a script, not a test): the function runs as
 * `node functions/run.ts alert-receiver` in a child process, exactly as Knative would run
 * it; this process posts Alertmanager webhooks and runs the sink, which decodes every
 * event with the CloudEvents SDK.
 *
 * 1. Latency: one webhook with 100 alerts → time until the sink holds the 100 events,
 *    p50/p99 over `--runs` runs (after `--warmup` runs).
 * 2. Throughput: `--concurrency` clients post 100-alert webhooks back to back for
 *    `--seconds`; alerts per second delivered to the sink.
 *
 * Usage: node test/bench/alert-receiver.ts [--runs 200] [--warmup 20] [--seconds 10]
 *        [--concurrency 8] [--mode binary|structured]
 */
import { cpus } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { HTTP } from "cloudevents";
import { startProcess, tailOf } from "../support/child-process.ts";
import { freePort } from "../harness/lib/free-port.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";

const ALERTS_PER_WEBHOOK = 100;
const TOKEN = "bench-token";

const { values: options } = parseArgs({
  options: {
    runs: { type: "string", default: "200" },
    warmup: { type: "string", default: "20" },
    seconds: { type: "string", default: "10" },
    concurrency: { type: "string", default: "8" },
    mode: { type: "string", default: "binary" },
  },
});
const runs = Number(options.runs);
const warmup = Number(options.warmup);
const seconds = Number(options.seconds);
const concurrency = Number(options.concurrency);

/** A sink that decodes each event with the SDK and counts it; waiters resolve at a count. */
function startCountingSink(): Promise<{ port: number; count: () => number; reached: (n: number) => Promise<void>; close: () => Promise<void> }> {
  let count = 0;
  let decodeErrors = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        HTTP.toEvent({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        count += 1;
      } catch {
        decodeErrors += 1;
      }
      res.writeHead(202).end();
      for (let i = waiters.length - 1; i >= 0; i -= 1) {
        const waiter = waiters[i];
        if (waiter !== undefined && count >= waiter.n) {
          waiters.splice(i, 1);
          waiter.resolve();
        }
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve({
        port: typeof address === "object" && address !== null ? address.port : 0,
        count: () => {
          if (decodeErrors > 0) throw new Error(`${decodeErrors} requests did not decode as CloudEvents`);
          return count;
        },
        reached: (n) => (count >= n ? Promise.resolve() : new Promise<void>((done) => waiters.push({ n, resolve: done }))),
        close: () => new Promise<void>((done) => {
          server.close(() => done());
          server.closeAllConnections();
        }),
      });
    });
  });
}

let sequence = 0;
/** A webhook payload of 100 firing alerts, each a new alert occurrence (new fingerprint). */
function webhook(): string {
  const startsAt = new Date().toISOString();
  const alerts = Array.from({ length: ALERTS_PER_WEBHOOK }, (_, i) => {
    sequence += 1;
    return {
      status: "firing",
      labels: { alertname: "AppMonitorMemoryHigh", namespace: "bench", pod: `memhog-${i}`, container: "memhog", appmonitor: "mymonitor" },
      annotations: { value: "81.5", summary: "memory above threshold" },
      startsAt,
      endsAt: "0001-01-01T00:00:00Z",
      generatorURL: "http://prometheus:9090/graph",
      fingerprint: sequence.toString(16).padStart(16, "0"),
    };
  });
  return JSON.stringify({ version: "4", status: "firing", receiver: "bench", groupKey: "{}", externalURL: "http://alertmanager:9093", truncatedAlerts: 0, alerts });
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

const sink = await startCountingSink();
const port = await freePort();
const receiverUrl = `http://127.0.0.1:${port}`;
const child = startProcess({
  name: "alert-receiver",
  command: process.execPath,
  args: [path.join(repoRoot, "functions", "run.ts"), "alert-receiver"],
  env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", K_SINK: `http://127.0.0.1:${sink.port}/`, WEBHOOK_TOKEN: TOKEN, CE_MODE: options.mode, LOG_LEVEL: "warn" },
});

async function post(body: string): Promise<number> {
  const response = await fetch(receiverUrl, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` }, body });
  await response.arrayBuffer();
  return response.status;
}

try {
  await waitUntil("alert-receiver readiness", async () => (await fetch(`${receiverUrl}/health/readiness`)).status === 200, { timeoutMs: 20_000 });

  // 1. Latency of one 100-alert webhook, until the sink holds all 100 events.
  const latencies: number[] = [];
  for (let run = 0; run < warmup + runs; run += 1) {
    const body = webhook();
    const target = sink.count() + ALERTS_PER_WEBHOOK;
    const started = performance.now();
    const status = post(body);
    await sink.reached(target);
    const elapsed = performance.now() - started;
    if ((await status) !== 200) throw new Error(`webhook answered ${await status}`);
    if (run >= warmup) latencies.push(elapsed);
  }
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((sum, value) => sum + value, 0) / latencies.length;

  // 2. Sustained throughput.
  const countBefore = sink.count();
  const bodies = Array.from({ length: 64 }, webhook);
  let webhooks = 0;
  let failures = 0;
  const deadline = performance.now() + seconds * 1000;
  const throughputStarted = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      for (let i = client; performance.now() < deadline; i += concurrency) {
        const status = await post(bodies[i % bodies.length] ?? "");
        webhooks += 1;
        if (status !== 200) failures += 1;
      }
    }),
  );
  const elapsedSeconds = (performance.now() - throughputStarted) / 1000;
  const delivered = sink.count() - countBefore;

  const fmt = (ms: number): string => `${ms.toFixed(1)} ms`;
  console.log(`alert-receiver benchmark — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, CE mode ${options.mode}`);
  console.log(`latency, one webhook of ${ALERTS_PER_WEBHOOK} alerts → ${ALERTS_PER_WEBHOOK} events in the sink (${runs} runs after ${warmup} warm-up):`);
  console.log(`  p50 ${fmt(percentile(latencies, 50))}  p99 ${fmt(percentile(latencies, 99))}  mean ${fmt(mean)}  min ${fmt(latencies[0] ?? Number.NaN)}  max ${fmt(latencies.at(-1) ?? Number.NaN)}`);
  console.log(`sustained, ${concurrency} clients for ${elapsedSeconds.toFixed(1)} s:`);
  console.log(`  ${(delivered / elapsedSeconds).toFixed(0)} alerts/s delivered (${delivered} events, ${webhooks} webhooks, ${failures} non-200)`);
} catch (error) {
  console.error(`benchmark failed: ${(error as Error).message}\n${tailOf(child)}`);
  process.exitCode = 1;
} finally {
  await child.stop();
  await sink.close();
}
