/**
 * Where the functions' Kubernetes credentials come from (memory-scaler and rule-sync), and how
 * their API calls reach the API server. `KubeConfig.loadFromDefault()`, so the same code runs in
 * a cluster (its ServiceAccount token) and from a laptop (`KUBECONFIG`, else `~/.kube/config`).
 * https://github.com/kubernetes-client/javascript#configuration
 *
 * {@link FunctionKubeConfig} adds four things to the client's `KubeConfig`:
 *
 * - A timeout on every API request, from its start to the last byte of its answer's body
 *   ({@link DEFAULT_KUBE_API_TIMEOUT_MS}). The client sets none: a connection that went silent
 *   (a dropped NAT entry, a node gone without a reset) held each call on it, and the event
 *   behind it, until Knative gave up on the request. A request past it is abandoned, its
 *   connection closed, and it fails with `KubeApiTimeoutError` (`kube-api-errors.ts`: 503).
 * - Pooled connections. @kubernetes/client-node 1.x builds a new `https.Agent` for every request
 *   (`KubeConfig.applySecurityAuthentication` → `createAgent`), i.e. a new TCP connection and TLS
 *   handshake per API call; here each distinct set of TLS options gets one keep-alive agent.
 *   Credentials in headers (tokens, refreshed on every request) are untouched.
 * - Credentials read again at once on a 401. In a cluster the token is the kubelet's projected
 *   ServiceAccount token, which it rotates; the client re-reads that file only every 60 s
 *   (`FileAuth`), and a kubeconfig's `token-file` only when loaded. So after a rotation whose old
 *   token was revoked, every call would be refused for up to a minute. Instead, a 401 loads the
 *   credentials again from where they came from (a fresh `KubeConfig`: the token file, the
 *   kubeconfig files, an exec plugin) and sends the same request once more. That is safe for
 *   every verb: the API server authenticates before anything else, so a refused request did
 *   nothing. A burst of 401s loads once; a second 401 is the caller's (`kube-api-errors.ts`).
 * - The authorizer's 403s, reported to an observer with the permission they name, whichever call
 *   met them (`kube-access-report.ts` turns that into a Warning Event and a metric).
 */
import { createHash } from "node:crypto";
import http from "node:http";
import https from "node:https";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { deniedPermission, KubeApiTimeoutError, readStatus, type DeniedPermission } from "./kube-api-errors.ts";

/** Idle keep-alive connections kept per agent; enough for a burst of concurrent events. */
const MAX_FREE_SOCKETS = 64;

/**
 * The longest one Kubernetes API request may take, headers and body, in ms (`KUBE_API_TIMEOUT_MS`
 * overrides it in memory-scaler and rule-sync).
 *
 * Chosen against what waits for the functions' answers. The Broker's Triggers
 * (knative/eventing/triggers.yaml) set retries and a backoff but no `delivery.timeout`, and
 * Knative sets no per-request timeout without one (`kncloudevents.RetryConfig.RequestTimeout`
 * stays 0), so a delivery lasts until Knative Serving ends the request at the Service's
 * `timeoutSeconds`: 60 s for memory-scaler, 120 s for rule-sync (knative/services/). That is
 * what a silent connection cost every event on it. 10 s is well below it, even for the few calls
 * of an event that may each meet the timeout without failing it (memory-scaler's Node list,
 * Events and status writes: 4 × 10 s < 60 s), so the 503 reaches the Broker and its retry comes
 * on a new connection after 1 s, 2 s, 4 s… rather than after a minute. And it is above the
 * slowest answer of a healthy API server: a write goes through admission webhooks, whose
 * `timeoutSeconds` defaults to 10 s, and no read or paginated list of these functions is near it.
 * A write cut short may have been applied; the compare-and-swap writes make the retry harmless.
 */
export const DEFAULT_KUBE_API_TIMEOUT_MS = 10_000;

/** The range `KUBE_API_TIMEOUT_MS` is accepted in, in ms (memory-scaler's and rule-sync's config.ts read it). */
export const KUBE_API_TIMEOUT_RANGE_MS = { min: 100, max: 60_000 } as const;

/** Options of {@link FunctionKubeConfig} and {@link loadKubeConfig}. */
export interface KubeClientOptions {
  /** Per request, from its start to its answer's last byte, in ms (≥ 1); {@link DEFAULT_KUBE_API_TIMEOUT_MS} when absent. */
  readonly timeoutMs?: number;
}

/** What the client layer tells its owner about the API server's answers; every method optional. */
export interface KubeAccessObserver {
  /** The authorizer refused a request (403) for want of `permission`; once per refused request. */
  forbidden?(permission: DeniedPermission): void;
  /** A 401 made the credentials be loaded again; `error` when that failed (the previous ones are kept). */
  credentialsReloaded?(error?: Error): void;
}

/** A KubeConfig whose API calls share keep-alive connections and survive a credential rotation. */
export class FunctionKubeConfig extends k8s.KubeConfig {
  readonly #agents = new Map<string, http.Agent>();
  readonly #transport = new k8s.IsomorphicFetchHttpLibrary();
  readonly #load: () => k8s.KubeConfig;
  /** The latest load: what signs requests (its authenticators keep their own token caches). */
  #credentials: k8s.KubeConfig;
  #generation = 0;
  #observer: KubeAccessObserver = {};
  readonly #timeoutMs: number;

  /**
   * @param load reads the configuration from its source; called now, and again on a 401.
   * @param options the per-request timeout.
   */
  constructor(load: () => k8s.KubeConfig, options: KubeClientOptions = {}) {
    super();
    this.#load = load;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_KUBE_API_TIMEOUT_MS;
    this.#credentials = this.#adopt(load());
  }

  /** The per-request timeout, in ms. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** Sets who is told about refused credentials and permissions (replaces the previous observer). */
  observe(observer: KubeAccessObserver): void {
    this.#observer = observer;
  }

  /** Counts the loads: a request signed at generation g that meets a 401 reloads only if no one did since. */
  get credentialGeneration(): number {
    return this.#generation;
  }

  /**
   * Loads the credentials again, unless another request did since generation `seen`.
   * A failed load keeps the previous credentials and tells the observer.
   */
  reloadCredentials(seen: number = this.#generation): void {
    if (seen !== this.#generation) return;
    this.#generation += 1;
    try {
      this.#credentials = this.#adopt(this.#load());
      this.#observer.credentialsReloaded?.();
    } catch (error) {
      this.#observer.credentialsReloaded?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Signs with the latest credentials, then swaps the client's one-off agent for a pooled one. */
  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await this.#credentials.applySecurityAuthentication(context);
    const agent = context.getAgent();
    // Proxy agents (socks, http(s) proxies) are other classes: left as they are.
    if (agent === undefined || (agent.constructor !== https.Agent && agent.constructor !== http.Agent)) return;
    context.setAgent(this.#pooled(agent));
  }

  /** An API client whose requests are retried once with fresh credentials after a 401, and whose 403s are observed. */
  override makeApiClient<T extends k8s.ApiType>(apiClientType: k8s.ApiConstructor<T>): T {
    const cluster = this.getCurrentCluster();
    if (cluster === null) throw new Error("no current cluster in the Kubernetes client configuration");
    return new apiClientType(
      k8s.createConfiguration({
        baseServer: new k8s.ServerConfiguration(cluster.server, {}),
        authMethods: { default: this },
        httpApi: k8s.wrapHttpLibrary({ send: (request) => this.#send(request) }),
      }),
    );
  }

  /** Destroys the pooled connections (on shutdown). */
  destroyAgents(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }

  async #send(request: k8s.RequestContext): Promise<k8s.ResponseContext> {
    const seen = this.#generation;
    // The caller's own signal, if any: each try combines it with a timer of its own.
    const given = request.getSignal();
    let response = await this.#timed(request, given);
    if (response.httpStatusCode === 401) {
      await response.body.binary().catch(() => undefined);
      this.reloadCredentials(seen);
      // New credentials may be of another kind (a client certificate): no stale token may stay.
      delete request.getHeaders()["Authorization"];
      await this.applySecurityAuthentication(request);
      response = await this.#timed(request, given);
    }
    if (response.httpStatusCode === 403 && this.#observer.forbidden !== undefined) {
      // Read once here, handed on as a body that can be read again by the client's deserializer.
      const text = await response.body.text();
      const permission = deniedPermission(readStatus(403, text, response.headers).message);
      if (permission !== undefined) this.#observer.forbidden(permission);
      response = new k8s.ResponseContext(response.httpStatusCode, response.headers, { text: async () => text, binary: async () => Buffer.from(text) });
    }
    return response;
  }

  /**
   * One request within the timeout. The client reads the answer's body after this resolves, so
   * the body it gets is read under the same timer: a request past the timeout is aborted wherever
   * it is (connecting, waiting for headers, reading the body) and fails with KubeApiTimeoutError.
   */
  async #timed(request: k8s.RequestContext, given: AbortSignal | undefined): Promise<k8s.ResponseContext> {
    const method = request.getHttpMethod().toString();
    const url = request.getUrl();
    const timer = new AbortController();
    const handle = setTimeout(() => timer.abort(), this.#timeoutMs);
    request.setSignal(given === undefined ? timer.signal : AbortSignal.any([given, timer.signal]));
    const failed = (error: unknown): never => {
      clearTimeout(handle);
      if (timer.signal.aborted) throw new KubeApiTimeoutError(method, url, this.#timeoutMs, { cause: error });
      throw error;
    };
    let response: k8s.ResponseContext;
    try {
      response = await this.#transport.send(request).toPromise();
    } catch (error) {
      return failed(error);
    }
    const { body } = response;
    const read = async <T>(part: () => Promise<T>): Promise<T> => {
      try {
        return await part();
      } catch (error) {
        return failed(error);
      } finally {
        clearTimeout(handle);
      }
    };
    return new k8s.ResponseContext(response.httpStatusCode, response.headers, { text: () => read(() => body.text()), binary: () => read(() => body.binary()) });
  }

  #adopt(loaded: k8s.KubeConfig): k8s.KubeConfig {
    this.clusters = loaded.clusters;
    this.users = loaded.users;
    this.contexts = loaded.contexts;
    this.currentContext = loaded.currentContext;
    return loaded;
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
 *   the others merged into it (a later file's `current-context` wins, as there). A 401 loads
 *   them again the same way.
 * @param options the per-request timeout ({@link DEFAULT_KUBE_API_TIMEOUT_MS} when absent).
 * @returns the configuration, with a current cluster; call `destroyAgents()` on shutdown.
 * @throws Error (with `cause`) when a file is not a valid kubeconfig, or when the result names
 *   no current cluster.
 */
export function loadKubeConfig(kubeconfig: string | undefined, options: KubeClientOptions = {}): FunctionKubeConfig {
  const load = (): k8s.KubeConfig => {
    const kc = new k8s.KubeConfig();
    if (kubeconfig === undefined || kubeconfig === process.env.KUBECONFIG) {
      kc.loadFromDefault();
      return kc;
    }
    const [first, ...rest] = kubeconfig.split(path.delimiter).filter((file) => file !== "");
    if (first !== undefined) kc.loadFromFile(first);
    for (const file of rest) {
      const other = new k8s.KubeConfig();
      other.loadFromFile(file);
      kc.mergeConfig(other);
    }
    return kc;
  };
  let kc: FunctionKubeConfig;
  try {
    kc = new FunctionKubeConfig(load, options);
  } catch (error) {
    throw new Error(`cannot load the Kubernetes client configuration (KUBECONFIG=${kubeconfig ?? ""}): ${(error as Error).message}`, { cause: error });
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error("no current cluster in the Kubernetes client configuration: set KUBECONFIG, or run in a cluster with a ServiceAccount token");
  }
  return kc;
}
