/**
 * A real Prometheus (Debian's `prometheus`) of a test's own, beside the stack's: on 127.0.0.1 on a
 * free port, storage and rule files in a temporary directory, the caller's configuration, which
 * it can rewrite and reload (`--web.enable-lifecycle`). For a test that needs a Prometheus the
 * stack's shared one is not: one that drops series as kube-prometheus-stack does, or scrapes a
 * target of its own. Flags: https://prometheus.io/docs/prometheus/latest/command-line/prometheus/
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import { freePort } from "../harness/lib/free-port.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";
import { startProcess, tailOf, type TestProcess } from "./child-process.ts";
import { tempDir } from "./temp-dir.ts";

/** The binary; `PROMETHEUS_BIN` overrides it. */
export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN ?? "/usr/bin/prometheus";

/** A running Prometheus. */
export interface TestPrometheus {
  /** Where it listens, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** The directory its `rule_files` glob (`<dir>/*.yml`) reads. */
  readonly rulesDir: string;
  readonly process: TestProcess;
  /** Writes `config` (its `rule_files` set to {@link rulesDir}) and reloads. @throws Error unless the reload answers 200. */
  configure(config: Record<string, unknown>): Promise<void>;
  /** Writes a rules file (`groups`) into {@link rulesDir}, or removes it when `groups` is undefined, and reloads. */
  writeRules(file: string, groups: unknown[] | undefined): Promise<void>;
  /** An instant query's samples. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Stops it (SIGTERM) and removes its storage. */
  stop(): Promise<void>;
}

/**
 * Starts Prometheus with `config` (a prometheus.yml as an object; `rule_files` is set to the
 * rules directory); resolves once `/-/ready` answers 200.
 * @param bin the binary: Debian's by default, or another (the stack's upstream build).
 * @param extraArgs more flags, e.g. `--rules.alert.resend-delay=1s`.
 * @throws Error with the process's last output when it does not become ready in 30 s.
 */
export async function startPrometheus(config: Record<string, unknown>, bin = PROMETHEUS_BIN, extraArgs: readonly string[] = []): Promise<TestPrometheus> {
  const dir = await tempDir("prometheus");
  const rulesDir = path.join(dir.path, "rules");
  const configFile = path.join(dir.path, "prometheus.yml");
  const write = (c: Record<string, unknown>) => writeFile(configFile, stringify({ ...c, rule_files: [path.join(rulesDir, "*.yml")] }));
  await mkdir(rulesDir, { recursive: true });
  await write(config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = startProcess({
    name: "prometheus",
    command: bin,
    args: [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir.path, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--web.enable-lifecycle",
      "--storage.tsdb.retention.time=1h",
      ...extraArgs,
    ],
  });
  const stop = async (): Promise<void> => {
    await child.stop();
    await dir.remove();
  };
  try {
    await waitUntil("Prometheus to be ready", async () => {
      if (!child.running()) throw new Error("Prometheus exited");
      return (await fetch(`${url}/-/ready`)).status === 200;
    }, { timeoutMs: 30_000, intervalMs: 100 });
  } catch (error) {
    const output = tailOf(child);
    await stop();
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
  const reload = async (): Promise<void> => {
    const response = await fetch(`${url}/-/reload`, { method: "POST" });
    if (response.status !== 200) throw new Error(`Prometheus refused the reload: ${response.status} ${await response.text()}\n${tailOf(child)}`);
  };
  return {
    url,
    rulesDir,
    process: child,
    async configure(next) {
      await write(next);
      await reload();
    },
    async writeRules(file, groups) {
      const target = path.join(rulesDir, file);
      if (groups === undefined) await rm(target, { force: true });
      else await writeFile(target, stringify({ groups }));
      await reload();
    },
    async query(expr) {
      const response = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
      const body = (await response.json()) as { status: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] }; error?: string };
      if (body.status !== "success" || body.data === undefined) throw new Error(`query ${expr}: ${body.error ?? response.status}`);
      return body.data.result;
    },
    stop,
  };
}
