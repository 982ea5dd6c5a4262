/** Watching rule groups load (functions/rule-sync/load-watcher.ts): one poll for every waiter, follows that end, close. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { createLoadWatcher } from "../../../functions/rule-sync/load-watcher.ts";
import type { AppliedRule } from "../../../functions/rule-sync/rule-loaded.ts";
import { waitUntil } from "../../harness/lib/wait-until.ts";
import { FakePrometheus, unreachable } from "../../support/rule-sync-fakes.ts";

const silent = pino({ level: "silent" });
const rule = (name: string, generation = 1): AppliedRule => ({ namespace: "demo", name, group: `appmonitor/demo/${name}`, generation, labels: {} });

describe("createLoadWatcher", () => {
  it("answers fifty waits with one request to Prometheus", async () => {
    const prometheus = new FakePrometheus();
    const names = Array.from({ length: 50 }, (_, i) => `m${i}`);
    for (const name of names) prometheus.load("demo", name, "1");
    const watcher = createLoadWatcher(prometheus, silent, { pollMs: 10 });
    const groups = await Promise.all(names.map((name) => watcher.wait(rule(name), 10_000)));
    assert.deepEqual(groups.map((g) => g?.name), names.map((name) => `appmonitor/demo/${name}`));
    assert.equal(prometheus.requests.rules, 1);
    assert.equal(watcher.watching(), 0);
    watcher.close();
  });

  it("a wait ends at its deadline with the group as last seen: an earlier generation, or nothing", async () => {
    const prometheus = new FakePrometheus();
    prometheus.load("demo", "old", "1");
    const watcher = createLoadWatcher(prometheus, silent, { pollMs: 5 });
    const [old, none] = await Promise.all([watcher.wait(rule("old", 2), 60), watcher.wait(rule("none"), 60)]);
    assert.equal(old?.rules[0]?.generation, "1");
    assert.equal(none, undefined);
    assert.equal(watcher.watching(), 0);
    watcher.close();
  });

  it("keeps polling through a Prometheus that does not answer, and resolves once it does", async () => {
    const prometheus = new FakePrometheus();
    prometheus.down = unreachable();
    const watcher = createLoadWatcher(prometheus, silent, { pollMs: 5 });
    const waiting = watcher.wait(rule("m"), 10_000);
    await waitUntil("a few failed polls", () => prometheus.requests.rules >= 3 || undefined);
    prometheus.down = undefined;
    prometheus.load("demo", "m", "1");
    assert.equal((await waiting)?.name, "appmonitor/demo/m");
    watcher.close();
  });

  it("a follow calls back once the group is loaded, and is dropped when it is not within its time", async () => {
    const prometheus = new FakePrometheus();
    const watcher = createLoadWatcher(prometheus, silent, { pollMs: 5, followMs: 40 });
    let called = 0;
    watcher.follow(rule("late"), async () => {
      called += 1;
    });
    watcher.follow(rule("never"), async () => {
      throw new Error("never loaded, never called");
    });
    assert.equal(watcher.watching(), 2);
    prometheus.load("demo", "late", "1");
    await waitUntil("the follows to end", () => watcher.watching() === 0 || undefined);
    assert.equal(called, 1);
    watcher.close();
  });

  it("close resolves pending waits as not loaded and stops polling", async () => {
    const prometheus = new FakePrometheus();
    const watcher = createLoadWatcher(prometheus, silent, { pollMs: 5 });
    const waiting = watcher.wait(rule("m"), 10_000);
    watcher.close();
    assert.equal(await waiting, undefined);
    const requests = prometheus.requests.rules;
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(prometheus.requests.rules, requests);
    assert.equal(await watcher.wait(rule("m"), 10_000), undefined, "nothing waits after close");
  });
});
