/**
 * dead-letter: the dead-letter sink of the Broker and every Trigger (knative/eventing/dead-letter.yaml).
 * Each dead-lettered CloudEvent in, one Warning Event `DeadLetter` out, on the AppMonitor (or
 * other object) the event names, else on the sink's ServiceAccount in the install's namespace,
 * with Knative's reason and the original event for `kubectl appmonitor resend`. Started with
 * `npm run function -- dead-letter`; configuration in `config.ts`, the endpoint and its status
 * codes in `handler.ts`, the Event in `letter.ts`.
 *
 * An HTTP function rather than a CloudEvent one: a request that is no valid CloudEvent must still
 * be logged whole before it is refused, and the runtime refuses those before a CloudEvent
 * function sees them. Readiness is always 200: a dead letter that cannot be recorded is answered
 * 5xx and sent again, and its log line is written either way.
 */
import { reportKubeAccess } from "../lib/kube-access-report.ts";
import { loadKubeConfig } from "../lib/kubeconfig.ts";
import { ConfigError } from "../lib/runtime/env.ts";
import type { HttpFunctionDefinition } from "../lib/runtime/types.ts";
import { createCluster } from "./cluster.ts";
import { readConfig, type DeadLetterConfig } from "./config.ts";
import { createHandler } from "./handler.ts";
import { createMetrics } from "./metrics.ts";

/** The function definition the runtime serves. */
export const fn: HttpFunctionDefinition<DeadLetterConfig> = {
  name: "dead-letter",
  kind: "http",
  configure: readConfig,
  init(config, deps) {
    const kc = loadKubeConfig(config.kubeconfig, { timeoutMs: config.kubeApiTimeoutMs });
    reportKubeAccess(kc, { functionName: "dead-letter", registry: deps.registry, log: deps.log });
    // In a cluster the context's namespace is the ServiceAccount's (its token's namespace file).
    const namespace = config.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace;
    if (namespace === undefined || namespace === "") throw new ConfigError("INSTALL_NAMESPACE", "is required outside a cluster: the kubeconfig's context names no namespace");
    const place = { namespace, serviceAccount: config.serviceAccount, broker: config.broker };
    deps.log.info({ server: kc.getCurrentCluster()?.server, user: kc.getCurrentUser()?.name, kubeApiTimeoutMs: kc.timeoutMs, ...place }, "configured");
    return {
      handle: createHandler({ cluster: createCluster(kc), metrics: createMetrics(deps.registry), place }),
      async close() {
        kc.destroyAgents();
      },
    };
  },
};
