/**
 * CustomResourceDefinitions on the shared test stack: applying CRD files from anywhere (the
 * PrometheusRule CRD lives in build.sh's cache, not in the repository) and waiting until each
 * is served. Server-side apply (kubectl) with the tests' field manager and `force`, so test files running
 * concurrently may install the same CRDs any number of times.
 * https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#create-a-customresourcedefinition
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { applyFiles } from "./install.ts";
import { adminKubeConfig, stack, waitFor } from "./stack.ts";

/** File name of the generated PrometheusRule CRD in build.sh's `crds/` directory. */
export const PROMETHEUS_RULE_CRD_FILE_NAME = "monitoring.coreos.com_prometheusrules.yaml";

/** File name of the VerticalPodAutoscaler CRDs (the VPA and its checkpoints) in build.sh's `crds/` directory. */
export const VERTICAL_POD_AUTOSCALER_CRD_FILE_NAME = "autoscaling.k8s.io_verticalpodautoscalers.yaml";

/**
 * `fileName` in the `crds/` directory `test/harness/bins/build.sh` writes beside the stack's kubectl
 * (its output directory). When the stack's binaries came from `KUBEBUILDER_ASSETS` instead,
 * build.sh is run (cached) and its printed directory used.
 * @throws Error when build.sh fails or produces no such file.
 */
async function builtCrdFile(fileName: string): Promise<string> {
  const beside = path.join(path.dirname((await stack()).binaries.kubectl), "crds", fileName);
  if (existsSync(beside)) return beside;
  const { stdout } = await promisify(execFile)("bash", [path.join(repoRoot, "test", "harness", "bins", "build.sh")], { maxBuffer: 16 << 20, timeout: 60 * 60 * 1000 });
  const built = path.join(stdout.trim().split("\n").pop() ?? "", "crds", fileName);
  if (!existsSync(built)) throw new Error(`test/harness/bins/build.sh did not produce ${built}`);
  return built;
}

/**
 * The PrometheusRule CRD that build.sh generates with controller-gen from the prometheus-operator
 * API module pinned in `test/harness/bins/crds/go.mod`.
 * @throws Error when build.sh fails or produces no such file.
 */
export function prometheusRuleCrdFile(): Promise<string> {
  return builtCrdFile(PROMETHEUS_RULE_CRD_FILE_NAME);
}

/**
 * The VerticalPodAutoscaler CRDs (`verticalpodautoscalers` and `verticalpodautoscalercheckpoints`
 * of autoscaling.k8s.io) as the VPA project ships them, which build.sh takes from the pinned
 * k8s.io/autoscaler/vertical-pod-autoscaler module (`deploy/vpa-v1-crd-gen.yaml`).
 * @throws Error when build.sh fails or produces no such file.
 */
export function verticalPodAutoscalerCrdFile(): Promise<string> {
  return builtCrdFile(VERTICAL_POD_AUTOSCALER_CRD_FILE_NAME);
}

/** Waits until CRD `name` (e.g. `prometheusrules.monitoring.coreos.com`) has condition Established=True. */
export async function waitForCrdEstablished(name: string, timeoutMs = 30_000): Promise<void> {
  const api = (await adminKubeConfig()).makeApiClient(k8s.ApiextensionsV1Api);
  await waitFor(`CRD ${name} Established`, async () => {
    const crd = await api.readCustomResourceDefinition({ name });
    return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") === true;
  }, timeoutMs);
}

/**
 * Server-side applies every CustomResourceDefinition in the given YAML files (absolute paths;
 * other kinds are refused) and waits until each is Established.
 * @returns the CRD names, in file order.
 * @throws Error for a file with another kind in it, or what the API server answers.
 */
export async function installCrdFiles(...files: string[]): Promise<string[]> {
  const names: string[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(file, "utf8"))) {
      const crd = doc.toJS() as k8s.V1CustomResourceDefinition | null;
      if (crd === null) continue;
      if (crd.kind !== "CustomResourceDefinition" || !crd.metadata?.name) throw new Error(`${file}: expected only CustomResourceDefinitions, found ${crd.kind}`);
      names.push(crd.metadata.name);
    }
  }
  await applyFiles(...files);
  for (const name of names) await waitForCrdEstablished(name);
  return names;
}
