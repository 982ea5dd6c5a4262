/**
 * Where the functions' Kubernetes credentials come from (memory-scaler and rule-sync):
 * `KubeConfig.loadFromDefault()`, so the same code runs in a cluster (its ServiceAccount token)
 * and from a laptop (`KUBECONFIG`, else `~/.kube/config`).
 * https://github.com/kubernetes-client/javascript#configuration
 *
 * @kubernetes/client-node 1.x builds a new `https.Agent` for every request
 * (`KubeConfig.applySecurityAuthentication` → `createAgent`), i.e. a new TCP connection and TLS
 * handshake per API call. {@link PooledKubeConfig} hands out one keep-alive agent per distinct
 * set of TLS options instead, so API calls reuse connections; credentials in headers (tokens,
 * refreshed on every request) are untouched.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import https from "node:https";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";

/** Idle keep-alive connections kept per agent; enough for a burst of concurrent events. */
const MAX_FREE_SOCKETS = 64;

/** A KubeConfig whose API calls share keep-alive connections. */
export class PooledKubeConfig extends k8s.KubeConfig {
  readonly #agents = new Map<string, http.Agent>();

  /** Applies the credentials as the base class does, then swaps its one-off agent for a pooled one. */
  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const agent = context.getAgent();
    // Proxy agents (socks, http(s) proxies) are other classes: left as they are.
    if (agent === undefined || (agent.constructor !== https.Agent && agent.constructor !== http.Agent)) return;
    context.setAgent(this.#pooled(agent));
  }

  /** Destroys the pooled connections (on shutdown). */
  destroyAgents(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }

  #pooled(agent: http.Agent): http.Agent {
    const options = (agent as http.Agent & { options: https.AgentOptions }).options;
    const tls = agent instanceof https.Agent;
    const digest = createHash("sha256");
    for (const value of [tls, options.ca, options.cert, options.key, options.pfx, options.passphrase, options.rejectUnauthorized, options.servername]) {
      digest.update(Buffer.isBuffer(value) ? value : String(JSON.stringify(value ?? null)));
      digest.update("\u0000");
    }
    const key = digest.digest("hex");
    let pooled = this.#agents.get(key);
    if (pooled === undefined) {
      const keepAlive = { ...options, keepAlive: true, maxFreeSockets: MAX_FREE_SOCKETS };
      pooled = tls ? new https.Agent(keepAlive) : new http.Agent(keepAlive);
      this.#agents.set(key, pooled);
    }
    return pooled;
  }
}

/**
 * Loads the client configuration.
 *
 * @param kubeconfig the `KUBECONFIG` of the function's own environment. `loadFromDefault()`
 *   reads `process.env`, which is the same thing when the launcher runs the function; a function
 *   started in-process with another environment (tests, benchmarks) names its files here, and
 *   they are loaded by the rule `loadFromDefault()` applies to `KUBECONFIG`: the first file, then
 *   the others merged into it (a later file's `current-context` wins, as there).
 * @returns the configuration, with a current cluster; call `destroyAgents()` on shutdown.
 * @throws Error (with `cause`) when a file is not a valid kubeconfig, or when the result names
 *   no current cluster.
 */
export function loadKubeConfig(kubeconfig: string | undefined): PooledKubeConfig {
  const kc = new PooledKubeConfig();
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
    throw new Error(`cannot load the Kubernetes client configuration (KUBECONFIG=${kubeconfig ?? ""}): ${(error as Error).message}`, { cause: error });
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error("no current cluster in the Kubernetes client configuration: set KUBECONFIG, or run in a cluster with a ServiceAccount token");
  }
  return kc;
}
