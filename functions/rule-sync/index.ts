/**
 * rule-sync: ApiServerSource CloudEvents about AppMonitors in, one PrometheusRule per
 * AppMonitor out (server-side apply, owned by the AppMonitor), and the AppMonitor's RuleReady
 * condition. Started with `npm run function -- rule-sync`; configuration in `config.ts`, the
 * endpoint and its status codes in `handler.ts`, the decisions in `plan.ts`, the rule itself in
 * `rule.ts`.
 *
 * At start-up (unless `RESYNC_ON_START=false`) it reconciles every AppMonitor in scope in the
 * background, retrying until that succeeds once. Readiness (`/health/readiness`) is 200 when
 * the API server answers a list of AppMonitors and of PrometheusRules in scope, i.e. both CRDs
 * are served and rule-sync may read them; 503 with the reason otherwise. On SIGTERM the runtime
 * drains in-flight events, then the start-up resync, if still retrying, stops, and the pooled
 * API server connections are closed.
 *
 * A permission its RBAC lacks is reported as a Warning Event on its ServiceAccount and a metric,
 * and a 401 makes it load its credentials again (`functions/lib/kube-access-report.ts`,
 * `functions/lib/kubeconfig.ts`).
 */
import { reportKubeAccess } from "../lib/kube-access-report.ts";
import { toHttpFailure } from "../lib/kube-api-errors.ts";
import { loadKubeConfig } from "../lib/kubeconfig.ts";
import type { CloudEventFunctionDefinition } from "../lib/runtime/types.ts";
import { createCluster } from "./cluster.ts";
import { readConfig, type RuleSyncConfig } from "./config.ts";
import { createHandler } from "./handler.ts";
import { createMetrics } from "./metrics.ts";
import { resyncUntilDone } from "./resync.ts";

/** The function definition the runtime serves. */
export const fn: CloudEventFunctionDefinition<RuleSyncConfig> = {
  name: "rule-sync",
  kind: "cloudevent",
  configure: readConfig,
  init(config, deps) {
    const kc = loadKubeConfig(config.kubeconfig, { timeoutMs: config.kubeApiTimeoutMs });
    reportKubeAccess(kc, { functionName: "rule-sync", registry: deps.registry, log: deps.log });
    const cluster = createCluster(kc, config.fieldManager);
    const sync = { cluster, config, metrics: createMetrics(deps.registry), log: deps.log };
    deps.log.info(
      {
        server: kc.getCurrentCluster()?.server,
        user: kc.getCurrentUser()?.name,
        kubeApiTimeoutMs: kc.timeoutMs,
        namespaces: config.scope.all ? "all" : config.scope.namespaces,
        metricSource: config.rule.metricSource,
        ruleLabels: config.rule.ruleLabels,
        fieldManager: config.fieldManager,
      },
      "configured",
    );
    const stop = new AbortController();
    const startup = config.resyncOnStart ? resyncUntilDone(sync, stop.signal) : Promise.resolve();
    return {
      handle: createHandler(sync),
      async readiness() {
        try {
          await cluster.probe(config.scope);
          return { ready: true };
        } catch (error) {
          return { ready: false, reason: toHttpFailure(error, "list AppMonitors and PrometheusRules").reason };
        }
      },
      async close() {
        stop.abort();
        await startup;
        kc.destroyAgents();
      },
    };
  },
};
