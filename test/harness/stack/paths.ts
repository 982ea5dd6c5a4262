/**
 * Where the local stack keeps its state and where its binaries come from.
 *
 * State: `APPMONITOR_STACK_DIR`, else `<repo>/.stack` (ignored by git).
 * Binaries: `KUBEBUILDER_ASSETS` (controller-runtime envtest's convention) when it holds a binary,
 * else the set that `test/harness/bins/build.sh` compiles into `~/.cache/appmonitor/bin`.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { cacheDir } from "../images/paths.ts";

/** Absolute path of the repository root. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The stack's default state directory: `APPMONITOR_STACK_DIR` or `<repo>/.stack`. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.APPMONITOR_STACK_DIR ?? path.join(repoRoot, ".stack"));
}

/** Binaries the stack runs, by role: absolute paths. */
export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  kwok: string;
  prometheus: string;
  promtool: string;
  alertmanager: string;
  amtool: string;
  /** Directory to put first on PATH so `kubectl` is the stack's own. */
  kubectlDir: string;
}

const goBuilt = {
  etcd: "etcd",
  kubeApiserver: "kube-apiserver",
  kubeControllerManager: "kube-controller-manager",
  kubeScheduler: "kube-scheduler",
  kubectl: "kubectl",
  kwok: "kwok",
} as const;

const debian = {
  prometheus: "prometheus",
  promtool: "promtool",
  alertmanager: "prometheus-alertmanager",
  amtool: "amtool",
} as const;

/** Error raised when one step of finding or building the binaries fails; `step` names it. */
export class StackStepError extends Error {
  readonly step: string;
  constructor(step: string, message: string, options?: { cause?: unknown }) {
    super(`${step}: ${message}`, options);
    this.step = step;
  }
}

/** The first `name` on `env.PATH`, or undefined. */
export function which(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** This process's run of build.sh per cache directory: the stack, the real node and the demo each ask for it. */
const builds = new Map<string, Promise<string>>();

/**
 * Runs test/harness/bins/build.sh once per process and cache directory (`APPMONITOR_CACHE`, else
 * `$XDG_CACHE_HOME/appmonitor`, else `~/.cache/appmonitor`, as the script resolves it): builds
 * whatever Go-built binary set is not cached yet (minutes when cold, a second or two of hashing
 * when warm) and returns the directory that holds them all. The script's own step lines
 * (`build-bins: …`: each set to build with n of m and its cold time, then its elapsed time) go to
 * the first caller's `progress` without the prefix as they come; Go's output is kept for errors.
 * A failed run is forgotten, so a later call runs the script again.
 * @throws StackStepError "build Kubernetes binaries" with the tail of the script's output.
 */
export function buildBinaries(env: NodeJS.ProcessEnv = process.env, progress: (line: string) => void = () => {}): Promise<string> {
  const cache = cacheDir(env);
  let build = builds.get(cache);
  if (build === undefined) {
    build = runBuildScript(env, progress);
    builds.set(cache, build);
    build.catch(() => builds.delete(cache));
  }
  return build;
}

async function runBuildScript(env: NodeJS.ProcessEnv, progress: (line: string) => void): Promise<string> {
  const script = path.join(repoRoot, "test/harness/bins/build.sh");
  const child = spawn("bash", [script], { env, stdio: ["ignore", "pipe", "pipe"], timeout: 60 * 60 * 1000 });
  let stdout = "";
  const stderr: string[] = [];
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  createInterface({ input: child.stderr }).on("line", (line) => {
    stderr.push(line);
    if (stderr.length > 200) stderr.shift();
    if (line.startsWith("build-bins: ")) progress(line.slice("build-bins: ".length));
  });
  const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
  if (code !== 0) {
    throw new StackStepError(
      "build Kubernetes binaries",
      `test/harness/bins/build.sh ${signal ? `was killed by ${signal}` : `exited ${code}`}:\n${stderr.slice(-15).join("\n")}`,
    );
  }
  return stdout.trim().split("\n").pop() ?? "";
}

/**
 * Finds every binary the stack needs, building the Go-built ones when they are not cached
 * (`progress` hears of each set built, as {@link buildBinaries} says).
 * A cold build takes minutes (kube-apiserver is large); a warm one returns at once.
 * @throws StackStepError naming the step: a missing Debian package, no Go toolchain, a failed build.
 */
export async function resolveBinaries(env: NodeJS.ProcessEnv = process.env, progress?: (line: string) => void): Promise<Binaries> {
  const found: Partial<Record<keyof typeof goBuilt, string>> = {};
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets) {
    for (const [role, file] of Object.entries(goBuilt) as [keyof typeof goBuilt, string][]) {
      if (existsSync(path.join(assets, file))) found[role] = path.join(assets, file);
    }
  }
  const built = Object.keys(goBuilt).some((role) => !found[role as keyof typeof goBuilt]) ? await buildBinaries(env, progress) : undefined;
  const result: Record<string, string> = {};
  for (const [role, file] of Object.entries(goBuilt) as [keyof typeof goBuilt, string][]) {
    const p = found[role] ?? (built ? path.join(built, file) : undefined);
    if (!p || !existsSync(p)) throw new StackStepError("find Kubernetes binaries", `${file} is missing (looked in ${assets ?? ""} ${built ?? ""})`);
    result[role] = p;
  }
  for (const [role, file] of Object.entries(debian)) {
    const p = which(file, env) ?? (existsSync(`/usr/bin/${file}`) ? `/usr/bin/${file}` : undefined);
    if (!p) {
      throw new StackStepError(
        "find Prometheus and Alertmanager",
        `${file} is not installed; run: apt-get install prometheus prometheus-alertmanager (or bash scripts/install-debian.sh)`,
      );
    }
    result[role] = p;
  }
  return { ...(result as Omit<Binaries, "kubectlDir">), kubectlDir: path.dirname(result.kubectl as string) };
}
