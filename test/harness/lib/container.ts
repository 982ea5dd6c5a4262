/**
 * A function image run as Knative runs its container, with podman (scripts/images/podman.ts): the
 * Knative Service's security context (read-only root file system, user 1000, every capability
 * dropped, no privilege escalation), `PORT` set by the runtime, and the Service's env. Host
 * network, with the function bound to 127.0.0.1. Credentials, when given, are mounted where the
 * kubelet mounts a ServiceAccount's (`/var/run/secrets/kubernetes.io/serviceaccount/`), with
 * `KUBERNETES_SERVICE_HOST`/`_PORT` set as for a Pod, so @kubernetes/client-node takes its
 * in-cluster path.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { podman } from "../../../scripts/images/podman.ts";
import { freePort } from "./free-port.ts";
import { tokenKubeConfig } from "./service-account.ts";

/** Where the kubelet mounts a Pod's ServiceAccount token, CA bundle and namespace. */
export const SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

/** The in-cluster credentials of a ServiceAccount, as files and the API server's address. */
export interface InClusterCredentials {
  /** Directory holding `token`, `ca.crt` and `namespace`, readable by user 1000. */
  readonly dir: string;
  /** `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`. */
  readonly host: string;
  readonly port: number;
}

/** Writes `token`, `ca.crt` (PEM) and `namespace` into `dir` as the kubelet's projected volume holds them. */
export async function writeServiceAccountFiles(dir: string, files: { token: string; caPem: string; namespace: string }): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  for (const [name, content] of [["token", files.token], ["ca.crt", files.caPem], ["namespace", files.namespace]] as const) {
    await writeFile(path.join(dir, name), content, { mode: 0o644 });
  }
  return dir;
}

/**
 * In-cluster credentials of ServiceAccount `namespace/name`: a fresh token from the TokenRequest
 * API (asked for with `admin`) and the CA of `admin`'s cluster, written under `dir`; `api` is the
 * address the container dials (the API server, or a proxy in front of it).
 */
export async function serviceAccountCredentials(admin: k8s.KubeConfig, namespace: string, name: string, dir: string, api: { host: string; port: number }): Promise<InClusterCredentials> {
  const token = (await tokenKubeConfig(admin, namespace, name)).getCurrentUser()?.token;
  const caData = admin.getCurrentCluster()?.caData;
  if (!token || !caData) throw new Error(`no token for ${namespace}/${name}, or no CA in the stack's kubeconfig`);
  const files = await writeServiceAccountFiles(path.join(dir, `${namespace}-${name}`), { token, caPem: Buffer.from(caData, "base64").toString("utf8"), namespace });
  return { dir: files, ...api };
}

/** Options of {@link runContainer}. */
export interface RunContainerOptions {
  readonly image: string;
  /** The container's env (the Service's, plus what Knative and the test add); `PORT` and `HOST` are set here. */
  readonly env: Readonly<Record<string, string>>;
  readonly credentials?: InClusterCredentials;
  /** Replaces the image's CMD (e.g. a bare Node server in the same image, for comparison). */
  readonly command?: readonly string[];
  /** Give up waiting for readiness after this long; default 60 000 ms. */
  readonly readyTimeoutMs?: number;
  /** How often readiness is polled; default 100 ms (a benchmark polls more often). */
  readonly pollMs?: number;
}

/** A running function container. */
export interface FunctionContainer {
  readonly name: string;
  readonly url: string;
  /** The container's main process, as the host sees it. */
  readonly pid: number;
  /** stdout and stderr so far. */
  logs(): Promise<string>;
  /** `podman stop --time graceSeconds` (SIGTERM, then SIGKILL); resolves with the exit code. */
  stop(graceSeconds?: number): Promise<number>;
  /** `podman diff`: paths changed in the container's file system (tmpfs mounts excluded). */
  diff(): Promise<string[]>;
  /** Removes the container, running or not. */
  remove(): Promise<void>;
}

/**
 * `podman run` arguments (after `run`, before the image) for a function's container as its
 * Knative Service runs it: host network, read-only root, user 1000, no capabilities, no privilege
 * escalation, `env`, and the ServiceAccount mount with `KUBERNETES_SERVICE_HOST`/`_PORT` when
 * `credentials` are given.
 */
export function knativeRunArgs(name: string, env: Readonly<Record<string, string>>, credentials?: InClusterCredentials): string[] {
  const args = ["--name", name, "--network=host", "--read-only", "--user=1000:1000", "--cap-drop=all", "--security-opt=no-new-privileges"];
  const all: Record<string, string> = { ...env };
  if (credentials) {
    args.push("--volume", `${credentials.dir}:${SERVICE_ACCOUNT_MOUNT}:ro`);
    Object.assign(all, { KUBERNETES_SERVICE_HOST: credentials.host, KUBERNETES_SERVICE_PORT: String(credentials.port) });
  }
  for (const [key, value] of Object.entries(all)) args.push("--env", `${key}=${value}`);
  return args;
}

/**
 * Starts `image` detached with the Knative security context and waits until
 * `GET /health/readiness` answers 200.
 * @throws Error with the container's logs when it exits or is not ready in time.
 */
export async function runContainer(options: RunContainerOptions): Promise<FunctionContainer> {
  const port = await freePort();
  const name = `appmonitor-test-${randomBytes(4).toString("hex")}`;
  const env = { ...options.env, PORT: String(port), HOST: "127.0.0.1" };
  const logs = async (): Promise<string> => {
    const { stdout, stderr } = await podman(["logs", name]);
    return stdout + stderr;
  };
  const remove = async (): Promise<void> => {
    await podman(["rm", "--force", "--time=0", name]).catch(() => undefined);
  };
  const state = async (): Promise<{ running: boolean; pid: number; exitCode: number }> => {
    const { stdout } = await podman(["inspect", "--format", "{{.State.Running}} {{.State.Pid}} {{.State.ExitCode}}", name]);
    const [running, pid, exitCode] = stdout.trim().split(" ");
    return { running: running === "true", pid: Number(pid), exitCode: Number(exitCode) };
  };
  const url = `http://127.0.0.1:${port}`;
  let pid: number;
  try {
    await podman(["run", "--detach", ...knativeRunArgs(name, env, options.credentials), options.image, ...(options.command ?? [])]);
    // Not waitUntil: an exited container ends the wait at once instead of being polled until the timeout.
    const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
    for (;;) {
      const now = await state();
      if (!now.running) throw new Error(`${options.image} exited with ${now.exitCode} before it was ready`);
      if ((await fetch(`${url}/health/readiness`).catch(() => undefined))?.status === 200) {
        pid = now.pid;
        break;
      }
      if (Date.now() > deadline) throw new Error(`${options.image} not ready on ${url}/health/readiness after ${options.readyTimeoutMs ?? 60_000} ms`);
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 100));
    }
  } catch (error) {
    const output = await logs().catch(() => "");
    await remove();
    throw new Error(`${(error as Error).message}\n--- container logs ---\n${output.slice(-3000)}`, { cause: error });
  }
  return {
    name,
    url,
    pid,
    logs,
    stop: async (graceSeconds = 30) => {
      await podman(["stop", `--time=${graceSeconds}`, name]);
      return (await state()).exitCode;
    },
    diff: async () => {
      const { stdout } = await podman(["diff", name]);
      return stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
    },
    remove,
  };
}
