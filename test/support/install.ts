/**
 * Installs the project's cluster-wide manifests on the shared test stack: the `appmonitor`
 * namespace, the AppMonitor CRD and a function's RBAC. Server-side apply with a fixed field
 * manager and `force`, so any number of test files (running concurrently) may install the same
 * manifests, in any order, any number of times.
 * https://kubernetes.io/docs/reference/using-api/server-side-apply/
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { adminKubeConfig, stack, waitFor } from "./stack.ts";

/** Field manager of the tests' applies. */
export const TEST_FIELD_MANAGER = "appmonitor-tests";


/**
 * Server-side applies the given files (repository-relative or absolute), in order, with the
 * stack's kubectl. kubectl sends the objects as written; the typed client would drop what its
 * models do not know (a CRD schema's `enum`, `default`, `x-kubernetes-*`).
 * @throws Error with kubectl's message when the API server refuses an object.
 */
export async function applyFiles(...paths: string[]): Promise<void> {
  const state = await stack();
  const files = paths.flatMap((p) => ["-f", path.isAbsolute(p) ? p : path.join(repoRoot, p)]);
  try {
    await promisify(execFile)(state.binaries.kubectl, [
      "apply", "--server-side", "--force-conflicts", `--field-manager=${TEST_FIELD_MANAGER}`, `--kubeconfig=${state.kubeconfig}`, ...files,
    ], { timeout: 60_000 });
  } catch (error) {
    throw new Error(`kubectl apply ${paths.join(" ")} failed: ${(error as { stderr?: string }).stderr ?? error}`, { cause: error });
  }
}

let installed: Promise<void> | undefined;

/**
 * Applies `knative/namespace/namespace.yaml`, `knative/crd/appmonitor.yaml`,
 * `knative/rbac/memory-scaler.yaml`, memory-scaler's write policy
 * (`knative/admission/memory-scaler-writes.yaml`, as every profile ships it: each scale of the
 * tests passes it) and the ceilings policy with its shipped, empty ConfigMap (every AppMonitor of
 * the tests passes it; none bounded) once per test process, and waits until the CRD is
 * Established, i.e. AppMonitors can be created.
 */
export function installMemoryScaler(): Promise<void> {
  installed ??= (async () => {
    await applyFiles(
      "knative/namespace/namespace.yaml", "knative/crd/appmonitor.yaml", "knative/rbac/memory-scaler.yaml", "knative/admission/memory-scaler-writes.yaml",
      "knative/admission/appmonitor-ceilings.yaml", "knative/admission/appmonitor-ceilings-policy.yaml",
    );
    const ext = (await adminKubeConfig()).makeApiClient(k8s.ApiextensionsV1Api);
    await waitFor("the AppMonitor CRD Established", async () => {
      const crd = await ext.readCustomResourceDefinition({ name: "appmonitors.kubedemo.com" });
      return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    });
  })();
  return installed;
}
