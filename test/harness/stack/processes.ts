/**
 * Starting, watching and stopping the stack's processes. Each runs detached in its own process
 * group with its output in a log file, so `stack up` can return while they keep running and
 * `stack down` can stop each one with everything it spawned.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { openSync, closeSync, readFileSync, existsSync } from "node:fs";

/** A started component: its name, process id and log file. */
export interface Started {
  name: string;
  pid: number;
  log: string;
  child?: ChildProcess;
}

/** A component that exited or never became ready; the message names it and carries its log tail. */
export class ComponentError extends Error {
  readonly component: string;
  constructor(component: string, message: string, log?: string) {
    super(`${component}: ${message}${log ? `\n--- last lines of ${log} ---\n${tail(log)}` : ""}`);
    this.component = component;
  }
}

/** The last `lines` lines of a log file, or "" when it does not exist. */
export function tail(file: string, lines = 20): string {
  if (!existsSync(file)) return "";
  return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
}

/** Starts `bin args` detached, stdout and stderr appended to `log`. */
export function startProcess(name: string, bin: string, args: string[], log: string, env?: NodeJS.ProcessEnv): Started {
  const fd = openSync(log, "a");
  try {
    const child = spawn(bin, args, { detached: true, stdio: ["ignore", fd, fd], env: env ?? process.env });
    if (child.pid === undefined) throw new ComponentError(name, `could not start ${bin}`, log);
    child.unref();
    return { name, pid: child.pid, log, child };
  } finally {
    closeSync(fd);
  }
}

/**
 * True while the process runs. A detached process outlives `stack up`, so when it exits its
 * parent is init, which may reap it late: a zombie (state Z in /proc/PID/stat) counts as gone.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `ready()` every 100 ms until it returns true.
 * @throws ComponentError when the process exits first or `timeoutMs` passes.
 */
export async function waitReady(started: Started, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!alive(started.pid) || (started.child && started.child.exitCode !== null)) {
      throw new ComponentError(started.name, `exited during start-up (code ${started.child?.exitCode ?? "?"})`, started.log);
    }
    try {
      if (await ready()) return;
    } catch {
      // not answering yet
    }
    if (Date.now() > deadline) throw new ComponentError(started.name, `not ready after ${timeoutMs / 1000} s`, started.log);
    await sleep(100);
  }
}

/** Sends SIGTERM to each process group, then SIGKILL to what is still alive after `graceMs`. */
export async function stopAll(pids: number[], graceMs = 10_000): Promise<void> {
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    }
  };
  for (const pid of pids) signal(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (pids.some(alive) && Date.now() < deadline) await sleep(50);
  for (const pid of pids.filter(alive)) signal(pid, "SIGKILL");
  while (pids.some(alive) && Date.now() < deadline + 5_000) await sleep(50);
}
