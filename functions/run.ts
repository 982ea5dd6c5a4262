/**
 * Launcher: `npm run function -- NAME` (or `node functions/run.ts NAME`) starts the function
 * in `functions/NAME/`, whose `index.ts` exports `fn` (see `functions/lib/runtime/types.ts`),
 * with the process environment, as Knative would run its container.
 *
 * Exit codes: 0 after a graceful SIGTERM/SIGINT; 1 on a configuration error (one line on
 * stderr naming the variable) or a start-up failure; 2 on a usage error.
 */
import { existsSync } from "node:fs";
import { enableCompileCache } from "node:module";
import { fileURLToPath } from "node:url";
import { ConfigError } from "./lib/runtime/env.ts";
import { startServer } from "./lib/runtime/server.ts";
import { exitOnSignals } from "./lib/runtime/signals.ts";
import type { FunctionModule } from "./lib/runtime/types.ts";

// Cold start is mostly compiling dependencies (@kubernetes/client-node alone loads ~1000 model
// modules); V8's code cache makes every start after the first cheaper. It lives in
// NODE_COMPILE_CACHE, else the OS temp dir; where that is not writable, Node just skips it.
enableCompileCache();

const name = process.argv[2];
if (name === undefined || !/^[a-z][a-z0-9-]*$/.test(name) || name === "lib") {
  console.error("usage: npm run function -- NAME   (a folder under functions/, e.g. alert-receiver)");
  process.exit(2);
}
const entry = new URL(`./${name}/index.ts`, import.meta.url);
if (!existsSync(entry)) {
  console.error(`${name}: no such function: ${fileURLToPath(entry)} does not exist`);
  process.exit(2);
}

const module = (await import(entry.href)) as Partial<FunctionModule>;
if (module.fn === undefined) {
  console.error(`${name}: ${fileURLToPath(entry)} does not export \`fn\` (a FunctionDefinition)`);
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
