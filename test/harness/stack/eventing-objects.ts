/**
 * appmonitor's own Eventing objects (Broker, Triggers, SinkBinding, ApiServerSource and its RBAC,
 * PingSource, the dead-letter sink) on a stack where Eventing runs (`eventing-install.ts`), as the
 * shipped Eventing-only profile has them (knative/eventing-only/, through the stack's overlay:
 * `stack-profile.ts`). The namespace is annotated first so that the Pods in it (the dead-letter
 * sink, the ApiServerSource's adapter Eventing's controller makes) land on the real node.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { Manifest } from "../../../scripts/lib/manifest.ts";
import { placeNamespace, stackKubectl, waitAvailable } from "./eventing-install.ts";
import { archiveDir } from "../../../scripts/lib/paths.ts";
import { DEAD_LETTER_FUNCTION, FUNCTIONS_NAMESPACE, stackProfileObjects } from "./function-pods-install.ts";
import { importImages } from "./node-images.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { isEventingObject } from "./stack-profile.ts";
import type { StackState } from "./state.ts";
import { waitEstablished } from "../lib/crd-established.ts";

const STEP = "apply appmonitor's Eventing objects";

/** The Broker the objects make, and the path of its ingress (`/<namespace>/<name>` on the ingress's port 8080), in the shipped namespace. */
export const BROKER = { name: "default", namespace: FUNCTIONS_NAMESPACE, ingressPath: `/${FUNCTIONS_NAMESPACE}/default` } as const;

/** The Broker of an install in `namespace`: its name, namespace and ingress path. */
export function brokerIn(namespace: string): { name: string; namespace: string; ingressPath: string } {
  return { name: BROKER.name, namespace, ingressPath: `/${namespace}/${BROKER.name}` };
}

/**
 * The dead-letter sink of the Broker and every Trigger: knative/eventing/dead-letter.yaml's
 * Knative Service, which the Eventing-only profile runs as a Deployment of the dead-letter function
 * (functions/dead-letter/) and a `v1` Service, both of this name; its Pods carry the label
 * `app.kubernetes.io/name=<name>`, its ServiceAccount is of this name too.
 */
export const DEAD_LETTER_SINK = { name: "appmonitor-dead-letter", namespace: FUNCTIONS_NAMESPACE } as const;

/**
 * Applies the profile's Namespace (annotated with the real node's placement), the AppMonitor CRD
 * and its Eventing objects, and waits until the Broker is Ready (its address known: the channel
 * and the ingress serve) and the dead-letter sink's Deployment is Available (its image,
 * `npm run image`'s `dead-letter`, is imported into the real node first).
 * @param sinkArchive the dead-letter function's OCI archive (default `<cache>/images/dead-letter.oci.tar`).
 * @param namespace the install's (default the shipped one).
 * @returns the Broker's address as Eventing reports it (`http://broker-ingress.knative-eventing.svc.cluster.local/<namespace>/default`).
 * @throws StepError when kubectl fails, or the Broker is not Ready or the sink not Available within `timeoutMs` (default 120 000).
 */
export async function applyAppmonitorEventing(state: StackState, timeoutMs = 120_000, namespace = FUNCTIONS_NAMESPACE, sinkArchive = path.join(archiveDir(), `${DEAD_LETTER_FUNCTION}.oci.tar`)): Promise<string> {
  if (!state.realNode) throw new StepError(STEP, "the stack has no real node");
  await importImages(state.realNode, [sinkArchive]);
  const objects = await stackProfileObjects(state, { namespace, sink: "sinkbinding" }, STEP);
  const write = async (name: string, list: readonly Manifest[]) => {
    const file = path.join(state.realNode?.paths.dir ?? "", name);
    await writeFile(file, list.map((o) => stringify(o, { version: "1.1" })).join("---\n"));
    return ["-f", file];
  };
  // The AppMonitor CRD first: the ApiServerSource's adapter exits at start when its kind is not served.
  const first = objects.filter((o) => o.kind === "Namespace" || o.kind === "CustomResourceDefinition");
  await stackKubectl(state, ["apply", "--server-side", "--field-manager=appmonitor-stack", ...await write("appmonitor-crds.yaml", first)], STEP);
  await waitEstablished((args) => stackKubectl(state, args, STEP), ["crd/appmonitors.kubedemo.com"]);
  await placeNamespace(state, namespace);
  await stackKubectl(state, ["apply", "--server-side", "--force-conflicts", "--field-manager=appmonitor-stack", ...await write("appmonitor-eventing.yaml", objects.filter(isEventingObject))], STEP);
  const broker = brokerIn(namespace);
  const sink = { name: DEAD_LETTER_SINK.name, namespace };

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await custom.getNamespacedCustomObject({ group: "eventing.knative.dev", version: "v1", namespace: broker.namespace, plural: "brokers", name: broker.name }) as {
      status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[]; address?: { url?: string } };
    };
    const ready = found.status?.conditions?.find((c) => c.type === "Ready");
    if (ready?.status === "True" && found.status?.address?.url) {
      await waitAvailable(kc, sink.name, Math.max(deadline - Date.now(), 1_000), sink.namespace, STEP);
      return found.status.address.url;
    }
    if (Date.now() > deadline) throw new StepError(STEP, `Broker ${broker.namespace}/${broker.name} not Ready after ${timeoutMs / 1000} s: ${JSON.stringify(found.status?.conditions ?? [])}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
