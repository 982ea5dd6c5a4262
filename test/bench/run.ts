/**
 * `npm run bench`: runs every benchmark script in test/bench/ (or the ones named on the command
 * line, e.g. `npm run bench -- stack alert-receiver`) one after another, each in its own process
 * so one's memory and sockets cannot skew the next. Exit code: non-zero when any script failed.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here).filter((f) => f.endsWith(".ts") && f !== "run.ts").map((f) => f.slice(0, -3)).sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length) {
  console.error(`bench: unknown benchmark(s) ${unknown.join(", ")}; available: ${available.join(", ")}`);
  process.exit(2);
}
let failed = 0;
for (const name of wanted.length ? wanted : available) {
  console.log(`\n=== ${name} ===`);
  const res = spawnSync(process.execPath, [path.join(here, `${name}.ts`)], { stdio: "inherit" });
  if (res.status !== 0) {
    failed++;
    console.error(`bench: ${name} exited with ${res.status ?? res.signal}`);
  }
}
process.exit(failed ? 1 : 0);
