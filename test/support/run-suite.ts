/**
 * `npm test`'s runner, after the type check and lint: `node test/support/run-suite.ts [glob…]`
 * (default `test/**\/*.test.ts`). Starts the run's local stack (`global-setup.ts`), runs the files
 * in two lanes at once (`suite-lanes.ts`): those that take the real node's lock two at a time (one
 * holds the node while the next builds what it needs and waits for it), and those that hold the
 * shared stack together, all at once, as soon as a file lends them its stack
 * (`real-node-lock.ts`, `lendRunStack`) or else after the others; the others `APPMONITOR_TEST_CONCURRENCY` (default 2) at a time at a lower CPU priority
 * (`lower-priority.ts`), each file in a process of its own;
 * reports both through one spec reporter, with one summary of the run, then the ten slowest files
 * and each lane's wall time (`slowest-reporter.ts`); stops the stack. Exit code 0 when every test
 * passed, 1 otherwise (and 130 on SIGINT, 143 on SIGTERM, the stack stopped first).
 * https://nodejs.org/docs/latest-v24.x/api/test.html#runoptions
 */
import { existsSync, globSync } from "node:fs";
import path from "node:path";
import { run } from "node:test";
import { spec } from "node:test/reporters";
import { finished } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { cacheDir, repoRoot } from "../../scripts/lib/paths.ts";
import { lentMarker, runDir } from "../harness/stack/real-node-lock.ts";
import { globalSetup, globalTeardown } from "./global-setup.ts";
import { FileTimes, formatSlowest } from "./slowest-reporter.ts";
import { laneFiles } from "./suite-lanes.ts";

/** A node:test event as this runner reads it. */
interface TestEvent {
  readonly type: string;
  readonly data: {
    readonly file?: string;
    readonly nesting?: number;
    readonly message?: string;
    readonly success?: boolean;
    readonly duration_ms?: number;
    readonly counts?: Record<string, number>;
  };
}

/**
 * The real-node lane's files at a time: one holding the node, and the next doing what comes before
 * its lock (its images, a release) meanwhile, then waiting: the only waiter, so the lane's order holds.
 */
const REAL_NODE_LANE_CONCURRENCY = 2;

/** Preloaded into the other lane's files: their processes yield the CPU to the real-node lane's. */
const LOWER_PRIORITY = path.join(import.meta.dirname, "lower-priority.ts");

/**
 * V8's compile cache for every process of the run (the files', and the functions they start), in
 * `<cache>/node-compile-cache` unless `NODE_COMPILE_CACHE` names another: each module is compiled
 * once and read back after; it cut the CPU time of 30 unit-test files from 8.4 s to 4.8 s. Keyed
 * by the file's content and Node's version, so a changed file is compiled anew.
 * https://nodejs.org/docs/latest-v24.x/api/module.html#module-compile-cache
 */
process.env.NODE_COMPILE_CACHE ??= path.join(cacheDir(), "node-compile-cache");

/** The run-level diagnostics a lane's end prints ("tests 12", "pass 12", …): replaced by the run's one summary. */
const COUNT_LINE = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /;

const globs = process.argv.slice(2);
const files = [...new Set((globs.length > 0 ? globs : ["test/**/*.test.ts"]).flatMap((g) => globSync(g, { cwd: repoRoot })))]
  .sort()
  .map((f) => path.resolve(repoRoot, f));
const lanes = laneFiles(repoRoot, files);
const concurrency = Number(process.env.APPMONITOR_TEST_CONCURRENCY ?? 2);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`APPMONITOR_TEST_CONCURRENCY must be a whole number of at least 1, not ${process.env.APPMONITOR_TEST_CONCURRENCY}`);
  process.exit(2);
}

let stopping = false;
for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\n# ${signal}: stopping the stack\n`);
    void globalTeardown().finally(() => process.exit(code));
  });
}

const reporter = new spec();
reporter.pipe(process.stdout);
const times = new FileTimes(repoRoot);
const totals: Record<string, number> = {};
let success = true;
const t0 = Date.now();

/** One run of files within a lane: which, and how many at a time. */
interface Batch {
  readonly files: readonly string[];
  readonly concurrency: number;
}

/** Runs the other lane's files, passing their events to the reporter; resolves to its wall time in seconds. */
async function othersLane(): Promise<number> {
  if (lanes.others.length === 0) return 0;
  const started = Date.now();
  await runBatch({ files: lanes.others, concurrency }, ["--import", LOWER_PRIORITY]);
  return (Date.now() - started) / 1000;
}

/**
 * The real-node lane: its files that hold the node alone, and beside them those that hold it
 * together, started once a file lends its stack (they join it) or the others have ended; resolves
 * to its wall time in seconds.
 */
async function realNodeLane(): Promise<number> {
  const started = Date.now();
  const alone = lanes.realNode.length > 0 ? runBatch({ files: lanes.realNode, concurrency: REAL_NODE_LANE_CONCURRENCY }, []) : Promise.resolve();
  const together = (async () => {
    if (lanes.alongside.length === 0) return;
    let ended = false;
    void alone.then(() => (ended = true), () => (ended = true));
    const dir = runDir();
    while (!ended && !(dir !== undefined && existsSync(lentMarker(dir)))) await sleep(1000);
    await runBatch({ files: lanes.alongside, concurrency: lanes.alongside.length }, []);
  })();
  await Promise.all([alone, together]);
  return lanes.realNode.length + lanes.alongside.length > 0 ? (Date.now() - started) / 1000 : 0;
}

/** Runs one batch's files, passing their events to the reporter. */
async function runBatch({ files: batchFiles, concurrency: batchConcurrency }: Batch, execArgv: readonly string[]): Promise<void> {
  for await (const event of run({ files: [...batchFiles], concurrency: batchConcurrency, cwd: repoRoot, execArgv }) as AsyncIterable<TestEvent>) {
    times.add(event as Parameters<FileTimes["add"]>[0]);
    const { file, nesting, message } = event.data;
    if (file === undefined && event.type === "test:summary") {
      success &&= event.data.success !== false;
      for (const [key, value] of Object.entries(event.data.counts ?? {})) totals[key] = (totals[key] ?? 0) + value;
      continue;
    }
    if (file === undefined && event.type === "test:diagnostic" && nesting === 0 && COUNT_LINE.test(message ?? "")) continue;
    reporter.write(event);
  }
}

let code = 1;
try {
  await globalSetup();
  process.stderr.write(`# lanes: ${lanes.realNode.length} files that take the real node, one holding it while the next prepares, and ${lanes.alongside.length} that hold it together, on a lent stack or after them, beside ${lanes.others.length} others, ${concurrency} at a time\n`);
  const [realNodeSeconds, othersSeconds] = await Promise.all([realNodeLane(), othersLane()]);
  const duration = Date.now() - t0;
  // One summary for the run: the spec reporter prints it, with the failing tests again.
  reporter.write({ type: "test:summary", data: { success, counts: totals, duration_ms: duration, file: undefined } });
  for (const [label, key] of [["tests", "tests"], ["suites", "suites"], ["pass", "passed"], ["fail", "failed"], ["cancelled", "cancelled"], ["skipped", "skipped"], ["todo", "todo"]] as const) {
    reporter.write({ type: "test:diagnostic", data: { nesting: 0, message: `${label} ${totals[key] ?? 0}` } });
  }
  reporter.write({ type: "test:diagnostic", data: { nesting: 0, message: `duration_ms ${duration}` } });
  reporter.end();
  await finished(reporter);
  process.stdout.write(`\n${formatSlowest(times.all())}`);
  process.stdout.write(`lanes' wall time: the real node's ${realNodeSeconds.toFixed(1)} s, the others' ${othersSeconds.toFixed(1)} s\n`);
  code = success && (totals.failed ?? 0) === 0 && (totals.cancelled ?? 0) === 0 ? 0 : 1;
} catch (error) {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
} finally {
  if (!stopping) await globalTeardown();
}
process.exit(code);
