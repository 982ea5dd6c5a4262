// Each trigger as one object (functions/memory-scaler/scale/triggers/): its alert, what it asks
// Prometheus, and the evidence that confirms it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ALERT_TRIGGERS, triggerOf } from "../../../../../functions/lib/alert-event.ts";
import type { Verifier } from "../../../../../functions/memory-scaler/kube/prometheus.ts";
import type { Scale } from "../../../../../functions/memory-scaler/outcome.ts";
import { TRIGGERS } from "../../../../../functions/memory-scaler/scale/triggers/index.ts";
import type { Evidence } from "../../../../../functions/memory-scaler/scale/triggers/trigger.ts";

const NOW = new Date("2025-06-01T12:00:00Z");
const scale: Scale = { action: "scale", changes: [{ container: "app", from: { limit: "100Mi" }, to: { limit: "200Mi" } }], skipped: [], dryRun: false };
const spec = { windowSeconds: 600, horizonSeconds: 1800, floorPercent: 50 };
const watching = { memThresholdPercent: 90, containerPolicies: [{ containerName: "app", runtime: "JVM" as const, heapMetrics: "Watch" as const, heapThresholdPercent: 80 }] };
const evidence: Evidence = { statuses: [], now: NOW, rollsOut: true, oomWindowSeconds: 600, running: [{ name: "app", limit: "100Mi" }], thresholdPercent: 90, trend: spec, spec: watching, measured: undefined };
const MI = 1024 * 1024;

/** A verifier that says which question it was asked. */
function verifier(asked: string[]): Verifier {
  const answer = (what: string) => async () => (asked.push(what), new Map([["app", 95 * MI]]));
  return { workingSets: answer("workingSets"), predictions: answer("predictions"), peaks: answer("peaks"), heapPercents: answer("heapPercents") };
}

describe("triggers", () => {
  it("one per trigger an alert can carry, each named by its own alertname", () => {
    assert.deepEqual(Object.keys(TRIGGERS).sort(), [...ALERT_TRIGGERS].sort());
    const schema = JSON.parse(readFileSync(new URL("../../../../../schemas/alert-event.schema.json", import.meta.url), "utf8")) as { properties: { trigger: { enum: string[] } } };
    assert.deepEqual(schema.properties.trigger.enum, ALERT_TRIGGERS, "the event schema's triggers, in its order");
    for (const [name, trigger] of Object.entries(TRIGGERS)) {
      assert.equal(trigger.name, name);
      assert.equal(triggerOf(trigger.alertname), name);
    }
  });

  it("measure: threshold asks the working sets, trend the predictions (only with spec.trend), an OOM kill nothing", async () => {
    const what = { namespace: "ns", pod: "p", containers: ["app"], trend: spec, spec: watching };
    for (const [name, expected] of [["threshold", ["workingSets"]], ["trend", ["predictions"]], ["oomKilled", []], ["heapError", []], ["heapThreshold", ["heapPercents"]]] as const) {
      const asked: string[] = [];
      await TRIGGERS[name].measure(verifier(asked), what);
      assert.deepEqual(asked, expected, name);
    }
    const asked: string[] = [];
    assert.equal(await TRIGGERS.trend.measure(verifier(asked), { ...what, trend: undefined }), undefined);
    assert.deepEqual(asked, []);
    assert.equal(await TRIGGERS.threshold.measure(undefined, what), undefined, "no Prometheus: not asked");
    assert.deepEqual(await TRIGGERS.heapThreshold.measure(verifier(asked), { ...what, spec: { memThresholdPercent: 90 } }), new Map(), "no heap watched: nothing asked");
    assert.deepEqual(asked, []);
  });

  it("check: unmeasured threshold and trend alerts pass as they came; a trend without spec.trend and an unseen OOM kill do not", () => {
    assert.equal(TRIGGERS.threshold.check(scale, evidence), scale);
    assert.equal(TRIGGERS.trend.check(scale, evidence), scale);
    const off = TRIGGERS.trend.check(scale, { ...evidence, trend: undefined });
    assert.equal(off.action === "skip" ? off.reason : off.action, "NotTrending");
    const oom = TRIGGERS.oomKilled.check(scale, evidence);
    assert.equal(oom.action === "skip" ? oom.reason : oom.action, "NotOOMKilled");
  });

  it("check: measured against the running limit", () => {
    assert.equal(TRIGGERS.threshold.check(scale, { ...evidence, measured: new Map([["app", 95 * MI]]) }).action, "scale");
    const below = TRIGGERS.threshold.check(scale, { ...evidence, measured: new Map([["app", 50 * MI]]) });
    assert.equal(below.action === "skip" ? below.reason : below.action, "BelowThreshold");
    const flat = TRIGGERS.trend.check(scale, { ...evidence, measured: new Map([["app", 50 * MI]]) });
    assert.equal(flat.action === "skip" ? flat.reason : flat.action, "NotTrending");
  });

  it("check: a heap error only from the runtime's message, by rollout; a hold said with it", () => {
    const ended = (message: string | undefined) => [{ name: "app", lastState: { terminated: { reason: "Error", exitCode: 139, finishedAt: NOW, ...(message === undefined ? {} : { message }) } } }];
    const heap = "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory";
    const confirmed = TRIGGERS.heapError.check(scale, { ...evidence, statuses: ended(heap) });
    assert.equal(confirmed.action === "scale" ? confirmed.heapErrors?.[0]?.runtime : confirmed.reason, "Node.js");
    const reason = (e: Partial<Evidence>) => {
      const checked = TRIGGERS.heapError.check(scale, { ...evidence, ...e });
      return checked.action === "skip" ? checked.reason : checked.action;
    };
    assert.equal(reason({ statuses: ended(heap), rollsOut: false }), "HeapNeedsRollout");
    assert.equal(reason({ statuses: ended("Segmentation fault") }), "NotHeapError");
    assert.equal(reason({ statuses: ended(undefined) }), "NoTerminationMessage");
    assert.equal(reason({}), "NotHeapError");
    const explained = TRIGGERS.heapError.explain?.({ action: "skip", reason: "AtCap", message: "at its cap" }, { ...evidence, statuses: ended(heap) });
    assert.match(explained?.message ?? "", /^at its cap; container app's last run ended in Node\.js's heap error/);
  });

  it("check: the heap's threshold from the measured heap percent, by rollout; each needs a new start where it answers a heap", () => {
    const reason = (e: Partial<Evidence>) => {
      const checked = TRIGGERS.heapThreshold.check(scale, { ...evidence, ...e });
      return checked.action === "skip" ? checked.reason : checked.action;
    };
    assert.equal(reason({ measured: new Map([["app", 85]]) }), "scale", "85% of the heap limit, at or above the entry's 80");
    assert.equal(reason({ measured: new Map([["app", 79.9]]) }), "BelowThreshold");
    assert.equal(reason({ measured: new Map() }), "NotMeasured", "no heap series");
    assert.equal(reason({ measured: new Map([["app", 95]]), spec: { memThresholdPercent: 90 } }), "NotMeasured", "no longer watched");
    assert.equal(reason({ measured: new Map([["app", 85]]), rollsOut: false }), "HeapNeedsRollout");
    assert.equal(reason({}), "scale", "no Prometheus: as it came");
    assert.deepEqual(Object.values(TRIGGERS).filter((t) => t.needsNewStart === true).map((t) => t.name).sort(), ["heapError", "heapThreshold"]);
  });
});
