/**
 * The reconcile loop's shell: reads the AppMonitor and its PrometheusRule, lets `plan.ts`
 * decide, writes the rule, asks Prometheus whether it loaded it and has its series
 * (`prometheus-check.ts`), and writes the AppMonitor's status once; with an Alertmanager, then
 * asks where the AppMonitor's firing alerts went (`delivery-check.ts`). Every step is idempotent, so
 * a repeated or reordered event, or a resync running beside an event, converges on the same
 * objects.
 */
import { hostname } from "node:os";
import type { Logger } from "pino";
import { apiStatus, isConflict, isRefusal, toHttpFailure } from "../lib/kube-api-errors.ts";
import { HttpError } from "../lib/runtime/errors.ts";
import { forEachLimit } from "../lib/worker-pool.ts";
import { DELIVERY_REASONS, deliveryEventKey, deliveryMessage, describeAlert, type Undelivered } from "./alert-delivery.ts";
import type { AlertmanagerApi } from "./alertmanager.ts";
import type { Cluster, DeleteOutcome } from "./cluster.ts";
import { REASONS, RULE_READY, type DesiredCondition } from "./conditions.ts";
import type { RuleSyncConfig } from "./config.ts";
import { checkDelivery } from "./delivery-check.ts";
import { deliveryWarningEvent, warningEvent, warningsFor, type Regarding } from "./events.ts";
import type { RuleSyncMetrics } from "./metrics.ts";
import { findOrphans, planSync, type ObservedAppMonitor, type RuleRef } from "./plan.ts";
import { checkReadiness, createView, type PrometheusDeps, type PrometheusView } from "./prometheus-check.ts";
import { ruleGroupName } from "./rule.ts";
import type { AppliedRule } from "./rule-loaded.ts";
import { metricsReadyWithoutRule } from "./series-check.ts";
import { statusApply } from "./status.ts";

/** AppMonitors reconciled at once during a resync. */
export const RESYNC_CONCURRENCY = 8;

/** What the shell needs. */
export interface SyncDeps {
  readonly cluster: Cluster;
  readonly config: RuleSyncConfig;
  readonly metrics: RuleSyncMetrics;
  readonly log: Logger;
  /** Clock for condition and Event times; `() => new Date()` when absent. */
  readonly now?: () => Date;
  /** rule-sync's Prometheus; undefined without `PROMETHEUS_URL` (RuleReady and MetricsReady `Unknown`). */
  readonly prometheus?: PrometheusDeps;
  /** rule-sync's Alertmanager; undefined without `ALERTMANAGER_URL` (or `PROMETHEUS_URL`, which the check needs too). */
  readonly alertmanager?: AlertmanagerApi;
  /** `reportingInstance` of its Events; `rule-sync-<host name>` (the Pod name under Knative) when absent. */
  readonly reportingInstance?: string;
}

/** How one reconcile asks Prometheus. */
export interface SyncOptions {
  /** Answers shared with the other AppMonitors of a resync; an event makes its own. */
  readonly view?: PrometheusView;
  /** Wait up to `RULE_LOAD_WAIT_MS` for a rule this reconcile wrote to load (events: yes; a resync: no, it would wait once per AppMonitor). */
  readonly wait?: boolean;
  /** Follow a written rule that is not loaded yet, and reconcile again once it is (`load-watcher.ts`); not for the reconcile that follow calls. */
  readonly follow?: boolean;
}

/** What happened to the PrometheusRule. */
export type RuleOutcome = "created" | "updated" | "unchanged" | "deleted" | "kept" | "rejected";

/** The result of reconciling one AppMonitor name. */
export interface SyncResult {
  readonly namespace: string;
  readonly name: string;
  readonly rule: RuleOutcome;
  /** The RuleReady condition reported; absent when no AppMonitor is live. */
  readonly ruleReady?: DesiredCondition;
  /** The MetricsReady condition reported; absent when no AppMonitor is live. */
  readonly metricsReady?: DesiredCondition;
}

/** The result of a resync. */
export interface ResyncResult {
  /** AppMonitors in scope. */
  readonly appMonitors: number;
  /** Rules by outcome, orphans included under `deleted`. */
  readonly rules: Readonly<Record<RuleOutcome, number>>;
  /** AppMonitors reported RuleReady False: namespace/name, reason, message. */
  readonly notReady: readonly { readonly namespace: string; readonly name: string; readonly reason: string; readonly message: string }[];
  /** AppMonitors or orphans that could not be reconciled; a retry may fix them. */
  readonly failed: readonly { readonly namespace: string; readonly name: string; readonly error: string }[];
}

/**
 * Reconciles one AppMonitor name: reads the AppMonitor (unless `known` is given, as a resync
 * lists them) and the PrometheusRule of the same name, applies the decision of `planSync`
 * (plan.ts), asks Prometheus about an applied rule (`prometheus-check.ts`: RuleReady and
 * MetricsReady) and reports both on the AppMonitor, with a Warning Event when one turns to a
 * reason that needs a change (`events.ts`). Then, with an Alertmanager, a Warning Event for each
 * alert of the AppMonitor that fires in Prometheus and that Alertmanager inhibits, silences, mutes
 * or routes to no `appmonitor` receiver (`delivery-check.ts`), once per firing and cause.
 *
 * The API server refusing the rule (422, 400, an admission 403) is the AppMonitor's problem,
 * reported as RuleReady False `RuleRejected`, not an error; so is a Prometheus that cannot be
 * asked (both conditions `Unknown`): the rule is applied, and a retry would not mend the URL.
 *
 * @returns what was done.
 * @throws HttpError from {@link toHttpFailure} (`functions/lib/kube-api-errors.ts`: 503, 429, 500
 *   or 422 by the failure's class); 503 when the rule to delete changed since it was read.
 */
export async function syncOne(deps: SyncDeps, namespace: string, name: string, known?: ObservedAppMonitor, options: SyncOptions = {}): Promise<SyncResult> {
  const { cluster, metrics } = deps;
  const where = `${namespace}/${name}`;
  const monitor = known ?? (await call(() => cluster.readAppMonitor(namespace, name), `read AppMonitor ${where}`));
  const existing = await call(() => cluster.readRule(namespace, name), `read PrometheusRule ${where}`);
  const plan = planSync(monitor, existing, deps.config.rule);
  let conditions: DesiredCondition[] | undefined = plan.condition === undefined ? undefined : [plan.condition, metricsReadyWithoutRule()];
  let outcome: RuleOutcome = "kept";
  // The view the delivery check asks, after the status is written: what Alertmanager did with a
  // firing alert changes no condition.
  let deliveryView: PrometheusView | undefined;

  const action = plan.rule;
  if (action.kind === "delete") {
    const result = await deleteRule(deps, action.target);
    deps.log.info({ namespace, name, why: action.why, result }, "PrometheusRule without a live AppMonitor: delete");
    if (result === "changed") {
      // Its uid or resourceVersion precondition failed: a lost compare-and-swap. The retry reads
      // the rule again and decides again (delete it, or keep one that is no longer ours).
      throw new HttpError(503, `PrometheusRule ${where} changed while it was being deleted; retry`, { headers: { "retry-after": "1" } });
    }
    outcome = result === "deleted" ? "deleted" : "kept";
  } else if (action.kind === "apply") {
    if (action.replace !== undefined) {
      const result = await deleteRule(deps, action.replace);
      deps.log.info({ namespace, name, uid: action.replace.uid, result }, "replaced a PrometheusRule owned by an earlier AppMonitor of this name");
    }
    try {
      const stored = await cluster.applyRule(action.rule);
      const before = action.replace === undefined ? existing?.metadata.resourceVersion : undefined;
      outcome = before === undefined ? "created" : stored.metadata.resourceVersion === before ? "unchanged" : "updated";
    } catch (error) {
      if (!isRefusal(error)) throw toHttpFailure(error, `apply PrometheusRule ${where}`);
      outcome = "rejected";
      conditions = [
        { type: RULE_READY, status: "False", reason: REASONS.rejected, message: `the API server refused PrometheusRule ${where}: ${apiStatus(error).message}` },
        metricsReadyWithoutRule(),
      ];
    }
    metrics.ruleWrites.inc({ result: outcome });
    if (outcome !== "unchanged") deps.log.info({ namespace, name, result: outcome }, "PrometheusRule applied");
    if (outcome !== "rejected") {
      const applied: AppliedRule = { namespace, name, group: ruleGroupName(action.input), generation: action.input.generation, labels: action.rule.metadata?.labels ?? {} };
      const wrote = outcome === "created" || outcome === "updated";
      const { prometheus } = deps;
      const view = options.view ?? (prometheus === undefined ? undefined : createView(prometheus.api, [applied.group]));
      const readiness = await checkReadiness(prometheus, view, applied, action.input, deps.config.rule.metricSource, wrote && options.wait !== false, deps.log);
      conditions = [readiness.ruleReady, readiness.metricsReady];
      // Unknown: Prometheus did not answer, and would not answer the alerts' query either.
      if (readiness.ruleReady.status !== "Unknown") deliveryView = view;
      if (prometheus !== undefined && wrote && options.follow !== false && !readiness.loaded) {
        prometheus.watcher.follow(applied, async () => {
          await syncOne(deps, namespace, name, undefined, { wait: false, follow: false });
        });
      }
    }
  }

  if (monitor !== undefined && conditions !== undefined) await reportStatus(deps, monitor, conditions);
  if (monitor !== undefined && deliveryView !== undefined && deps.alertmanager !== undefined) {
    const undelivered = await checkDelivery(deliveryView, deps.alertmanager, namespace, name, deps.log);
    if (undelivered.length > 0) await warnUndelivered(deps, { namespace, name, uid: monitor.metadata.uid }, undelivered, deps.alertmanager.url);
  }
  const [ruleReady, metricsReady] = conditions ?? [];
  return { namespace, name, rule: outcome, ...(ruleReady === undefined ? {} : { ruleReady }), ...(metricsReady === undefined ? {} : { metricsReady }) };
}

/**
 * Reconciles every AppMonitor in scope: lists the PrometheusRules labelled as rule-sync's
 * first, then the AppMonitors (so a rule made for an AppMonitor created meanwhile is never
 * taken for an orphan, see `findOrphans`), reconciles each AppMonitor with {@link syncOne}
 * ({@link RESYNC_CONCURRENCY} at a time: missing rules created, stale ones re-applied, invalid
 * ones reported), then deletes the orphans. One AppMonitor's failure does not stop the others.
 *
 * @returns the summary, also when some items failed (see `failed`).
 * @throws HttpError from {@link toHttpFailure} when a list fails.
 */
export async function resync(deps: SyncDeps): Promise<ResyncResult> {
  const { cluster, config } = deps;
  const rules = await call(() => cluster.listManagedRules(config.scope), "list PrometheusRules");
  const monitors = await call(() => cluster.listAppMonitors(config.scope), "list AppMonitors");
  const counts: Record<RuleOutcome, number> = { created: 0, updated: 0, unchanged: 0, deleted: 0, kept: 0, rejected: 0 };
  const notReady: { namespace: string; name: string; reason: string; message: string }[] = [];
  const failed: { namespace: string; name: string; error: string }[] = [];
  const reasons = new Map<string, number>();
  const metricsReasons = new Map<string, number>();
  const count = (map: Map<string, number>, key: string): void => {
    map.set(key, (map.get(key) ?? 0) + 1);
  };
  // One question to Prometheus for the rule groups of every AppMonitor, not one each.
  const options: SyncOptions = { wait: false, ...(deps.prometheus === undefined ? {} : { view: createView(deps.prometheus.api) }) };

  await forEachLimit(monitors, RESYNC_CONCURRENCY, async (monitor) => {
    const { namespace, name } = monitor.metadata;
    if (namespace === undefined || name === undefined) return;
    try {
      const result = await syncOne(deps, namespace, name, monitor, options);
      counts[result.rule] += 1;
      if (result.metricsReady !== undefined) count(metricsReasons, result.metricsReady.reason);
      if (result.ruleReady !== undefined) {
        count(reasons, result.ruleReady.reason);
        if (result.ruleReady.status === "False") notReady.push({ namespace, name, reason: result.ruleReady.reason, message: result.ruleReady.message });
      }
    } catch (error) {
      failed.push({ namespace, name, error: error instanceof HttpError ? error.reason : String(error) });
      deps.log.warn({ namespace, name, err: error instanceof HttpError ? (error.cause ?? error) : error }, "resync: AppMonitor not reconciled");
    }
  });

  for (const orphan of findOrphans(rules, monitors)) {
    try {
      if ((await deleteRule(deps, orphan)) === "deleted") {
        counts.deleted += 1;
        deps.log.info({ namespace: orphan.namespace, name: orphan.name }, "resync: orphaned PrometheusRule deleted");
      }
    } catch (error) {
      failed.push({ namespace: orphan.namespace, name: orphan.name, error: error instanceof HttpError ? error.reason : String(error) });
    }
  }

  if (failed.length === 0) {
    deps.metrics.appMonitors.reset();
    for (const [reason, n] of reasons) deps.metrics.appMonitors.set({ reason }, n);
    deps.metrics.metricsReady.reset();
    for (const [reason, n] of metricsReasons) deps.metrics.metricsReady.set({ reason }, n);
  }
  return { appMonitors: monitors.length, rules: counts, notReady, failed };
}

/** Status writes tried per reconcile when the AppMonitor keeps changing under them. */
const STATUS_TRIES = 3;

/**
 * Writes the conditions (compare-and-swap on the resourceVersion read), then a Warning Event for
 * each that turned to a reason needing a change (`events.ts`): once per change, since only the
 * write that makes the change succeeds and a later one finds it made. On a conflict the
 * AppMonitor is read again: when it is gone, replaced (another uid) or has a new generation, the
 * event of that change reports instead; when only something else changed (another condition, a
 * label), the same conditions are written against the fresh object.
 */
async function reportStatus(deps: SyncDeps, read: ObservedAppMonitor, conditions: readonly DesiredCondition[]): Promise<void> {
  const { namespace = "", name = "", uid, generation } = read.metadata;
  const where = `${namespace}/${name}`;
  let monitor = read;
  for (let attempt = 1; attempt <= STATUS_TRIES; attempt += 1) {
    const now = (deps.now ?? (() => new Date()))();
    const body = statusApply(monitor, conditions, now);
    if (body === undefined) return;
    const written = await call(() => deps.cluster.applyStatus(body), `write the status of AppMonitor ${where}`);
    if (written === "written") {
      await warn(deps, { namespace, name, uid }, warningsFor(conditions, monitor.status?.conditions), now);
      return;
    }
    if (written === "gone") {
      deps.log.info({ namespace, name }, "AppMonitor gone before its status was written");
      return;
    }
    const fresh = await call(() => deps.cluster.readAppMonitor(namespace, name), `read AppMonitor ${where}`);
    if (fresh === undefined || fresh.metadata.uid !== uid || fresh.metadata.generation !== generation) {
      deps.log.info({ namespace, name }, "AppMonitor changed before its status was written; its own event reports");
      return;
    }
    monitor = fresh;
  }
  throw new HttpError(503, `the status of AppMonitor ${where} kept changing while it was written; retry`);
}

/** Writes the Warning Events; a failure is logged, not raised: the status, written, says the same. */
async function warn(deps: SyncDeps, monitor: { namespace: string; name: string; uid: string | undefined }, conditions: readonly DesiredCondition[], now: Date): Promise<void> {
  for (const condition of conditions) {
    const event = warningEvent(monitor, condition, deps.reportingInstance ?? `rule-sync-${hostname()}`, now);
    try {
      await deps.cluster.createEvent(monitor.namespace, event);
      deps.log.warn({ namespace: monitor.namespace, name: monitor.name, condition: condition.type, reason: condition.reason, note: condition.message }, "AppMonitor condition needs a change: Warning Event written");
    } catch (error) {
      if (isConflict(error)) continue;
      deps.log.warn({ namespace: monitor.namespace, name: monitor.name, reason: condition.reason, problem: apiStatus(error).message }, `could not write the ${condition.reason} Warning Event`);
    }
  }
}

/**
 * Writes a Warning Event for each undelivered alert, named from its firing and cause, so the same
 * firing seen at the next resync is a name taken (409): skipped quietly. Any other failure is
 * logged, not raised: the rule and the status are written, and the next resync tries again.
 */
async function warnUndelivered(deps: SyncDeps, monitor: Regarding, undelivered: readonly Undelivered[], alertmanagerUrl: string): Promise<void> {
  const now = (deps.now ?? (() => new Date()))();
  for (const u of undelivered) {
    const reason = DELIVERY_REASONS[u.cause];
    const note = deliveryMessage(u, alertmanagerUrl);
    const event = deliveryWarningEvent(monitor, deliveryEventKey(u), reason, note, deps.reportingInstance ?? `rule-sync-${hostname()}`, now);
    try {
      await deps.cluster.createEvent(monitor.namespace, event);
      deps.metrics.undeliveredAlerts.inc({ reason });
      deps.log.warn({ namespace: monitor.namespace, name: monitor.name, reason, alert: describeAlert(u.alert), note }, "AppMonitor alert fires but is not delivered: Warning Event written");
    } catch (error) {
      if (isConflict(error)) continue;
      deps.log.warn({ namespace: monitor.namespace, name: monitor.name, reason, problem: apiStatus(error).message }, `could not write the ${reason} Warning Event`);
    }
  }
}

/** Deletes a rule with uid and resourceVersion preconditions; counts it. */
async function deleteRule(deps: SyncDeps, ref: RuleRef): Promise<DeleteOutcome> {
  const result = await call(() => deps.cluster.deleteRule(ref), `delete PrometheusRule ${ref.namespace}/${ref.name}`);
  if (result === "deleted") deps.metrics.ruleWrites.inc({ result: "deleted" });
  return result;
}

/** Runs an API call; a failure becomes the HttpError that says what to answer. */
async function call<T>(operation: () => Promise<T>, doing: string): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toHttpFailure(error, doing);
  }
}
