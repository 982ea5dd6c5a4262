/**
 * The machine-wide lock on the stack's real node (one per machine: fixed interface, bridge,
 * iptables chain and cgroup names). Test files that bring up a real node take it first, so
 * `npm test`'s concurrent files run them one after the other instead of one failing. The lock is
 * util-linux `flock` on {@link REAL_NODE_LOCK}, the file a person wraps a manual run of anything
 * else that starts a real node in (`flock /tmp/appmonitor-real-node.lock node test/bench/broker-hop.ts`);
 * not a test file that takes it itself, which would then wait for its own wrapper forever.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";

/** The lock file. */
export const REAL_NODE_LOCK = "/tmp/appmonitor-real-node.lock";

/**
 * Waits for the lock (as long as the holder keeps it) and returns its release. The lock is held
 * by a `flock … cat` process group of its own, killed on release or when this process exits.
 * `cat` reads a pipe from this process, so the lock also ends when this process is killed
 * (SIGKILL runs no exit handler, but the kernel closes the pipe and `cat` sees end of file).
 * @throws Error when `flock` cannot be started (util-linux missing) or exits before locking.
 */
export async function acquireRealNodeLock(): Promise<() => Promise<void>> {
  const holder = spawn("flock", [REAL_NODE_LOCK, "sh", "-c", "echo locked; exec cat >/dev/null"], { detached: true, stdio: ["pipe", "pipe", "inherit"] });
  const locked = new Promise<void>((resolve, reject) => {
    holder.stdout.once("data", () => resolve());
    holder.once("error", reject);
    holder.once("exit", (code) => reject(new Error(`flock ${REAL_NODE_LOCK} exited with ${code} before locking`)));
  });
  const kill = () => {
    try {
      if (holder.pid !== undefined) process.kill(-holder.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", kill);
  await locked;
  return async () => {
    process.off("exit", kill);
    const exited = holder.exitCode === null && holder.signalCode === null ? once(holder, "exit") : Promise.resolve();
    kill();
    await exited;
  };
}
