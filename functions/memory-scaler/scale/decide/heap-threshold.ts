/**
 * The evidence of a heap-threshold alert (`AppMonitorHeapThreshold`, pure): a container whose
 * `spec.containerPolicies` entry says `heapMetrics: Watch` is scaled only when Prometheus shows its
 * used heap, from its runtime's own metrics, at or above the entry's heap threshold now (the alert
 * may be minutes old; a collection may have freed the heap since). The percent is computed by
 * Prometheus from the same series as the rule (`functions/lib/heap-metrics.ts`). The answer is the
 * heap error's: the limit and the runtime's heap setting in one rollout (`heap-settings.ts`), in
 * every `updateMode` (`heap-relief.ts`); a bare Pod, which has no template to roll out, is
 * `HeapNeedsRollout` (docs/fixed-heaps.md, "The heap's own threshold").
 */
import type { AppMonitorSpec } from "../../../lib/appmonitor.ts";
import type { HeapMetricsRuntime } from "../../../lib/heap-metrics.ts";
import { policyOf } from "../../caps.ts";
import type { ContainerChange, SkippedContainer } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import { afterCheck } from "./evidence.ts";

/** A container whose heap its AppMonitor watches: its runtime and its heap threshold, in percent of its heap limit. */
export interface HeapWatched {
  readonly container: string;
  readonly runtime: HeapMetricsRuntime;
  readonly thresholdPercent: number;
}

/**
 * The containers of `containers` whose `spec.containerPolicies` entry (their own, else `*`'s) says
 * `heapMetrics: Watch` with a runtime, each with `heapThresholdPercent`, else `memThresholdPercent`.
 */
export function heapWatched(containers: readonly string[], spec: Pick<AppMonitorSpec, "containerPolicies" | "memThresholdPercent">): HeapWatched[] {
  return containers.flatMap((container) => {
    const policy = policyOf(spec, container);
    if (policy?.heapMetrics !== "Watch" || policy.runtime === undefined) return [];
    return [{ container, runtime: policy.runtime, thresholdPercent: policy.heapThresholdPercent ?? spec.memThresholdPercent }];
  });
}

/**
 * Splits `changes` into those whose container's heap is at or above its heap threshold
 * (`percents`: used heap in percent of the heap limit per container, from Prometheus), and the
 * others: `BelowThreshold` (the heap is below it now), `NotMeasured` (no heap series, or the
 * AppMonitor no longer watches the container's heap: its rule has no such alert now).
 */
export function checkHeapThreshold(
  changes: readonly ContainerChange[],
  watched: readonly HeapWatched[],
  percents: ReadonlyMap<string, number>,
): { keep: ContainerChange[]; skipped: SkippedContainer<"BelowThreshold" | "NotMeasured">[] } {
  const keep: ContainerChange[] = [];
  const skipped: SkippedContainer<"BelowThreshold" | "NotMeasured">[] = [];
  for (const change of changes) {
    const { container } = change;
    const watch = watched.find((w) => w.container === container);
    const percent = percents.get(container);
    if (watch === undefined) {
      skipped.push({ container, reason: "NotMeasured", message: `the AppMonitor no longer watches container ${container}'s heap (containerPolicies heapMetrics): its heap-threshold alert is not acted on` });
    } else if (percent === undefined) {
      skipped.push({ container, reason: "NotMeasured", message: `Prometheus has no ${watch.runtime} heap series for container ${container} (docs/fixed-heaps.md): cannot confirm the alert` });
    } else if (percent >= watch.thresholdPercent) {
      keep.push(change);
    } else {
      const shown = Math.round(percent * 100) / 100;
      skipped.push({ container, reason: "BelowThreshold", percent: shown, message: `container ${container}'s ${watch.runtime} heap is at ${shown}% of its heap limit, below the heap threshold of ${watch.thresholdPercent}%` });
    }
  }
  return { keep, skipped };
}

/**
 * The plan after the heap-threshold check ({@link checkHeapThreshold}, through `evidence.ts`
 * `afterCheck`): the scale with the containers it confirmed, or the skip; `HeapNeedsRollout` when
 * the target resizes in place (`rollsOut` false: a bare Pod), which cannot reach a heap sized at start.
 */
export function afterHeapThresholdCheck(scale: Scale, checked: ReturnType<typeof checkHeapThreshold>, watched: readonly HeapWatched[], rollsOut: boolean): Skip | Scale {
  const after = afterCheck(scale, "heapThreshold", checked);
  if (after.action === "skip" || rollsOut) return after;
  const which = after.changes.map((c) => `container ${c.container}'s ${watched.find((w) => w.container === c.container)?.runtime ?? ""} heap is above its heap threshold`).join("; ");
  const message = `${which}: a resize in place cannot reach a heap its runtime sized when it started, so the Pod was not resized, and a bare Pod has no Pod template to roll out with the heap setting: recreate it with a larger limit and its heap set, or run it under a Deployment`;
  return { action: "skip", reason: "HeapNeedsRollout", message, skipped: after.skipped };
}
