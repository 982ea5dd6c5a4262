/**
 * Whether the namespace's ResourceQuotas can hold a scale's whole rollout, not only one Pod.
 * Pure: the workload's strategy and the quotas (their `status.used` and `status.hard`) are read by
 * the caller.
 *
 * The server-side dry run of one scaled Pod asks ResourceQuota admission whether one more Pod
 * fits. A rollout needs more: a Deployment's `RollingUpdate` keeps its old Pods until new ones
 * are available, so at its peak it runs all `replicas` new Pods beside up to `maxSurge` old ones
 * (total Pods ≤ replicas + maxSurge; the new ReplicaSet grows to `replicas` while old Pods are
 * removed only as new ones become available:
 * https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment).
 * A Pod the quota refuses is never created (`FailedCreate`), the old Pod it would have replaced is
 * never removed, and the rollout stalls until its progress deadline. So before the patch the
 * peak is compared with each quota's room:
 *   extra = peak − replicas × old Pod; refused when used + extra > hard,
 * for `requests.memory` (also spelled `memory`) with the Pods' requests and `limits.memory` with
 * their limits (https://kubernetes.io/docs/concepts/policy/resource-quotas/#compute-resource-quota).
 * Peaks: Deployment `RollingUpdate` replicas × new + min(maxSurge, replicas) × old; `Recreate`
 * and StatefulSets (a Pod is deleted before its replacement is created) replicas × new.
 * DaemonSets (one Pod per Node) and bare ReplicaSets (which never replace their Pods) are not
 * judged. Quotas with `scopes` or a `scopeSelector` may not apply to the Pods and are not judged.
 */
import { ceil, formatBytes, parseQuantity, QuantityError } from "../../../lib/quantity.ts";
import type * as k8s from "@kubernetes/client-node";
import type { QuotaView } from "../../kube/views.ts";

/** What the peak depends on: the workload's kind, replicas and rollout strategy. */
export interface RolloutShape {
  readonly kind: string;
  readonly name: string;
  /** `spec.replicas`; 1 when unset (the API server's default). */
  readonly replicas: number;
  /** Deployment `spec.strategy.type` (`RollingUpdate` when unset). */
  readonly strategy: string | undefined;
  /** Deployment `spec.strategy.rollingUpdate.maxSurge`: a count or a percent of replicas (`25%` when unset). */
  readonly maxSurge: number | string | undefined;
}

/** One Pod's memory, bytes: as ResourceQuota counts `requests.memory` and `limits.memory`. */
export interface PodMemory {
  readonly request: bigint;
  readonly limit: bigint;
}

/**
 * `maxSurge` as a number of Pods: a percent of `replicas` rounded up, as the Deployment
 * controller resolves it (k8s.io/kubernetes `deploymentutil.ResolveFenceposts`); `25%` when unset.
 * A value that is neither is taken as 1.
 */
export function resolveMaxSurge(maxSurge: number | string | undefined, replicas: number): number {
  const value = maxSurge ?? "25%";
  if (typeof value === "number") return Math.max(0, Math.floor(value));
  const percent = /^(\d+)%$/.exec(value);
  if (percent !== null) return Math.ceil((replicas * Number(percent[1])) / 100);
  const count = Number(value);
  return Number.isInteger(count) && count >= 0 ? count : 1;
}

/**
 * The most memory the workload's Pods hold at once during the rollout from `from` to `to`, and
 * how many Pods of each it counts; undefined for a kind that is not judged (module comment).
 */
export function rolloutPeak(shape: RolloutShape, from: PodMemory, to: PodMemory): { readonly request: bigint; readonly limit: bigint; readonly newPods: number; readonly oldPods: number } | undefined {
  const replicas = BigInt(Math.max(0, shape.replicas));
  let oldPods = 0n;
  if (shape.kind === "Deployment") {
    if (shape.strategy !== "Recreate") oldPods = BigInt(Math.min(resolveMaxSurge(shape.maxSurge, shape.replicas), shape.replicas));
  } else if (shape.kind !== "StatefulSet") {
    return undefined;
  }
  return {
    request: replicas * to.request + oldPods * from.request,
    limit: replicas * to.limit + oldPods * from.limit,
    newPods: Number(replicas),
    oldPods: Number(oldPods),
  };
}

/** The result of {@link decideQuota}: `fits`, or `refused` with the first quota that cannot hold the rollout. */
export type QuotaFit = { readonly result: "fits" } | { readonly result: "refused"; readonly quota: string; readonly message: string };

const bytesOf = (value: string | undefined): bigint | undefined => {
  if (value === undefined) return undefined;
  try {
    return ceil(parseQuantity(value));
  } catch (error) {
    if (error instanceof QuantityError) return undefined;
    throw error;
  }
};

/**
 * Whether every unscoped quota in `quotas` holds the rollout of `shape` from `from` to `to`
 * (module comment). A resource a quota does not limit, or whose `used` it does not report yet,
 * is not judged.
 */
export function decideQuota(shape: RolloutShape, from: PodMemory, to: PodMemory, quotas: readonly QuotaView[]): QuotaFit {
  const peak = rolloutPeak(shape, from, to);
  if (peak === undefined) return { result: "fits" };
  const replicas = BigInt(Math.max(0, shape.replicas));
  const extra = { request: peak.request - replicas * from.request, limit: peak.limit - replicas * from.limit };
  for (const quota of quotas) {
    if (quota.scoped) continue;
    const checks: [string, bigint, bigint][] = [
      ["requests.memory", extra.request, to.request],
      ["memory", extra.request, to.request],
      ["limits.memory", extra.limit, to.limit],
    ];
    for (const [resource, more, perPod] of checks) {
      const hard = bytesOf(quota.hard[resource]);
      const used = bytesOf(quota.used[resource]);
      if (hard === undefined || used === undefined || more <= 0n || used + more <= hard) continue;
      const old = peak.oldPods > 0 ? ` beside ${peak.oldPods} old Pod${peak.oldPods === 1 ? "" : "s"} still running (maxSurge)` : "";
      return {
        result: "refused",
        quota: quota.name,
        message:
          `the rollout of ${shape.kind} ${shape.name} needs ${formatBytes(more)} more ${resource} at its peak (${peak.newPods} new Pod${peak.newPods === 1 ? "" : "s"} at ${formatBytes(perPod)}${old}), ` +
          `but ResourceQuota ${quota.name} has ${formatBytes(used)} of ${formatBytes(hard)} used: the Pods it refuses would never be created and the rollout would stall; raise the quota, or lower spec.memMultiplier or spec.maxMemory`,
      };
    }
  }
  return { result: "fits" };
}

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
 * What the Node-fit check needs of the Nodes, summed up once per read of them so that a check's
 * cost does not grow with their number: how many are listed, and the largest allocatable memory
 * among those that report one that is a quantity, bytes (undefined: none does).
 */
export interface NodeMemorySummary {
  readonly listed: number;
  readonly largest: bigint | undefined;
}

/**
 * The {@link NodeMemorySummary} of each Node's `status.allocatable.memory` (a quantity string;
 * `undefined` for a Node that reports none,
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/node-v1/#NodeStatus). A
 * value that is not a quantity is ignored.
 */
export function summarizeAllocatable(allocatable: readonly (string | undefined)[]): NodeMemorySummary {
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
  return { listed: allocatable.length, largest };
}

/**
 * Whether a Pod requesting `request` bytes of memory fits on some Node, given the Nodes'
 * {@link NodeMemorySummary}.
 *
 * Deliberately conservative: only the memory request against a Node's whole allocatable memory
 * is compared. Node selectors, affinity, taints, the Pods already on a Node, its other resources
 * and what an autoscaler could add are all ignored, so a Pod judged `fits` may still not be
 * scheduled, but one judged `unschedulable` can never be (no Node could ever hold it as the
 * cluster is now). When no Node reports a readable value the answer is `unknown`.
 */
export function decideFit(request: bigint, nodes: NodeMemorySummary): Fit {
  const { largest } = nodes;
  if (largest === undefined) {
    const why = nodes.listed === 0 ? "no Node is listed" : `none of the ${nodes.listed} Nodes reports its allocatable memory`;
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
