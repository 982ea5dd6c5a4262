// The stack a bench runs on: the one APPMONITOR_STACK_DIR names if it is up, else one of its own.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { down, up } from "../harness/stack/stack.ts";
import { readState, type StackState } from "../harness/stack/state.ts";

/** A bench's stack; `own` is set when the bench started it and so must stop it. */
export interface BenchStack {
  readonly state: StackState;
  /** State directory of a stack the bench started, else undefined (someone else's stack). */
  readonly own: string | undefined;
  /** Stops and removes the stack if the bench started it; does nothing otherwise. */
  release(): Promise<void>;
}

/**
 * Reuses the stack in `APPMONITOR_STACK_DIR` when its state exists, else starts one with `nodes`
 * kwok Nodes in a temporary directory named after `name` and points `APPMONITOR_STACK_DIR` at it.
 * Throws when no stack state can be read after that.
 */
export async function benchStack(name: string, nodes: number): Promise<BenchStack> {
  let own: string | undefined;
  const dir = process.env.APPMONITOR_STACK_DIR;
  if (dir === undefined || (await readState(dir)) === undefined) {
    own = await mkdtemp(path.join(tmpdir(), `appmonitor-bench-${name}-`));
    process.stderr.write(`starting a local stack (${nodes} fake Node${nodes === 1 ? "" : "s"})…\n`);
    await up({ stateDir: own, nodes });
    process.env.APPMONITOR_STACK_DIR = own;
  }
  const state = await readState(process.env.APPMONITOR_STACK_DIR ?? "");
  if (state === undefined) throw new Error("no stack state");
  return {
    state,
    own,
    async release() {
      if (own === undefined) return;
      await down(own);
      await rm(own, { recursive: true, force: true });
    },
  };
}
