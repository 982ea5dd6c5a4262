/**
 * The three functions run as Knative would run them: either as processes (`node functions/run.ts
 * NAME`) or as their images (`npm run image`) under podman, attached, with the Knative Service's
 * security context (read-only root, user 1000, no capabilities) and host network. Either way
 * with `PORT`, `K_SERVICE`, `K_SINK` and the rest in the environment, JSON logs on stdout (kept,
 * so the timeline can read when each function acted), stopped with SIGTERM.
 */
import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { podman, podmanEnv, podmanWorkDir } from "../../../scripts/images/podman.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { knativeRunArgs, type InClusterCredentials } from "../lib/container.ts";
import { freePort } from "../lib/free-port.ts";

/** One pino log line: `time` (epoch ms or ISO 8601), `msg`, and the rest of its fields. */
export type LogLine = Record<string, unknown> & { time: number | string; msg?: string };

/** A running function: its URL, its log lines so far, and how to stop it. */
export interface FunctionProcess {
  name: string;
  url: string;
  logs: LogLine[];
  /** Non-JSON output (a crash's stack trace), kept for error messages. */
  text: string[];
  /** The local process (absent for a function that runs as a Pod, `function-pods.ts`). */
  child?: ChildProcess;
  stop(): Promise<void>;
}

/** Run the function from its image instead of from the sources. */
export interface ContainerRun {
  /** The image, e.g. `ghcr.io/kubedemo/appmonitor-memory-scaler:latest`. */
  readonly image: string;
  /** A ServiceAccount's token and CA, mounted where the kubelet mounts them. */
  readonly credentials?: InClusterCredentials;
}

/**
 * Starts `functions/<name>` on 127.0.0.1 at a free port (from the sources, or from its image
 * when `container` is given) and waits until `/health/readiness` answers 200.
 * @throws Error naming the function, with its last output, when it exits or is not ready in `timeoutMs`.
 */
export async function startFunction(name: string, env: Record<string, string>, timeoutMs = 30_000, container?: ContainerRun): Promise<FunctionProcess> {
  const port = await freePort();
  const fnEnv = { ...env, PORT: String(port), HOST: "127.0.0.1", K_SERVICE: name, LOG_LEVEL: env.LOG_LEVEL ?? "info" };
  const containerName = `appmonitor-demo-${name}-${randomBytes(3).toString("hex")}`;
  const child = container === undefined
    ? spawn(process.execPath, [path.join(repoRoot, "functions", "run.ts"), name], { env: { ...process.env, ...fnEnv }, stdio: ["ignore", "pipe", "pipe"] })
    : spawn("podman", ["run", "--rm", ...knativeRunArgs(containerName, fnEnv, container.credentials), container.image], { env: await podmanEnv(), cwd: podmanWorkDir(), stdio: ["ignore", "pipe", "pipe"] });
  const fp: FunctionProcess = {
    name,
    url: `http://127.0.0.1:${port}`,
    logs: [],
    text: [],
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      // podman passes the signal on to the container's PID 1; `podman stop` ends a stuck one.
      child.kill("SIGTERM");
      const timer = setTimeout(() => (container === undefined ? child.kill("SIGKILL") : void podman(["stop", "--time=0", containerName]).catch(() => undefined)), 10_000);
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
