/**
 * memory-scaler: a memory-threshold CloudEvent in, the owning workload's memory requests and
 * limits raised by its AppMonitor's multiplier — exactly once per threshold crossing.
 * Started with `npm run function -- memory-scaler`; configuration in `config.ts`, endpoint and
 * status codes in `handler.ts`, the flow in `scale/flow.ts`, the decision in `scale/decide/decide.ts`.
 *
 * Readiness (`GET /health/readiness`): 200 when the API server answers a list of AppMonitors
 * (`limit=1`, which needs only the `list` the function has anyway) — i.e. it is reachable, the
 * credentials work and the AppMonitor CRD is installed; 503 with the reason otherwise.
 *
 * A permission its RBAC lacks is reported as a Warning Event on its ServiceAccount and a metric,
 * and a 401 makes it load its credentials again (`functions/lib/kube-access-report.ts`,
 * `functions/lib/kubeconfig.ts`).
 */
import { validateAlertEventData } from "../lib/alert-event.ts";
import { reportKubeAccess } from "../lib/kube-access-report.ts";
import { apiStatus, classifyApiError } from "../lib/kube-api-errors.ts";
import { loadKubeConfig } from "../lib/kubeconfig.ts";
import { createSenderCheck } from "../lib/sender-review.ts";
import type { CloudEventFunctionDefinition, ReadinessResult } from "../lib/runtime/types.ts";
import { createAnswerMemory } from "./answers.ts";
import { type MemoryScalerConfig, readConfig } from "./config.ts";
import { createHandler } from "./handler.ts";
import { createCluster } from "./kube/cluster.ts";
import { createLeakAlerter } from "./kube/alertmanager.ts";
import { createEventRecorder } from "./kube/event-recorder.ts";
import { createPrometheusVerifier } from "./kube/prometheus.ts";
import { createStatusWriter } from "./kube/status-writer.ts";
import { createMetrics } from "./metrics.ts";
import type { FlowDeps } from "./scale/deps.ts";
import { handleFallback, handleScaleDown } from "./scale/flow.ts";

/** The function definition the runtime serves. */
export const fn: CloudEventFunctionDefinition<MemoryScalerConfig> = {
  name: "memory-scaler",
  kind: "cloudevent",
  configure: readConfig,
  init(config, deps) {
    const kc = loadKubeConfig(config.kubeconfig, { timeoutMs: config.kubeApiTimeoutMs });
    reportKubeAccess(kc, { functionName: "memory-scaler", registry: deps.registry, log: deps.log });
    const cluster = createCluster(kc, config.scope);
    const metrics = createMetrics(deps.registry);
    const verifier = config.prometheusUrl === undefined ? undefined : createPrometheusVerifier(config.prometheusUrl, config.prometheusTimeoutMs);
    deps.log.info(
      { apiServer: kc.getCurrentCluster()?.server, kubeApiTimeoutMs: kc.timeoutMs, prometheus: config.prometheusUrl?.href ?? null, prometheusTimeoutMs: config.prometheusTimeoutMs, senderIdentity: config.senderIdentity ?? null, scaleMaxAttempts: config.scaleMaxAttempts, paused: config.paused, ceilings: config.ceilings, namespaces: config.scope.all ? "all" : config.scope.namespaces },
      verifier === undefined ? "configured; PROMETHEUS_URL unset: alerts are not verified against Prometheus" : "configured",
    );
    const events = createEventRecorder(cluster);
    const status = createStatusWriter(cluster, config.recentScalesLimit, deps.log);
    const leakAlerts = config.alertmanagerUrl === undefined ? {} : { leakAlerts: createLeakAlerter(config.alertmanagerUrl, config.prometheusTimeoutMs) };
    const flow: FlowDeps = {
      cluster,
      events,
      status,
      verifier,
      maxAttempts: config.scaleMaxAttempts,
      now: () => new Date(),
      onConflict: () => metrics.conflicts.inc(),
      scope: config.scope,
      defaultMaxMemory: config.defaultMaxMemory,
      ceilings: config.ceilings,
      paused: config.paused,
      ...leakAlerts,
    };
    return {
      ...(config.senderIdentity === undefined ? {} : { verifySender: createSenderCheck(kc, config.senderIdentity) }),
      handle: createHandler({
        validate: validateAlertEventData,
        metrics,
        answers: createAnswerMemory(),
        follow: {
          cluster,
          events,
          status,
          now: () => new Date(),
          defaultMaxMemory: config.defaultMaxMemory,
          ceilings: config.ceilings,
          onEnded: (kind, result, reason) => metrics.rollouts.inc({ kind, result, reason }),
          // A failed in-place resize under InPlaceOrRollout: the tick decides, the one scale flow writes.
          fallBack: (request, log) => handleFallback(flow, request, log),
          // A workload due for a down-step: the tick finds it, the one scale flow steps it.
          scaleDown: async (request, log) => {
            const outcome = await handleScaleDown(flow, request, log);
            metrics.scaleDowns.inc({ kind: outcome.workload?.kind ?? "Unknown", outcome: outcome.outcome, reason: outcome.reason });
            return outcome;
          },
        },
        flow,
      }),
      async close(): Promise<void> {
        kc.destroyAgents();
      },
      async readiness(): Promise<ReadinessResult> {
        try {
          await cluster.probe();
          return { ready: true };
        } catch (error) {
          const { code, message } = apiStatus(error);
          if (classifyApiError(error) === "NotServed") return { ready: false, reason: "the AppMonitor CRD (appmonitors.kubedemo.com) is not installed" };
          return { ready: false, reason: `Kubernetes API server: ${code === undefined ? "" : `HTTP ${code}: `}${message}` };
        }
      },
    };
  },
};
