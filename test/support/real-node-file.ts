/**
 * The stack of one real-node test file: the machine-wide lock taken first (one real node per
 * machine), a stack with the real node in a fresh state directory, its API clients, and
 * memory-scaler's CRD and RBAC installed. Called from the file's own `before`, so the file keeps
 * its order of setup (a helper that registered hooks of its own ran after the file's).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { down, up } from "../harness/stack/stack.ts";
import { type StackState } from "../harness/stack/state.ts";
import { buildImages } from "../../scripts/images/build.ts";
import { archiveReference, importImages } from "../harness/stack/node-images.ts";
import { installMemoryScaler } from "./install.ts";
import { type ScalerUnderTest, startScaler } from "./memory-scaler.ts";
import { acquireRealNodeLock } from "./real-node-lock.ts";
import { waitFor } from "./stack.ts";

/** A running real-node stack of one test file. */
export interface RealNodeFile {
  readonly state: StackState;
  readonly stateDir: string;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  /** Stops the stack, removes its state directory and releases the lock; never throws (a failed `down` is logged). */
  stop(): Promise<void>;
}

/**
 * Takes the lock, brings the stack up with its real node and installs memory-scaler's objects.
 * Sets `APPMONITOR_STACK_DIR` for the helpers that read the stack from it.
 * @param prefix the state directory's name prefix, e.g. `appmonitor-in-place-`.
 * @param memhogArchive memhog's image archive, served by the stack's registry, when the file runs memhog.
 * @throws Error as `up` does (the lock is released first).
 */
export async function startRealNodeFile(prefix: string, memhogArchive?: string): Promise<RealNodeFile> {
  const releaseLock = await acquireRealNodeLock();
  const stateDir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const t0 = Date.now();
  let state: StackState;
  try {
    state = await up({ stateDir, nodes: 1, realNode: true, ...(memhogArchive === undefined ? {} : { memhogArchive }), progress: (line) => process.stderr.write(`# stack: ${line}\n`) });
  } catch (error) {
    await down(stateDir).catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    await releaseLock();
    throw error;
  }
  process.stderr.write(`# stack with the real node up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  process.env.APPMONITOR_STACK_DIR = stateDir;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await installMemoryScaler();
  return {
    state,
    stateDir,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    async stop() {
      await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
      await rm(stateDir, { recursive: true, force: true });
      await releaseLock();
    },
  };
}

/**
 * Creates namespace `name` and waits for its ServiceAccount `default` (Pods are refused until the
 * controller manager has made it).
 * @throws Error when it does not appear within 30 s.
 */
export async function createWorkloadNamespace(core: k8s.CoreV1Api, name: string): Promise<void> {
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
 * @throws Error as the build, `up` or the import does (what was started is stopped first).
 */
export async function startScalerOnRealNode(prefix: string): Promise<ScalerOnRealNode> {
  const [built] = await buildImages(["memory-scaler"]);
  if (built === undefined) throw new Error("memory-scaler's image was not built");
  const stack = await startRealNodeFile(prefix);
  try {
    if (stack.state.realNode === undefined) throw new Error("the stack has no real node");
    await importImages(stack.state.realNode, [built.archive]);
    const image = await archiveReference(built.archive);
    const scaler = await startScaler();
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
