/**
 * Where memory-scaler's Kubernetes credentials come from: `KubeConfig.loadFromDefault()`, so
 * the same code runs in a cluster (its ServiceAccount token) and from a laptop (`KUBECONFIG`,
 * else `~/.kube/config`). https://github.com/kubernetes-client/javascript#configuration
 */
import path from "node:path";
import * as k8s from "@kubernetes/client-node";

/**
 * Loads the client configuration.
 *
 * `kubeconfig` is the `KUBECONFIG` of the function's own environment. `loadFromDefault()` reads
 * `process.env`, which is the same thing when the launcher runs the function; a function started
 * in-process with another environment (tests, benchmarks) names its files here, and they are
 * loaded by the rule `loadFromDefault()` applies to `KUBECONFIG`: the first file, then the
 * others merged into it.
 *
 * @throws Error (with `cause`) when a file is not a valid kubeconfig, or when the result names
 * no current cluster.
 */
export function loadKubeConfig(kubeconfig: string | undefined): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  try {
    if (kubeconfig === undefined || kubeconfig === process.env.KUBECONFIG) {
      kc.loadFromDefault();
    } else {
      const [first, ...rest] = kubeconfig.split(path.delimiter).filter((file) => file !== "");
      if (first !== undefined) kc.loadFromFile(first);
      for (const file of rest) {
        const other = new k8s.KubeConfig();
        other.loadFromFile(file);
        kc.mergeConfig(other);
      }
    }
  } catch (error) {
    throw new Error(`cannot load the Kubernetes client configuration: ${(error as Error).message}`, { cause: error });
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error("the Kubernetes client configuration has no current cluster (KUBECONFIG, ~/.kube/config or in-cluster)");
  }
  return kc;
}
