/**
 * Other autoscalers acting on a workload's memory (pure): a HorizontalPodAutoscaler that scales
 * it on memory, or a VerticalPodAutoscaler that sets its Pods' memory. memory-scaler leaves such a
 * workload alone and says why, since the two would fight:
 * - an HPA (autoscaling/v2) scales replicas so that memory use / memory request meets its target
 *   (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details);
 *   raising the request lowers that ratio, and the HPA removes replicas, which raises each Pod's
 *   use again. A CPU-only HPA (or one on other metrics) is no conflict: the scale goes on.
 * - a VPA (autoscaling.k8s.io/v1) whose `updatePolicy.updateMode` is not `Off` (absent means
 *   `Auto` in the VPA's API) rewrites the Pods' requests at admission from its own
 *   recommendation, so a template memory-scaler raised is not what the Pods run, and the two
 *   disagree on every rollout (https://github.com/kubernetes/autoscaler/tree/master/vertical-pod-autoscaler#quick-start).
 *   Unless its `resourcePolicy.containerPolicies` leave the memory of every container being
 *   scaled alone: the container's own policy (else the `*` one) with `mode: Off`, or with
 *   `controlledResources` that lack `memory` (absent: cpu and memory).
 * An object targets the workload when its target's kind and name are the workload's and its
 * `apiVersion`, when given, is of the `apps` group.
 */
import type * as k8s from "@kubernetes/client-node";

/** What memory-scaler reads of an autoscaling.k8s.io/v1 VerticalPodAutoscaler (a custom resource, read raw). */
export interface VerticalPodAutoscalerView {
  readonly name: string;
  readonly targetRef?: { readonly apiVersion?: string; readonly kind?: string; readonly name?: string };
  /** `spec.updatePolicy.updateMode`: `Off`, `Initial`, `Recreate`, `InPlaceOrRecreate`, `Auto`; absent: `Auto`. */
  readonly updateMode?: string;
  /** `spec.resourcePolicy.containerPolicies`: per container (`*` for the rest), `mode` (`Auto` or `Off`) and `controlledResources`. */
  readonly containerPolicies?: readonly { readonly containerName?: string; readonly mode?: string; readonly controlledResources?: readonly string[] }[];
}

/** The verdict: no conflict, or the skip and its message. */
export type AutoscalerVerdict = { readonly result: "none" } | { readonly result: "conflict"; readonly reason: "HPAOnMemory" | "VPAControlled"; readonly message: string };

/** The fields of a raw VPA object {@link classifyAutoscalers} reads; anything malformed reads as absent. */
export function vpaView(raw: unknown): VerticalPodAutoscalerView {
  const object = (typeof raw === "object" && raw !== null ? raw : {}) as {
    metadata?: { name?: unknown };
    spec?: { targetRef?: unknown; updatePolicy?: { updateMode?: unknown }; resourcePolicy?: { containerPolicies?: unknown } };
  };
  const target = (typeof object.spec?.targetRef === "object" && object.spec.targetRef !== null ? object.spec.targetRef : {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  const targetRef = { apiVersion: str(target.apiVersion), kind: str(target.kind), name: str(target.name) };
  const updateMode = str(object.spec?.updatePolicy?.updateMode);
  const policies = object.spec?.resourcePolicy?.containerPolicies;
  const containerPolicies = (Array.isArray(policies) ? (policies as unknown[]) : []).map((p) => {
    const policy = (typeof p === "object" && p !== null ? p : {}) as Record<string, unknown>;
    const controlled = Array.isArray(policy.controlledResources) ? (policy.controlledResources as unknown[]).filter((r): r is string => typeof r === "string") : undefined;
    const containerName = str(policy.containerName);
    const mode = str(policy.mode);
    return { ...(containerName === undefined ? {} : { containerName }), ...(mode === undefined ? {} : { mode }), ...(controlled === undefined ? {} : { controlledResources: controlled }) };
  });
  return { name: str(object.metadata?.name) ?? "", targetRef, ...(updateMode === undefined ? {} : { updateMode }), ...(containerPolicies.length > 0 ? { containerPolicies } : {}) };
}

/** Whether `vpa` sets the memory of `container`: its own policy, else the `*` one, else the default (it does). */
function controlsMemory(vpa: VerticalPodAutoscalerView, container: string): boolean {
  const policies = vpa.containerPolicies ?? [];
  const policy = policies.find((p) => p.containerName === container) ?? policies.find((p) => p.containerName === "*");
  if (policy?.mode === "Off") return false;
  return (policy?.controlledResources ?? ["cpu", "memory"]).includes("memory");
}

function targets(ref: { readonly apiVersion?: string | undefined; readonly kind?: string | undefined; readonly name?: string | undefined } | undefined, workload: { readonly kind: string; readonly name: string }): boolean {
  if (ref === undefined || ref.kind !== workload.kind || ref.name !== workload.name) return false;
  return ref.apiVersion === undefined || ref.apiVersion.startsWith("apps/");
}

/** The HPA's memory metrics that bear on `containers`, described (`Resource memory`, `ContainerResource memory of <c>`). */
function memoryMetrics(hpa: k8s.V2HorizontalPodAutoscaler, containers: readonly string[]): string[] {
  const found: string[] = [];
  for (const metric of hpa.spec?.metrics ?? []) {
    if (metric.type === "Resource" && metric.resource?.name === "memory") found.push("Resource memory");
    // A per-container metric conflicts only when memory-scaler raises that container's request.
    if (metric.type === "ContainerResource" && metric.containerResource?.name === "memory" && containers.includes(metric.containerResource.container)) {
      found.push(`ContainerResource memory of container ${metric.containerResource.container}`);
    }
  }
  return found;
}

/**
 * Whether an HPA or a VPA of the namespace acts on the memory of `workload` whose `containers`
 * memory-scaler would raise. The first HPA on memory wins (`HPAOnMemory`), then the first VPA not
 * `Off` that controls the memory of one of `containers` (`VPAControlled`); an HPA on CPU alone, a
 * VPA with `updateMode: Off` or whose container policies leave that memory alone, or one targeting
 * another workload → `none`.
 */
export function classifyAutoscalers(
  workload: { readonly kind: string; readonly name: string },
  containers: readonly string[],
  hpas: readonly k8s.V2HorizontalPodAutoscaler[],
  vpas: readonly VerticalPodAutoscalerView[],
): AutoscalerVerdict {
  for (const hpa of hpas) {
    if (!targets(hpa.spec?.scaleTargetRef, workload)) continue;
    const metrics = memoryMetrics(hpa, containers);
    if (metrics.length > 0) {
      return {
        result: "conflict",
        reason: "HPAOnMemory",
        message: `HorizontalPodAutoscaler ${hpa.metadata?.name ?? ""} scales ${workload.kind} ${workload.name} on ${metrics.join(", ")}: raising the memory request lowers its utilization and it would remove replicas; scale on CPU or another metric, or leave memory to it`,
      };
    }
  }
  for (const vpa of vpas) {
    if (!targets(vpa.targetRef, workload)) continue;
    const mode = vpa.updateMode ?? "Auto";
    if (mode === "Off" || !containers.some((c) => controlsMemory(vpa, c))) continue;
    return {
      result: "conflict",
      reason: "VPAControlled",
      message: `VerticalPodAutoscaler ${vpa.name} (updateMode ${mode}) sets the resources of ${workload.kind} ${workload.name}'s Pods: it overrides the template's memory at admission; set its updateMode to Off to let appmonitor scale, or leave memory to it`,
    };
  }
  return { result: "none" };
}

/** The autoscalers of the target's namespace the gate weighs (`coexist/gate.ts`). */
export interface Autoscalers {
  readonly hpas: readonly k8s.V2HorizontalPodAutoscaler[];
  readonly vpas: readonly VerticalPodAutoscalerView[];
}
