/** Credentials of a ServiceAccount, from the TokenRequest API, for running a function as it runs in the cluster. */
import * as k8s from "@kubernetes/client-node";

/**
 * A KubeConfig that authenticates as ServiceAccount `namespace/name` with a short-lived token
 * from the TokenRequest API (https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-request-v1/),
 * asked for with `admin` and pointing at `admin`'s cluster.
 */
export async function tokenKubeConfig(admin: k8s.KubeConfig, namespace: string, name: string, seconds = 3600): Promise<k8s.KubeConfig> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const res = await core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { expirationSeconds: seconds, audiences: [] } } });
  const token = res.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("admin kubeconfig has no current cluster");
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: `${namespace}-${name}`, token }],
    contexts: [{ name: "sa", cluster: cluster.name, user: `${namespace}-${name}` }],
    currentContext: "sa",
  });
  return kc;
}
