/**
 * The CloudEvent endpoint: `POST /` with one event (binary or structured mode).
 *
 * A handled event is answered 204 with no body (a Knative Broker fails a reply body that is not
 * a CloudEvent; see the runtime's `acknowledge`), what was done in `X-Appmonitor-Outcome` and
 * why in `X-Appmonitor-Reason`; the details are in the log lines ("AppMonitor reconciled",
 * "resync done") and the metrics.
 *
 * | event | does | status |
 * | --- | --- | --- |
 * | `dev.knative.apiserver.resource.add` / `.update`, `dev.knative.apiserver.ref.add` / `.update` | reads the AppMonitor and its rule, creates or replaces the rule by server-side apply, asks Prometheus whether it loaded it and has its series (waiting up to `RULE_LOAD_WAIT_MS` for a rule it wrote), reports RuleReady and MetricsReady | 204, outcome = what happened to the rule (`created`, `updated`, `unchanged`, `rejected`, `kept`), reason = the RuleReady reason reported (`RuleLoaded`, `RuleNotLoaded`, `RuleEvaluationFailed`, `PrometheusNotConfigured`, `PrometheusUnreachable`, `PrometheusAPIError`, `InvalidSpec`, `RuleConflict`, `RuleRejected`) |
 * | `dev.knative.apiserver.resource.delete`, `dev.knative.apiserver.ref.delete` | deletes the rule if the AppMonitor is gone (the ownerReference makes the garbage collector do it too, but not after a delete with `propagationPolicy: Orphan`) | 204, outcome `deleted` or `kept` (nothing of ours to delete); a delete that could not be carried out fails like any other call (below) |
 * | `com.kubedemo.appmonitor.resync`, `dev.knative.sources.ping` | reconciles every AppMonitor in scope and deletes orphaned rules | 204, outcome `resynced` |
 * | an AppMonitor in a namespace outside `WATCH_NAMESPACES` | nothing | 204, outcome `skipped`, reason `NamespaceNotWatched` |
 *
 * An invalid AppMonitor is handled (RuleReady False with the reason, 204): retrying cannot fix
 * it, its next change brings a new event. So is a Prometheus that cannot be asked (both
 * conditions Unknown, a Warning Event on the AppMonitor): the rule was applied, and the next
 * resync asks again. Errors (DESIGN.md: the status tells the sender what to do):
 * - 400 `{ error }`: an unknown event type, data that is not an AppMonitor or its reference
 *   (never retried);
 * - 422: the API server refused a write no caller expected it to refuse (never retried);
 * - 503: the API server is unreachable, answers 5xx or refuses the credentials, a CRD is
 *   missing, or an object kept changing (a delete's precondition included); also a resync in
 *   which some AppMonitor failed so (`details` = the resync summary); 429 when throttled;
 * - 500: rule-sync's RBAC is wrong (the permission is named in a Warning Event on its
 *   ServiceAccount), or anything unexpected.
 * The full mapping, and why: `functions/lib/kube-api-errors.ts`.
 */
import { HttpError } from "../lib/runtime/errors.ts";
import type { CloudEventOutcome, FunctionContext } from "../lib/runtime/types.ts";
import { inScope } from "./config.ts";
import { EventInputError, readTrigger, type EventLike, type Trigger } from "./incoming-event.ts";
import { runResync } from "./resync.ts";
import { syncOne, type SyncDeps } from "./sync.ts";

/** Builds `handle` for the runtime (a CloudEvent function). */
export function createHandler(deps: SyncDeps): (context: FunctionContext, event: EventLike) => Promise<CloudEventOutcome> {
  const { metrics } = deps;
  return async (context, event) => {
    let trigger: Trigger;
    try {
      trigger = readTrigger(event);
    } catch (error) {
      if (!(error instanceof EventInputError)) throw error;
      metrics.events.inc({ type: "unknown", outcome: "invalid" });
      throw new HttpError(400, error.message);
    }
    const log = context.log.child({ trigger: trigger.kind === "resync" ? "resync" : `${trigger.mode}.${trigger.action}` });

    if (trigger.kind === "resync") {
      await runResync({ ...deps, log }, "event");
      return { outcome: "resynced" };
    }

    const { namespace, name, action } = trigger;
    if (!inScope(deps.config.scope, namespace)) {
      metrics.events.inc({ type: action, outcome: "skipped" });
      log.debug({ namespace, name }, "AppMonitor outside WATCH_NAMESPACES: skipped");
      return { outcome: "skipped", reason: "NamespaceNotWatched" };
    }
    try {
      const result = await syncOne({ ...deps, log }, namespace, name);
      metrics.events.inc({ type: action, outcome: "handled" });
      log.info({ namespace, name, uid: trigger.uid, rule: result.rule, ruleReady: result.ruleReady?.reason }, "AppMonitor reconciled");
      return result.ruleReady === undefined ? { outcome: result.rule } : { outcome: result.rule, reason: result.ruleReady.reason };
    } catch (error) {
      // A delete too: an orphaned rule (AppMonitor deleted with propagationPolicy=Orphan) has
      // no garbage collector to remove it, so a failed delete must be retried, not acknowledged.
      metrics.events.inc({ type: action, outcome: "failed" });
      throw error;
    }
  };
}
