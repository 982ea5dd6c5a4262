/**
 * For the test file it is called in: a stack of its own with the real node (one per machine: it
 * waits for the real-node lock), memhog's image imported, memory-scaler's RBAC installed, and
 * memory-scaler started in this process as its ServiceAccount with `env`; up before its tests and
 * down after them (`ownStackForFile`'s, for the real node).
 */
import { after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { buildImages } from "../harness/images/build.ts";
import { down, up, type StackState } from "../harness/stack/stack.ts";
import { installMemoryScaler } from "./install.ts";
import { type ScalerUnderTest, startScaler } from "./memory-scaler.ts";
import { acquireRealNodeLock } from "./real-node-lock.ts";

/** What a test of the file reads: the stack, clients of its API server as the admin, the running memory-scaler. */
export interface RealNodeStack {
  readonly state: StackState;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  readonly scaler: ScalerUnderTest;
}

/**
 * Registers the file's `before` and `after` (module comment); `env` may read the stack (e.g. its
 * `prometheusUrl`). @returns the stack, once up (throws before).
 */
export function realNodeStackForFile(prefix: string, env: (state: StackState) => Record<string, string>): () => RealNodeStack {
  let stateDir = "";
  let stack: RealNodeStack | undefined;
  let state: StackState | undefined;
  let scaler: ScalerUnderTest | undefined;
  let releaseLock: (() => Promise<void>) | undefined;
  before(async () => {
    releaseLock = await acquireRealNodeLock();
    stateDir = await mkdtemp(path.join(os.tmpdir(), `appmonitor-${prefix}-`));
    const [memhog] = await buildImages(["memhog"]);
    assert.ok(memhog !== undefined, "memhog's image");
    const t0 = Date.now();
    state = await up({ stateDir, nodes: 1, realNode: true, memhogArchive: memhog.archive, progress: (line) => process.stderr.write(`# stack: ${line}\n`) });
    process.stderr.write(`# stack with the real node up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    // Test files run in processes of their own: this one's support modules read this stack.
    process.env.APPMONITOR_STACK_DIR = stateDir;
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    await installMemoryScaler();
    scaler = await startScaler(env(state));
    stack = { state, core: kc.makeApiClient(k8s.CoreV1Api), apps: kc.makeApiClient(k8s.AppsV1Api), scaler };
  }, { timeout: 20 * 60_000 });
  after(async () => {
    await scaler?.stop();
    if (state) await down(stateDir).catch((error: Error) => process.stderr.write(`# down: ${error.message}\n`));
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
    await releaseLock?.();
  });
  return () => {
    if (stack === undefined) throw new Error("the real-node stack is not up");
    return stack;
  };
}
