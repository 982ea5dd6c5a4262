/**
 * Benchmark of the Broker hop on the real node (a script, not a test): the same firing CloudEvent
 * posted, one at a time, straight to memory-scaler's Pod and to the Broker ingress's Pod (ingress
 * → in-memory channel → filter → Trigger → memory-scaler), each event timed from its POST to
 * memory-scaler's log line for it (`test/harness/lib/broker-hop.ts`); prints p50 and p99 of each path.
 *
 * Uses the stack named by APPMONITOR_STACK_DIR when it runs Eventing (`npm run stack -- up
 * --real-node --eventing`), else starts one with the real node and Eventing in a temporary
 * directory and stops it at the end; either way it applies appmonitor's Eventing objects
 * (the shipped Eventing-only profile, test/harness/stack/stack-profile.ts) and the functions as Pods, from their images (built first when not
 * cached). Root; the real node is one per machine, so
 * run it as `flock /tmp/appmonitor-real-node.lock node test/bench/broker-hop.ts`.
 *
 * Usage: node test/bench/broker-hop.ts [events=200]
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { installEventing } from "../harness/stack/eventing-install.ts";
import { applyAppmonitorEventing, BROKER } from "../harness/stack/eventing-objects.ts";
import { EVENTING_NAMESPACE } from "../harness/stack/eventing-manifests.ts";
import { deployFunctionPods, FUNCTION_POD_NAMES, FUNCTIONS_NAMESPACE } from "../harness/stack/function-pods-install.ts";
import { buildImages } from "../../scripts/images/build.ts";
import { down, up } from "../harness/stack/stack.ts";
import { readState, type StackState } from "../harness/stack/state.ts";
import { measurePath, waitForDelivery } from "../harness/lib/broker-hop.ts";

const events = Number(process.argv[2] ?? 200);
// The function Pods run the images `npm run image` builds: built here when not cached.
await buildImages(FUNCTION_POD_NAMES, (line) => console.log(`images: ${line}`));
const named = process.env.APPMONITOR_STACK_DIR ? await readState(process.env.APPMONITOR_STACK_DIR) : undefined;
let state: StackState;
let ownDir: string | undefined;
if (named?.eventing) {
  state = named;
} else {
  ownDir = await mkdtemp(path.join(os.tmpdir(), "appmonitor-broker-hop-"));
  state = await up({ stateDir: ownDir, nodes: 1, realNode: true });
  const installed = await installEventing(state);
  console.log(`Eventing ${installed.version} Available in ${installed.seconds.toFixed(1)} s`);
}
try {
  await applyAppmonitorEventing(state);
  await deployFunctionPods(state, { sink: "sinkbinding" });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const running = async (namespace: string, prefix: string) => {
    const pod = (await core.listNamespacedPod({ namespace })).items.find((p) => p.metadata?.name?.startsWith(prefix) && p.status?.phase === "Running");
    if (!pod?.status?.podIP || !pod.metadata?.name) throw new Error(`no running Pod ${namespace}/${prefix}*`);
    return { name: pod.metadata.name, ip: pod.status.podIP };
  };
  const scaler = await running(FUNCTIONS_NAMESPACE, "memory-scaler-");
  const ingress = await running(EVENTING_NAMESPACE, "mt-broker-ingress-");
  const pod = { name: scaler.name, namespace: FUNCTIONS_NAMESPACE };
  const brokerUrl = `http://${ingress.ip}:8080${BROKER.ingressPath}`;
  await waitForDelivery(core, brokerUrl, pod);
  const direct = await measurePath(core, `http://${scaler.ip}:8080/`, pod, events);
  const broker = await measurePath(core, brokerUrl, pod, events);
  console.log(`${events} events each, POST → memory-scaler's log line, one at a time:`);
  console.log(`  straight to memory-scaler's Pod: p50 ${direct.p50} ms, p99 ${direct.p99} ms`);
  console.log(`  through the Broker:              p50 ${broker.p50} ms, p99 ${broker.p99} ms`);
  console.log(`  the Broker hop adds ${broker.p50 - direct.p50} ms at the median, ${broker.p99 - direct.p99} ms at p99`);
} finally {
  if (ownDir) await down(ownDir);
}
