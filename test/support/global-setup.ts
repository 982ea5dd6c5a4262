/**
 * node:test global setup for `npm test`: one local stack for the whole run, in
 * `<repo>/.stack-test` (or `APPMONITOR_TEST_STACK_DIR`), stopped and removed at the end.
 * Test processes inherit `APPMONITOR_STACK_DIR`, `KUBECONFIG`, `PROMETHEUS_URL` and
 * `ALERTMANAGER_URL`, and read the rest through `test/support/stack.ts`; and the run's real-node
 * directory (`real-node-lock.ts`), whose shared real-node stack, if a file started it, and hold on
 * the machine's real-node lock end with the run.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { ensureDebianPackages } from "../harness/stack/debian-packages.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { down, envLines, up } from "../harness/stack/stack.ts";
import { stateFile } from "../harness/stack/state.ts";
import { acquireRealNodeLock, downSharedStack, endRun, RUN_DIR_ENV, runDirFor, runOfSharedStack, sharedStackDir } from "../harness/stack/real-node-lock.ts";
import { realNodeOwner } from "../harness/stack/real-node.ts";

const stateDir = path.resolve(process.env.APPMONITOR_TEST_STACK_DIR ?? path.join(repoRoot, ".stack-test"));
/** The run's real-node directory (a killed run's is found by the next). */
const realNodeRunDir = runDirFor(createHash("sha256").update(stateDir).digest("hex").slice(0, 8));

/**
 * Installs the missing Debian packages when root (or stops, naming the command), then starts the
 * stack (a stale one left by a killed run is stopped first, and killed runs' real nodes).
 */
export async function globalSetup(): Promise<void> {
  await ensureDebianPackages();
  await endStaleRuns();
  await down(stateDir);
  const state = await up({ stateDir, progress: (line) => process.stderr.write(`# stack: ${line}\n`) });
  for (const line of envLines(state)) {
    const m = /^export ([A-Z_]+)=(.*)$/.exec(line);
    if (m?.[1] && m[1] !== "PATH") process.env[m[1]] = (m[2] ?? "").replace(/^'|'$/g, "");
  }
  process.env.PATH = `${state.kubectlDir}${path.delimiter}${process.env.PATH ?? ""}`;
  process.env[RUN_DIR_ENV] = realNodeRunDir;
  process.env.APPMONITOR_REAL_NODE_RUN_PID = String(process.pid);
}

/**
 * Killed runs' shared real-node stacks taken down, under the machine's lock, and their directories
 * removed: this checkout's, and another checkout's whose real node is still up. A run holds the
 * machine's lock while it lives, so once this process holds it, a run's stack still up is a
 * killed run's (its global teardown never ran). A stack a person started is left alone.
 */
async function endStaleRuns(): Promise<void> {
  const owner = realNodeOwner();
  const other = owner === undefined ? undefined : runOfSharedStack(owner);
  const runs = [...new Set([realNodeRunDir, ...(other === undefined ? [] : [other])])];
  if (runs.some((dir) => existsSync(stateFile(sharedStackDir(dir))))) {
    const release = await acquireRealNodeLock();
    try {
      for (const dir of runs) {
        if (dir !== realNodeRunDir) process.stderr.write(`# a killed run's real node is up (${sharedStackDir(dir)}): taking it down\n`);
        await downSharedStack(dir);
      }
    } finally {
      await release();
    }
  }
  for (const dir of runs) await rm(dir, { recursive: true, force: true });
}

/** Stops every process of the stack and removes its state. */
export async function globalTeardown(): Promise<void> {
  await endRun(realNodeRunDir);
  await rm(realNodeRunDir, { recursive: true, force: true });
  await down(stateDir);
}
