/**
 * The dead-letter sink's configuration: defaults as named constants, the environment overrides
 * them, validated at start-up with a message that names the variable (DESIGN.md "Configuration
 * shared by the functions").
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `INSTALL_NAMESPACE` | the Pod's own namespace (its ServiceAccount's, as the in-cluster kubeconfig has it) | where the Events of dead letters that name no object go, and the Broker's namespace |
 * | `SERVICE_ACCOUNT` | `appmonitor-dead-letter` | the sink's ServiceAccount there: what those Events regard |
 * | `BROKER` | `default` | the Broker the dead letters came through, named on each Event for `kubectl appmonitor resend` |
 * | `KUBECONFIG` | in-cluster credentials | kubeconfig file(s), as `KubeConfig.loadFromDefault()` reads them |
 * | `KUBE_API_TIMEOUT_MS` | 10000 | per Kubernetes API request, headers and body (`DEFAULT_KUBE_API_TIMEOUT_MS` in functions/lib/kubeconfig.ts); past it, 503 |
 */
import { DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS } from "../lib/kubeconfig.ts";
import { isDnsLabel, isDnsSubdomain } from "../lib/kube-names.ts";
import { ConfigError, readInteger, readString } from "../lib/runtime/env.ts";
import type { Env } from "../lib/runtime/types.ts";

/** Default of `SERVICE_ACCOUNT`: knative/rbac/dead-letter.yaml's. */
export const DEFAULT_SERVICE_ACCOUNT = "appmonitor-dead-letter";
/** Default of `BROKER`: knative/eventing/broker.yaml's. */
export const DEFAULT_BROKER = "default";

/** The validated configuration. */
export interface DeadLetterConfig {
  /** `INSTALL_NAMESPACE`; undefined → the kubeconfig's namespace, read at start-up. */
  readonly namespace: string | undefined;
  /** `SERVICE_ACCOUNT`: what the Events of dead letters that name no object regard. */
  readonly serviceAccount: string;
  /** `BROKER`: named on each Event, in {@link DeadLetterConfig.namespace}, for `kubectl appmonitor resend`. */
  readonly broker: string;
  /** `KUBECONFIG` of this environment; undefined → in-cluster or `~/.kube/config`. */
  readonly kubeconfig: string | undefined;
  /** Per Kubernetes API request, headers and body, in ms. */
  readonly kubeApiTimeoutMs: number;
}

/**
 * Reads the variables in the table above.
 * @throws ConfigError naming the variable: a namespace that is not a DNS label; a ServiceAccount
 * or Broker name that is not a DNS subdomain; a `KUBE_API_TIMEOUT_MS` that is not an integer in 100–60000.
 */
export function readConfig(env: Env): DeadLetterConfig {
  const namespace = readString(env, "INSTALL_NAMESPACE");
  if (namespace !== undefined && !isDnsLabel(namespace)) throw new ConfigError("INSTALL_NAMESPACE", `must be a namespace name (DNS label), got ${JSON.stringify(namespace)}`);
  const name = (variable: string, fallback: string) => {
    const value = readString(env, variable) ?? fallback;
    if (!isDnsSubdomain(value)) throw new ConfigError(variable, `must be an object name (DNS subdomain), got ${JSON.stringify(value)}`);
    return value;
  };
  return {
    namespace,
    serviceAccount: name("SERVICE_ACCOUNT", DEFAULT_SERVICE_ACCOUNT),
    broker: name("BROKER", DEFAULT_BROKER),
    kubeconfig: readString(env, "KUBECONFIG"),
    kubeApiTimeoutMs: readInteger(env, "KUBE_API_TIMEOUT_MS", DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS),
  };
}
