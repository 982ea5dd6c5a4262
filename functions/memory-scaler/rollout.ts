/**
 * Whether a scale can roll out, from plain data. Pure: the Pod spec, the Nodes' allocatable
 * memory and the workload are read by the caller (`scale-flow.ts`, `cluster.ts`).
 *
 * A template patch is not a rollout:
 * - a Pod that requests more memory than any Node can allocate is created and stays Pending for
 *   ever, while the old Pod keeps running out of memory: such a scale is refused
 *   (`Unschedulable`, {@link podMemoryRequest}, {@link decideFit});
 * - a StatefulSet or DaemonSet with `updateStrategy: OnDelete` gives no Pod the new template until
 *   the Pod is deleted: the scale is written (that is what OnDelete asks for) but reported with a
 *   `RolloutWaitsForDelete` Warning, and later alerts of a Pod still on the old template say so
 *   rather than `RolloutUnderWay` ({@link onDeleteScaledNote}, {@link waitingForDelete}).
 */
import type * as k8s from "@kubernetes/client-node";
import { ceil, compare, formatBytes, parseQuantity, QuantityError } from "../lib/quantity.ts";

/**
 * A container's memory request as the scheduler counts it, in bytes: `requests.memory`, else
 * `limits.memory` (the API server copies a limit without a request into the request:
 * https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#requests-and-limits),
 * else 0. Rounded up to whole bytes.
 * @throws {QuantityError} on a value the API server would not have accepted.
 */
function requestOf(resources: k8s.V1ResourceRequirements | undefined): bigint {
  const value = resources?.requests?.memory ?? resources?.limits?.memory;
  return value === undefined ? 0n : ceil(parseQuantity(value));
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/**
 * The memory a Pod with `spec` requests, in bytes, as the scheduler adds it up
 * (k8s.io/component-helpers `resource.PodRequests`):
 * - the larger of (a) the sum over `containers` and native sidecars (init containers with
 *   `restartPolicy: Always`), and (b) the largest init container, each counted with the
 *   sidecars started before it, which still run beside it
 *   (https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers,
 *   https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#resource-sharing-within-containers);
 * - or, when the Pod sets pod-level resources (`spec.resources`, a memory request or limit),
 *   that instead (https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#pod-level-resource-specification);
 * - plus `spec.overhead.memory`, which the RuntimeClass admission sets
 *   (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-overhead/).
 * A container without a request counts its limit (see `requestOf`), and one with neither counts 0.
 * @throws {QuantityError} on a memory value that is not a quantity (the API server refuses those).
 */
export function podMemoryRequest(spec: PodMemorySpec): bigint {
  return podMemory(spec, requestOf);
}

/** The Pod spec fields {@link podMemoryRequest} and {@link podMemoryLimit} read. */
export type PodMemorySpec = Pick<k8s.V1PodSpec, "containers" | "initContainers" | "overhead" | "resources">;

/**
 * The memory limit of a Pod with `spec`, in bytes, as ResourceQuota's `limits.memory` counts it
 * (k8s.io/component-helpers `resource.PodLimits`: the same sums as {@link podMemoryRequest}, of
 * `limits.memory`; a container without a limit counts 0, and such a Pod is refused by a quota
 * on `limits.memory` anyway, which the dry run of the scaled Pod reports).
 * @throws {QuantityError} on a memory value that is not a quantity.
 */
export function podMemoryLimit(spec: PodMemorySpec): bigint {
  return podMemory(spec, (resources) => (resources?.limits?.memory === undefined ? 0n : ceil(parseQuantity(resources.limits.memory))));
}

function podMemory(spec: PodMemorySpec, of: (resources: k8s.V1ResourceRequirements | undefined) => bigint): bigint {
  const overhead = spec.overhead?.memory === undefined ? 0n : ceil(parseQuantity(spec.overhead.memory));
  if (spec.resources?.requests?.memory !== undefined || spec.resources?.limits?.memory !== undefined) return of(spec.resources) + overhead;
  let running = spec.containers.reduce((sum, c) => sum + of(c.resources), 0n);
  let sidecars = 0n;
  let init = 0n;
  for (const c of spec.initContainers ?? []) {
    const amount = of(c.resources);
    if (c.restartPolicy === "Always") {
      sidecars += amount;
      running += amount;
      init = max(init, sidecars);
    } else {
      init = max(init, amount + sidecars);
    }
  }
  return max(running, init) + overhead;
}

/**
 * The result of {@link decideFit}:
 * - `fits`: some Node's allocatable memory holds the request;
 * - `unschedulable`: none does; `largest` is the largest allocatable memory seen, bytes;
 * - `unknown`: no Node says how much memory it can allocate (none listed, or none with a
 *   readable `status.allocatable.memory`): nothing can be concluded, the scale goes on.
 */
export type Fit =
  | { readonly result: "fits"; readonly request: bigint }
  | { readonly result: "unschedulable"; readonly request: bigint; readonly largest: bigint; readonly message: string }
  | { readonly result: "unknown"; readonly request: bigint; readonly message: string };

/**
 * Whether a Pod requesting `request` bytes of memory fits on some Node, given each Node's
 * `status.allocatable.memory` (a quantity string; `undefined` for a Node that reports none,
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/node-v1/#NodeStatus).
 *
 * Deliberately conservative: only the memory request against a Node's whole allocatable memory
 * is compared. Node selectors, affinity, taints, the Pods already on a Node, its other resources
 * and what an autoscaler could add are all ignored, so a Pod judged `fits` may still not be
 * scheduled, but one judged `unschedulable` can never be (no Node could ever hold it as the
 * cluster is now). A Node whose value is not a quantity is ignored; when no Node is left the
 * answer is `unknown`.
 */
export function decideFit(request: bigint, allocatable: readonly (string | undefined)[]): Fit {
  let largest: bigint | undefined;
  for (const value of allocatable) {
    if (value === undefined) continue;
    let bytes: bigint;
    try {
      bytes = ceil(parseQuantity(value));
    } catch (error) {
      if (error instanceof QuantityError) continue;
      throw error;
    }
    if (largest === undefined || bytes > largest) largest = bytes;
  }
  if (largest === undefined) {
    const why = allocatable.length === 0 ? "no Node is listed" : `none of the ${allocatable.length} Nodes reports its allocatable memory`;
    return { result: "unknown", request, message: `cannot tell whether a Pod requesting ${formatBytes(request)} of memory fits: ${why}` };
  }
  if (request <= largest) return { result: "fits", request };
  return {
    result: "unschedulable",
    request,
    largest,
    message: `the scaled Pod would request ${formatBytes(request)} of memory, more than any Node can allocate (the largest allocatable is ${formatBytes(largest)}): it would stay Pending; lower spec.memMultiplier or set spec.maxMemory so the Pod fits, or add larger Nodes`,
  };
}

/**
 * How a template change reaches a workload's Pods: a StatefulSet's or DaemonSet's
 * `spec.updateStrategy.type: OnDelete` means the controller never replaces a Pod for it; each
 * Pod gets the new template only when it is deleted
 * (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#on-delete,
 * https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/#daemonset-update-strategy).
 * Deployments and ReplicaSets have no such strategy (a bare ReplicaSet never replaces its Pods
 * either, but says nothing about it; it is not judged here).
 */
export interface RolloutStrategy {
  /** `Deployment`, `StatefulSet`, `DaemonSet` or `ReplicaSet`. */
  readonly kind: string;
  readonly name: string;
  /** `spec.updateStrategy.type`; absent means `RollingUpdate`. */
  readonly updateStrategy: string | undefined;
  /** StatefulSet `status.updateRevision`: the ControllerRevision the current template makes. */
  readonly updateRevision: string | undefined;
  /** `spec.replicas`, when the kind has it. */
  readonly replicas: number | undefined;
}

/** True when a template patch of this workload reaches no Pod until the Pod is deleted. */
export function waitsForDelete(workload: RolloutStrategy): boolean {
  return (workload.kind === "StatefulSet" || workload.kind === "DaemonSet") && workload.updateStrategy === "OnDelete";
}

/** The Pods the notes name: the alerting one, and how many others the workload has. */
function podsToDelete(workload: RolloutStrategy, pod: string): string {
  if (workload.replicas !== undefined) {
    const others = workload.replicas - 1;
    return others > 0 ? `Pod ${pod} (the alerting one) and the ${others} other Pod${others === 1 ? "" : "s"} of ${workload.kind} ${workload.name}` : `Pod ${pod}`;
  }
  return `Pod ${pod} (the alerting one) and the other Pods of ${workload.kind} ${workload.name}`;
}

/**
 * The note of the `RolloutWaitsForDelete` Warning written after a patch of a workload that
 * {@link waitsForDelete}: the patch reached no Pod, all of them (the alerting `pod` named) still
 * run the old memory until deleted. `summary` is the changes as `describeChanges` writes them.
 */
export function onDeleteScaledNote(workload: RolloutStrategy, pod: string, summary: string): string {
  return `scaled ${workload.kind} ${workload.name} (${summary}), but its updateStrategy is OnDelete: no Pod gets the new memory until it is deleted, and ${podsToDelete(workload, pod)} still run the old template; delete the Pods to apply it`;
}

/** What {@link waitingForDelete} compares. */
export interface WaitingInput {
  readonly workload: RolloutStrategy;
  /** The alerting Pod's name and its `controller-revision-hash` label (StatefulSet and DaemonSet Pods carry one). */
  readonly pod: { readonly name: string; readonly revision: string | undefined };
  /**
   * The memory limits of the containers the alert is about, as the alerting Pod and the
   * workload's template set them (quantity strings; absent when unset).
   */
  readonly limits: readonly { readonly container: string; readonly pod: string | undefined; readonly template: string | undefined }[];
}

/**
 * Why a later alert of a workload that {@link waitsForDelete} is skipped, or undefined when it
 * does not wait: the alerting Pod runs a lower memory limit than the template for one of the
 * alert's containers, so the last scale has not reached it and never will until it is deleted.
 * The caller uses it in place of a `RolloutUnderWay` or `Cooldown` skip, which would let the
 * user believe a rollout is running. Names the Pod's revision and the StatefulSet's
 * `updateRevision` when both are known and differ. Pure.
 * @throws {QuantityError} on a limit that is not a quantity (the API server refuses those).
 */
export function waitingForDelete(input: WaitingInput): string | undefined {
  const { workload, pod } = input;
  if (!waitsForDelete(workload)) return undefined;
  const behind = input.limits.filter((l) => l.pod !== undefined && l.template !== undefined && compare(parseQuantity(l.template), parseQuantity(l.pod)) > 0);
  if (behind.length === 0) return undefined;
  const revision =
    pod.revision !== undefined && workload.updateRevision !== undefined && pod.revision !== workload.updateRevision
      ? ` (revision ${pod.revision}; the template's is ${workload.updateRevision})`
      : "";
  const limits = behind.map((l) => `${l.container}: limit ${l.pod}, the template's ${l.template}`).join("; ");
  return `${workload.kind} ${workload.name} has updateStrategy OnDelete: Pod ${pod.name} still runs the old template${revision} (${limits}) and gets the new memory only when it is deleted; delete Pod ${pod.name} (kubectl delete pod ${pod.name}) to apply it`;
}
