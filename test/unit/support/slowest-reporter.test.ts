import assert from "node:assert/strict";
import { describe, it } from "node:test";
import slowestReporter, { FileTimes, formatSlowest, slowest, type FileTime } from "../../support/slowest-reporter.ts";

const t = (file: string, seconds: number, failed = false): FileTime => ({ file, seconds, failed });

describe("slowest", () => {
  const cases: { name: string; times: FileTime[]; count: number; want: string[] }[] = [
    { name: "slowest first", times: [t("a", 1), t("b", 3), t("c", 2)], count: 10, want: ["b", "c", "a"] },
    { name: "only count of them", times: [t("a", 1), t("b", 3), t("c", 2)], count: 2, want: ["b", "c"] },
    { name: "equal times in file order", times: [t("z", 2), t("y", 2), t("x", 1)], count: 10, want: ["y", "z", "x"] },
    { name: "none", times: [], count: 10, want: [] },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(slowest(c.times, c.count).map((x) => x.file), c.want));
});

describe("formatSlowest", () => {
  it("a heading with the count and the summed time, then the files, seconds aligned, failures marked", () => {
    const text = formatSlowest([t("test/a.test.ts", 5.04), t("test/b.test.ts", 612.25, true), t("test/c.test.ts", 40)], 2);
    assert.equal(text, [
      "slowest 2 of 3 test files (657.3 s summed over files run concurrently):",
      " 1. 612.3 s  test/b.test.ts  (failed)",
      " 2.  40.0 s  test/c.test.ts",
      "",
    ].join("\n"));
  });
  it("nothing when no file ran", () => assert.equal(formatSlowest([]), ""));
});

describe("FileTimes", () => {
  const cwd = "/repo";
  const complete = (name: string, file: string, ms: number, passed = true, nesting = 0) =>
    ({ type: "test:complete", data: { name, file, nesting, details: { duration_ms: ms, passed } } });
  const summary = (file: string, ms: number, failed = 0) => ({ type: "test:summary", data: { file, duration_ms: ms, counts: { failed, cancelled: 0 }, success: failed === 0 } });

  it("a file's own test:complete (its name the file's path), not its tests'", () => {
    const times = new FileTimes(cwd);
    for (const e of [complete("first test", "/repo/test/a.test.ts", 100), complete("nested", "/repo/test/a.test.ts", 50, true, 1), summary("/repo/test/a.test.ts", 900), complete("test/a.test.ts", "/repo/test/a.test.ts", 1200)]) times.add(e);
    assert.deepEqual(times.all(), [t("test/a.test.ts", 1.2)]);
  });
  it("the summary when the file had no test:complete of its own; a failure from either", () => {
    const times = new FileTimes(cwd);
    times.add(summary("/repo/test/b.test.ts", 2500, 1));
    times.add(complete("test/c.test.ts", "/repo/test/c.test.ts", 300, false));
    assert.deepEqual(times.all().sort((a, b) => a.file.localeCompare(b.file)), [t("test/b.test.ts", 2.5, true), t("test/c.test.ts", 0.3, true)]);
  });
  it("ignores events without a file (the run's diagnostics and summary)", () => {
    const times = new FileTimes(cwd);
    times.add({ type: "test:diagnostic", data: { nesting: 0 } } as never);
    times.add({ type: "test:summary", data: { duration_ms: 5000 } });
    assert.deepEqual(times.all(), []);
  });
});

describe("the reporter", () => {
  it("prints the report once the events end, and nothing before", async () => {
    async function* events() {
      yield { type: "test:complete", data: { name: "test/a.test.ts", file: `${process.cwd()}/test/a.test.ts`, nesting: 0, details: { duration_ms: 2000, passed: true } } };
    }
    const out: string[] = [];
    for await (const chunk of slowestReporter(events())) out.push(chunk);
    assert.deepEqual(out, ["\nslowest 1 of 1 test files (2.0 s summed over files run concurrently):\n 1. 2.0 s  test/a.test.ts\n"]);
  });
});
