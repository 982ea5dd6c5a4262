/**
 * Waiting for CRDs to be Established with `kubectl wait`, which fails at once, rather than
 * waiting, while a CRD just applied has no `status.conditions` yet (`.status.conditions accessor
 * error: <nil>`): the API server writes them once it has compiled the schema, later for a large
 * schema with CEL rules such as the AppMonitor's.
 */
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Runs `kubectl wait --for=condition=Established` on `crds` (e.g. `crd/appmonitors.kubedemo.com`)
 * through `kubectl` (the caller's runner, which throws on a non-zero exit), again while it fails
 * for conditions not written yet, for up to `timeoutMs` (default 60 000).
 * @throws the runner's error when it fails otherwise, or still fails when the time is up.
 */
export async function waitEstablished(kubectl: (args: string[]) => Promise<unknown>, crds: readonly string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await kubectl(["wait", "--for=condition=Established", `--timeout=${Math.max(1, Math.ceil((deadline - Date.now()) / 1000))}s`, ...crds]);
      return;
    } catch (error) {
      const text = `${(error as { stderr?: string }).stderr ?? ""} ${(error as Error).message}`;
      if (!/status\.conditions accessor error/.test(text) || Date.now() > deadline) throw error;
    }
    await sleep(250);
  }
}
