/**
 * The three functions run as the processes Knative would run: `node functions/run.ts NAME` with
 * `PORT`, `K_SERVICE`, `K_SINK` and the rest in the environment, JSON logs on stdout (kept, so
 * the timeline can read when each function acted), stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { repoRoot } from "../stack/paths.ts";
import { freePort } from "../support/free-port.ts";

/** One pino log line: `time` (epoch ms or ISO 8601), `msg`, and the rest of its fields. */
export type LogLine = Record<string, unknown> & { time: number | string; msg?: string };

/** A running function: its URL, its log lines so far, and how to stop it. */
export interface FunctionProcess {
  name: string;
  url: string;
  logs: LogLine[];
  /** Non-JSON output (a crash's stack trace), kept for error messages. */
  text: string[];
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `functions/<name>` on 127.0.0.1 at a free port and waits until `/health/readiness`
 * answers 200.
 * @throws Error naming the function, with its last output, when it exits or is not ready in `timeoutMs`.
 */
export async function startFunction(name: string, env: Record<string, string>, timeoutMs = 30_000): Promise<FunctionProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(repoRoot, "functions", "run.ts"), name], {
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1", K_SERVICE: name, LOG_LEVEL: env.LOG_LEVEL ?? "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const fp: FunctionProcess = {
    name,
    url: `http://127.0.0.1:${port}`,
    logs: [],
    text: [],
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const collect = (chunk: Buffer, partial: { rest: string }) => {
    const lines = (partial.rest + chunk.toString("utf8")).split("\n");
    partial.rest = lines.pop() ?? "";
    for (const line of lines) {
      try {
        fp.logs.push(JSON.parse(line) as LogLine);
      } catch {
        if (line.trim()) fp.text.push(line);
      }
    }
  };
  const out = { rest: "" };
  const err = { rest: "" };
  child.stdout?.on("data", (c: Buffer) => collect(c, out));
  child.stderr?.on("data", (c: Buffer) => collect(c, err));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${fp.text.slice(-10).join("\n")}`);
    try {
      if ((await fetch(`${fp.url}/health/readiness`, { signal: AbortSignal.timeout(1000) })).ok) return fp;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await fp.stop();
      throw new Error(`${name} not ready after ${timeoutMs / 1000} s: ${[...fp.text, ...fp.logs.map((l) => JSON.stringify(l))].slice(-10).join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
