/**
 * Asking Prometheus about an AppMonitor whose rule was just applied: has it loaded the group
 * (RuleReady), and does each side of the expression have series (MetricsReady)? The shell of
 * `rule-loaded.ts` and `series-check.ts`, which decide.
 *
 * What is the same for every AppMonitor of a resync is asked once per resync, through a
 * {@link PrometheusView}: the rule groups (one `GET /api/v1/rules`) and the cluster-wide series
 * counts; a failure of the groups' request is then every AppMonitor's answer, so a resync against
 * a Prometheus that is down waits for one timeout, not one per AppMonitor. Per AppMonitor: one
 * instant query for its namespace's sides. The firing alerts the delivery check reads
 * (`delivery-check.ts`) are one query per view too.
 */
import type { Logger } from "pino";
import { firingAlertsQuery } from "./alert-delivery.ts";
import type { PrometheusConfig } from "./config.ts";
import type { DesiredCondition } from "./conditions.ts";
import type { LoadWatcher } from "./load-watcher.ts";
import { PrometheusError, type PrometheusApi, type Sample } from "./prometheus.ts";
import { isLoaded, ruleReadyFromPrometheus, ruleReadyUnknown, type AppliedRule, type LoadedGroup, type PrometheusUnavailable } from "./rule-loaded.ts";
import type { MetricSource } from "./rule-config.ts";
import type { RuleInput } from "./rule-input.ts";
import { clusterSeriesQuery, metricsReady, metricsReadyUnknown, namespaceSeriesQuery, needsClusterCounts, readCounts, type SeriesCounts } from "./series-check.ts";

/** rule-sync's Prometheus, when `PROMETHEUS_URL` is set. */
export interface PrometheusDeps {
  readonly api: PrometheusApi;
  readonly watcher: LoadWatcher;
  readonly config: PrometheusConfig;
}

/** Answers shared by the AppMonitors of one event or one resync; each is asked at most once. */
export interface PrometheusView {
  /** The loaded groups (only `names`' when the view was made for them). @throws PrometheusError */
  groups(): Promise<Map<string, LoadedGroup>>;
  /** Counts of `clusterSeriesQuery`. @throws PrometheusError */
  clusterCounts(): Promise<SeriesCounts>;
  /** The answer to `firingAlertsQuery` (`alert-delivery.ts`): every generated alert firing. @throws PrometheusError */
  firingAlerts(): Promise<Sample[]>;
}

/**
 * A {@link PrometheusView} of `api`.
 * @param names the groups an event is about (asked for alone); undefined for a resync (every group).
 */
export function createView(api: PrometheusApi, names?: readonly string[]): PrometheusView {
  let groups: Promise<Map<string, LoadedGroup>> | undefined;
  let counts: Promise<SeriesCounts> | undefined;
  let firing: Promise<Sample[]> | undefined;
  return {
    groups: () => (groups ??= api.ruleGroups(names)),
    clusterCounts: () => (counts ??= api.query(clusterSeriesQuery()).then(readCounts)),
    firingAlerts: () => (firing ??= api.query(firingAlertsQuery())),
  };
}

/** What the check found. */
export interface Readiness {
  readonly ruleReady: DesiredCondition;
  readonly metricsReady: DesiredCondition;
  /** Whether Prometheus lists the group at this generation (RuleReady True or RuleEvaluationFailed). */
  readonly loaded: boolean;
}

/** A PrometheusError as the conditions describe it. */
function unavailable(error: PrometheusError, url: string): PrometheusUnavailable {
  return { kind: error.kind, url, error: error.message };
}

/**
 * RuleReady and MetricsReady for an applied rule.
 *
 * Without `prometheus` both are `Unknown` `PrometheusNotConfigured`. When the groups cannot be
 * read, both are `Unknown` with the failure and nothing else is asked. When the group is not
 * loaded yet and `wrote` (this event created or changed the rule), it waits for it at most
 * `RULE_LOAD_WAIT_MS` (`load-watcher.ts`); the caller follows it afterwards.
 *
 * @param prometheus rule-sync's Prometheus, undefined without `PROMETHEUS_URL`.
 * @param view the answers shared with the other AppMonitors of this event or resync.
 * @param rule the rule as applied.
 * @param input the AppMonitor it was built from.
 * @param source the metric source it was built for.
 * @param wrote whether this reconcile created or changed the rule.
 * @returns both conditions; never throws a PrometheusError.
 */
export async function checkReadiness(
  prometheus: PrometheusDeps | undefined, view: PrometheusView | undefined, rule: AppliedRule, input: RuleInput, source: MetricSource, wrote: boolean, log: Logger,
): Promise<Readiness> {
  if (prometheus === undefined || view === undefined) {
    const why: PrometheusUnavailable = { kind: "notConfigured" };
    return { ruleReady: ruleReadyUnknown(rule, why), metricsReady: metricsReadyUnknown(input, why), loaded: false };
  }
  const { url } = prometheus.api;
  let loaded: LoadedGroup | undefined;
  try {
    loaded = (await view.groups()).get(rule.group);
  } catch (error) {
    if (!(error instanceof PrometheusError)) throw error;
    const why = unavailable(error, url);
    return { ruleReady: ruleReadyUnknown(rule, why), metricsReady: metricsReadyUnknown(input, why), loaded: false };
  }
  if (!isLoaded(rule, loaded) && wrote && prometheus.config.loadWaitMs > 0) {
    const started = Date.now();
    loaded = (await prometheus.watcher.wait(rule, prometheus.config.loadWaitMs)) ?? loaded;
    log.debug({ group: rule.group, loaded: isLoaded(rule, loaded), waitedMs: Date.now() - started }, "waited for Prometheus to load the rule group");
  }
  const ruleReady = ruleReadyFromPrometheus(rule, loaded, url);
  let series: DesiredCondition;
  try {
    const inNamespace = readCounts(await prometheus.api.query(namespaceSeriesQuery(input, source)));
    const inCluster = needsClusterCounts(source, inNamespace) ? await view.clusterCounts() : new Map<string, number>();
    series = metricsReady(input, source, inNamespace, inCluster, url);
  } catch (error) {
    if (!(error instanceof PrometheusError)) throw error;
    series = metricsReadyUnknown(input, unavailable(error, url));
  }
  return { ruleReady, metricsReady: series, loaded: isLoaded(rule, loaded) };
}
