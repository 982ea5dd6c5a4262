// The README's first command as a newcomer runs it: `npm run demo`, the CLI itself (its for
// shortened by `--for-seconds`, which the timeline shows), on a cache
// that holds only the Go-built binaries (linked from the real cache, so they are not rebuilt) and
// a podman storage of its own, empty: no base image, no function or memhog image, no archive.
// It must build all of them, start the real-node stack, scale memhog and say so.
//
// Part of `npm test` (root: the real node, podman). The demo takes the real node's lock itself,
// once its images are built: the builds run beside the other real-node files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { cacheDir, repoRoot } from "../../scripts/lib/paths.ts";
import { podman } from "../../scripts/images/podman.ts";
import { runCommand } from "../support/run-command.ts";
import { SHORT_FOR_SECONDS } from "../support/stack.ts";
import { tempDir } from "../support/temp-dir.ts";

test("`npm run demo` with only the Go-built binaries cached builds its images and scales memhog 384Mi/256Mi → 768Mi/512Mi", { timeout: 2_400_000 }, async () => {
  const goBuilt = path.join(cacheDir(), "bin");
  assert.ok(existsSync(path.join(goBuilt, "kube-apiserver")), `${goBuilt} holds no binaries: bash test/harness/bins/build.sh first`);
  const scratch = await tempDir("appmonitor-demo-cli");
  const cache = path.join(scratch.path, "cache");
  // podman's own store for this run, so the base image and the layers the other tests built are not there.
  const store = { graphroot: path.join(scratch.path, "storage"), runroot: path.join(scratch.path, "run") };
  let demo;
  try {
    await mkdir(cache);
    await symlink(goBuilt, path.join(cache, "bin"));
    const driver = (await podman(["info", "--format", "{{.Store.GraphDriverName}}"])).stdout.trim();
    const storageConf = path.join(scratch.path, "storage.conf");
    await writeFile(storageConf, `[storage]\ndriver = "${driver}"\ngraphroot = "${store.graphroot}"\nrunroot = "${store.runroot}"\n`);
    const env = { ...process.env, APPMONITOR_CACHE: cache, APPMONITOR_STACK_DIR: path.join(scratch.path, "stack"), CONTAINERS_STORAGE_CONF: storageConf };
    // The for of 5 s instead of the example's minute: this test is about what the demo builds.
    demo = await runCommand("npm", ["run", "demo", "--", "--for-seconds", String(SHORT_FOR_SECONDS)], { cwd: repoRoot, env, timeoutMs: 2_300_000 });
  } finally {
    // The store's images hold overlay layers: podman removes them, then the directory goes.
    await runCommand("podman", ["--root", store.graphroot, "--runroot", store.runroot, "rmi", "--all", "--force"], { timeoutMs: 120_000 }).catch(() => undefined);
    await scratch.remove();
  }
  const out = demo.stdout;
  // The demo's lines on the real node's lock, in the run's log with the other files'.
  for (const line of demo.stderr.split("\n").filter((l) => l.startsWith("# real-node lock:"))) process.stderr.write(`${line}\n`);
  assert.equal(demo.code, 0, `npm run demo exited ${demo.code}:\n${out.slice(-6000)}\n${demo.stderr.slice(-4000)}`);

  // Everything the demo needs was built, one line each, with the cold expectation.
  assert.match(out, /images: base image localhost\/appmonitor\/node-base:\S+: building \(.*cold about \d+ s\)/);
  for (const [i, name] of ["memhog", "alert-receiver", "memory-scaler", "rule-sync", "dead-letter"].entries()) {
    assert.match(out, new RegExp(`images: \\[${i + 1}/5\\] ${name}: building \\(cold about \\d+ s`));
    assert.match(out, new RegExp(`images: ${name}: built in \\d+\\.\\d s`));
  }
  assert.match(out, /images: 5 ready/);
  assert.match(out, /stack: registry ready at \S+ in \d+\.\d s \(its start and the pushes\), 5 images served \(5 pushed now\)/);
  assert.doesNotMatch(out, /no archive for/);

  // The scale, as the demo reports it.
  assert.match(out, /memhog before: requests 256Mi, limits 384Mi/);
  assert.match(out, /memhog after: {2}requests 512Mi, limits 768Mi/);

  // The AppMonitor's for as --for-seconds set it.
  assert.match(out, new RegExp(`alert pending in Prometheus: .*, for ${SHORT_FOR_SECONDS} s`));

  // The timeline is in the order things happened: its offsets never go back.
  const timeline = out.slice(out.indexOf("timeline, in the order it happened"), out.indexOf("memhog before:")).split("\n").slice(1).filter((l) => l.trim());
  const offsets = timeline.map((l) => Number(/^[≈ ] *([+-]\d+\.\d) s {2}/.exec(l)?.[1]));
  assert.ok(offsets.length >= 10 && offsets.every((o) => Number.isFinite(o)), `timeline lines:\n${timeline.join("\n")}`);
  assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b), `timeline out of order:\n${timeline.join("\n")}`);
  for (const line of timeline) assert.match(line, /\(.+\)$/, `each hop names its clock: ${line}`);
});
