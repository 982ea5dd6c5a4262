// The chart of a demo run: its data from the chain's result (MiB, seconds from the crossing, the
// threshold at the AppMonitor's percent of each limit sample, the hops marked) and its SVG.
import { test } from "node:test";
import assert from "node:assert/strict";
import { labelRows, runChartInput, runChartSvg } from "../../harness/demo/run-chart.ts";

const MiB = 2 ** 20;
const t0 = Date.parse("2026-12-02T05:00:00Z");
const result = {
  before: { request: "256Mi", limit: "384Mi" },
  after: { request: "512Mi", limit: "768Mi" },
  hops: [
    { name: "memhog Pod Running", at: t0 - 20_000 },
    { name: "usage crossed the threshold", at: t0 },
    { name: "alert firing in Prometheus", at: t0 + 60_000 },
    { name: "Deployment patched by memory-scaler", at: t0 + 61_500 },
    { name: "new Pod Running, old Pod gone", at: t0 + 63_000 },
  ],
  memory: {
    thresholdPercent: 75,
    samples: [
      { series: "working set" as const, pod: "old", at: t0 - 10_000, bytes: 200 * MiB },
      { series: "limit" as const, pod: "old", at: t0 - 10_000, bytes: 384 * MiB },
      { series: "working set" as const, pod: "old", at: t0 + 1_000, bytes: 300 * MiB },
      { series: "working set" as const, pod: "new", at: t0 + 64_000, bytes: 304 * MiB },
      { series: "limit" as const, pod: "new", at: t0 + 64_000, bytes: 768 * MiB },
    ],
  },
};

test("the samples in MiB and seconds from the crossing, a threshold sample beside each limit sample, the four hops marked", () => {
  const input = runChartInput(result, "usage crossed the threshold");
  assert.ok(input);
  assert.deepEqual(input.samples.filter((s) => s.series === "threshold").map((s) => [s.pod, s.t, s.mib]), [["old", -10, 288], ["new", 64, 576]]);
  assert.deepEqual(input.samples.filter((s) => s.series === "working set").map((s) => s.t), [-10, 1, 64]);
  assert.deepEqual(input.marks, [{ t: 0, label: "crossed" }, { t: 60, label: "firing" }, { t: 61.5, label: "patched" }, { t: 63, label: "new Pod" }]);
  assert.match(input.title, /384Mi → 768Mi, threshold 75%/);
});

test("no chart without memory samples or without the crossing", () => {
  assert.equal(runChartInput({ ...result, memory: undefined }, "usage crossed the threshold"), undefined);
  assert.equal(runChartInput(result, "no such hop"), undefined);
});

test("it renders as an SVG document with the marks' labels and the legend", async () => {
  const input = runChartInput(result, "usage crossed the threshold");
  assert.ok(input);
  const svg = await runChartSvg(input);
  assert.match(svg, /^<svg /);
  for (const text of ["crossed", "patched", "new Pod", "working set", "threshold", "seconds from the crossing"]) assert.ok(svg.includes(text), text);
});

// At 640 px over 90 s (about 7 px a second) a 7-letter label takes about 8 s.
for (const [why, marks, rows] of [
  ["hops at near-equal times stack, each on the next row", [[60, "firing"], [61.5, "patched"], [63, "new Pod"]], [0, 1, 2]],
  ["hops far apart share the lowest row", [[0, "crossed"], [30, "firing"], [60, "patched"]], [0, 0, 0]],
  ["a row is taken again once its last label has ended", [[0, "crossed"], [1, "firing"], [20, "patched"], [21, "new Pod"]], [0, 1, 0, 1]],
  ["the rows follow the marks' order as given, not their times", [[63, "new Pod"], [60, "firing"], [61.5, "patched"]], [2, 0, 1]],
  ["at the same time, the first given is lowest", [[5, "a"], [5, "b"]], [0, 1]],
] as const) {
  test(`label rows: ${why}`, () => {
    assert.deepEqual(labelRows(marks.map(([t, label]) => ({ t, label })), 640 / 90), rows);
  });
}

test("the drawn labels of hops at near-equal times do not overlap", async () => {
  const input = runChartInput(result, "usage crossed the threshold");
  assert.ok(input);
  const svg = await runChartSvg(input);
  const labels = [...svg.matchAll(/translate\(([\d.-]+),([\d.-]+)\)"[^>]*>(crossed|firing|patched|new Pod)<\/text>/g)]
    .map((m) => ({ x: Number(m[1]), y: Number(m[2]), text: m[3] ?? "" }));
  assert.equal(labels.length, 4);
  for (const a of labels) {
    for (const b of labels) {
      if (a === b || a.x > b.x) continue;
      const apart = Math.abs(a.y - b.y) >= 11 || a.x + a.text.length * 6 <= b.x;
      assert.ok(apart, `${a.text} (${a.x}, ${a.y}) and ${b.text} (${b.x}, ${b.y}) overlap`);
    }
  }
});
