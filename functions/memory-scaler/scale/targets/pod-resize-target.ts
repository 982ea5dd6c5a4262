/**
 * A bare Pod (no controller owner reference) as a {@link WriteTarget}: resized in place through
 * its `resize` subresource (https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/).
 * What differs from a workload's template, and nothing else:
 *
 * - Governed by its own labels and annotations (a bare Pod is its own declaration).
 * - Decides from its spec (the memory asked for) against what its containers run with
 *   (`status.containerStatuses[*].resources`, `kube/views.ts` `runningMemory`): a spec above that
 *   is a resize the kubelet has not applied, `ResizeUnderWay`. The cooldown's clock is the time of
 *   memory-scaler's `managedFields` entry for the `resize` subresource (`lastResizeTime`), which the
 *   API server writes with the new resources.
 * - An OOM kill counts only when it ended after memory-scaler's last resize of the Pod (the
 *   container, and its `lastState`, outlive a resize in place: `../decide/evidence.ts` `oomWindow`).
 * - No last-scale record (the subresource writes container resources only): no repair, no revert,
 *   no revert budget; no HPA or VPA targets a bare Pod. A GitOps tool that applies it (its own
 *   metadata) is weighed as for a workload.
 * - Writes one JSON Patch of `pods/<name>/resize` (`resize-patch.ts`: `test` on the
 *   resourceVersion and on each value decided from), applied or refused whole by the API server
 *   (validation, e.g. a QoS class change; ResourceQuota admission) → `AdmissionRefused`. No quota
 *   or Node check before it: admission judges the resize itself, and the kubelet reports a resize
 *   its node cannot hold as `Infeasible`.
 * - What follows: `Resized` Events (and `GitOpsManaged` Warnings under `spec.gitOpsManaged: Patch`;
 *   `HeapNotReached` Warnings for a container whose declared runtime sizes its heap at start, which
 *   a resize does not reach and a bare Pod cannot roll out; a heap error is `HeapNeedsRollout`),
 *   and the resize pending in `status.rollouts` (kind `Pod`, the Pod's new generation), which the
 *   follow-up (`follow-up/resize.ts`) follows to its end.
 */
import type * as k8s from "@kubernetes/client-node";
import { apiStatus, isPatchConflict, isRefusal, toHttpFailure } from "../../../lib/kube-api-errors.ts";
import { gitOpsOwner, gitOpsPatchedNote } from "../../coexist/gitops.ts";
import type { Reported } from "../../events.ts";
import { lastResizeTime, memoryOf, runningMemory } from "../../kube/views.ts";
import { podHeaps } from "../decide/heap-flags.ts";
import { heapSizedAtStart } from "../decide/heap-settings.ts";
import { describeChanges, objectRef } from "../../model.ts";
import { oomWindow } from "../decide/evidence.ts";
import { buildResizePatch } from "./resize-patch.ts";
import type { WriteTarget } from "./target.ts";

/** The resize target of bare Pod `namespace/name` as read (module comment). */
export function podResizeTarget(pod: k8s.V1Pod, namespace: string, name: string): WriteTarget {
  const desired = memoryOf(pod.spec);
  const lastScaleTime = lastResizeTime(pod.metadata);
  const named = { kind: "Pod", name };
  return {
    view: {
      workload: named,
      ref: objectRef("v1", "Pod", namespace, name, pod.metadata?.uid),
      owner: { kind: "Pod", name, template: { metadata: pod.metadata ?? {} } },
      desired,
      running: runningMemory(pod),
      lastScaleTime,
      // A bare Pod keeps no last-scale record: nothing for a down-step to step back from.
      lastRecord: undefined,
      recorded: [],
      heaps: podHeaps(pod.spec),
      // A running Pod's command, args and env are immutable: a resize cannot raise a heap flag.
      rewritesHeaps: false,
      gitOps: gitOpsOwner(pod.metadata),
      autoscalers: { hpas: [], vpas: [] },
    },
    oomWindowSeconds: (now) => oomWindow(lastScaleTime, now),
    history: () => ({ repair: undefined, revert: undefined, budget: { budget: 0, scales: [], exhausted: false }, marks: [] }),

    refine(decision) {
      if (decision.action === "scale") return decision;
      // The spec (desired) above what the containers run with is a resize the kubelet has not applied.
      if (decision.reason !== "RolloutUnderWay") return { action: "skip", reason: decision.reason, message: decision.message, skipped: decision.skipped };
      const message = `Pod ${name} is being resized: its spec asks for more memory than its containers run with (${decision.message})`;
      return { action: "skip", reason: "ResizeUnderWay", message, skipped: decision.skipped };
    },

    writer: {
      verb: "resize",
      wouldDo: "would resize in place",
      scaledReason: "Resized",

      async write({ cluster, changes, appMonitor, dryRun }) {
        try {
          const { generation } = await cluster.resizePod(namespace, name, buildResizePatch(desired, changes, pod.metadata?.resourceVersion), dryRun);
          if (dryRun) return { result: "checked" };
          return { result: "written", generation, statusFrom: appMonitor.raw };
        } catch (error) {
          if (isPatchConflict(error)) return { result: "conflict", message: apiStatus(error).message };
          if (!isRefusal(error)) throw toHttpFailure(error, `resize Pod ${namespace}/${name}`);
          return { result: "refused", reason: "AdmissionRefused", message: apiStatus(error).message };
        }
      },

      written({ changes, appMonitor: am, trigger, gitOps, generation, time, eventId }) {
        // A declared runtime that sizes its heap at start: a bare Pod has no template to roll out, so the resize does not reach the heap; say so.
        const sized = heapSizedAtStart(changes.map((c) => c.container), am.spec);
        const heapNotReached = sized === undefined ? undefined : `${sized} sizes its heap when it starts, so the resize does not reach the heap of the running program, and a bare Pod has no Pod template to roll out with the heap setting: recreate it with the larger limit and its heap set, or run it under a Deployment`;
        const reported: Reported[] = [{ reason: "Resized", changes, multiplier: am.spec.memMultiplier, trigger, ...(heapNotReached === undefined ? {} : { heapNotReached }) }];
        if (gitOps !== undefined) reported.push({ reason: "GitOpsManaged", message: gitOpsPatchedNote(named, gitOps, changes) });
        const after = trigger === "oomKilled" ? " after an OOM kill" : "";
        return {
          reported,
          message: `resized Pod ${name} in place by ${am.spec.memMultiplier}${after}: ${describeChanges(changes)}${heapNotReached === undefined ? "" : `; ${heapNotReached}`}`,
          rollout: generation === undefined ? undefined : { workload: named, generation, startedAt: time, event: eventId },
        };
      },
    },
  };
}
