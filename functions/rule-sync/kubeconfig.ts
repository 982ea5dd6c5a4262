/**
 * Where rule-sync's Kubernetes credentials come from: `KubeConfig.loadFromDefault()`, so the
 * same code runs in a cluster (its ServiceAccount token) and from a laptop (`KUBECONFIG`, else
 * `~/.kube/config`). https://github.com/kubernetes-client/javascript#configuration
 */
import path from "node:path";
import * as k8s from "@kubernetes/client-node";

/**
 * Loads the client configuration.
 *
 * @param kubeconfig the `KUBECONFIG` of the function's environment. When it is unset or the
 *   same as this process's, `loadFromDefault()` reads it; a function started in-process with
 *   another environment (tests) names its files here, and they are loaded as `loadFromDefault()`
 *   loads `KUBECONFIG`: the first file, the others merged into it.
 * @returns the configuration, with a current cluster.
 * @throws Error (with `cause`) when a file is not a valid kubeconfig, or when the result names
 *   no current cluster.
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
        const more = new k8s.KubeConfig();
        more.loadFromFile(file);
        kc.mergeConfig(more, true);
      }
    }
  } catch (error) {
    throw new Error(`cannot load the Kubernetes client configuration (KUBECONFIG=${kubeconfig ?? ""}): ${(error as Error).message}`, { cause: error });
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error("no current cluster in the Kubernetes client configuration: set KUBECONFIG, or run in a cluster with a ServiceAccount token");
  }
  return kc;
}
