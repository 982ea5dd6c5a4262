/**
 * In-place resize of a bare Pod (no controller owner reference), pure: what the decision reads of
 * the Pod, when it was last resized, and the compare-and-swap JSON Patch of its `resize`
 * subresource. `scale/targets/pod-resize-target.ts` reads and writes.
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
import { type ContainerChange, type ContainerMemory, type JsonPatchOperation, listOf } from "../../model.ts";

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
