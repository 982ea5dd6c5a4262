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
 *
 * With `PROMETHEUS_URL` it asks that Prometheus whether each rule is loaded and its series exist
 * (`prometheus-check.ts`), and watches written rules load (`load-watcher.ts`, stopped on close).
 * With `ALERTMANAGER_URL` too, it asks that Alertmanager what became of each AppMonitor's firing
 * alerts (`delivery-check.ts`). Readiness does not depend on Prometheus: rules are still written while it is away, and the
 * AppMonitors' conditions say it is.
 */
import { reportKubeAccess } from "../lib/kube-access-report.ts";
import { toHttpFailure } from "../lib/kube-api-errors.ts";
import { loadKubeConfig } from "../lib/kubeconfig.ts";
import { createSenderCheck } from "../lib/sender-review.ts";
import type { CloudEventFunctionDefinition } from "../lib/runtime/types.ts";
import { createAlertmanagerApi, type AlertmanagerApi } from "./alertmanager.ts";
import { createCluster } from "./cluster.ts";
import { readConfig, type RuleSyncConfig } from "./config.ts";
import { createHandler } from "./handler.ts";
import { createLoadWatcher } from "./load-watcher.ts";
import { createMetrics } from "./metrics.ts";
import { createPrometheusApi } from "./prometheus.ts";
import type { PrometheusDeps } from "./prometheus-check.ts";
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
    const metrics = createMetrics(deps.registry);
    let prometheus: PrometheusDeps | undefined;
    if (config.prometheus !== undefined) {
      const api = createPrometheusApi(config.prometheus.url, config.prometheus.timeoutMs, (endpoint, result) => metrics.prometheusRequests.inc({ endpoint, result }));
      prometheus = { api, watcher: createLoadWatcher(api, deps.log), config: config.prometheus };
    }
    // Only beside a Prometheus: the check starts from the alerts Prometheus fires.
    const alertmanager: AlertmanagerApi | undefined = config.alertmanager === undefined || prometheus === undefined
      ? undefined
      : createAlertmanagerApi(config.alertmanager.url, config.alertmanager.timeoutMs, (result) => metrics.alertmanagerRequests.inc({ result }));
    const sync = { cluster, config, metrics, log: deps.log, ...(prometheus === undefined ? {} : { prometheus }), ...(alertmanager === undefined ? {} : { alertmanager }) };
    deps.log.info(
      {
        server: kc.getCurrentCluster()?.server,
        user: kc.getCurrentUser()?.name,
        kubeApiTimeoutMs: kc.timeoutMs,
        namespaces: config.scope.all ? "all" : config.scope.namespaces,
        metricSource: config.rule.metricSource,
        ruleLabels: config.rule.ruleLabels,
        fieldManager: config.fieldManager,
        senderIdentity: config.senderIdentity ?? "not required: any sender that reaches the Service is taken",
        prometheus: prometheus?.api.url ?? "not configured: RuleReady and MetricsReady stay Unknown",
        alertmanager: alertmanager?.url ?? (config.alertmanager === undefined ? "not configured: firing alerts are not followed" : "ALERTMANAGER_URL ignored without PROMETHEUS_URL"),
      },
      "configured",
    );
    const stop = new AbortController();
    const startup = config.resyncOnStart ? resyncUntilDone(sync, stop.signal) : Promise.resolve();
    return {
      ...(config.senderIdentity === undefined ? {} : { verifySender: createSenderCheck(kc, config.senderIdentity) }),
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
        prometheus?.watcher.close();
        await startup;
        kc.destroyAgents();
      },
    };
  },
};
