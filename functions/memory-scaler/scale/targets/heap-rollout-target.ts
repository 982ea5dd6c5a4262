/**
 * The template target of a workload whose AppMonitor resizes in place (`spec.updateMode`
 * `InPlace` or `InPlaceOrRollout`) but whose raise must reach a heap its runtime sized when it
 * started (`../decide/heap-relief.ts`): the template target's checks, patch (the limit and the
 * heap setting in one compare-and-swap) and `Scaled` Events, with `InPlaceFallback` Warnings
 * naming the runtime and why the Pods were not resized in place.
 */
import { heapFallbackNote } from "../decide/heap-relief.ts";
import { knownRuntimes } from "../decide/heap-settings.ts";
import type { WriteTarget } from "./target.ts";

/**
 * `base` (a template target) whose written scale carries the in-place fallback's reason.
 * @param declared the Pod's first declared runtime (`heapSizedAtStart`), said when no raised container's runtime is known.
 */
export function heapRolloutTarget(base: WriteTarget, declared: string | undefined): WriteTarget {
  return {
    ...base,
    writer: {
      ...base.writer,
      async write(input) {
        const result = await base.writer.write(input);
        if (result.result !== "written") return result;
        const runtimes = knownRuntimes(input.changes.map((c) => c.container), input.heapErrors ?? [], input.appMonitor.spec);
        return { ...result, fallback: heapFallbackNote(runtimes, declared) };
      },
    },
  };
}
