/**
 * The one change the stack makes to Eventing's rendered install beyond its image names, kept
 * as a separate step so it stays visible: the Pod templates of its workloads get a nodeSelector
 * and tolerations (for the stack's real node, `REAL_NODE_PLACEMENT` of `real-node-config.ts`,
 * whose NoSchedule taint would otherwise keep them off it; kwok's fake nodes cannot run them).
 * Pods that Eventing's controller creates later (an ApiServerSource's receive adapter, in the
 * source's namespace) are not in the install and are not placed by this.
 */
import type { EventingObject } from "./eventing-manifests.ts";

/** A Pod toleration, as in a PodSpec. */
export interface Toleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
}

/** Where Pods go: labels a node must have, and taints they tolerate. */
export interface PodPlacement {
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Toleration[];
}

/** Workload kinds whose Pod template is at `spec.template`. */
const WORKLOAD_KINDS: ReadonlySet<string> = new Set(["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"]);

/**
 * `objects` with every workload's Pod template placed by `placement`: its nodeSelector's
 * entries added (over any of the same key) and each toleration not already there appended.
 * Other objects, and the inputs, are left as they are.
 */
export function placePods(objects: readonly EventingObject[], placement: PodPlacement): EventingObject[] {
  return objects.map((object) => {
    const workload = WORKLOAD_KINDS.has(object.kind) && (object.apiVersion.startsWith("apps/") || object.apiVersion === "batch/v1");
    if (!workload) return object;
    const copy = structuredClone(object);
    const template = (copy.spec as { template?: { spec?: Record<string, unknown> } } | undefined)?.template;
    if (!template?.spec) throw new Error(`${object.kind} ${object.metadata.name} has no spec.template.spec`);
    const podSpec = template.spec;
    podSpec.nodeSelector = { ...(podSpec.nodeSelector as Record<string, string> | undefined), ...placement.nodeSelector };
    const tolerations = [...((podSpec.tolerations as Toleration[] | undefined) ?? [])];
    const same = (a: Toleration, b: Toleration): boolean =>
      a.key === b.key && a.operator === b.operator && a.value === b.value && a.effect === b.effect;
    for (const t of placement.tolerations) if (!tolerations.some((have) => same(have, t))) tolerations.push({ ...t });
    podSpec.tolerations = tolerations;
    return copy;
  });
}

/** The PodNodeSelector admission plugin's namespace annotation: the nodeSelector every Pod of the namespace gets. */
export const NODE_SELECTOR_ANNOTATION = "scheduler.alpha.kubernetes.io/node-selector";

/** The PodTolerationRestriction admission plugin's namespace annotation: tolerations every Pod of the namespace gets (a JSON list). */
export const DEFAULT_TOLERATIONS_ANNOTATION = "scheduler.alpha.kubernetes.io/defaultTolerations";

/**
 * The namespace annotations that give every Pod created in a namespace `placement`, through the
 * API server's PodNodeSelector and PodTolerationRestriction admission plugins (the stack enables
 * both with the real node). For Pods no manifest of ours describes: those Eventing's controller
 * makes (an ApiServerSource's adapter Deployment), whose spec Knative offers no field to place;
 * its `apiserversources-nodeselector-*` features set a nodeSelector but no toleration, and the
 * real node's NoSchedule taint needs one.
 */
export function placementAnnotations(placement: PodPlacement): Record<string, string> {
  return {
    [NODE_SELECTOR_ANNOTATION]: Object.entries(placement.nodeSelector).map(([k, v]) => `${k}=${v}`).join(","),
    [DEFAULT_TOLERATIONS_ANNOTATION]: JSON.stringify(placement.tolerations),
  };
}
