/**
 * Knative Serving, all but the ingress, running on the stack's real node beside Eventing: its
 * images (controller, webhook, autoscaler, activator and the queue-proxy sidecar's) imported into
 * the node's containerd, its rendered install (`serving-source.ts`) changed only by the named
 * steps of `serving-manifests.ts` and placed on the node (`eventing-placement.ts`), its CRDs
 * applied first (its `300-knativecertificate.yaml` names the Certificate kind of a CRD that ko's
 * walk order puts after it), its webhook configurations once the webhook serves (with
 * failurePolicy Fail, earlier ones would refuse Serving's own ConfigMaps), and every Deployment of
 * the install waited for until Available.
 *
 * The API server reaches the webhook at its Pod IP (`--enable-aggregator-routing`, stack.ts), as
 * Eventing's. The Pods of Revisions, which Serving's controller makes, are placed by their
 * namespace's annotations (`placeNamespace`).
 */
import path from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { waitEstablished } from "../lib/crd-established.ts";
import type { EventingObject } from "./eventing-manifests.ts";
import { applyObjects, applyWebhookConfigurations, deploymentStatusLines, waitAvailable, WEBHOOK_CONFIG_KINDS } from "./eventing-install.ts";
import { placePods } from "./eventing-placement.ts";
import { importImages } from "./node-images.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { REAL_NODE_PLACEMENT } from "./real-node-config.ts";
import { SERVING_NAMESPACE, skippingTagResolution, withAutoscalerWindows, withoutIngress, type AutoscalerWindows } from "./serving-manifests.ts";
import { servingImageArchive, servingInstall } from "./serving-source.ts";
import type { StackState } from "./state.ts";
import { BINARY_SETS, buildBinaries } from "../../../scripts/lib/binaries.ts";

const STEP = "install Knative Serving on the real node";

/** What {@link installServing} did. */
export interface ServingInstallation {
  /** Serving's version, such as `v0.50.0`. */
  version: string;
  /** The Deployments waited for (all with replicas > 0), in the knative-serving namespace. */
  deployments: string[];
  /** Seconds from the first import to the last Deployment Available. */
  seconds: number;
}

/** How {@link installServing} installs. */
export interface InstallServingOptions {
  /** How long to wait for each Deployment and for the webhook's configurations, ms (default 240 000). */
  readonly timeoutMs?: number;
  /** Shorter autoscaler windows, for a test that watches scale to zero; Serving's defaults otherwise. */
  readonly autoscalerWindows?: AutoscalerWindows;
  /** Hears one line per step: the images imported, each Deployment Available (n of m). */
  readonly progress?: (line: string) => void;
}

/**
 * The objects applied: Serving's rendered install with the machine's steps, in this order so each
 * is visible: no ingress ({@link withoutIngress}), tag resolution skipped for the images imported
 * here ({@link skippingTagResolution}), a test's autoscaler windows when given, and the Pods
 * placed on the real node.
 */
export function servingObjectsForStack(objects: readonly EventingObject[], windows?: AutoscalerWindows): EventingObject[] {
  const configured = skippingTagResolution(withoutIngress(objects));
  return placePods(windows ? withAutoscalerWindows(configured, windows) : configured, REAL_NODE_PLACEMENT);
}

/**
 * Installs Knative Serving's core (no ingress) on the stack's real node and waits until it serves.
 * @throws StepError when the stack has no real node, an import or apply fails, a CRD is not
 *   Established, or a Deployment is not Available in time (the message names its Pods' states).
 */
export async function installServing(state: StackState, options: InstallServingOptions = {}): Promise<ServingInstallation> {
  const node = state.realNode;
  if (!node) throw new StepError(STEP, "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const timeoutMs = options.timeoutMs ?? 240_000;
  const progress = options.progress ?? (() => {});
  const t0 = Date.now();
  // Its set of build.sh, built now if the stack's start did not need it.
  await buildBinaries(process.env, progress, BINARY_SETS.serving);
  const { module, objects } = await servingInstall();
  const binDir = path.dirname(state.binaries.kubectl);
  progress(`Knative Serving ${module.version}: importing ${module.commands.length} images into the real node, then waiting for its Deployments`);
  await importImages(node, module.commands.map((c) => servingImageArchive(binDir, c)), () => "bash test/harness/bins/build.sh");

  const placed = servingObjectsForStack(objects, options.autoscalerWindows);
  const first = placed.filter((o) => o.kind === "Namespace" || o.kind === "CustomResourceDefinition");
  await applyObjects(state, first, path.join(node.paths.dir, "serving-crds.yaml"), STEP);
  const kubectl = async (args: string[]): Promise<string> => {
    try {
      return (await promisify(execFile)(state.binaries.kubectl, [`--kubeconfig=${state.kubeconfig}`, ...args], { maxBuffer: 16 << 20, timeout: 120_000 })).stdout;
    } catch (error) {
      throw new StepError(STEP, `kubectl ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
  };
  await waitEstablished(kubectl, first.filter((o) => o.kind === "CustomResourceDefinition").map((o) => `crd/${o.metadata.name}`));
  const webhookConfigs = placed.filter((o) => WEBHOOK_CONFIG_KINDS.has(o.kind));
  await applyObjects(state, placed.filter((o) => !first.includes(o) && !WEBHOOK_CONFIG_KINDS.has(o.kind)), path.join(node.paths.dir, "serving.yaml"), STEP);

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await waitAvailable(kc, "webhook", timeoutMs, SERVING_NAMESPACE, STEP);
  progress(`Knative Serving: webhook Available (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  await applyWebhookConfigurations(state, kc, webhookConfigs, path.join(node.paths.dir, "serving-webhooks.yaml"), timeoutMs, STEP);

  const deployments = placed
    .filter((o): o is EventingObject & { spec?: { replicas?: number } } => o.kind === "Deployment" && o.metadata.namespace === SERVING_NAMESPACE)
    .filter((o) => o.spec?.replicas !== 0)
    .map((o) => o.metadata.name);
  for (const [i, name] of deployments.entries()) {
    await waitAvailable(kc, name, timeoutMs, SERVING_NAMESPACE, STEP);
    progress(`Knative Serving: [${i + 1}/${deployments.length}] ${name} Available (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return { version: module.version, deployments, seconds: (Date.now() - t0) / 1000 };
}

/** One status line per Deployment {@link installServing} waited for (`state.serving`), as Eventing's. */
export function servingStatusLines(state: StackState): Promise<string[]> {
  return state.serving ? deploymentStatusLines(state, "serving", SERVING_NAMESPACE, `Knative Serving ${state.serving.version} (no ingress)`, state.serving.deployments) : Promise.resolve([]);
}
