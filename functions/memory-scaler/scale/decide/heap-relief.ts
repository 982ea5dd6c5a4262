/**
 * How a raise reaches a heap its runtime sized when it started (pure): by a rollout of the Pod
 * template, whatever `spec.updateMode` says (docs/fixed-heaps.md, "What appmonitor does, by mode").
 *
 * A resize in place gives the running process a larger cgroup and nothing else: Node.js, the JVM
 * and .NET read the limit once, at start, and keep the heap they chose. The one Kubernetes way to
 * restart only the container with the new limit, `resizePolicy` `memory: RestartContainer`, is not
 * used for this: it is immutable on a running Pod (only the Pod template can carry it), a restart
 * cannot change the env that holds the heap setting (a running Pod's env is immutable), and
 * Node.js's default heap does not follow the limit (259 MiB at both 256Mi and 512Mi, measured), so
 * a restart alone gives it nothing; only a JVM whose heap is a share of the limit would gain. A
 * rollout reaches every case the same way: the limit and the heap setting in one patch
 * (`heap-settings.ts`), each new Pod's runtime sizing its heap from them.
 *
 * So under `InPlace` and `InPlaceOrRollout` a workload's container whose runtime sizes its heap at
 * start is raised by a rollout, never resized in place: when its AppMonitor declares the runtime
 * (`spec.containerPolicies` `runtime`), or its alert's trigger is answered by a new start (a heap
 * error, confirmed from its termination message before anything is written: `heap-error.ts`; the
 * heap's own threshold, confirmed by Prometheus: `heap-threshold.ts`). The rollout is said with
 * `InPlaceFallback` Warnings ({@link heapFallbackNote}). A bare Pod has no template to roll out.
 */
import type { AppMonitorSpec, UpdateMode } from "../../../lib/appmonitor.ts";
import { heapSizedAtStart, type KnownRuntime } from "./heap-settings.ts";

/**
 * How a workload's raise is written: `inPlace` (its running Pods resized), or `rollout` (its Pod
 * template patched); `heap` set when an in-place mode rolls out because a heap sized at start
 * must be reached (the write's `InPlaceFallback` Warnings say so).
 */
export type WriteWay = { readonly way: "inPlace"; readonly mode: Exclude<UpdateMode, "Rollout"> } | { readonly way: "rollout"; readonly heap: boolean };

/**
 * The way for an alert on a workload's Pod whose containers are `containers` (module comment).
 * `Rollout` always rolls out; an in-place mode rolls out for an alert whose trigger needs a new
 * start (`needsNewStart`: a heap error, the heap's threshold; `../triggers/`) and for a Pod with a
 * container whose runtime is declared; otherwise it resizes in place. Pure.
 */
export function writeWay(mode: UpdateMode, needsNewStart: boolean, containers: readonly string[], spec: Pick<AppMonitorSpec, "containerPolicies">): WriteWay {
  if (mode === "Rollout") return { way: "rollout", heap: false };
  if (needsNewStart || heapSizedAtStart(containers, spec) !== undefined) return { way: "rollout", heap: true };
  return { way: "inPlace", mode };
}

/**
 * Why an in-place mode rolled out, for the `InPlaceFallback` Warnings: `resizing in place cannot
 * reach Node.js's heap, sized when it starts (container app); the rollout sets it with the limit`,
 * one clause per runtime known of the raised containers (`heap-settings.ts` `knownRuntimes`).
 * @param declared the first declared runtime of the Pod (`heapSizedAtStart`), said when none of
 *   the raised containers has a known runtime.
 */
export function heapFallbackNote(runtimes: readonly KnownRuntime[], declared: string | undefined): string {
  if (runtimes.length === 0) return `resizing in place cannot reach the heap of ${declared ?? "a runtime that sizes it when it starts"}, sized when it starts`;
  return runtimes.map((r) => `resizing in place cannot reach ${r.runtime}'s heap, sized when it starts (container ${r.container})`).join("; ");
}
