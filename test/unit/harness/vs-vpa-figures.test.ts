import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { figures, figuresTable, reliefText, type PodSample } from "../../harness/lib/vs-vpa-figures.ts";

const Mi = 2 ** 20;
const basis = { startLimitBytes: 256 * Mi, pressurePercent: 75, sampleSeconds: 5 };
const sample = (t: number, over: Partial<PodSample> = {}): PodSample =>
  ({ t, arm: "vpa", pattern: "spike", uid: "a", running: true, limitBytes: 256 * Mi, workingSetBytes: 100 * Mi, restartCount: 0, ...over });

describe("figures", () => {
  test("a container OOM-killed twice, then a new Pod with more: two kills, two restarts, one replacement, relief 10 s after the first kill", () => {
    const [f] = figures([
      sample(0),
      sample(5, { restartCount: 1, lastTerminatedReason: "OOMKilled", oomEvents: 0 }),
      sample(10, { restartCount: 2, lastTerminatedReason: "OOMKilled", running: false }),
      sample(15, { uid: "b", limitBytes: 512 * Mi, workingSetBytes: 320 * Mi }),
    ], basis);
    assert.ok(f);
    assert.deepEqual({ oomKills: f.oomKills, restarts: f.restarts, replacements: f.replacements, pressureAt: f.pressureAt, reliefAt: f.reliefAt, scales: f.scales, peak: f.peakLimitBytes / Mi },
      { oomKills: 2, restarts: 2, replacements: 1, pressureAt: 5, reliefAt: 15, scales: 1, peak: 512 });
    assert.equal(reliefText(f), "10 s");
  });

  test("a child killed while the container lives on counts once; the event of a kill that ended the container is not counted twice", () => {
    const [child] = figures([sample(0, { pattern: "child", oomEvents: 0 }), sample(5, { pattern: "child", oomEvents: 1 }), sample(10, { pattern: "child", oomEvents: 1 })], basis);
    assert.equal(child?.oomKills, 1);
    assert.equal(child?.restarts, 0);
    const [main] = figures([sample(0, { oomEvents: 1 }), sample(5, { restartCount: 1, lastTerminatedReason: "OOMKilled", oomEvents: 0 })], basis);
    assert.equal(main?.oomKills, 1);
  });

  test("slack: limit minus working set over running samples, in GiB·min; none for a sample not running or not scraped", () => {
    const [f] = figures([
      sample(0, { workingSetBytes: 0, limitBytes: 1024 * Mi * 12 }),
      sample(5, { running: false }),
      sample(10, { workingSetBytes: undefined }),
    ], { ...basis, startLimitBytes: 1024 * Mi * 12 });
    // 12 GiB for 5 s is 1 GiB·min.
    assert.equal(f?.slackGiBMinutes, 1);
  });

  test("relief before pressure is ahead; in the same sampling, at most its interval; no relief after pressure is none; neither is no pressure", () => {
    assert.equal(reliefText({ pressureAt: 10, reliefAt: 10 }, 5), "≤ 5 s");
    const [ahead] = figures([sample(0, { limitBytes: 500 * Mi }), sample(5, { limitBytes: 500 * Mi, workingSetBytes: 300 * Mi })], basis);
    assert.equal(reliefText(ahead ?? {}), "ahead");
    const [none] = figures([sample(0, { workingSetBytes: 200 * Mi })], basis);
    assert.equal(reliefText(none ?? {}), "none");
    assert.equal(reliefText({}), "no pressure");
  });

  test("one row per arm and pattern, in the order they first appear", () => {
    const rows = figures([sample(0), sample(0, { arm: "none" }), sample(5)], basis);
    assert.deepEqual(rows.map((r) => r.arm), ["vpa", "none"]);
    const table = figuresTable(rows).split("\n");
    assert.equal(table.length, 4);
    assert.match(table[2] ?? "", /^\| spike \| vpa \| 0 \| 0 \| 0 \| no pressure \| 0\.\d\d \| 256Mi \| 0 \|$/);
  });
});
