/**
 * Where the local stack keeps its state and where its binaries come from.
 *
 * State: `APPMONITOR_STACK_DIR`, else `<repo>/.stack` (ignored by git).
 * Binaries: `KUBEBUILDER_ASSETS` (controller-runtime envtest's convention) when it holds a binary,
 * else the set that `test/harness/bins/build.sh` compiles into `~/.cache/appmonitor/bin`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { BINARY_SETS, buildBinaries, type BinarySet } from "../../../scripts/lib/binaries.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";

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

/** The first `name` on `env.PATH`, or undefined. */
export function which(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/**
 * Finds every binary the stack needs, building the Go-built ones when they are not cached: build.sh's
 * `sets`, by default the stack's own (`progress` hears of each set built, as {@link buildBinaries} says).
 * A cold build takes minutes (kube-apiserver is large); a warm one returns at once.
 * @throws StepError naming the step: a missing Debian package, no Go toolchain, a failed build.
 */
export async function resolveBinaries(env: NodeJS.ProcessEnv = process.env, progress?: (line: string) => void, sets: readonly BinarySet[] = BINARY_SETS.stack): Promise<Binaries> {
  const found: Partial<Record<keyof typeof goBuilt, string>> = {};
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets) {
    for (const [role, file] of Object.entries(goBuilt) as [keyof typeof goBuilt, string][]) {
      if (existsSync(path.join(assets, file))) found[role] = path.join(assets, file);
    }
  }
  const built = Object.keys(goBuilt).some((role) => !found[role as keyof typeof goBuilt]) ? await buildBinaries(env, progress, sets) : undefined;
  const result: Record<string, string> = {};
  for (const [role, file] of Object.entries(goBuilt) as [keyof typeof goBuilt, string][]) {
    const p = found[role] ?? (built ? path.join(built, file) : undefined);
    if (!p || !existsSync(p)) throw new StepError("find Kubernetes binaries", `${file} is missing (looked in ${assets ?? ""} ${built ?? ""})`);
    result[role] = p;
  }
  for (const [role, file] of Object.entries(debian)) {
    const p = which(file, env) ?? (existsSync(`/usr/bin/${file}`) ? `/usr/bin/${file}` : undefined);
    if (!p) {
      throw new StepError(
        "find Prometheus and Alertmanager",
        `${file} is not installed; run: apt-get install prometheus prometheus-alertmanager (or bash scripts/install-debian.sh)`,
      );
    }
    result[role] = p;
  }
  return { ...(result as Omit<Binaries, "kubectlDir">), kubectlDir: path.dirname(result.kubectl as string) };
}
