/**
 * node:test global setup for `npm test`: one local stack for the whole run, in
 * `<repo>/.stack-test` (or `APPMONITOR_TEST_STACK_DIR`), stopped and removed at the end.
 * Test processes inherit `APPMONITOR_STACK_DIR`, `KUBECONFIG`, `PROMETHEUS_URL` and
 * `ALERTMANAGER_URL`, and read the rest through `test/support/stack.ts`.
 */
import path from "node:path";
import { ensureDebianPackages } from "../harness/stack/debian-packages.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { down, envLines, up } from "../harness/stack/stack.ts";

const stateDir = path.resolve(process.env.APPMONITOR_TEST_STACK_DIR ?? path.join(repoRoot, ".stack-test"));

/**
 * Installs the missing Debian packages when root (or stops, naming the command), then starts the
 * stack (a stale one left by a killed run is stopped first).
 */
export async function globalSetup(): Promise<void> {
  await ensureDebianPackages();
  await down(stateDir);
  const state = await up({ stateDir, progress: (line) => process.stderr.write(`# stack: ${line}\n`) });
  for (const line of envLines(state)) {
    const m = /^export ([A-Z_]+)=(.*)$/.exec(line);
    if (m?.[1] && m[1] !== "PATH") process.env[m[1]] = (m[2] ?? "").replace(/^'|'$/g, "");
  }
  process.env.PATH = `${state.kubectlDir}${path.delimiter}${process.env.PATH ?? ""}`;
}

/** Stops every process of the stack and removes its state. */
export async function globalTeardown(): Promise<void> {
  await down(stateDir);
}
