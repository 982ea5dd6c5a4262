/**
 * appmonitor's own Eventing objects (knative/eventing/: Broker, Triggers, SinkBinding,
 * ApiServerSource, PingSource) on a stack where Eventing runs (`eventing-install.ts`), through the
 * overlay test/harness/eventing-overlay, which substitutes only the Knative Serving references (the
 * functions run as Deployments and `v1` Services there). The namespace is annotated first so
 * that the Pods Eventing's controller makes in it (the ApiServerSource's adapter) land on the
 * real node.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { placeNamespace, stackKubectl, waitAvailable } from "./eventing-install.ts";
import { FUNCTIONS_NAMESPACE } from "./function-pods-install.ts";
import { repoRoot, StackStepError } from "./paths.ts";
import type { StackState } from "./stack.ts";

const STEP = "apply appmonitor's Eventing objects";

/** The overlay directory, used by the tests and the demo only. */
export const EVENTING_OVERLAY_DIR = path.join(repoRoot, "test", "harness", "eventing-overlay");

/** The Broker the objects make, and the path of its ingress (`/<namespace>/<name>` on the ingress's port 8080). */
export const BROKER = { name: "default", namespace: FUNCTIONS_NAMESPACE, ingressPath: `/${FUNCTIONS_NAMESPACE}/default` } as const;

/**
 * The dead-letter sink of the Broker and every Trigger: knative/eventing/dead-letter.yaml's
 * Knative Service, which the overlay runs as a Deployment of Knative's event_display and a `v1`
 * Service, both of this name; its Pods carry the label `app.kubernetes.io/name=<name>`.
 */
export const DEAD_LETTER_SINK = { name: "appmonitor-dead-letter", namespace: FUNCTIONS_NAMESPACE } as const;

/**
 * The overlay rendered (`kubectl kustomize`, kustomize being built into the stack's kubectl). Its
 * resources are the shipped files outside its directory, hence LoadRestrictionsNone.
 * @throws StackStepError with kubectl's message.
 */
export async function renderOverlay(state: StackState): Promise<string> {
  return stackKubectl(state, ["kustomize", "--load-restrictor=LoadRestrictionsNone", EVENTING_OVERLAY_DIR], STEP);
}

/**
 * Applies knative/namespace.yaml (annotated with the real node's placement), the AppMonitor CRD and the overlay, and
 * waits until the Broker is Ready (its address known: the channel and the ingress serve) and the
 * dead-letter sink's Deployment is Available (its image, event_display, is imported with
 * Eventing's by `installEventing`).
 * @returns the Broker's address as Eventing reports it (`http://broker-ingress.knative-eventing.svc.cluster.local/appmonitor/default`).
 * @throws StackStepError when kubectl fails, or the Broker is not Ready or the sink not Available within `timeoutMs` (default 120 000).
 */
export async function applyAppmonitorEventing(state: StackState, timeoutMs = 120_000): Promise<string> {
  if (!state.realNode) throw new StackStepError(STEP, "the stack has no real node");
  // The AppMonitor CRD first: the ApiServerSource's adapter exits at start when its kind is not served.
  const knative = (f: string) => ["-f", path.join(repoRoot, "knative", f)];
  await stackKubectl(state, ["apply", "--server-side", "--field-manager=appmonitor-stack", ...knative("namespace.yaml"), ...knative("crd/appmonitor.yaml")], STEP);
  await stackKubectl(state, ["wait", "--for=condition=Established", "--timeout=60s", "crd/appmonitors.kubedemo.com"], STEP);
  await placeNamespace(state, FUNCTIONS_NAMESPACE);
  const rendered = path.join(state.realNode.paths.dir, "appmonitor-eventing.yaml");
  await writeFile(rendered, await renderOverlay(state));
  await stackKubectl(state, ["apply", "--server-side", "--force-conflicts", "--field-manager=appmonitor-stack", "-f", rendered], STEP);

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const broker = await custom.getNamespacedCustomObject({ group: "eventing.knative.dev", version: "v1", namespace: BROKER.namespace, plural: "brokers", name: BROKER.name }) as {
      status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[]; address?: { url?: string } };
    };
    const ready = broker.status?.conditions?.find((c) => c.type === "Ready");
    if (ready?.status === "True" && broker.status?.address?.url) {
      await waitAvailable(kc, DEAD_LETTER_SINK.name, Math.max(deadline - Date.now(), 1_000), DEAD_LETTER_SINK.namespace, STEP);
      return broker.status.address.url;
    }
    if (Date.now() > deadline) throw new StackStepError(STEP, `Broker ${BROKER.namespace}/${BROKER.name} not Ready after ${timeoutMs / 1000} s: ${JSON.stringify(broker.status?.conditions ?? [])}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
