/**
 * A kustomize overlay that puts a manifest's workloads on the stack's real node, as a user would
 * place someone else's manifest on particular nodes without editing it: the manifest is a
 * resource of the overlay, and a strategic-merge patch adds the real node's nodeSelector and
 * toleration (`REAL_NODE_PLACEMENT`) to each Deployment's Pod template. `kubectl apply -k <dir>`
 * (kubectl's built-in kustomize) applies it. Pure text; the caller writes the files.
 */
import { stringify } from "yaml";
import { REAL_NODE_PLACEMENT } from "./real-node-config.ts";

/**
 * The overlay's `kustomization.yaml` for the manifest file `resource` (a name relative to the
 * overlay's directory: kustomize loads nothing from outside it), in `namespace`.
 */
export function realNodeKustomization(resource: string, namespace: string): string {
  const patch = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    // Kustomize wants a name in a patch; with a target, the target picks the objects and this one is ignored.
    metadata: { name: "any" },
    spec: { template: { spec: REAL_NODE_PLACEMENT } },
  };
  return stringify({
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    namespace,
    resources: [resource],
    patches: [{ target: { group: "apps", version: "v1", kind: "Deployment" }, patch: stringify(patch) }],
  });
}
