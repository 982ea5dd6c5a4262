/**
 * `npm run bench`: runs every benchmark script in test/bench/ (or the ones named on the command
 * line, e.g. `npm run bench -- stack alert-receiver`) one after another, each in its own process
 * so one's memory and sockets cannot skew the next. Options after the names (from the first
 * argument that starts with `--`) go to each script named, e.g.
 * `npm run bench -- memory-scaler --nodes 4,1000,5000`. Its usage (`--help`) says the rest.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { exitOnHelp } from "../../scripts/lib/usage.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here).filter((f) => f.endsWith(".ts") && f !== "run.ts").map((f) => f.slice(0, -3)).sort();
const args = process.argv.slice(2);
// Only in first place: after a name, `--help` is one of the options passed on to the benchmarks.
exitOnHelp(args.slice(0, 1), {
  synopsis: ["npm run bench [-- NAME… [OPTION…]]"],
  arguments: [
    { name: "NAME", means: `a benchmark: ${available.join(", ")}`, defaultIs: "all, one after another" },
    { name: "OPTION", means: "from the first argument that starts with --, passed to each NAME (memory-scaler --nodes 4,1000,5000)" },
  ],
  notes: ["Exit code: non-zero when any benchmark failed; 2 usage."],
});
const firstOption = args.findIndex((a) => a.startsWith("--"));
const wanted = firstOption === -1 ? args : args.slice(0, firstOption);
const passed = firstOption === -1 ? [] : args.slice(firstOption);
const unknown = wanted.filter((w) => !available.includes(w));
if (passed.length > 0 && wanted.length === 0) {
  console.error("bench: options need the benchmark(s) they are for, e.g. npm run bench -- memory-scaler --nodes 4,1000");
  process.exit(2);
}
if (unknown.length) {
  console.error(`bench: unknown benchmark(s) ${unknown.join(", ")}; available: ${available.join(", ")}`);
  process.exit(2);
}
let failed = 0;
for (const name of wanted.length ? wanted : available) {
  console.log(`\n=== ${name} ===`);
  const res = spawnSync(process.execPath, [path.join(here, `${name}.ts`), ...passed], { stdio: "inherit" });
  if (res.status !== 0) {
    failed++;
    console.error(`bench: ${name} exited with ${res.status ?? res.signal}`);
  }
}
process.exit(failed ? 1 : 0);
