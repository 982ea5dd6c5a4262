/**
 * The Go-built binaries (kubectl and helm for the release and the chart; the Kubernetes set, kwok,
 * the real node's and Knative's for the local stack), compiled from the pinned modules under
 * test/harness/bins/ by its build.sh into the cache (`paths.ts`, `cacheDir`).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { createInterface } from "node:readline";
import { cacheDir, repoRoot } from "./paths.ts";
import { StepError } from "./step-error.ts";

/** This process's run of build.sh per cache directory and sets: the stack, the real node and the demo each ask for it. */
const builds = new Map<string, Promise<string>>();

/** build.sh's sets (test/harness/bins/cold-times.txt), by what needs them. */
export const BINARY_SETS = {
  /** etcd, the control plane, kubectl, kwok, and the PrometheusRule and VerticalPodAutoscaler CRDs. */
  stack: ["etcd", "kwok", "kube", "crds"],
  /** The real node: kubelet and pause, kube-proxy, CoreDNS, the registry, kube-state-metrics. */
  realNode: ["node", "proxy", "dns", "registry", "ksm"],
  eventing: ["eventing"],
  serving: ["serving"],
  /** prometheus-operator and upstream Prometheus. */
  prometheusOperator: ["promop", "prom"],
  helm: ["helm"],
  /** The Vertical Pod Autoscaler and metrics-server, for the comparison with the VPA. */
  vpa: ["vpa", "metrics"],
} as const;

/** A set of build.sh. */
export type BinarySet = (typeof BINARY_SETS)[keyof typeof BINARY_SETS][number];

/** The sets a stack with these parts needs, in build.sh's order of the groups. */
export function binarySetsFor(parts: { realNode?: boolean; prometheusOperator?: boolean; eventing?: boolean; serving?: boolean; helm?: boolean; vpa?: boolean }): BinarySet[] {
  return [
    ...BINARY_SETS.stack,
    ...(parts.realNode ? BINARY_SETS.realNode : []),
    ...(parts.eventing ? BINARY_SETS.eventing : []),
    ...(parts.serving ? BINARY_SETS.serving : []),
    ...(parts.prometheusOperator ? BINARY_SETS.prometheusOperator : []),
    ...(parts.helm ? BINARY_SETS.helm : []),
    ...(parts.vpa ? BINARY_SETS.vpa : []),
  ];
}

/**
 * Runs test/harness/bins/build.sh once per process, cache directory (`APPMONITOR_CACHE`, else
 * `$XDG_CACHE_HOME/appmonitor`, else `~/.cache/appmonitor`, as the script resolves it) and `sets`
 * (default every set; {@link binarySetsFor} names a stack's): builds whichever of them is not
 * cached yet (minutes when cold, a second or two of hashing when warm) and returns the directory
 * that holds them all. The script's own step lines
 * (`build-bins: …`: each set to build with n of m and its cold time, then its elapsed time) go to
 * the first caller's `progress` without the prefix as they come; Go's output is kept for errors.
 * A failed run is forgotten, so a later call runs the script again.
 * @throws StepError "build Kubernetes binaries" with the tail of the script's output.
 */
export function buildBinaries(env: NodeJS.ProcessEnv = process.env, progress: (line: string) => void = () => {}, sets?: readonly BinarySet[]): Promise<string> {
  const named = sets === undefined ? [] : [...new Set(sets)];
  const key = `${cacheDir(env)}\0${[...named].sort().join(" ")}`;
  let build = builds.get(key);
  if (build === undefined) {
    build = runBuildScript(env, progress, named);
    builds.set(key, build);
    build.catch(() => builds.delete(key));
  }
  return build;
}

async function runBuildScript(env: NodeJS.ProcessEnv, progress: (line: string) => void, sets: readonly string[]): Promise<string> {
  const script = path.join(repoRoot, "test/harness/bins/build.sh");
  const child = spawn("bash", [script, ...sets], { env, stdio: ["ignore", "pipe", "pipe"], timeout: 60 * 60 * 1000 });
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
    throw new StepError(
      "build Kubernetes binaries",
      `test/harness/bins/build.sh ${signal ? `was killed by ${signal}` : `exited ${code}`}:\n${stderr.slice(-15).join("\n")}`,
    );
  }
  return stdout.trim().split("\n").pop() ?? "";
}
