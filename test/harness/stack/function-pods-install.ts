/**
 * Runs the three functions on the stack's real node as the shipped Eventing-only profile runs them
 * (knative/eventing-only/, through the stack's overlay, `stack-profile.ts`): their images imported
 * into its containerd, the install's namespace (restricted Pod Security, placed on the real node by
 * its annotations), the AppMonitor CRD, their RBAC, the PrometheusRule CRD that rule-sync writes,
 * alert-receiver's webhook token Secret, and each function's Deployment and Service. Knative
 * Serving does not run here, which is what the profile is for: one replica each, reached at
 * `http://<function>.<namespace>.svc.cluster.local` through kube-proxy.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { FUNCTION_IMAGES } from "../../../scripts/images/build.ts";
import { archiveDir } from "../../../scripts/lib/paths.ts";
import type { Manifest } from "../../../scripts/lib/manifest.ts";
import { placeNamespace } from "./eventing-install.ts";
import { importImages } from "./node-images.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { CLUSTER_DOMAIN } from "./real-node-config.ts";
import { isEventingObject, renderStackProfile, SHIPPED_NAMESPACE } from "./stack-profile.ts";
import type { StackState } from "./state.ts";
import { waitEstablished } from "../lib/crd-established.ts";

const run = promisify(execFile);

/** The functions that run as Pods, by their knative/services file name (the dead-letter sink is knative/eventing's: `applyAppmonitorEventing`). */
export type FunctionPodName = Exclude<keyof typeof FUNCTION_IMAGES, typeof DEAD_LETTER_FUNCTION>;

/** The dead-letter sink's function (functions/dead-letter/), deployed with the Eventing objects. */
export const DEAD_LETTER_FUNCTION = "dead-letter";

/** The functions, in the order they are deployed. */
export const FUNCTION_POD_NAMES = (Object.keys(FUNCTION_IMAGES) as (keyof typeof FUNCTION_IMAGES)[]).filter((name): name is FunctionPodName => name !== DEAD_LETTER_FUNCTION);

/** The namespace of knative/namespace/namespace.yaml, the functions' unless another is chosen. */
export const FUNCTIONS_NAMESPACE = SHIPPED_NAMESPACE;

/** What {@link deployFunctionPods} was given besides the stack. */
export interface DeployFunctionPodsOptions {
  /** Each function's OCI archive; default `npm run image`'s, `<cache>/images/<name>.oci.tar`. */
  archives?: Partial<Record<FunctionPodName, string>>;
  /** How long to wait for the three Deployments to be Available, ms (default 180 000). */
  timeoutMs?: number;
  /**
   * Where alert-receiver's `K_SINK` comes from: `"memory-scaler"` (default) sets it to
   * memory-scaler's Service; `"sinkbinding"` leaves it out for the profile's SinkBinding
   * (applied by `applyAppmonitorEventing`, Eventing running) to inject the Broker's URL, as in a
   * Knative install.
   */
  sink?: "memory-scaler" | "sinkbinding";
  /** The install's namespace (default {@link FUNCTIONS_NAMESPACE}); chosen as users choose it, in namespace.yaml. */
  namespace?: string;
  /** Hears one line per step: the images imported, each Deployment Available. */
  progress?: (line: string) => void;
}

/** What {@link deployFunctionPods} made: the bearer token alert-receiver requires, and each function's in-cluster URL. */
export interface FunctionPods {
  namespace: string;
  webhookToken: string;
  urls: Record<FunctionPodName, string>;
}

/**
 * The shipped Eventing-only profile as the stack runs it (`stack-profile.ts`), rendered into the
 * real node's directory: every object, Eventing's included.
 * @throws StepError of `step` when kubectl's kustomize fails.
 */
export async function stackProfileObjects(state: StackState, options: { namespace?: string; sink?: "memory-scaler" | "sinkbinding"; profile?: "eventing-only" | "serving"; imageDigests?: Readonly<Record<string, string>> }, step: string): Promise<Manifest[]> {
  const node = state.realNode;
  if (!node) throw new StepError(step, "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const namespace = options.namespace ?? FUNCTIONS_NAMESPACE;
  const kustomize = async (dir: string) => {
    try {
      return (await run(state.binaries.kubectl, ["kustomize", dir], { maxBuffer: 32 << 20, timeout: 120_000 })).stdout;
    } catch (error) {
      throw new StepError(step, `kubectl kustomize ${dir}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
  };
  // On the operator stack the shipped kube-prometheus-stack address exists: the profile keeps it.
  const shippedPrometheus = state.prometheusOperator?.onRealNode !== undefined;
  const profile = options.profile ?? "eventing-only";
  return renderStackProfile(path.join(node.paths.dir, `${profile === "serving" ? "serving-" : ""}profile-${namespace}`), {
    namespace, sink: options.sink ?? "memory-scaler", shippedPrometheus, profile, ...(options.imageDigests ? { imageDigests: options.imageDigests } : {}),
  }, kustomize);
}

/**
 * Applies a rendered profile's `objects` to the stack in the order they can be admitted: the
 * Namespace and CRDs (with the PrometheusRule CRD that rule-sync writes), Established; the
 * namespace placed on the real node (`placeNamespace`); then alert-receiver's webhook token Secret
 * (a fresh random token) and the rest. Each file is kept in the real node's directory, named
 * `<filePrefix>-crds.yaml` and `<filePrefix>.yaml`.
 * @returns the webhook token.
 * @throws StepError of `step` when kubectl fails.
 */
export async function applyProfile(state: StackState, objects: readonly Manifest[], namespace: string, step: string, filePrefix: string): Promise<string> {
  const node = state.realNode;
  if (!node) throw new StepError(step, "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const kubectl = async (args: string[]) => {
    try {
      return (await run(state.binaries.kubectl, [`--kubeconfig=${state.kubeconfig}`, ...args], { maxBuffer: 16 << 20, timeout: 120_000 })).stdout;
    } catch (error) {
      throw new StepError(step, `kubectl ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
  };
  const apply = (...files: string[]) => kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager=appmonitor-stack", ...files.flatMap((f) => ["-f", f])]);
  const prometheusRuleCrd = path.join(path.dirname(state.binaries.kubectl), "crds", "monitoring.coreos.com_prometheusrules.yaml");
  const write = async (name: string, list: readonly object[]) => {
    const file = path.join(node.paths.dir, `${filePrefix}${name}`);
    await writeFile(file, list.map((o) => stringify(o, { version: "1.1" })).join("---\n"));
    return file;
  };
  const first = (o: Manifest) => o.kind === "Namespace" || o.kind === "CustomResourceDefinition";
  await apply(await write("-crds.yaml", objects.filter(first)), prometheusRuleCrd);
  await waitEstablished(kubectl, ["crd/appmonitors.kubedemo.com", "crd/prometheusrules.monitoring.coreos.com"]);
  await placeNamespace(state, namespace);

  const webhookToken = randomBytes(32).toString("hex");
  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "appmonitor-webhook", namespace }, stringData: { token: webhookToken } };
  await apply(await write(".yaml", [secret, ...objects.filter((o) => !first(o))]));
  return webhookToken;
}

/**
 * Installs the functions on the real node and waits until their Deployments are Available.
 * @throws StepError when the stack has no real node, an import or apply fails, or a
 *   Deployment is not Available in time (the message names its Pods' states).
 */
export async function deployFunctionPods(state: StackState, options: DeployFunctionPodsOptions = {}): Promise<FunctionPods> {
  const node = state.realNode;
  if (!node) throw new StepError("deploy the functions as Pods", "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const archives = FUNCTION_POD_NAMES.map((name) => options.archives?.[name] ?? path.join(archiveDir(), `${name}.oci.tar`));
  const say = options.progress ?? (() => {});
  const t0 = Date.now();
  say(`functions: importing the images of ${FUNCTION_POD_NAMES.join(", ")} into the real node`);
  await importImages(node, archives);

  const namespace = options.namespace ?? FUNCTIONS_NAMESPACE;
  const objects = (await stackProfileObjects(state, options, "deploy the functions as Pods")).filter((o) => !isEventingObject(o));
  const webhookToken = await applyProfile(state, objects, namespace, "deploy the functions as Pods", "function-pods");

  const timeoutMs = options.timeoutMs ?? 180_000;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  for (const name of FUNCTION_POD_NAMES) {
    for (;;) {
      const d = await apps.readNamespacedDeployment({ name, namespace });
      if (d.status?.conditions?.some((c) => c.type === "Available" && c.status === "True") && (d.status.readyReplicas ?? 0) >= 1) break;
      if (Date.now() > deadline) {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `app.kubernetes.io/name=${name}` });
        const states = pods.items.map((p) => `${p.metadata?.name}: ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.[0]?.state ?? p.status?.conditions ?? {})}`);
        throw new StepError("deploy the functions as Pods", `Deployment ${name} not Available after ${timeoutMs / 1000} s; ${states.join("; ") || "no Pods"} (${JSON.stringify(d.status?.conditions ?? [])})`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    say(`functions: Deployment ${name} Available (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  const urls = Object.fromEntries(FUNCTION_POD_NAMES.map((name) => [name, `http://${name}.${namespace}.svc.${CLUSTER_DOMAIN}`])) as Record<FunctionPodName, string>;
  return { namespace, webhookToken, urls };
}
