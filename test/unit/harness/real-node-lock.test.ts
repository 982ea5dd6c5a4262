import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { acquireRealNodeLock, lendRunStack, lentMarker, RUN_DIR_ENV, runDirFor, runOfSharedStack, sharedStackDir } from "../../harness/stack/real-node-lock.ts";

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

test("a lent stack is joined by the files that hold the node together, and taken back only once they have left", async (t) => {
  const run = await mkdtemp(path.join(os.tmpdir(), "appmonitor-lend-"));
  const before = process.env[RUN_DIR_ENV];
  process.env[RUN_DIR_ENV] = run;
  t.after(async () => {
    if (before === undefined) delete process.env[RUN_DIR_ENV];
    else process.env[RUN_DIR_ENV] = before;
    await rm(run, { recursive: true, force: true });
  });
  const takeBack = await lendRunStack();
  assert.equal(readFileSync(lentMarker(run), "utf8"), String(process.pid));
  // Joined at once: no wait for the run's lock, which the lender holds.
  const leave = await acquireRealNodeLock({ alongside: true });
  let takenBack = false;
  const taking = takeBack().then(() => (takenBack = true));
  await new Promise((resolve) => setTimeout(resolve, 300));
  try {
    assert.equal(takenBack, false, "not taken back while a file that joined is on it");
    assert.ok(!existsSync(lentMarker(run)), "no longer lent meanwhile: no other file joins");
  } finally {
    await leave();
  }
  await taking;
});
