/** Starting a function in the test process, bound to 127.0.0.1 on a free port. */
import { startServer } from "../../functions/lib/runtime/server.ts";
import type { RunningServer, StartOptions } from "../../functions/lib/runtime/server.ts";
import type { Env, FunctionDefinition } from "../../functions/lib/runtime/types.ts";

/**
 * `startServer(definition, { HOST: 127.0.0.1, PORT: 0, LOG_LEVEL: silent, ...env }, options)`.
 * Set `LOG_LEVEL` in `env` to see the function's logs (on stdout, or `options.logDestination`).
 * The caller stops it with `close()`.
 */
export function startFunction<C>(definition: FunctionDefinition<C>, env: Env = {}, options: StartOptions = {}): Promise<RunningServer> {
  return startServer(definition, { HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "silent", ...env }, options);
}
