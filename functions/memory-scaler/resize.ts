/**
 * In-place resize of a bare Pod (no controller owner reference), pure: what the decision reads of
 * the Pod, when it was last resized, and the compare-and-swap JSON Patch of its `resize`
 * subresource. `resize-flow.ts` reads and writes.
 *
 * Since Kubernetes 1.35 a running Pod's container CPU and memory can be changed without
 * recreating it: `spec.containers[*].resources` are the desired resources, written through the
 * `resize` subresource (`PATCH /api/v1/namespaces/{ns}/pods/{name}/resize`), and
 * `status.containerStatuses[*].resources` the ones the kubelet has applied; the container's
 * `resizePolicy` decides whether a change restarts it (`RestartContainer`) or not
 * (`NotRequired`, the default). A bare Pod has no template to patch and no controller that would
 * undo the change, so it is resized in place with the same multiplier, cap, cooldown and
 * compare-and-swap as a workload scale.
 * Source: https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/
 */
import type * as k8s from "@kubernetes/client-node";
import { FIELD_MANAGER } from "./cluster.ts";
import { listOf, type ContainerChange, type ContainerMemory } from "./decide.ts";
import type { JsonPatchOperation } from "./patch.ts";
import { memoryOf } from "./plan.ts";

/** The resize subresource's name, as the API server records it in `managedFields[].subresource`. */
export const RESIZE_SUBRESOURCE = "resize";

/**
 * The memory the Pod's containers run with now, as the decision's `podContainers`: each
 * container's (and native sidecar's) `status.containerStatuses[*].resources` (`initContainerStatuses`
 * for a sidecar), which the kubelet sets to what it applied; the spec's value where the status
 * reports none (a container not started yet, a node whose kubelet does not report them).
 * Quantities as strings (bytes). A spec above the status is a resize not yet applied, which
 * `decideScale` reports as `RolloutUnderWay`.
 * Source: https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/ (Key concepts: desired and actual resources).
 */
export function runningMemory(pod: k8s.V1Pod): ContainerMemory[] {
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  return memoryOf(pod.spec).map((desired) => {
    const actual = statuses.find((s) => s.name === desired.name)?.resources;
    if (actual === undefined) return desired;
    const running: ContainerMemory = { ...desired };
    const limit = actual.limits?.memory;
    const request = actual.requests?.memory;
    if (limit !== undefined) running.limit = limit;
    if (request !== undefined) running.request = request;
    return running;
  });
}

/**
 * When memory-scaler last resized the Pod: the `time` of its `managedFields` entry for the
 * `resize` subresource (manager {@link FIELD_MANAGER}), which the API server sets in the same
 * write as the new resources, so it is the cooldown's clock and cannot be lost apart from the
 * resize. RFC 3339 (whole seconds), or undefined when it never resized the Pod.
 * Source: https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management
 */
export function lastResizeTime(meta: k8s.V1ObjectMeta | undefined): string | undefined {
  const entry = meta?.managedFields?.find((f) => f.manager === FIELD_MANAGER && f.subresource === RESIZE_SUBRESOURCE);
  const time = entry?.time as Date | string | undefined;
  if (time === undefined) return undefined;
  return typeof time === "string" ? time : time.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Builds the JSON Patch of the Pod's `resize` subresource that applies `changes`: a container's
 * memory at `/spec/containers/<i>/resources`, a native sidecar's at `/spec/initContainers/<i>/…`.
 * A compare-and-swap: `test` operations on `metadata.resourceVersion` and on each changed
 * container's name, memory limit and memory request come first, so a patch built from a Pod
 * that changed since it was read fails as a whole (422) and two deliveries never compound. The
 * resize subresource accepts changes to container resources only, so nothing else is written.
 * Sources: https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/;
 * https://www.rfc-editor.org/rfc/rfc6902 (operations).
 * @param containers the Pod's `spec.containers`, then `initContainers` (`memoryOf`), as read.
 * @param changes a `scale` decision's changes (from `decideScale` on the same `containers`).
 * @param resourceVersion the Pod's `metadata.resourceVersion` as read (the API server always
 *   sets one; undefined: not tested).
 * @throws {RangeError} when a change names a container not in `containers` or an init container
 *   that is not a native sidecar, when its `from` differs from the spec, or when it would add a
 *   request the spec lacks.
 */
export function buildResizePatch(containers: readonly ContainerMemory[], changes: readonly ContainerChange[], resourceVersion: string | undefined): JsonPatchOperation[] {
  const tests: JsonPatchOperation[] = resourceVersion === undefined ? [] : [{ op: "test", path: "/metadata/resourceVersion", value: resourceVersion }];
  const writes: JsonPatchOperation[] = [];
  for (const change of changes) {
    const current = containers.find((c) => c.name === change.container);
    if (current === undefined) throw new RangeError(`container ${change.container} is not in the Pod's spec`);
    if (current.kind === "init") throw new RangeError(`container ${change.container} is an init container, which runs to completion: it is not resized`);
    if (current.limit !== change.from.limit || current.request !== change.from.request) throw new RangeError(`container ${change.container}: the change was decided from other values than the Pod's`);
    if (change.from.request === undefined && change.to.request !== undefined) throw new RangeError(`container ${change.container}: cannot add a memory request the Pod does not set`);
    const list = listOf(current);
    const at = `/spec/${list}/${containers.filter((c) => listOf(c) === list).indexOf(current)}`;
    const base = `${at}/resources`;
    tests.push({ op: "test", path: `${at}/name`, value: change.container });
    tests.push({ op: "test", path: `${base}/limits/memory`, value: change.from.limit });
    writes.push({ op: "replace", path: `${base}/limits/memory`, value: change.to.limit });
    if (change.from.request !== undefined && change.to.request !== undefined) {
      tests.push({ op: "test", path: `${base}/requests/memory`, value: change.from.request });
      writes.push({ op: "replace", path: `${base}/requests/memory`, value: change.to.request });
    }
  }
  return [...tests, ...writes];
}
