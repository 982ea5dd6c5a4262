/**
 * A real-node stack with Knative Eventing running for real on its real node, for tests that send
 * events through the real data plane (ingress → in-memory channel → filter → Trigger →
 * subscriber): the real-node stack of `real-node-file.ts` (the run's shared one under `npm test`,
 * else the file's own), Eventing installed on it once (test/harness/stack/eventing-install.ts),
 * and the file's own appmonitor Eventing objects as the shipped Eventing-only profile has them
 * (knative/eventing-only/ through test/harness/stack/stack-profile.ts; the dead-letter sink is
 * appmonitor's dead-letter function), the functions as Pods with alert-receiver's K_SINK injected
 * by the SinkBinding, and memhog with the AppMonitor `mymonitor` (threshold 75, multiplier 2) in a
 * workload namespace placed on the real node; both namespaces deleted when the file ends.
 */
import { after, before } from "node:test";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { HTTP, type CloudEvent } from "cloudevents";
import { buildImages } from "../../scripts/images/build.ts";
import { EVENTING_NAMESPACE } from "../harness/stack/eventing-manifests.ts";
import { installEventing, placeNamespace, type EventingInstallation } from "../harness/stack/eventing-install.ts";
import { applyAppmonitorEventing, BROKER } from "../harness/stack/eventing-objects.ts";
import { DEAD_LETTER_FUNCTION, deployFunctionPods, FUNCTION_POD_NAMES, FUNCTIONS_NAMESPACE } from "../harness/stack/function-pods-install.ts";
import { REAL_NODE } from "../harness/stack/real-node-config.ts";
import { saveState, type StackState } from "../harness/stack/state.ts";
import { createAppMonitor, memhogManifest } from "./memory-scaler.ts";
import { type RealNodeFile, startRealNodeFile } from "./real-node-file.ts";
import { waitFor } from "./stack.ts";

/** What {@link useEventingStack} brought up. */
export interface EventingStack {
  readonly state: StackState;
  readonly installation: EventingInstallation;
  /** The Broker's address as Eventing reports it (in-cluster). */
  readonly brokerUrl: string;
  readonly kc: k8s.KubeConfig;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  /** Where memhog and the AppMonitor `mymonitor` that governs it live. */
  readonly workloadNamespace: string;
}

/** What the file's stack is called and where its workload goes. */
export interface EventingStackOptions {
  /** Prefix of the temporary state directory, e.g. `appmonitor-eventing-`, when the stack is the file's own. */
  readonly stateDirPrefix: string;
  readonly workloadNamespace: string;
}

/** `<shared stack>/eventing.json`: the installation, for the run's next file on the shared stack. */
const installationFile = (stateDir: string): string => path.join(stateDir, "eventing.json");

/**
 * Knative Eventing on the stack: installed, or, on the run's shared stack, found installed by an
 * earlier file (Eventing itself stays for the run; appmonitor's objects do not).
 */
async function eventingOn(state: StackState): Promise<EventingInstallation> {
  if (state.eventing !== undefined && existsSync(installationFile(state.stateDir))) {
    return JSON.parse(await readFile(installationFile(state.stateDir), "utf8")) as EventingInstallation;
  }
  const installation = await installEventing(state);
  process.stderr.write(`# Eventing ${installation.version} installed and Available in ${installation.seconds.toFixed(1)} s\n`);
  await saveState({ ...state, eventing: { version: installation.version, deployments: installation.deployments } });
  await writeFile(installationFile(state.stateDir), JSON.stringify(installation));
  return installation;
}

/**
 * Registers the file's `before` (bring the stack up, up to 20 minutes) and `after` (its
 * namespaces deleted; its own stack down, or the run's shared one left up; the lock released) hooks.
 * The stack is a real-node one of `real-node-file.ts`, Eventing on it; appmonitor's Eventing
 * objects and function Pods are the file's own, deleted with their namespace. node:test runs a
 * file's root-level `before` hooks side by side, so a hook of the file's own that needs the stack
 * goes in a `describe`.
 * @returns the stack, for the tests to call once `before` has run.
 */
export function useEventingStack(options: EventingStackOptions): () => EventingStack {
  let stack: EventingStack | undefined;
  let file: RealNodeFile | undefined;

  before(async () => {
    const images = await buildImages(["memhog", ...FUNCTION_POD_NAMES, DEAD_LETTER_FUNCTION]);
    const archive = (name: string) => images.find((i) => i.name === name)?.archive ?? "";
    file = await startRealNodeFile(options.stateDirPrefix, { sets: { eventing: true } });
    const { state, kc, core, apps } = file;
    const installation = await eventingOn(state);
    const t1 = Date.now();
    file.adopt(FUNCTIONS_NAMESPACE);
    const brokerUrl = await applyAppmonitorEventing(state, undefined, undefined, archive(DEAD_LETTER_FUNCTION));
    process.stderr.write(`# Broker Ready at ${brokerUrl}, dead-letter sink Available, in ${((Date.now() - t1) / 1000).toFixed(1)} s\n`);

    // memhog on the real node too, placed by its namespace as the ApiServerSource's adapter is.
    const workloadNamespace = options.workloadNamespace;
    await file.namespace(workloadNamespace);
    await placeNamespace(state, workloadNamespace);
    await apps.createNamespacedDeployment({ namespace: workloadNamespace, body: await memhogManifest() });
    await createAppMonitor(workloadNamespace, "mymonitor", { memThresholdPercent: 75, memMultiplier: 2 });
    const archives = Object.fromEntries(FUNCTION_POD_NAMES.map((name) => [name, archive(name)]));
    const t2 = Date.now();
    await deployFunctionPods(state, { archives, sink: "sinkbinding" });
    process.stderr.write(`# function Pods Available in ${((Date.now() - t2) / 1000).toFixed(1)} s\n`);
    stack = { state, installation, brokerUrl, kc, core, apps, workloadNamespace };
  }, { timeout: 20 * 60_000 });

  after(async () => {
    await file?.stop();
  });

  return () => {
    if (stack === undefined) throw new Error("the Eventing stack is not up (its before hook failed or has not run)");
    return stack;
  };
}

/** The first Ready Pod of `namespace` whose name starts with `prefix` (waits up to 60 s). */
export async function readyPod(core: k8s.CoreV1Api, namespace: string, prefix: string): Promise<k8s.V1Pod & { metadata: k8s.V1ObjectMeta & { name: string } }> {
  const pod = await waitFor(`a Ready Pod ${namespace}/${prefix}*`, async () => (await core.listNamespacedPod({ namespace })).items.find((p) =>
    p.metadata?.name?.startsWith(prefix) && p.metadata.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")), 60_000, 200);
  return pod as k8s.V1Pod & { metadata: k8s.V1ObjectMeta & { name: string } };
}

/** memhog's Pod, Running on the real node (waits up to 120 s). */
export function runningMemhog(core: k8s.CoreV1Api, namespace: string): Promise<k8s.V1Pod> {
  return waitFor("memhog Running on the real node", async () => (await core.listNamespacedPod({ namespace, labelSelector: "name=memhog" }))
    .items.find((p) => p.status?.phase === "Running" && p.metadata?.deletionTimestamp === undefined && p.spec?.nodeName === REAL_NODE.name), 120_000, 200);
}

/** `http://<Pod IP>:8080<path>` of the Broker ingress's Pod: where a Pod's request to the Broker's address arrives (the host routes to Pod IPs). */
export async function brokerIngressUrl(core: k8s.CoreV1Api): Promise<string> {
  const ingress = await readyPod(core, EVENTING_NAMESPACE, "mt-broker-ingress-");
  return `http://${ingress.status?.podIP}:8080${BROKER.ingressPath}`;
}

/**
 * POSTs `event` (binary mode) to the Broker ingress; its HTTP status (202: accepted). With the
 * in-memory channel the ingress answers once the event's deliveries are over (its fan-out is
 * synchronous), so this waits for them, retries included, unless `signal` aborts first.
 */
export async function postToBroker(core: k8s.CoreV1Api, event: CloudEvent<unknown>, signal?: AbortSignal): Promise<number> {
  const message = HTTP.binary(event);
  const res = await fetch(await brokerIngressUrl(core), { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string, ...(signal === undefined ? {} : { signal }) });
  await res.arrayBuffer();
  return res.status;
}

/** memory-scaler's `appmonitor_memory_scaler_events_total` samples (series → value), read from its Pod. */
export async function scalerEvents(core: k8s.CoreV1Api): Promise<Record<string, number>> {
  const pod = await readyPod(core, FUNCTIONS_NAMESPACE, "memory-scaler-");
  const text = await (await fetch(`http://${pod.status?.podIP}:8080/metrics`)).text();
  return Object.fromEntries(text.split("\n").filter((l) => l.startsWith("appmonitor_memory_scaler_events_total{")).map((l) => {
    const [series, value] = l.split(" ");
    return [series ?? "", Number(value)];
  }));
}

/** The last `lines` lines of the first Ready Pod `namespace/prefix*`'s log, for a failure message. */
export async function logTail(core: k8s.CoreV1Api, namespace: string, prefix: string, lines = 15): Promise<string> {
  return core.readNamespacedPodLog({ name: (await readyPod(core, namespace, prefix)).metadata.name, namespace, tailLines: lines });
}
