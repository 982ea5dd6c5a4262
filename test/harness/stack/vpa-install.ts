/**
 * The Vertical Pod Autoscaler (recommender, updater, admission-controller) and metrics-server
 * running on the stack's real node, for the comparison with the VPA: their images (build.sh's
 * `vpa` and `metrics` sets) imported into the node's containerd; their projects' own manifests
 * rendered by `kubectl kustomize` (the VPA's `deploy/`, metrics-server's `manifests/base/`) and
 * changed only by the named steps of `vpa-manifests.ts` and the real node's placement; the
 * admission controller's certificate made by the VPA's own `gencerts.sh`, as its install does.
 *
 * The API server reaches metrics-server (an APIService, through its front proxy) and the
 * admission controller's webhook at their Pod IPs (`--enable-aggregator-routing`, stack.ts).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { BINARY_SETS, buildBinaries } from "../../../scripts/lib/binaries.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import type { EventingObject } from "./eventing-manifests.ts";
import { applyObjects, stackKubectl, until, waitAvailable } from "./eventing-install.ts";
import { placePods } from "./eventing-placement.ts";
import { archiveReference, importImages } from "./node-images.ts";
import { REAL_NODE_PLACEMENT } from "./real-node-config.ts";
import type { StackState } from "./state.ts";
import { VPA_COMMANDS, VPA_NAMESPACE, withFlags, withImages } from "./vpa-manifests.ts";

const run = promisify(execFile);
const STEP = "install the Vertical Pod Autoscaler on the real node";

/** The Deployments of the install, in {@link VPA_NAMESPACE}, in the order they are waited for. */
export const VPA_DEPLOYMENTS = ["metrics-server", ...VPA_COMMANDS.map((c) => `vpa-${c}`)] as const;

/** The resource metrics API metrics-server serves, which the recommender reads. */
export const METRICS_API_SERVICE = "v1beta1.metrics.k8s.io";

/** What {@link installVpa} did. */
export interface VpaInstallation {
  /** The VPA's version (`1.8.1`) and metrics-server's (`v0.8.0`), from the images' names. */
  readonly vpaVersion: string;
  readonly metricsServerVersion: string;
  /** Seconds from the first import to the metrics API Available and the webhook registered. */
  readonly seconds: number;
}

/** Where the rendered install is written, in the real node's directory: what {@link uninstallVpa} deletes. */
const renderedFile = (nodeDir: string): string => path.join(nodeDir, "vpa.yaml");

/** The cache's directories of the two sets, beside kubectl. */
function setDirs(state: StackState): { vpa: string; metricsServer: string } {
  const bin = path.dirname(state.binaries.kubectl);
  return { vpa: path.join(bin, "vpa"), metricsServer: path.join(bin, "metrics-server") };
}

/** The objects of `kubectl kustomize dir`. @throws StepError with kubectl's stderr. */
async function kustomize(state: StackState, dir: string): Promise<EventingObject[]> {
  const yaml = await stackKubectl(state, ["kustomize", dir], STEP);
  return parseAllDocuments(yaml).map((d) => d.toJS() as EventingObject).filter((o) => o?.kind);
}

/** The tag of the image an archive holds (`…/vpa-recommender:1.8.1` → `1.8.1`). */
async function archiveTag(archive: string): Promise<string> {
  const ref = await archiveReference(archive);
  return ref.slice(ref.lastIndexOf(":") + 1);
}

/**
 * Installs the VPA and metrics-server on the stack's real node and waits until they serve: every
 * Deployment Available, the metrics API Available, the admission controller's webhook registered.
 * Idempotent on a stack that has it (the shared real-node stack of a test run).
 * @param progress hears one line per step.
 * @throws StepError when the stack has no real node, a build, import or apply fails, or a part is
 *   not ready within `timeoutMs` (default 240 000), naming it.
 */
export async function installVpa(state: StackState, progress: (line: string) => void = () => {}, timeoutMs = 240_000): Promise<VpaInstallation> {
  const node = state.realNode;
  if (!node) throw new StepError(STEP, "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const t0 = Date.now();
  await buildBinaries(process.env, progress, BINARY_SETS.vpa);
  const dirs = setDirs(state);
  const archives = [...VPA_COMMANDS.map((c) => path.join(dirs.vpa, `${c}.oci.tar`)), path.join(dirs.metricsServer, "metrics-server.oci.tar")];
  await importImages(node, archives, () => "bash test/harness/bins/build.sh vpa metrics");
  const vpaVersion = await archiveTag(archives[0] as string);
  const metricsServerVersion = await archiveTag(archives[archives.length - 1] as string);
  progress(`VPA ${vpaVersion} and metrics-server ${metricsServerVersion}: images imported (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

  // The admission controller's serving certificate, as the VPA's install makes it (its Secret
  // vpa-tls-certs); kept when there, since the running controller has loaded it.
  const kubectlEnv = { ...process.env, KUBECONFIG: state.kubeconfig, PATH: `${path.dirname(state.binaries.kubectl)}${path.delimiter}${process.env.PATH ?? ""}` };
  const secrets = await stackKubectl(state, ["get", "secret", "-n", VPA_NAMESPACE, "--ignore-not-found", "-o", "name", "vpa-tls-certs"], STEP);
  if (!secrets.trim()) {
    try {
      await run("bash", [path.join(dirs.vpa, "deploy", "gencerts.sh")], { env: kubectlEnv, timeout: 60_000 });
    } catch (error) {
      throw new StepError(STEP, `the VPA's gencerts.sh: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
  }

  const objects = placePods(withFlags(withImages([...(await kustomize(state, path.join(dirs.vpa, "deploy"))),
    ...(await kustomize(state, path.join(dirs.metricsServer, "manifests")))], vpaVersion, metricsServerVersion)), REAL_NODE_PLACEMENT);
  const file = renderedFile(node.paths.dir);
  await applyObjects(state, objects, file, STEP);

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  for (const [i, name] of VPA_DEPLOYMENTS.entries()) {
    await waitAvailable(kc, name, timeoutMs, VPA_NAMESPACE, STEP);
    progress(`VPA: [${i + 1}/${VPA_DEPLOYMENTS.length}] ${name} Available (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  const registration = kc.makeApiClient(k8s.ApiregistrationV1Api);
  const apiServiceAvailable = async (): Promise<string> => {
    const s = await registration.readAPIService({ name: METRICS_API_SERVICE });
    const c = s.status?.conditions?.find((x) => x.type === "Available");
    return c ? `${c.status} (${c.reason ?? ""}: ${c.message ?? ""})` : "no Available condition";
  };
  await until(async () => (await apiServiceAvailable()).startsWith("True"), timeoutMs, async () => `APIService ${METRICS_API_SERVICE} not Available: ${await apiServiceAvailable()}`, STEP);
  // The admission controller registers its webhook itself once it serves (--register-webhook).
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  await until(async () => (await admission.listMutatingWebhookConfiguration()).items.some((w) => w.metadata?.name === "vpa-webhook-config"), timeoutMs,
    async () => "the admission controller registered no MutatingWebhookConfiguration vpa-webhook-config", STEP);
  const seconds = (Date.now() - t0) / 1000;
  progress(`VPA: metrics API Available, admission webhook registered (${seconds.toFixed(1)} s)`);
  return { vpaVersion, metricsServerVersion, seconds };
}

/**
 * Removes what {@link installVpa} applied (the rendered install it wrote, when it got that far), the
 * webhook the admission controller registered and its certificate's Secret, so that the stack's
 * later Pods are admitted without it and no APIService is left without its server (which would
 * stall every namespace's deletion). The CRDs stay (the stack's own install of them,
 * `test/support/crds.ts`, may predate this). A no-op on a stack without it; safe after an install
 * that failed part way.
 * @throws StepError when kubectl fails.
 */
export async function uninstallVpa(state: StackState): Promise<void> {
  await stackKubectl(state, ["delete", "mutatingwebhookconfiguration", "vpa-webhook-config", "--ignore-not-found", "--wait=false"], STEP);
  const file = state.realNode ? renderedFile(state.realNode.paths.dir) : undefined;
  if (file && existsSync(file)) {
    const objects = parseAllDocuments(await readFile(file, "utf8"))
      .map((d) => d.toJS() as EventingObject).filter((o) => o?.kind && o.kind !== "CustomResourceDefinition");
    // The APIService first: nothing may ask for the metrics API once its server goes.
    objects.sort((a, b) => Number(b.kind === "APIService") - Number(a.kind === "APIService"));
    const kept = path.join(path.dirname(file), "vpa-uninstall.yaml");
    await writeFile(kept, objects.map((o) => JSON.stringify(o)).join("\n---\n"));
    await stackKubectl(state, ["delete", "-f", kept, "--ignore-not-found", "--wait=true", "--timeout=120s"], STEP);
  }
  await stackKubectl(state, ["delete", "secret", "-n", VPA_NAMESPACE, "vpa-tls-certs", "--ignore-not-found"], STEP);
}
