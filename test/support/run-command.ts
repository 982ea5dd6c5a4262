/** Short-lived commands that a test runs to completion: exit status and both outputs captured. */
import { spawn } from "node:child_process";

/** How a command ended and what it printed. */
export interface CommandResult {
  /** Exit code, or null when a signal ended it. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Killed with SIGKILL after this many milliseconds; default 60 000. */
  readonly timeoutMs?: number;
}

/**
 * Runs `command args…` without a shell and resolves when it exits, whatever its exit code.
 * @throws Error when the command cannot be started (e.g. not on PATH), naming it.
 */
export function runCommand(command: string, args: readonly string[], options: RunCommandOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${command}: ${error.message}`, { cause: error }));
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
