import assert from "node:assert/strict";
import { test } from "node:test";
import { lineChartSvg } from "../../support/svg-chart.ts";

test("lineChartSvg draws an SVG with one legend entry per series, headlessly", async () => {
  const svg = await lineChartSvg(
    [
      { series: "first cost", size: 10, value: 1.5 },
      { series: "first cost", size: 100, value: 15 },
      { series: "second cost", size: 10, value: 0 },
      { series: "second cost", size: 100, value: 2_000 },
    ],
    { title: "a title", x: "sizes", y: "ms" },
  );
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  for (const text of ["a title", "sizes", "ms", "first cost", "second cost"]) assert.ok(svg.includes(`>${text}<`), text);
});
