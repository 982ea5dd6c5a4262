/**
 * Trust but verify: before scaling, ask Prometheus for each container's current memory working
 * set and compare it with the memory limit of the Pod read from the API server (the authority
 * for the limit; it also works where only the working set is scraped, as on the local stack's
 * kwok). A container below the AppMonitor's threshold is not scaled: the alert is stale or
 * forged. For a trend alert, ask instead for the working set `predict_linear` predicts at the
 * AppMonitor's horizon (`scale/decide/evidence.ts` `checkTrend` compares it with the limit).
 * Prometheus unavailable → 503, never a blind scale.
 *
 * A heap-threshold alert asks for each watched container's used heap in percent of its heap limit,
 * from its runtime's own metrics, as the rule computes it ({@link heapPercentQuery}).
 *
 * A down-step (`spec.scaleDown`) asks for the peak instead: the largest working set of each
 * container over the quiet period, across the workload's Pods ({@link peakQuery}).
 *
 * Working set: the series rule-sync's rule alerts on, from one builder (`../../lib/working-set.ts`).
 * Query API: https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries
 */
import axios from "axios";
import type { AxiosInstance } from "axios";
import { HttpError } from "../../lib/runtime/errors.ts";
import type { AppMonitorTrend } from "../../lib/appmonitor.ts";
import { promDuration, promqlNumber, promqlString, regexQuote } from "../../lib/promql.ts";
import { heapPercentLines, type HeapMetricsRuntime } from "../../lib/heap-metrics.ts";
import { containerMatchers, memoryLimitSeries, WORKING_SET_METRIC, workingSetSeries, workloadPodMatcher } from "../../lib/working-set.ts";

/** Reads current working sets; an interface so the flow can be tested without Prometheus. */
export interface Verifier {
  /**
   * Working set in bytes of each named container of the Pod that Prometheus has a sample for.
   * @throws HttpError 503 when Prometheus cannot be reached, times out or answers 5xx; 500 when
   * it refuses the query (4xx) or answers something that is not a query result.
   */
  workingSets(namespace: string, pod: string, containers: readonly string[]): Promise<Map<string, number>>;
  /**
   * The working set in bytes each named container of the Pod is predicted to have
   * `trend.horizonSeconds` from now, on the line fitted to its last `trend.windowSeconds`
   * ({@link predictionQuery}); a container with fewer than two samples there is absent.
   * @throws HttpError as {@link Verifier.workingSets} does.
   */
  predictions(namespace: string, pod: string, containers: readonly string[], trend: Required<Pick<AppMonitorTrend, "windowSeconds" | "horizonSeconds">>): Promise<Map<string, number>>;
  /**
   * The largest working set in bytes of each named container of workload `workload`'s Pods over
   * the last `periodSeconds` ({@link peakQuery}); a container with no sample there is absent.
   * @throws HttpError as {@link Verifier.workingSets} does.
   */
  peaks(namespace: string, workload: string, containers: readonly string[], periodSeconds: number): Promise<Map<string, number>>;
  /**
   * The used heap of each named container of the Pod in percent of its heap limit, from the metrics
   * of the runtime it is declared with ({@link heapPercentQuery}); a container without them is absent.
   * @throws HttpError as {@link Verifier.workingSets} does.
   */
  heapPercents(namespace: string, pod: string, containers: readonly { readonly container: string; readonly runtime: HeapMetricsRuntime }[]): Promise<Map<string, number>>;
}

/** The working set series of the named containers of one Pod. */
function workingSetSelector(namespace: string, pod: string, containers: readonly string[]): string {
  const names = containers.map(regexQuote).join("|");
  return `${WORKING_SET_METRIC}{namespace=${promqlString(namespace)},pod=${promqlString(pod)},container=~${promqlString(names)}}`;
}

/**
 * The instant query of a down-step's peak: per container, the largest working set over the last
 * `periodSeconds` of any Pod named after the workload (the rule's `targetRef` scope: Pods replaced
 * by a rollout within the period count too), as the rule's series selector names it:
 * `max by (container) (max_over_time(container_memory_working_set_bytes{namespace="ns",
 * pod=~"memhog-.+", container=~"memhog"}[86400s]))`.
 */
export function peakQuery(namespace: string, workload: string, containers: readonly string[], periodSeconds: number): string {
  const series = workingSetSeries(`namespace=${promqlString(namespace)}, ${workloadPodMatcher(workload)}`, containerMatchers(containers));
  return `max by (container) (max_over_time(${series}[${promDuration(periodSeconds)}]))`;
}

/**
 * The instant query: the largest working set per container (cAdvisor may export more than one
 * series per container, e.g. across a restart; the largest is the one an eviction would see).
 */
export function workingSetQuery(namespace: string, pod: string, containers: readonly string[]): string {
  return `max by (container) (${workingSetSelector(namespace, pod, containers)})`;
}

/**
 * The instant query of a trend alert's evidence: per container, the largest of its series'
 * `predict_linear` over the window, `horizonSeconds` ahead, as the trend rule's first condition
 * computes it (rule-sync's `trendAlertExpression`).
 */
export function predictionQuery(namespace: string, pod: string, containers: readonly string[], trend: Required<Pick<AppMonitorTrend, "windowSeconds" | "horizonSeconds">>): string {
  const range = `${workingSetSelector(namespace, pod, containers)}[${promDuration(trend.windowSeconds)}]`;
  return `max by (container) (predict_linear(${range}, ${promqlNumber(trend.horizonSeconds)}))`;
}

/**
 * The instant query of a heap-threshold alert's evidence: per container, the largest used heap in
 * percent of its heap limit, each container read with its runtime's metrics as the rule reads
 * them (`../../lib/heap-metrics.ts`; .NET's limit a share of the container's memory limit, from
 * cAdvisor or kube-state-metrics, whichever Prometheus has).
 */
export function heapPercentQuery(namespace: string, pod: string, containers: readonly { readonly container: string; readonly runtime: HeapMetricsRuntime }[]): string {
  const scope = `namespace=${promqlString(namespace)}, pod=${promqlString(pod)}`;
  const runtimes = [...new Set(containers.map((c) => c.runtime))];
  const parts = runtimes.map((runtime) => {
    const names = containerMatchers(containers.filter((c) => c.runtime === runtime).map((c) => c.container));
    return `(${heapPercentLines(runtime, `${scope}, ${names}`, memoryLimitSeries(scope, names, true)).join(" ")})`;
  });
  return `max by (container) (${parts.join(" or ")})`;
}

/**
 * A {@link Verifier} querying the Prometheus at `baseUrl` with axios.
 *
 * @param timeoutMs per query, from its start to the answer's last byte: axios's own `timeout`
 *   is a socket's idle time, which an answer trickled a byte at a time never reaches, so an
 *   abort signal bounds the whole of it. Past it, 503 "did not answer … within".
 */
export function createPrometheusVerifier(baseUrl: URL, timeoutMs: number, client: AxiosInstance = axios.create()): Verifier {
  const endpoint = new URL("api/v1/query", baseUrl.href.endsWith("/") ? baseUrl : new URL(`${baseUrl.href}/`)).href;
  const vector = async (query: string): Promise<Map<string, number>> => {
    const deadline = AbortSignal.timeout(timeoutMs);
    let data: unknown;
    try {
      const response = await client.get<unknown>(endpoint, { params: { query }, timeout: timeoutMs, signal: deadline, validateStatus: () => true });
      if (response.status >= 500 || response.status === 429) {
        throw new HttpError(503, `Prometheus unavailable: HTTP ${response.status}`);
      }
      if (response.status >= 400) throw new HttpError(500, `Prometheus refused the query ${query}: HTTP ${response.status}`);
      data = response.data;
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (deadline.aborted) throw new HttpError(503, `Prometheus unavailable: it did not answer the query within ${timeoutMs} ms`, { cause: error });
      throw new HttpError(503, `Prometheus unavailable: ${(error as Error).message}`, { cause: error });
    }
    return parseVector(data, query);
  };
  return {
    workingSets: (namespace, pod, containers) => vector(workingSetQuery(namespace, pod, containers)),
    predictions: (namespace, pod, containers, trend) => vector(predictionQuery(namespace, pod, containers, trend)),
    peaks: (namespace, workload, containers, periodSeconds) => vector(peakQuery(namespace, workload, containers, periodSeconds)),
    heapPercents: (namespace, pod, containers) => vector(heapPercentQuery(namespace, pod, containers)),
  };
}

function parseVector(body: unknown, query: string): Map<string, number> {
  const { status, data } = (body ?? {}) as { status?: unknown; data?: { resultType?: unknown; result?: unknown } };
  if (status !== "success" || data?.resultType !== "vector" || !Array.isArray(data.result)) {
    throw new HttpError(500, `Prometheus answered the query ${query} with something other than a vector`);
  }
  const result = new Map<string, number>();
  for (const sample of data.result as { metric?: { container?: unknown }; value?: unknown }[]) {
    const container = sample.metric?.container;
    const value = Array.isArray(sample.value) ? Number(sample.value[1]) : Number.NaN;
    if (typeof container === "string" && Number.isFinite(value)) result.set(container, value);
  }
  return result;
}
