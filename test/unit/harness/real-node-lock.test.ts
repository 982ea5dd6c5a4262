import assert from "node:assert/strict";
import { test } from "node:test";
import { runDirFor, runOfSharedStack, sharedStackDir } from "../../harness/stack/real-node-lock.ts";

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
