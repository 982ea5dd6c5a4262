/**
 * Podman as the image builds and the local stack use it: Debian's `podman` with `runc`, as root, configured by a
 * containers.conf of ours (passed in `CONTAINERS_CONF`, so the machine's own configuration is
 * left alone) that holds what every container here needs:
 * - `runtime = "runc"`: crun refuses a hybrid cgroup hierarchy (v1 controllers plus a cgroup2
 *   mount), which is what this kind of machine has;
 * - `default_ulimits` for `nofile` and `nproc` at or under this process's hard limits: runc
 *   sets both in every container and the kernel refuses a value above the hard limit (and, seen
 *   here, an `nproc` above 32768 even under it);
 * - `cgroupfs` and a file event log: there is no systemd or journald to talk to.
 *
 * Storage stays podman's default for root (`/var/lib/containers/storage`): its layer cache is
 * what makes a second `npm run image` cheap.
 */
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { cacheDir } from "../lib/paths.ts";

/** The Debian packages the images need, and why, for the one line that says how to install them. */
export const IMAGE_PACKAGES = ["podman", "runc", "mmdebstrap"] as const;

/** runc refused RLIMIT_NPROC above this on this kind of machine even when the hard limit was higher. */
const NPROC_CEILING = 32768;

function hardLimit(name: "Max open files" | "Max processes"): number {
  const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith(name));
  const hard = line?.slice(name.length).trim().split(/\s+/)[1];
  return hard === undefined || hard === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(hard);
}

/** The containers.conf text for this process's limits. */
export function containersConf(): string {
  const nofile = Math.min(hardLimit("Max open files"), 1 << 20);
  const nproc = Math.min(hardLimit("Max processes"), NPROC_CEILING);
  return [
    "# Written by scripts/images/podman.ts for appmonitor's image builds; see there for why.",
    "[containers]",
    `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]`,
    "[engine]",
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    "",
  ].join("\n");
}

/** The containers.conf, written once per process and directory (a readiness poll runs podman ten times a second). */
const written = new Map<string, Promise<string>>();

/**
 * Writes the containers.conf into the cache (when its content changed; through a temporary file
 * and a rename, so a podman started meanwhile by another process never reads it half-written)
 * and returns the environment podman runs with.
 */
export async function podmanEnv(env: NodeJS.ProcessEnv = process.env): Promise<NodeJS.ProcessEnv> {
  const dir = podmanWorkDir(env);
  let file = written.get(dir);
  if (file === undefined) {
    file = writeConf(dir);
    written.set(dir, file);
  }
  return { ...env, CONTAINERS_CONF: await file };
}

async function writeConf(dir: string): Promise<string> {
  const file = path.join(dir, "containers.conf");
  const content = containersConf();
  await mkdir(dir, { recursive: true });
  if ((await readFile(file, "utf8").catch(() => undefined)) !== content) {
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    await writeFile(tmp, content);
    await rename(tmp, file);
  }
  return file;
}

/**
 * Checks that podman, runc and mmdebstrap are installed and that this process is root.
 * @throws Error with the one command that installs what is missing.
 */
export async function checkImageTools(): Promise<void> {
  const missing: string[] = [];
  for (const tool of IMAGE_PACKAGES) {
    try {
      await promisify(execFile)("sh", ["-c", `command -v ${tool}`]);
    } catch {
      missing.push(tool);
    }
  }
  if (missing.length > 0) {
    throw new Error(`${missing.join(", ")} not installed: as root, run \`apt-get update && apt-get install -y --no-install-recommends ${IMAGE_PACKAGES.join(" ")}\` (or bash scripts/install-debian.sh)`);
  }
  if (process.getuid?.() !== 0) throw new Error("building and running images needs root (podman with runc, rootful, as tested here): run as root");
}

/** A podman command in one line for messages: its arguments without env values, at most 240 characters. */
function describe(args: readonly string[]): string {
  const shown = args.map((a, i) => (args[i - 1] === "--env" ? `${a.split("=")[0] ?? ""}=…` : a)).join(" ");
  return `podman ${shown.length > 240 ? `${shown.slice(0, 240)}…` : shown}`;
}

/**
 * The directory podman runs in: conmon (podman 4.3, cgroup v1) writes a file named `oom` into its
 * working directory when a container is OOM-killed, so podman never runs in the checkout.
 */
export function podmanWorkDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), "podman");
}

/** What a finished podman command printed. */
export interface PodmanResult {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `podman args…` to completion with our containers.conf.
 * @param options.input piped to podman's standard input.
 * @throws Error naming the command, with the tail of its stderr, when it exits non-zero.
 */
export async function podman(args: readonly string[], options: { input?: NodeJS.ReadableStream } = {}): Promise<PodmanResult> {
  const env = await podmanEnv();
  return new Promise((resolve, reject) => {
    const child = spawn("podman", [...args], { env, cwd: podmanWorkDir(env), stdio: [options.input ? "pipe" : "ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    if (options.input && child.stdin) {
      // podman may exit before reading all of its input: its exit status and stderr tell why.
      child.stdin.on("error", () => undefined);
      options.input.on("error", (error) => reject(new Error(`podman ${args[0] ?? ""}: reading its input failed: ${error.message}`, { cause: error })));
      options.input.pipe(child.stdin);
    }
    child.once("error", (error) => reject(new Error(`cannot run podman: ${error.message}`, { cause: error })));
    child.once("close", (code) => {
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${describe(args)} exited ${code}:\n${stderr.trim().split("\n").slice(-15).join("\n")}`));
    });
  });
}
