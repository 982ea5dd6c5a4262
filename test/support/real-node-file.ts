/**
 * The real-node stack of a test file that needs a real node but not a fresh one: within
 * `npm test`, one stack shared by every such file of the run (`real-node-lock.ts`: it stays up
 * between them, and the run's end or a file that brings up a node of its own takes it down);
 * alone, one of the file's own in a fresh state directory. The real-node lock taken first, its API
 * clients, memory-scaler's CRD and RBAC installed, memhog's image served by its registry. Called
 * from the file's own `before`, so the file keeps its order of setup (a helper that registered
 * hooks of its own ran after the file's). The file leaves the node as it found it: its namespaces
 * (made by {@link RealNodeFile.namespace}) are deleted, and waited for, when it stops.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { Env } from "../../functions/lib/runtime/types.ts";
import { buildImages } from "../../scripts/images/build.ts";
import { binarySetsFor, buildBinaries } from "../../scripts/lib/binaries.ts";
import { down, up } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { archiveReference, importImages } from "../harness/stack/node-images.ts";
import { installMemoryScaler } from "./install.ts";
import { type ScalerUnderTest, startScaler } from "./memory-scaler.ts";
import { acquireRealNodeLock, duringRunSetup, runDir, sharedStackDir } from "../harness/stack/real-node-lock.ts";
import { waitFor } from "./stack.ts";

/** A running real-node stack of one test file. */
export interface RealNodeFile {
  readonly state: StackState;
  readonly stateDir: string;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  readonly kc: k8s.KubeConfig;
  /** Whether the stack is the run's shared one (else the file's own). */
  readonly shared: boolean;
  /** Creates namespace `name` for the file's workloads (waiting for its ServiceAccount `default`); deleted at {@link stop}. */
  namespace(name: string): Promise<void>;
  /** Has namespace `name`, made by another step of the file (an install's), deleted at {@link stop} too. */
  adopt(name: string): void;
  /**
   * Stops the file's own stack and removes its state directory, or, on the run's shared one, which
   * stays up for the run's next file, deletes the file's namespaces and waits until they are gone;
   * then releases the lock. Never throws (a failure is logged).
   */
  stop(): Promise<void>;
}

/** How a file holds the run's shared stack. */
export interface RealNodeFileOptions {
  /**
   * Beside the run's other such files (`real-node-alongside.ts` says which may): the run's lock
   * taken shared (`real-node-lock.ts`), the stack brought up and memory-scaler's objects installed
   * under the run's set-up lock. Outside a run, no effect.
   */
  readonly alongside?: boolean;
  /** What the file installs on the stack beyond it (Eventing, the VPA): their sets built before the lock too. */
  readonly sets?: { readonly eventing?: boolean; readonly vpa?: boolean };
}

/**
 * Takes the lock, brings the stack up with its real node, or finds the run's shared one up, and
 * installs memory-scaler's objects. Sets `APPMONITOR_STACK_DIR` for the helpers that read the stack from it.
 * @param prefix the state directory's name prefix when the stack is the file's own, e.g. `appmonitor-in-place-`.
 * @throws Error as `up` does (the lock is released first).
 */
export async function startRealNodeFile(prefix: string, options: RealNodeFileOptions = {}): Promise<RealNodeFile> {
  // What the stack runs, built before the lock: meanwhile another file holds the node.
  const [memhog] = await buildImages(["memhog"]);
  if (memhog === undefined) throw new Error("memhog's image was not built");
  await buildBinaries(process.env, undefined, binarySetsFor({ realNode: true, ...options.sets }));
  const run = runDir();
  const releaseLock = await acquireRealNodeLock({ shared: run !== undefined, alongside: options.alongside === true });
  const stateDir = run === undefined ? await mkdtemp(path.join(os.tmpdir(), prefix)) : sharedStackDir(run);
  const t0 = Date.now();
  let state: StackState;
  try {
    // The files beside each other: the first brings the shared stack up, the others find it up.
    state = await duringRunSetup(() => up({ stateDir, nodes: 1, realNode: true, memhogArchive: memhog.archive, progress: (line) => process.stderr.write(`# stack: ${line}\n`) }));
  } catch (error) {
    await down(stateDir).catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    await releaseLock();
    throw error;
  }
  process.stderr.write(`# stack with the real node ${run === undefined ? "" : "(the run's shared one) "}up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  process.env.APPMONITOR_STACK_DIR = stateDir;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await duringRunSetup(installMemoryScaler);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespaces: string[] = [];
  return {
    state,
    stateDir,
    core,
    apps: kc.makeApiClient(k8s.AppsV1Api),
    kc,
    shared: run !== undefined,
    async namespace(name) {
      namespaces.push(name);
      await createWorkloadNamespace(core, name);
    },
    adopt(name) {
      namespaces.push(name);
    },
    async stop() {
      if (run === undefined) {
        await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
        await rm(stateDir, { recursive: true, force: true });
      } else if (namespaces.length > 0) {
        const t1 = Date.now();
        await Promise.all(namespaces.map((name) => core.deleteNamespace({ name }).catch(() => undefined)));
        // Then their Pods at once (no new ones: a terminating namespace admits none). The namespace
        // controller otherwise waits out half the Pods' termination grace period before it looks
        // again, 16 s of the default 30, though they stopped in a second.
        await Promise.all(namespaces.map((namespace) => core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 }).catch(() => undefined)));
        await waitFor(`the namespaces ${namespaces.join(", ")} gone`, async () => (await core.listNamespace()).items.every((n) => !namespaces.includes(n.metadata?.name ?? "")), 180_000, 500)
          .catch((error: Error) => process.stderr.write(`# ${error.message}\n`));
        process.stderr.write(`# namespaces ${namespaces.join(", ")} deleted in ${((Date.now() - t1) / 1000).toFixed(1)} s\n`);
      }
      await releaseLock();
    },
  };
}

/**
 * Creates namespace `name` and waits for its ServiceAccount `default` (Pods are refused until the
 * controller manager has made it).
 * @throws Error when it does not appear within 30 s.
 */
async function createWorkloadNamespace(core: k8s.CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
  await waitFor(`the ServiceAccount default in ${name}`, async () => (await core.listNamespacedServiceAccount({ namespace: name })).items.some((s) => s.metadata?.name === "default"), 30_000);
}

/** A real-node file that runs one of our images: its stack, memory-scaler's image as the node names it, and memory-scaler (no Prometheus). */
export interface ScalerOnRealNode {
  readonly stack: RealNodeFile;
  /** memory-scaler's image (Node.js 24), imported into the node's containerd. */
  readonly image: string;
  readonly scaler: ScalerUnderTest;
  /** Stops memory-scaler and the stack; never throws. */
  stop(): Promise<void>;
}

/**
 * Builds memory-scaler's image, brings the real-node stack up ({@link startRealNodeFile}), imports
 * the image into the node and starts memory-scaler as its ServiceAccount without Prometheus.
 * @param prefix as for {@link startRealNodeFile}.
 * @param env memory-scaler's environment beyond its kubeconfig (`WATCH_NAMESPACES`, for one).
 * @throws Error as the build, `up` or the import does (what was started is stopped first).
 */
export async function startScalerOnRealNode(prefix: string, options: RealNodeFileOptions = {}, env: Env = {}): Promise<ScalerOnRealNode> {
  const [built] = await buildImages(["memory-scaler"]);
  if (built === undefined) throw new Error("memory-scaler's image was not built");
  const stack = await startRealNodeFile(prefix, options);
  try {
    if (stack.state.realNode === undefined) throw new Error("the stack has no real node");
    const realNode = stack.state.realNode;
    await duringRunSetup(() => importImages(realNode, [built.archive]));
    const image = await archiveReference(built.archive);
    const scaler = await startScaler(env);
    return {
      stack,
      image,
      scaler,
      async stop() {
        await scaler.stop().catch((error: Error) => process.stderr.write(`# memory-scaler: ${error.message}\n`));
        await stack.stop();
      },
    };
  } catch (error) {
    await stack.stop();
    throw error;
  }
}
