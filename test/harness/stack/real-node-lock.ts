/**
 * The machine-wide lock on the stack's real node (one per machine: fixed interface, bridge,
 * iptables chain and cgroup names). Test files that bring up a real node take it first, so
 * concurrent files run them one after the other instead of one failing. The lock is util-linux
 * `flock` on {@link REAL_NODE_LOCK}, the file a person wraps a manual run of anything else that
 * starts a real node in (`flock /tmp/appmonitor-real-node.lock node test/bench/broker-hop.ts`);
 * not a test file that takes it itself, which would then wait for its own wrapper forever.
 *
 * Within `npm test` (its global setup sets {@link RUN_DIR_ENV}) the run holds the machine's lock
 * from its first real-node file to its end, and its files take a lock of the run's instead: so
 * the real node shared by the files that need no fresh one (`real-node-file.ts`) can stay up
 * between them, and no other run's real node comes up beside it. A file that brings up a node of
 * its own takes the shared one down first. Files on the shared stack that keep to namespaces of
 * their own (`real-node-alongside.ts`) take the run's lock shared and hold the node together.
 * A file that brought up a fresh node of its own at the shared stack's place may lend it to those
 * files while it still holds the run's lock ({@link lendRunStack}): they join it instead of waiting.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, unlinkSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { down } from "./stack.ts";
import { stateFile } from "./state.ts";

/** The lock file. */
export const REAL_NODE_LOCK = "/tmp/appmonitor-real-node.lock";

/** The environment variable naming the run's directory: its lock, its hold on the machine's, its shared stack. */
export const RUN_DIR_ENV = "APPMONITOR_REAL_NODE_RUN_DIR";

/** The shared real-node stack's state directory within the run's directory. */
export const sharedStackDir = (runDir: string): string => path.join(runDir, "shared");

/**
 * A run's directory: `<tmp>/appmonitor-real-node-run-<8 hex>`, one per checkout (its hash names
 * the checkout's stack directory), short because the node's sockets live under it.
 */
export const runDirFor = (checkoutKey: string, tmp = os.tmpdir()): string =>
  path.join(tmp, `appmonitor-real-node-run-${checkoutKey}`);

/**
 * The run whose shared stack `stackDir` is (`<tmp>/appmonitor-real-node-run-<8 hex>/shared`, as a
 * real node's interface alias names its owner), or undefined for any other stack: one a person
 * started, which no run may take down.
 */
export function runOfSharedStack(stackDir: string, tmp = os.tmpdir()): string | undefined {
  const dir = path.dirname(stackDir);
  return path.basename(stackDir) === "shared" && path.dirname(dir) === tmp
    && /^appmonitor-real-node-run-[0-9a-f]{8}$/.test(path.basename(dir)) ? dir : undefined;
}

/** The run's directory, when the process runs under `npm test`'s global setup. */
export const runDir = (): string | undefined => process.env[RUN_DIR_ENV];

/**
 * Starts `flock [-s] file sh -c script` as a process group of its own and waits until it holds the
 * lock (the script's first line); `outlives`: it is to outlive this process; `shared`: `flock -s`.
 * @throws Error when `flock` cannot be started or exits before locking.
 */
async function holder(file: string, script: string, outlives: boolean, shared = false): Promise<ChildProcess> {
  // One that outlives this process holds none of its pipes but its own stdout: the test runner
  // waits for a file's output to end.
  const child = spawn("flock", [...(shared ? ["-s"] : []), file, "sh", "-c", script], { detached: true, stdio: outlives ? ["ignore", "pipe", "ignore"] : ["pipe", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once("data", () => resolve());
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`flock ${file} exited with ${code} before locking`)));
  });
  return child;
}

/** Kills process group `pid`, if it still runs. */
function killGroup(pid: number | undefined): void {
  try {
    if (pid !== undefined) process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * Waits for `file`'s lock, held for this process: by a `flock … cat` process group that reads a
 * pipe from this process, so the lock ends on release, when this process exits, or when it is
 * killed (SIGKILL runs no exit handler, but the kernel closes the pipe and `cat` sees end of file).
 * `shared`: a shared lock (`flock -s`), held beside other shared holders and excluding exclusive ones.
 */
async function lockForThisProcess(file: string, shared = false): Promise<() => Promise<void>> {
  const child = await holder(file, "echo locked; exec cat >/dev/null", false, shared);
  const kill = () => killGroup(child.pid);
  process.once("exit", kill);
  return async () => {
    process.off("exit", kill);
    const exited = child.exitCode === null && child.signalCode === null ? once(child, "exit") : Promise.resolve();
    kill();
    await exited;
  };
}

/** `<run>/machine-lock.pid`: the process group that holds the machine's lock for the run. */
const machineHolderFile = (dir: string): string => path.join(dir, "machine-lock.pid");

/** Whether process `pid` runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes sure the run holds the machine's lock, waiting for it the first time: a detached holder
 * that keeps it while the run's process (`APPMONITOR_REAL_NODE_RUN_PID`, the global setup's) lives,
 * so a killed run does not keep it. Called under the run's set-up lock.
 */
async function holdMachineLockForRun(dir: string): Promise<void> {
  const file = machineHolderFile(dir);
  const held = existsSync(file) ? Number(await readFile(file, "utf8")) : 0;
  if (held > 0 && alive(held)) return;
  const runPid = Number(process.env.APPMONITOR_REAL_NODE_RUN_PID ?? process.ppid);
  const child = await holder(REAL_NODE_LOCK, `echo locked; exec >/dev/null; while kill -0 ${runPid} 2>/dev/null; do sleep 1; done`, true);
  child.unref();
  (child.stdout as NodeJS.ReadableStream & { destroy(): void }).destroy();
  await writeFile(file, String(child.pid));
}

/** `<run>/lent`: the process id of the file lending its stack ({@link lendRunStack}), while it does. */
export const lentMarker = (dir: string): string => path.join(dir, "lent");

/** `<run>/lent.lock`: held shared by each file on a lent stack, exclusive by the lender taking it back. */
const lentLock = (dir: string): string => path.join(dir, "lent.lock");

/** Whether a process that still runs lends the run's stack. */
async function lending(dir: string): Promise<boolean> {
  const pid = Number(await readFile(lentMarker(dir), "utf8").catch(() => ""));
  return pid > 0 && alive(pid);
}

/** This file's path, for the lock's lines in the run's log. */
const thisFile = (): string => path.relative(process.cwd(), process.argv[1] ?? "?");

/**
 * Lends the stack this process brought up at the run's shared stack's place
 * ({@link sharedStackDir}) to the run's files that hold the node together, while this process keeps
 * the run's lock: they join it ({@link acquireRealNodeLock} with `alongside`) instead of waiting
 * for the lock, which no file that needs the node alone gets meanwhile. For a file whose last
 * tests only wait (real periods), so that others' tests use the node then. `run-suite.ts` starts
 * those files once {@link lentMarker} appears. Outside a run: nothing is lent.
 * @returns the taking back: waits until every file that joined has left (its namespaces deleted),
 *   after which none joins; the stack is again this process's alone.
 */
export async function lendRunStack(): Promise<() => Promise<void>> {
  const dir = runDir();
  if (dir === undefined) return async () => {};
  await writeFile(lentMarker(dir), String(process.pid));
  const lent = Date.now();
  process.stderr.write(`# real-node lock: ${thisFile()} lends its stack to the files that hold the node together\n`);
  // Synchronous: an exit listener's promises never settle.
  const unmark = () => {
    try {
      unlinkSync(lentMarker(dir));
    } catch {
      // gone already
    }
  };
  process.once("exit", unmark);
  return async () => {
    // The marker first, so that no file joins while those that did are waited for (one that read
    // it just before finds it gone under the lock, and waits for the run's lock instead).
    unmark();
    process.off("exit", unmark);
    const release = await lockForThisProcess(lentLock(dir));
    await release();
    process.stderr.write(`# real-node lock: ${thisFile()} took its stack back after ${((Date.now() - lent) / 1000).toFixed(1)} s\n`);
  };
}

/**
 * Joins the stack lent in run `dir`, if one is: the lent stack's lock taken shared, and the lender
 * checked again under it (one taking its stack back first ends the lending).
 * @returns the release, or undefined when no stack is lent.
 */
async function joinLentStack(dir: string): Promise<(() => Promise<void>) | undefined> {
  if (!(await lending(dir))) return undefined;
  const release = await lockForThisProcess(lentLock(dir), true);
  if (await lending(dir)) return release;
  await release();
  return undefined;
}

/** What {@link acquireRealNodeLock} is asked for. */
export interface RealNodeLockOptions {
  /** The caller uses the run's shared stack: leave it up (outside a run, no effect). */
  readonly shared?: boolean;
  /**
   * The caller uses the run's shared stack beside the run's other such callers, each in namespaces
   * of its own: the run's lock is taken shared, so they hold the node together, and no caller that
   * needs it alone holds it meanwhile; or, while a file lends its stack ({@link lendRunStack}),
   * that stack is joined (outside a run, no effect). Implies `shared`.
   */
  readonly alongside?: boolean;
}

/**
 * Runs `setup` while this process holds the run's set-up lock (`<run>/setup.lock`), so callers that
 * hold the node together bring the shared stack up, and install on it, one at a time. Outside a
 * run: `setup` alone (the caller holds the machine's lock).
 * @throws what `setup` throws, or Error when `flock` cannot be started.
 */
export async function duringRunSetup<T>(setup: () => Promise<T>): Promise<T> {
  const dir = runDir();
  if (dir === undefined) return setup();
  await mkdir(dir, { recursive: true });
  const release = await lockForThisProcess(path.join(dir, "setup.lock"));
  try {
    return await setup();
  } finally {
    await release();
  }
}

/**
 * Waits for the real node to be this file's (as long as the holder keeps it) and returns the
 * release. Outside a run: the machine's lock. Within one, `alongside`: the stack a file lends, if
 * one does ({@link lendRunStack}). Else the run's lock (shared when `alongside`), the machine's
 * held for the run, and, unless `shared` or `alongside`, the run's shared stack taken down (the
 * caller brings its own).
 * @throws Error when `flock` cannot be started (util-linux missing) or exits before locking.
 */
export async function acquireRealNodeLock(options: RealNodeLockOptions = {}): Promise<() => Promise<void>> {
  const dir = runDir();
  if (dir === undefined) return lockForThisProcess(REAL_NODE_LOCK);
  await mkdir(dir, { recursive: true });
  const asked = Date.now();
  const alongside = options.alongside === true;
  const file = thisFile();
  const joined = alongside ? await joinLentStack(dir) : undefined;
  if (joined !== undefined) {
    const taken = Date.now();
    process.stderr.write(`# real-node lock: ${file} joined the lent stack, waited ${((taken - asked) / 1000).toFixed(1)} s\n`);
    return async () => {
      process.stderr.write(`# real-node lock: ${file} held the lent stack ${((Date.now() - taken) / 1000).toFixed(1)} s\n`);
      await joined();
    };
  }
  const release = await lockForThisProcess(path.join(dir, "lock"), alongside);
  try {
    if (!alongside) {
      // Files that joined a stack whose lender is gone (killed) may still be on it: they leave first.
      const joiners = await lockForThisProcess(lentLock(dir));
      await rm(lentMarker(dir), { force: true });
      await joiners();
    }
    // Under the set-up lock: holders beside each other would both start a hold on the machine's.
    await duringRunSetup(async () => {
      await holdMachineLockForRun(dir);
      if (options.shared !== true && !alongside) await downSharedStack(dir);
    });
  } catch (error) {
    await release();
    throw error;
  }
  // Within a run, where the files' real-node time goes: waiting for each other, or holding the node.
  const taken = Date.now();
  process.stderr.write(`# real-node lock: ${file} waited ${((taken - asked) / 1000).toFixed(1)} s\n`);
  return async () => {
    process.stderr.write(`# real-node lock: ${file} held it ${((Date.now() - taken) / 1000).toFixed(1)} s\n`);
    await release();
  };
}

/** Takes the run's shared stack down when it is up (a failed `down` is logged, not thrown). */
export async function downSharedStack(dir: string): Promise<void> {
  const shared = sharedStackDir(dir);
  if (!existsSync(stateFile(shared))) return;
  const t0 = Date.now();
  await down(shared).catch((error: Error) => process.stderr.write(`# down of the shared real-node stack: ${error.message}\n`));
  process.stderr.write(`# the shared real-node stack down in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
}

/**
 * The run's end (the global teardown): its shared stack down, the machine's lock released.
 * Nothing to do when no file of the run needed a real node.
 */
export async function endRun(dir: string): Promise<void> {
  await downSharedStack(dir);
  const file = machineHolderFile(dir);
  if (existsSync(file)) killGroup(Number(await readFile(file, "utf8")));
}
