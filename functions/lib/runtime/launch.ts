/**
 * Starting a function as its container's main process: the one step shared by the launcher
 * (`functions/run.ts`, which loads `functions/<name>/index.ts` from the sources) and the
 * per-function bundles that the image runs (`scripts/bundle.ts`), so both start, fail and stop
 * the same way.
 *
 * Exit codes: 0 after a graceful SIGTERM/SIGINT (Knative's container contract); 1 on a
 * configuration error (one line on stderr naming the variable) or a start-up failure; 2 when
 * the module does not export `fn`.
 */
import { ConfigError } from "./env.ts";
import { startServer } from "./server.ts";
import { exitOnSignals } from "./signals.ts";
import type { FunctionModule } from "./types.ts";

/**
 * Serves `module.fn` with the process environment until a signal stops it.
 * @param name the function's folder name, used in the one-line failure messages.
 * @param where where the module came from, for the message when it exports no `fn`.
 */
export async function launch(name: string, module: Partial<FunctionModule>, where: string): Promise<void> {
  if (module.fn === undefined) {
    console.error(`${name}: ${where} does not export \`fn\` (a FunctionDefinition)`);
    process.exit(2);
  }
  try {
    const server = await startServer(module.fn, process.env);
    exitOnSignals(server.close, server.log);
  } catch (error) {
    const problem = error instanceof ConfigError ? `configuration error: ${error.message}` : `failed to start: ${(error as Error).message}`;
    console.error(`${name}: ${problem}`);
    process.exit(1);
  }
}
