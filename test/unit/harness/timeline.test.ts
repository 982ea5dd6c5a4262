import { test } from "node:test";
import assert from "node:assert/strict";
import { timelineLines, type TimelineHop } from "../../harness/demo/timeline.ts";

const ms = (source: string): Pick<TimelineHop, "source" | "resolutionMs"> => ({ source, resolutionMs: 1 });

test("hops are listed in the order they happened, not the order they were observed, each with its clock", () => {
  // Observed in this order: the scrape was noticed by a poll after the alert's activeAt was read.
  const hops: TimelineHop[] = [
    { name: "memhog Pod Running", at: 1_000, ...ms("seen by this run's poll") },
    { name: "usage crossed the threshold", at: 10_000, detail: "240Mi of 384Mi", ...ms("memhog's log") },
    { name: "alert pending in Prometheus", at: 10_600, ...ms("Prometheus's activeAt of the alert") },
    { name: "working set scraped by Prometheus", at: 10_400, ...ms("the sample's timestamp in Prometheus") },
    { name: "new Pod Running, old Pod gone", at: 80_000, source: "the kubelet's startedAt", resolutionMs: 1000 },
  ];
  assert.deepEqual(timelineLines(hops, "usage crossed the threshold"), [
    "    -9.0 s  memhog Pod Running  (seen by this run's poll)",
    "    +0.0 s  usage crossed the threshold: 240Mi of 384Mi  (memhog's log)",
    "    +0.4 s  working set scraped by Prometheus  (the sample's timestamp in Prometheus)",
    "    +0.6 s  alert pending in Prometheus  (Prometheus's activeAt of the alert)",
    "≈  +70.0 s  new Pod Running, old Pod gone  (the kubelet's startedAt)",
  ]);
});

test("a hop less than 50 ms before the origin is +0.0 s, never -0.0 s", () => {
  const [line] = timelineLines([{ name: "seen", at: 960, ...ms("x") }, { name: "origin", at: 1_000, ...ms("y") }], "origin");
  assert.equal(line?.trim(), "+0.0 s  seen  (x)");
});

test("hops at the same time keep the chain's order, and without the origin hop no offsets are shown", () => {
  const hops: TimelineHop[] = [
    { name: "b", at: 5, ...ms("x") },
    { name: "a", at: 5, ...ms("y") },
    { name: "c", at: 1, ...ms("z") },
  ];
  assert.deepEqual(timelineLines(hops, "missing").map((l) => l.trim()), ["c  (z)", "b  (x)", "a  (y)"]);
});
