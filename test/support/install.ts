/**
 * Installs the project's cluster-wide manifests on the shared test stack: the `appmonitor`
 * namespace, the AppMonitor CRD and a function's RBAC. Server-side apply with a fixed field
 * manager and `force`, so any number of test files (running concurrently) may install the same
 * manifests, in any order, any number of times.
 * https://kubernetes.io/docs/reference/using-api/server-side-apply/
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../stack/paths.ts";
import { adminKubeConfig, waitFor } from "./stack.ts";

/** Field manager of the tests' applies. */
export const TEST_FIELD_MANAGER = "appmonitor-tests";

/** The objects of a YAML file of the repository, in order. */
export async function manifests(relativePath: string): Promise<k8s.KubernetesObject[]> {
  const text = await readFile(path.join(repoRoot, relativePath), "utf8");
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as k8s.KubernetesObject | null)
    .filter((obj): obj is k8s.KubernetesObject => obj !== null);
}

/** Server-side applies every object of the given repository files, in order. */
export async function applyFiles(...relativePaths: string[]): Promise<void> {
  const client = k8s.KubernetesObjectApi.makeApiClient(await adminKubeConfig());
  for (const file of relativePaths) {
    for (const object of await manifests(file)) {
      await client.patch(object, undefined, undefined, TEST_FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
    }
  }
}

let installed: Promise<void> | undefined;

/**
 * Applies `knative/namespace.yaml`, `knative/crd/appmonitor.yaml` and
 * `knative/rbac/memory-scaler.yaml` (once per test process) and waits until the CRD is
 * Established, i.e. AppMonitors can be created.
 */
export function installMemoryScaler(): Promise<void> {
  installed ??= (async () => {
    await applyFiles("knative/namespace.yaml", "knative/crd/appmonitor.yaml", "knative/rbac/memory-scaler.yaml");
    const ext = (await adminKubeConfig()).makeApiClient(k8s.ApiextensionsV1Api);
    await waitFor("the AppMonitor CRD Established", async () => {
      const crd = await ext.readCustomResourceDefinition({ name: "appmonitors.kubedemo.com" });
      return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    });
  })();
  return installed;
}
