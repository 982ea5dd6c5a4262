/**
 * Runs the three functions on the stack's real node as Pods: their images imported into its
 * containerd, the install's namespace (restricted Pod Security), the AppMonitor CRD, their RBAC
 * (knative/rbac), the PrometheusRule CRD that rule-sync writes, alert-receiver's webhook token
 * Secret, and each Knative Service rendered as a Deployment and a ClusterIP Service
 * (`function-pods.ts`). Knative Serving does not run here, so no Revision, Route or autoscaler:
 * one replica each, reached at `http://<function>.appmonitor.svc.cluster.local` through kube-proxy.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { FUNCTION_IMAGES } from "../images/build.ts";
import { archiveDir } from "../images/paths.ts";
import type { KnativeService } from "../lib/knative-service.ts";
import { functionDeployment, functionService } from "./function-pods.ts";
import { importImages } from "./node-images.ts";
import { repoRoot, StackStepError } from "./paths.ts";
import { CLUSTER_DOMAIN, REAL_NODE_PLACEMENT } from "./real-node-config.ts";
import type { StackState } from "./stack.ts";

const run = promisify(execFile);

/** The functions that run as Pods, by their knative/services file name. */
export type FunctionPodName = keyof typeof FUNCTION_IMAGES;

/** The functions, in the order they are deployed. */
export const FUNCTION_POD_NAMES = Object.keys(FUNCTION_IMAGES) as FunctionPodName[];

/** The namespace of knative/namespace.yaml. */
export const FUNCTIONS_NAMESPACE = "appmonitor";

/** What {@link deployFunctionPods} was given besides the stack. */
export interface DeployFunctionPodsOptions {
  /** Each function's OCI archive; default `npm run image`'s, `<cache>/images/<name>.oci.tar`. */
  archives?: Partial<Record<FunctionPodName, string>>;
  /** How long to wait for the three Deployments to be Available, ms (default 180 000). */
  timeoutMs?: number;
  /**
   * Where alert-receiver's `K_SINK` comes from: `"memory-scaler"` (default) sets it to
   * memory-scaler's Service; `"sinkbinding"` leaves it out for the SinkBinding of
   * knative/eventing/sinkbinding.yaml (applied through test/harness/eventing-overlay, Eventing running)
   * to inject the Broker's URL, as in a Knative install.
   */
  sink?: "memory-scaler" | "sinkbinding";
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
 * The adaptation of each function to the real node: alert-receiver sends its CloudEvents straight
 * to memory-scaler's Service unless `sink` is `"sinkbinding"` (without Eventing no Broker runs;
 * DESIGN.md allows `K_SINK` to be memory-scaler's URL); memory-scaler and rule-sync get no
 * `PROMETHEUS_URL` (the stack's Prometheus listens on 127.0.0.1, which no Pod reaches, and the
 * shipped kube-prometheus-stack address does not exist here), so memory-scaler scales without
 * re-checking the working set, as its README allows, and rule-sync reports RuleReady and
 * MetricsReady `Unknown` `PrometheusNotConfigured`.
 */
function envFor(name: FunctionPodName, sink: DeployFunctionPodsOptions["sink"]): Record<string, string | undefined> {
  if (name === "alert-receiver") return sink === "sinkbinding" ? {} : { K_SINK: `http://memory-scaler.${FUNCTIONS_NAMESPACE}.svc.${CLUSTER_DOMAIN}` };
  return { PROMETHEUS_URL: undefined };
}

/**
 * Installs the functions on the real node and waits until their Deployments are Available.
 * @throws StackStepError when the stack has no real node, an import or apply fails, or a
 *   Deployment is not Available in time (the message names its Pods' states).
 */
export async function deployFunctionPods(state: StackState, options: DeployFunctionPodsOptions = {}): Promise<FunctionPods> {
  const node = state.realNode;
  if (!node) throw new StackStepError("deploy the functions as Pods", "the stack has no real node; start it with 'npm run stack -- up --real-node'");
  const archives = FUNCTION_POD_NAMES.map((name) => options.archives?.[name] ?? path.join(archiveDir(), `${name}.oci.tar`));
  const say = options.progress ?? (() => {});
  const t0 = Date.now();
  say(`functions: importing the images of ${FUNCTION_POD_NAMES.join(", ")} into the real node`);
  await importImages(node, archives);

  const kubectl = async (args: string[]) => {
    try {
      return (await run(state.binaries.kubectl, [`--kubeconfig=${state.kubeconfig}`, ...args], { maxBuffer: 16 << 20, timeout: 120_000 })).stdout;
    } catch (error) {
      throw new StackStepError("deploy the functions as Pods", `kubectl ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
  };
  const apply = (...files: string[]) => kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager=appmonitor-stack", ...files.flatMap((f) => ["-f", f])]);
  const knative = (f: string) => path.join(repoRoot, "knative", f);
  const prometheusRuleCrd = path.join(path.dirname(state.binaries.kubectl), "crds", "monitoring.coreos.com_prometheusrules.yaml");
  await apply(knative("namespace.yaml"), knative("crd/appmonitor.yaml"), prometheusRuleCrd);
  await kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd/appmonitors.kubedemo.com", "crd/prometheusrules.monitoring.coreos.com"]);
  await apply(...FUNCTION_POD_NAMES.map((name) => knative(`rbac/${name}.yaml`)));

  const webhookToken = randomBytes(32).toString("hex");
  const objects: object[] = [{
    apiVersion: "v1", kind: "Secret", metadata: { name: "appmonitor-webhook", namespace: FUNCTIONS_NAMESPACE }, stringData: { token: webhookToken },
  }];
  for (const name of FUNCTION_POD_NAMES) {
    const ksvc = parse(await readFile(knative(`services/${name}.yaml`), "utf8")) as KnativeService;
    objects.push(functionDeployment(ksvc, { env: envFor(name, options.sink), placement: REAL_NODE_PLACEMENT }), functionService(ksvc));
  }
  const rendered = path.join(node.paths.dir, "function-pods.yaml");
  await writeFile(rendered, objects.map((o) => stringify(o)).join("---\n"));
  await apply(rendered);

  const timeoutMs = options.timeoutMs ?? 180_000;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  for (const name of FUNCTION_POD_NAMES) {
    for (;;) {
      const d = await apps.readNamespacedDeployment({ name, namespace: FUNCTIONS_NAMESPACE });
      if (d.status?.conditions?.some((c) => c.type === "Available" && c.status === "True") && (d.status.readyReplicas ?? 0) >= 1) break;
      if (Date.now() > deadline) {
        const pods = await core.listNamespacedPod({ namespace: FUNCTIONS_NAMESPACE, labelSelector: `app.kubernetes.io/name=${name}` });
        const states = pods.items.map((p) => `${p.metadata?.name}: ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.[0]?.state ?? p.status?.conditions ?? {})}`);
        throw new StackStepError("deploy the functions as Pods", `Deployment ${name} not Available after ${timeoutMs / 1000} s; ${states.join("; ") || "no Pods"} (${JSON.stringify(d.status?.conditions ?? [])})`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    say(`functions: Deployment ${name} Available (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  const urls = Object.fromEntries(FUNCTION_POD_NAMES.map((name) => [name, `http://${name}.${FUNCTIONS_NAMESPACE}.svc.${CLUSTER_DOMAIN}`])) as Record<FunctionPodName, string>;
  return { namespace: FUNCTIONS_NAMESPACE, webhookToken, urls };
}
