/**
 * Whether a scale can roll out, from plain data: does the scaled Pod fit on some Node
 * ({@link podMemoryRequest}, {@link decideFit}). Pure: the Pod spec and the Nodes'
 * allocatable memory are read by the caller (`scale-flow.ts`, `cluster.ts`).
 *
 * A template patch is not a rollout: a Pod that requests more memory than any Node can
 * allocate is created and stays Pending for ever, while the old Pod keeps running out of
 * memory. memory-scaler refuses such a scale (`Unschedulable`) instead of reporting it `Scaled`.
 */
import type * as k8s from "@kubernetes/client-node";
import { ceil, formatBytes, parseQuantity, QuantityError } from "../lib/quantity.ts";

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
export function podMemoryRequest(spec: Pick<k8s.V1PodSpec, "containers" | "initContainers" | "overhead" | "resources">): bigint {
  const overhead = spec.overhead?.memory === undefined ? 0n : ceil(parseQuantity(spec.overhead.memory));
  if (spec.resources?.requests?.memory !== undefined || spec.resources?.limits?.memory !== undefined) return requestOf(spec.resources) + overhead;
  let running = spec.containers.reduce((sum, c) => sum + requestOf(c.resources), 0n);
  let sidecars = 0n;
  let init = 0n;
  for (const c of spec.initContainers ?? []) {
    const request = requestOf(c.resources);
    if (c.restartPolicy === "Always") {
      sidecars += request;
      running += request;
      init = max(init, sidecars);
    } else {
      init = max(init, request + sidecars);
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
