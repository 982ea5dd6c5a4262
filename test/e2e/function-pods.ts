/**
 * The functions running as Pods on the stack's real node (`deployFunctionPods`), seen the way the
 * chain sees a function process: a URL (the Pod's IP, which the host reaches through the Pods'
 * bridge) and its JSON log lines (the container's log, read through the API server every half
 * second while the chain runs).
 */
import * as k8s from "@kubernetes/client-node";
import { deployFunctionPods, FUNCTIONS_NAMESPACE, type FunctionPodName, type FunctionPods } from "../stack/function-pods-install.ts";
import type { StackState } from "../stack/stack.ts";
import type { FunctionProcess, LogLine } from "./processes.ts";

/** The three function Pods as chain functions, and the webhook token alert-receiver requires. */
export interface PodFunctions {
  functions: Record<FunctionPodName, FunctionProcess>;
  installed: FunctionPods;
}

/**
 * Deploys the functions on the real node (images from `npm run image`), then follows each one's
 * Pod: `url` is `http://<Pod IP>:8080`, `logs` is refreshed from its container log until `stop()`,
 * which stops the following and leaves the Deployments running.
 * @throws StackStepError from the deployment; Error when a function has no Running Pod.
 */
export async function podFunctions(state: StackState): Promise<PodFunctions> {
  const installed = await deployFunctionPods(state);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const follow = async (name: FunctionPodName): Promise<FunctionProcess> => {
    const pods = (await core.listNamespacedPod({ namespace: FUNCTIONS_NAMESPACE, labelSelector: `app.kubernetes.io/name=${name}` })).items;
    const pod = pods.find((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    if (!pod?.status?.podIP || !pod.metadata?.name) throw new Error(`${name}: no Running Pod in ${FUNCTIONS_NAMESPACE}`);
    const podName = pod.metadata.name;
    const fp: FunctionProcess = { name, url: `http://${pod.status.podIP}:8080`, logs: [], text: [], stop: async () => {} };
    const read = async () => {
      const log = await core.readNamespacedPodLog({ name: podName, namespace: FUNCTIONS_NAMESPACE, container: name });
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
  return { functions: { "memory-scaler": scaler as FunctionProcess, "alert-receiver": receiver as FunctionProcess, "rule-sync": ruleSync as FunctionProcess }, installed };
}
