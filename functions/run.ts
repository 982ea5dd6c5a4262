/**
 * Launcher: `npm run function -- NAME` (or `node functions/run.ts NAME`) starts the function
 * in `functions/NAME/`, whose `index.ts` exports `fn` (see `functions/lib/runtime/types.ts`),
 * from the sources, with the process environment, as Knative would run its container. The
 * images run a bundle of the same modules instead (`scripts/bundle.ts`); both go through
 * `launch()`.
 *
 * Exit codes: 0 after a graceful SIGTERM/SIGINT; 1 on a configuration error (one line on
 * stderr naming the variable) or a start-up failure; 2 on a usage error.
 */
import { existsSync } from "node:fs";
import { enableCompileCache } from "node:module";
import { fileURLToPath } from "node:url";
import type { FunctionModule } from "./lib/runtime/types.ts";

// Cold start from the sources is mostly compiling dependencies (@kubernetes/client-node alone
// loads ~1000 model modules); V8's code cache makes every start after the first cheaper. It
// lives in NODE_COMPILE_CACHE, else the OS temp dir; where that is not writable, Node skips it.
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

// Imported after the compile cache is on, so the function's modules use it.
const { launch } = await import("./lib/runtime/launch.ts");
await launch(name, (await import(entry.href)) as Partial<FunctionModule>, fileURLToPath(entry));
