/**
 * The shipped Serving profile (knative/: the functions and the dead-letter sink as Knative
 * Services, with the Broker, Triggers, sources and SinkBinding) on the stack's real node, where
 * Knative Serving (no ingress, `serving-install.ts`) runs beside Eventing: rendered through the
 * stack's overlay (`stack-profile.ts`, `profile: "serving"`), the functions' images named by the
 * digests the stack's registry holds them under (the real node pulls them from there), applied
 * as the Eventing-only profile is (`applyProfile`), and each Knative Service's first Revision
 * waited for until Ready: admitted by Serving's webhook, its Deployment (the function's container
 * plus queue-proxy) Available on the real node.
 *
 * Not run: the Route's address through an ingress. No KIngress is reconciled (none runs here), so
 * the Routes and Knative Services do not become Ready, and the Route's address, which Triggers
 * whose subscriber is a Knative Service resolve, leads nowhere (its Service stays Serving's
 * placeholder ExternalName). A Revision's own Services (`<revision>` and `<revision>-private`) do
 * run: Serving points the first at the activator or at the Pods' queue-proxy, the second at the Pods.
 */
import * as k8s from "@kubernetes/client-node";
import { FUNCTION_IMAGES } from "../../../scripts/images/build.ts";
import type { Manifest } from "../../../scripts/lib/manifest.ts";
import { applyProfile, FUNCTIONS_NAMESPACE, stackProfileObjects } from "./function-pods-install.ts";
import { until } from "./eventing-install.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import type { StackState } from "./state.ts";

const STEP = "deploy the Serving profile";

/** What {@link deployServingProfile} made. */
export interface ServingProfile {
  readonly namespace: string;
  /** The bearer token alert-receiver requires. */
  readonly webhookToken: string;
  /** Each Knative Service's Ready Revision, by the Knative Service's name. */
  readonly revisions: Readonly<Record<string, string>>;
  /** Seconds from the first apply to the last Revision Ready. */
  readonly seconds: number;
}

/**
 * Each function image's digest in the stack's registry, by its name without the tag (the form
 * kustomize's `images` takes).
 * @throws StepError naming the images the registry does not serve and the command that builds them.
 */
export function registryDigests(state: StackState): Record<string, string> {
  const served = new Map((state.registry?.images ?? []).map((i) => [i.reference, i.digest]));
  const missing = Object.entries(FUNCTION_IMAGES).filter(([, reference]) => !served.has(reference)).map(([name]) => name);
  if (missing.length > 0) {
    throw new StepError(STEP, `the stack's registry does not serve ${missing.join(", ")}: \`npm run image -- ${missing.join(" ")}\` builds them, then start the stack again`);
  }
  return Object.fromEntries(Object.values(FUNCTION_IMAGES).map((reference) => [reference.slice(0, reference.lastIndexOf(":")), served.get(reference) as string]));
}

type Condition = { type: string; status: string; reason?: string; message?: string };
type KnativeStatus = { status?: { latestCreatedRevisionName?: string; latestReadyRevisionName?: string; conditions?: Condition[] } };

/**
 * Installs the Serving profile on a stack running Knative Eventing and Serving, and waits until
 * every Knative Service's latest Revision is Ready.
 * @param options.timeoutMs how long to wait for the Revisions in all, ms (default 300 000).
 * @throws StepError when the stack lacks Eventing or Serving, an apply fails, or a Revision
 *   is not Ready in time (the message gives the Configurations' and Revisions' conditions).
 */
export async function deployServingProfile(state: StackState, options: { namespace?: string; timeoutMs?: number; progress?: (line: string) => void } = {}): Promise<ServingProfile> {
  if (!state.eventing || !state.serving) throw new StepError(STEP, "the stack runs no Knative Serving beside Eventing; start it with 'npm run stack -- up --real-node --eventing --serving'");
  const namespace = options.namespace ?? FUNCTIONS_NAMESPACE;
  const say = options.progress ?? (() => {});
  const t0 = Date.now();
  const objects = await stackProfileObjects(state, { namespace, sink: "sinkbinding", profile: "serving", imageDigests: registryDigests(state) }, STEP);
  const webhookToken = await applyProfile(state, objects, namespace, STEP, "serving-profile");
  const services = objects.filter((o: Manifest) => o.apiVersion === "serving.knative.dev/v1" && o.kind === "Service").map((o) => o.metadata.name);

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const read = (plural: string, name: string) => custom.getNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace, plural, name }) as Promise<KnativeStatus>;
  const revisions: Record<string, string> = {};
  for (const name of services) {
    await until(async () => {
      const { status } = await read("configurations", name);
      if (!status?.latestReadyRevisionName || status.latestReadyRevisionName !== status.latestCreatedRevisionName) return false;
      revisions[name] = status.latestReadyRevisionName;
      return true;
    }, Math.max(1, t0 + (options.timeoutMs ?? 300_000) - Date.now()), async () => {
      const configuration = await read("configurations", name).catch((e: Error) => ({ error: e.message }));
      const created = (configuration as KnativeStatus).status?.latestCreatedRevisionName;
      const revision = created ? await read("revisions", created).catch((e: Error) => ({ error: e.message })) : undefined;
      return `Knative Service ${namespace}/${name} has no Ready Revision (Configuration: ${JSON.stringify((configuration as KnativeStatus).status?.conditions ?? configuration)}; Revision ${created}: ${JSON.stringify((revision as KnativeStatus | undefined)?.status?.conditions ?? revision)})`;
    }, STEP);
    say(`Serving profile: ${name} Revision ${revisions[name]} Ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return { namespace, webhookToken, revisions, seconds: (Date.now() - t0) / 1000 };
}
