// test/harness/bins/build.sh as a person watching `npm run demo` sees it: on a cache that lacks one
// set, it builds that set alone and says so in its own lines (which sets, n of m, the cold time to
// expect, the time it took), which buildBinaries hands to its progress callback; Go's output stays
// out of them. The cache is the real one linked file by file, less kube-proxy and its stamp, so
// only that small set is built again (its Go build cache is warm). With its sets built, it answers
// without waiting for the lock another build holds.
import { spawn } from "node:child_process";
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readdir, symlink } from "node:fs/promises";
import path from "node:path";
import { cacheDir, repoRoot } from "../../../scripts/lib/paths.ts";
import { buildBinaries } from "../../../scripts/lib/binaries.ts";
import { coldTimes } from "../../harness/bins/cold-times.ts";
import { runCommand } from "../../support/run-command.ts";
import { waitFor } from "../../support/stack.ts";
import { tempDir } from "../../support/temp-dir.ts";

test("build.sh builds only the set missing from the cache and reports it as n of m with its cold time and elapsed seconds", { timeout: 900_000 }, async (t) => {
  // Two sets, not all: under a run that builds the sets beside the suite, the others may not be built yet.
  const sets = ["kube", "proxy"] as const;
  const real = await buildBinaries(process.env, undefined, sets);
  assert.equal(real, path.join(cacheDir(), "bin"));
  const scratch = await tempDir("appmonitor-build-bins");
  t.after(() => scratch.remove());
  const bin = path.join(scratch.path, "bin");
  await mkdir(bin);
  for (const entry of await readdir(real)) {
    if (entry === "kube-proxy" || entry.startsWith(".proxy-") || entry === ".build.lock") continue;
    await symlink(path.join(real, entry), path.join(bin, entry));
  }
  const lines: string[] = [];
  const out = await buildBinaries({ ...process.env, APPMONITOR_CACHE: scratch.path }, (line) => lines.push(line), sets);
  assert.equal(out, bin);
  assert.ok(existsSync(path.join(bin, "kube-proxy")), "kube-proxy built into the scratch cache");
  // n of m: m the sets of cold-times.txt, proxy's place among them n.
  const all = coldTimes().sets.map((s) => s.name);
  const step = `\\[${all.indexOf("proxy") + 1}\\/${all.length}\\] proxy`;
  assert.match(lines[0] ?? "", new RegExp(`^1 of ${sets.length} sets to build from the pinned Go modules \\(proxy\\): about 1 min`));
  assert.match(lines[1] ?? "", new RegExp(`^${step}: building k8s\\.io\\/kubernetes\\/cmd\\/kube-proxy \\(cold about \\d+ s\\) \\.\\.\\.$`));
  assert.match(lines[2] ?? "", new RegExp(`^${step}: built in \\d+ s$`));
  assert.equal(lines.length, 3, `only build.sh's own step lines: ${lines.join(" | ")}`);

  // Warm: nothing to build, nothing said (the script itself: buildBinaries runs it once per process and cache).
  const again = await runCommand("bash", [path.join(repoRoot, "test/harness/bins/build.sh"), ...sets], { env: { ...process.env, APPMONITOR_CACHE: scratch.path }, timeoutMs: 120_000 });
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(again.stderr.split("\n").filter((l) => l.startsWith("build-bins: ")), []);

  // Built while another build holds the lock (as .ci/run's builds of later sets do): no wait for it,
  // so a test file whose sets are built starts at once. Killed at 60 s had it waited.
  const lock = path.join(bin, ".build.lock");
  // A process group of its own: flock's child, the sleep, holds the lock too, and goes with it.
  const holder = spawn("flock", [lock, "sleep", "300"], { stdio: "ignore", detached: true });
  t.after(() => process.kill(-(holder.pid as number)));
  await waitFor("flock holding bin/.build.lock", async () => (await runCommand("flock", ["-n", lock, "true"])).code !== 0 || undefined, 10_000, 50);
  const beside = await runCommand("bash", [path.join(repoRoot, "test/harness/bins/build.sh"), ...sets], { env: { ...process.env, APPMONITOR_CACHE: scratch.path }, timeoutMs: 60_000 });
  assert.equal(beside.code, 0, beside.stderr);
  assert.equal(beside.stdout.trim(), bin);
  assert.equal(holder.exitCode, null, "the other build still holds the lock");
});
