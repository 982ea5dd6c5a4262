/**
 * Child processes that a test starts and must stop: output captured in memory (shown when
 * something goes wrong), stop with SIGTERM then SIGKILL, exit status awaited.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";

/** How a process ended. */
export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A started process. */
export interface TestProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** stdout and stderr so far, interleaved as received. */
  output(): string;
  /** stderr so far. */
  stderr(): string;
  /** Resolves when the process exited. */
  readonly exited: Promise<ExitStatus>;
  /** True until the process exited. */
  running(): boolean;
  /**
   * Sends `signal` (default SIGTERM), waits up to `graceMs` (default 10 000), then SIGKILL.
   * Resolves with the exit status; a no-op on an exited process.
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<ExitStatus>;
}

/** Options of {@link startProcess}. */
export interface StartProcessOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

/** Maximum output kept per process, in characters (the tail is kept). */
const MAX_OUTPUT = 1_000_000;

/** Spawns the process with piped output. */
export function startProcess(options: StartProcessOptions): TestProcess {
  const child = spawn(options.command, [...options.args], {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (child.pid === undefined) throw new Error(`${options.name}: could not start ${options.command}`);
  const pid = child.pid;
  let output = "";
  let errors = "";
  const keep = (text: string, chunk: Buffer): string => (text + chunk.toString("utf8")).slice(-MAX_OUTPUT);
  child.stdout?.on("data", (chunk: Buffer) => (output = keep(output, chunk)));
  child.stderr?.on("data", (chunk: Buffer) => {
    output = keep(output, chunk);
    errors = keep(errors, chunk);
  });
  let status: ExitStatus | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("exit", (code, signal) => {
      status = { code, signal };
      resolve(status);
    });
  });
  const stop = async (signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<ExitStatus> => {
    if (status !== undefined) return status;
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    name: options.name,
    pid,
    child,
    output: () => output,
    stderr: () => errors,
    exited,
    running: () => status === undefined,
    stop,
  };
}

/** The last `lines` lines of a process's output, for assertion messages. */
export function tailOf(process: TestProcess, lines = 30): string {
  return `--- last output of ${process.name} ---\n${process.output().trimEnd().split("\n").slice(-lines).join("\n")}`;
}
