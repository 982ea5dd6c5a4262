/**
 * Benchmark of the function images (not a test): for each function, container start → ready
 * (`podman run` until `GET /health/readiness` answers 200, polled every 10 ms) and resident
 * memory when ready (VmRSS of the container's PID 1), each the median of several runs, beside
 * a bare Node HTTP server started in the same image with the same flags, in the same run; and
 * each image's size, uncompressed (as `podman images` shows it) and gzip-compressed (its OCI
 * archive, about what a registry stores and a node pulls).
 *
 * Goals: start → ready ≤ 2 × the bare server's; memory when ready ≤ 1.3 × the bare server's;
 * image ≤ 120 MB.
 *
 * Uses the stack named by APPMONITOR_STACK_DIR, else starts one. Needs root and podman, as
 * `npm run image` does (it builds the images first when they are not cached).
 *
 * Usage: node test/bench/images.ts [runs=6]
 */
import { createReadStream, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Writable } from "node:stream";
import { createGzip } from "node:zlib";
import { buildImages, FUNCTION_IMAGES, type BuiltImage } from "../../scripts/images/build.ts";
import { down, up } from "../harness/stack/stack.ts";
import { readState } from "../harness/stack/state.ts";
import { runContainer, serviceAccountCredentials, type InClusterCredentials } from "../harness/lib/container.ts";
import { installMemoryScaler } from "../support/install.ts";
import { installRuleSync } from "../support/rule-sync.ts";
import { adminKubeConfig } from "../support/stack.ts";

const runs = Number(process.argv[2] ?? 6);
/** The bare server: any path answers 200, so the readiness poll sees it as soon as it listens. */
const BARE = ["node", "-e", "require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), process.env.HOST)"];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function gzipBytes(file: string): Promise<number> {
  let bytes = 0;
  await pipeline(createReadStream(file), createGzip({ level: 6 }), new Writable({ write: (chunk: Buffer, _e, done) => ((bytes += chunk.length), done()) }));
  return bytes;
}

/** One cold start: milliseconds to ready and MiB resident when ready. */
async function coldStart(image: string, env: Record<string, string>, credentials: InClusterCredentials | undefined, command?: readonly string[]): Promise<{ ms: number; mib: number }> {
  const t0 = performance.now();
  const container = await runContainer({ image, env, credentials, command, pollMs: 10 });
  try {
    return { ms: performance.now() - t0, mib: rssMiB(container.pid) };
  } finally {
    await container.remove();
  }
}

async function main(): Promise<void> {
  let ownStack: string | undefined;
  const existing = process.env.APPMONITOR_STACK_DIR === undefined ? undefined : await readState(process.env.APPMONITOR_STACK_DIR);
  const work = await mkdtemp(path.join(tmpdir(), "appmonitor-bench-images-sa-"));
  try {
    if (existing === undefined) {
      ownStack = await mkdtemp(path.join(tmpdir(), "appmonitor-bench-images-"));
      process.stderr.write("starting a local stack…\n");
      await up({ stateDir: ownStack });
      process.env.APPMONITOR_STACK_DIR = ownStack;
    }
    const state = await readState(process.env.APPMONITOR_STACK_DIR ?? "");
    if (state === undefined) throw new Error("no stack state");
    process.env.KUBECONFIG = state.kubeconfig;
    await Promise.all([installMemoryScaler(), installRuleSync()]);
    const built = new Map<string, BuiltImage>((await buildImages(Object.keys(FUNCTION_IMAGES) as (keyof typeof FUNCTION_IMAGES)[])).map((b) => [b.name, b]));
    const api = new URL(state.apiserverUrl);
    const address = { host: api.hostname, port: Number(api.port) };
    const admin = await adminKubeConfig();
    const setups: Record<keyof typeof FUNCTION_IMAGES, { env: Record<string, string>; credentials?: InClusterCredentials }> = {
      "alert-receiver": { env: { WEBHOOK_AUTH: "none", K_SINK: "http://127.0.0.1:9/" } },
      // No Prometheus here: memory-scaler starts only when told to take alerts unverified.
      "memory-scaler": { env: { ALLOW_UNVERIFIED_ALERTS: "true" }, credentials: await serviceAccountCredentials(admin, "appmonitor", "memory-scaler", work, address) },
      "rule-sync": { env: { RESYNC_ON_START: "false" }, credentials: await serviceAccountCredentials(admin, "appmonitor", "rule-sync", work, address) },
      // No API call before its first dead letter: the namespace is all it reads at start-up.
      "dead-letter": { env: { INSTALL_NAMESPACE: "appmonitor" } },
    };
    console.log(`cold start in the image, median of ${runs} (start → ready, resident memory when ready), beside a bare Node HTTP server in the same image`);
    for (const [name, tag] of Object.entries(FUNCTION_IMAGES) as [keyof typeof FUNCTION_IMAGES, string][]) {
      const fnRuns: { ms: number; mib: number }[] = [];
      const bareRuns: { ms: number; mib: number }[] = [];
      const { env, credentials } = setups[name];
      for (let i = 0; i < runs; i++) {
        // Alternated, so a slower stretch of the shared machine hits both alike.
        bareRuns.push(await coldStart(tag, { LOG_LEVEL: "warn" }, undefined, BARE));
        fnRuns.push(await coldStart(tag, { LOG_LEVEL: "warn", ...env }, credentials));
      }
      const [fMs, bMs, fMib, bMib] = [median(fnRuns.map((r) => r.ms)), median(bareRuns.map((r) => r.ms)), median(fnRuns.map((r) => r.mib)), median(bareRuns.map((r) => r.mib))];
      const image = built.get(name) as BuiltImage;
      const gz = await gzipBytes(image.archive);
      console.log(`${name}`);
      console.log(`  start → ready   ${fMs.toFixed(0)} ms   bare ${bMs.toFixed(0)} ms   ${(fMs / bMs).toFixed(2)}×   goal ≤ 2×`);
      console.log(`  memory (RSS)    ${fMib.toFixed(1)} MiB   bare ${bMib.toFixed(1)} MiB   ${(fMib / bMib).toFixed(2)}×   goal ≤ 1.3×`);
      console.log(`  image           ${(image.sizeBytes / 1e6).toFixed(1)} MB uncompressed, ${(gz / 1e6).toFixed(1)} MB gzip-compressed   goal ≤ 120 MB`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
    if (ownStack !== undefined) {
      await down(ownStack);
      await rm(ownStack, { recursive: true, force: true });
    }
  }
}

await main();
