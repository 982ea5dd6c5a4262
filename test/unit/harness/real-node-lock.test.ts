import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout } from "node:timers/promises";
import { acquireRunLock, RUN_DIR_ENV, runDirFor, runOfSharedStack, sharedStackDir } from "../../harness/stack/real-node-lock.ts";
import { tempDir } from "../../support/temp-dir.ts";

test("runOfSharedStack names the run of a run's shared stack, and no other stack's", () => {
  const run = runDirFor("5fadc861", "/tmp");
  assert.equal(run, "/tmp/appmonitor-real-node-run-5fadc861");
  assert.equal(runOfSharedStack(sharedStackDir(run), "/tmp"), run);
  // A stack a person started, or one elsewhere, is not a run's: no run takes it down.
  for (const dir of [
    "/work/main/.stack", "/tmp/appmonitor-real-node-run-5fadc861", "/tmp/appmonitor-real-node-run-5fadc861/other",
    "/var/tmp/appmonitor-real-node-run-5fadc861/shared", "/tmp/appmonitor-real-node-run-5fadc86/shared",
    "/tmp/appmonitor-real-node-run-5FADC861/shared", "/tmp/x/appmonitor-real-node-run-5fadc861/shared", "",
  ]) assert.equal(runOfSharedStack(dir, "/tmp"), undefined, dir);
});

test("acquireRunLock: within a run, a second holder of a name waits for the first's release, another name does not; outside a run, none waits", async () => {
  const scratch = await tempDir("appmonitor-run-lock");
  const before = process.env[RUN_DIR_ENV];
  process.env[RUN_DIR_ENV] = scratch.path;
  try {
    const first = await acquireRunLock("eventing");
    let taken = false;
    const second = acquireRunLock("eventing").then((release) => {
      taken = true;
      return release;
    });
    await setTimeout(300);
    assert.equal(taken, false, "the second waits while the first holds it");
    await (await acquireRunLock("other"))();
    await first();
    await (await second)();
    assert.equal(taken, true);
    delete process.env[RUN_DIR_ENV];
    const [a, b] = await Promise.all([acquireRunLock("eventing"), acquireRunLock("eventing")]);
    await Promise.all([a(), b()]);
  } finally {
    if (before === undefined) delete process.env[RUN_DIR_ENV];
    else process.env[RUN_DIR_ENV] = before;
    await scratch.remove();
  }
});
