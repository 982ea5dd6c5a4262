/**
 * The functions running as Pods on the stack's real node (`deployFunctionPods`), seen the way the
 * chain sees a function process: a URL (the Pod's IP, which the host reaches through the Pods'
 * bridge) and its JSON log lines (the container's log, read through the API server every half
 * second while the chain runs).
 *
 * With `eventing`, Knative Eventing runs there too (installed unless the stack has it) with
 * appmonitor's Broker, Triggers and sources (the shipped Eventing-only profile), and alert-receiver's
 * `K_SINK` is the Broker's address, injected by the SinkBinding: the functions are wired as in a
 * Knative install.
 */
import * as k8s from "@kubernetes/client-node";
import { EVENTING_NAMESPACE } from "../stack/eventing-manifests.ts";
import { installEventing } from "../stack/eventing-install.ts";
import { applyAppmonitorEventing, brokerIn } from "../stack/eventing-objects.ts";
import { deployFunctionPods, FUNCTION_POD_NAMES, type FunctionPodName, type FunctionPods } from "../stack/function-pods-install.ts";
import { saveState, type StackState } from "../stack/state.ts";
import { logFilterReceipts } from "../stack/broker-filter-log.ts";
import { waitForDelivery } from "../lib/broker-hop.ts";
import { eventingTrail } from "../stack/eventing-trail.ts";
import { FIRING_TYPE } from "../../../functions/lib/alert-event.ts";
import type { FunctionProcess, LogLine } from "./processes.ts";

/** A first probe slower than this has the data plane's logs read (`eventingTrail`). */
const SLOW_FIRST_DELIVERY_MS = 10_000;

/** The Broker the functions' events go through, when Eventing runs. */
export interface BrokerInUse {
  /** The Broker's address as Eventing reports it, alert-receiver's `K_SINK`. */
  url: string;
  /** Seconds Eventing's install took, when this call installed it; undefined when the stack had it. */
  installSeconds?: number;
  /** Seconds from applying appmonitor's Eventing objects to the Broker Ready. */
  brokerReadySeconds: number;
  /** Seconds from the function Pods Running to a probe event posted to the ingress reaching memory-scaler. */
  firstDeliverySeconds: number;
}

/** The three function Pods as chain functions, the webhook token alert-receiver requires, and the Broker when there is one. */
export interface PodFunctions {
  functions: Record<FunctionPodName, FunctionProcess>;
  installed: FunctionPods;
  broker?: BrokerInUse;
}

/**
 * Installs Eventing on the stack's real node unless it is there (recorded in the stack's state,
 * so `status` shows it and `down` removes it), applies appmonitor's Eventing objects and makes
 * the Broker filter log each event it is handed (`broker-filter-log.ts`).
 * @returns the Broker's address and the install's seconds (undefined when it was there).
 * @throws StepError from the install or the apply.
 */
async function eventingForFunctions(state: StackState, kc: k8s.KubeConfig, progress: (line: string) => void): Promise<{ url: string; installSeconds?: number; brokerReadySeconds: number }> {
  let installSeconds: number | undefined;
  if (!state.eventing) {
    const installed = await installEventing(state, undefined, progress);
    state.eventing = { version: installed.version, deployments: installed.deployments };
    await saveState(state);
    installSeconds = installed.seconds;
  }
  const t0 = Date.now();
  progress("Broker, Triggers and sources: applying, waiting for the Broker to be Ready");
  const url = await applyAppmonitorEventing(state);
  const brokerReadySeconds = (Date.now() - t0) / 1000;
  await logFilterReceipts(kc);
  return installSeconds === undefined ? { url, brokerReadySeconds } : { url, installSeconds, brokerReadySeconds };
}

/** Functions someone else installed (a Helm release of the chart): where, and the webhook token their Secret holds. */
export interface InstalledFunctions {
  readonly namespace: string;
  readonly webhookToken: string;
}

/** The Broker's address as Eventing reports it, once it is Ready. @throws Error when it is not Ready within 60 s. */
async function readyBrokerUrl(kc: k8s.KubeConfig, namespace: string): Promise<string> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const broker = brokerIn(namespace);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const found = await custom.getNamespacedCustomObject({ group: "eventing.knative.dev", version: "v1", namespace, plural: "brokers", name: broker.name }) as {
      status?: { conditions?: { type: string; status: string }[]; address?: { url?: string } };
    };
    if (found.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") && found.status.address?.url) return found.status.address.url;
    if (Date.now() > deadline) throw new Error(`Broker ${namespace}/${broker.name} not Ready after 60 s: ${JSON.stringify(found.status?.conditions ?? [])}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Deploys the functions on the real node (images from `npm run image`), then follows each one's
 * Pod: `url` is `http://<Pod IP>:8080`, `logs` is refreshed from its container log until `stop()`,
 * which stops the following and leaves the Deployments running. With `eventing`, first Eventing
 * and the Broker (above); returns once alert-receiver's `K_SINK` is the Broker's address and a
 * probe event posted to the Broker ingress has reached memory-scaler (`progress` hears each step; a Trigger's subscription
 * reaches the in-memory channel's dispatcher a little after the Trigger is Ready). With `installed`
 * nothing is deployed: the Pods of that install are followed (and its Broker, with `eventing`).
 * @throws StepError from the install or deployment; Error when a function has no Running
 *   Pod, alert-receiver's `K_SINK` is not the Broker's, or no probe gets through.
 */
export async function podFunctions(state: StackState, options: { eventing?: boolean; progress?: (line: string) => void; installed?: InstalledFunctions } = {}): Promise<PodFunctions> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const progress = options.progress ?? (() => {});
  const given = options.installed;
  const eventing = !options.eventing ? undefined : given === undefined ? await eventingForFunctions(state, kc, progress) : await (async () => {
    const t0 = Date.now();
    const url = await readyBrokerUrl(kc, given.namespace);
    await logFilterReceipts(kc);
    return { url, brokerReadySeconds: (Date.now() - t0) / 1000 };
  })();
  const installed: FunctionPods = given === undefined
    ? await deployFunctionPods(state, eventing ? { sink: "sinkbinding", progress } : { progress })
    : { ...given, urls: Object.fromEntries(FUNCTION_POD_NAMES.map((n) => [n, `http://${n}.${given.namespace}.svc.cluster.local`])) as FunctionPods["urls"] };
  const namespace = installed.namespace;
  const followed: Partial<Record<FunctionPodName, k8s.V1Pod>> = {};
  const follow = async (name: FunctionPodName): Promise<FunctionProcess> => {
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: `app.kubernetes.io/name=${name}` })).items;
    const pod = pods.find((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    if (!pod?.status?.podIP || !pod.metadata?.name) throw new Error(`${name}: no Running Pod in ${namespace}`);
    followed[name] = pod;
    const podName = pod.metadata.name;
    const fp: FunctionProcess = { name, url: `http://${pod.status.podIP}:8080`, logs: [], text: [], stop: async () => {} };
    const read = async () => {
      const log = await core.readNamespacedPodLog({ name: podName, namespace, container: name });
      const lines: LogLine[] = [];
      const text: string[] = [];
      for (const line of log.split("\n").filter((l) => l.trim())) {
        try {
          lines.push(JSON.parse(line) as LogLine);
        } catch {
          text.push(line);
        }
      }
      // In place: the chain holds these arrays.
      fp.logs.splice(0, fp.logs.length, ...lines);
      fp.text.splice(0, fp.text.length, ...text);
    };
    await read();
    const timer = setInterval(() => void read().catch(() => undefined), 500);
    fp.stop = async () => {
      clearInterval(timer);
      await read().catch(() => undefined);
    };
    return fp;
  };
  const [scaler, receiver, ruleSync] = await Promise.all((["memory-scaler", "alert-receiver", "rule-sync"] as const).map(follow));
  const functions = { "memory-scaler": scaler as FunctionProcess, "alert-receiver": receiver as FunctionProcess, "rule-sync": ruleSync as FunctionProcess };
  if (!eventing) return { functions, installed };
  const stopAll = () => Promise.all(Object.values(functions).map((f) => f.stop()));
  const t0 = Date.now();
  try {
    const sink = followed["alert-receiver"]?.spec?.containers.find((c) => c.name === "alert-receiver")?.env?.find((e) => e.name === "K_SINK")?.value;
    if (sink !== eventing.url) throw new Error(`alert-receiver's K_SINK is ${sink ?? "unset"}, not the Broker's address ${eventing.url} (the SinkBinding injects it)`);
    const ingress = (await core.listNamespacedPod({ namespace: EVENTING_NAMESPACE })).items.find((p) => p.metadata?.name?.startsWith("mt-broker-ingress-") && p.status?.phase === "Running" && p.status.podIP);
    const scalerName = followed["memory-scaler"]?.metadata?.name;
    if (!ingress || !scalerName) throw new Error("no Running Broker ingress Pod");
    await waitForDelivery(core, `http://${ingress.status?.podIP}:8080${brokerIn(namespace).ingressPath}`, { name: scalerName, namespace });
  } catch (error) {
    for (const line of await eventingTrail(kc, t0, FIRING_TYPE).catch(() => [])) progress(`Broker probes: ${line}`);
    await stopAll();
    throw error;
  }
  // Usually under 3 s: when it is not, the run says which hop held the probes.
  if (Date.now() - t0 > SLOW_FIRST_DELIVERY_MS) {
    for (const line of await eventingTrail(kc, t0, FIRING_TYPE).catch((error: Error) => [`not read: ${error.message}`])) progress(`Broker probes, ${((Date.now() - t0) / 1000).toFixed(1)} s to the first: ${line}`);
  }
  return { functions, installed, broker: { ...eventing, firstDeliverySeconds: (Date.now() - t0) / 1000 } };
}
