/**
 * ServiceAccount credentials that a test rotates and revokes as a cluster does, against the
 * stack's real API server: the token is a TokenRequest token bound to a Secret
 * (`boundObjectRef`), so deleting that Secret revokes it — the API server refuses it from then
 * on, as it refuses a Pod-bound token once its Pod is gone. The function reads it the way it does
 * in a cluster: a kubeconfig whose user is the client's `tokenFile` auth provider, exactly what
 * `KubeConfig.loadFromCluster()` makes of `/var/run/secrets/kubernetes.io/serviceaccount/token`
 * (re-read at most every 60 s), and the file is replaced by a rename, as the kubelet's atomic
 * writer does.
 * https://kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/#bound-service-account-token-volume
 */
import { randomBytes } from "node:crypto";
import { rename, writeFile } from "node:fs/promises";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { adminKubeConfig, waitFor } from "./stack.ts";

/** Credentials of one ServiceAccount in files, and the rotation of its token. */
export interface RotatingToken {
  /** The kubeconfig file: the stack's API server and CA, the token read from {@link tokenFile}. */
  readonly kubeconfig: string;
  readonly tokenFile: string;
  /** Issues a new token, writes it to the file, then revokes the old one and waits until the API server refuses it. */
  rotate(): Promise<void>;
  /** Revokes the current token without writing another (the file keeps the dead one); waits until it is refused. */
  revoke(): Promise<void>;
  /** Deletes the Secrets the tokens are bound to (the files stay in the caller's directory). */
  remove(): Promise<void>;
}

interface Binding {
  readonly secret: string;
  readonly token: string;
}

/**
 * Credentials of ServiceAccount `namespace/name` in `dir`.
 * @throws Error when the TokenRequest returns no token, or the admin kubeconfig has no CA.
 */
export async function rotatingToken(namespace: string, name: string, dir: string): Promise<RotatingToken> {
  const admin = await adminKubeConfig();
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const cluster = admin.getCurrentCluster();
  if (cluster?.caData === undefined) throw new Error("the stack's admin kubeconfig has no CA data");
  const suffix = randomBytes(3).toString("hex");
  const tokenFile = path.join(dir, `token-${suffix}`);
  const kubeconfig = path.join(dir, `kubeconfig-${suffix}`);
  const secrets = new Set<string>();

  const bind = async (): Promise<Binding> => {
    const secret = await core.createNamespacedSecret({ namespace, body: { metadata: { generateName: `${name}-token-binding-`, labels: { "appmonitor.test/run": "true" } } } });
    const secretName = secret.metadata?.name ?? "";
    secrets.add(secretName);
    const request = await core.createNamespacedServiceAccountToken({
      name,
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: "v1", kind: "Secret", name: secretName, uid: secret.metadata?.uid } } },
    });
    const token = request.status?.token;
    if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
    return { secret: secretName, token };
  };
  const write = async (token: string): Promise<void> => {
    await writeFile(`${tokenFile}.new`, token, { mode: 0o600 });
    await rename(`${tokenFile}.new`, tokenFile);
  };
  /** Deletes the binding's Secret and waits until the API server refuses its token. */
  const revoke = async (binding: Binding): Promise<void> => {
    await core.deleteNamespacedSecret({ namespace, name: binding.secret });
    secrets.delete(binding.secret);
    const probe = new k8s.KubeConfig();
    probe.loadFromOptions({ clusters: [cluster], users: [{ name: "old", token: binding.token }], contexts: [{ name: "old", cluster: cluster.name, user: "old" }], currentContext: "old" });
    const api = probe.makeApiClient(k8s.CoreV1Api);
    await waitFor(`the token bound to Secret ${namespace}/${binding.secret} refused`, async () => {
      try {
        await api.getAPIResources();
        return false;
      } catch (error) {
        return (error as { code?: number }).code === 401;
      }
    });
  };

  let current = await bind();
  await write(current.token);
  await writeFile(
    kubeconfig,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: stack",
      "  cluster:",
      `    server: ${cluster.server}`,
      `    certificate-authority-data: ${cluster.caData}`,
      "users:",
      `- name: ${name}`,
      "  user:",
      "    auth-provider:",
      "      name: tokenFile",
      "      config:",
      `        tokenFile: ${tokenFile}`,
      "contexts:",
      "- name: sa",
      "  context:",
      "    cluster: stack",
      `    user: ${name}`,
      "current-context: sa",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );

  return {
    kubeconfig,
    tokenFile,
    async rotate() {
      const previous = current;
      current = await bind();
      await write(current.token);
      await revoke(previous);
    },
    async revoke() {
      await revoke(current);
    },
    async remove() {
      await Promise.all([...secrets].map((secret) => core.deleteNamespacedSecret({ namespace, name: secret }).catch(() => undefined)));
    },
  };
}
