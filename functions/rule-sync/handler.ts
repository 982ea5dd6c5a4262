/**
 * The CloudEvent endpoint: `POST /` with one event (binary or structured mode).
 *
 * | event | does | status |
 * | --- | --- | --- |
 * | `dev.knative.apiserver.resource.add` / `.update`, `dev.knative.apiserver.ref.add` / `.update` | reads the AppMonitor and its rule, creates or replaces the rule by server-side apply, reports RuleReady | 200 `{ namespace, name, rule, ruleReady }` |
 * | `dev.knative.apiserver.resource.delete`, `dev.knative.apiserver.ref.delete` | deletes the rule if the AppMonitor is gone (best effort: the ownerReference makes the garbage collector do it anyway) | 200, also when the delete failed (`deleteFailed`) |
 * | `com.kubedemo.appmonitor.resync`, `dev.knative.sources.ping` | reconciles every AppMonitor in scope and deletes orphaned rules | 200 `{ appMonitors, rules, notReady, failed: [] }` |
 * | an AppMonitor in a namespace outside `WATCH_NAMESPACES` | nothing | 200 `{ skipped }` |
 *
 * An invalid AppMonitor is handled (RuleReady False with the reason, 200): retrying cannot fix
 * it, its next change brings a new event. Errors (DESIGN.md: the status tells the sender what
 * to do):
 * - 400 `{ error }`: an unknown event type, data that is not an AppMonitor or its reference
 *   (never retried);
 * - 503: the API server is unreachable or answers 5xx, or a CRD is missing; also a resync in
 *   which some AppMonitor failed so (`details` = the resync summary); 429 when throttled;
 * - 500: rule-sync's RBAC is wrong, or anything unexpected.
 */
import { HttpError } from "../lib/runtime/errors.ts";
import type { FunctionContext, FunctionResponse } from "../lib/runtime/types.ts";
import { inScope } from "./config.ts";
import { EventInputError, readTrigger, type EventLike, type Trigger } from "./events.ts";
import { runResync } from "./resync.ts";
import { syncOne, type SyncDeps } from "./sync.ts";

/** Builds `handle` for the runtime (a CloudEvent function). */
export function createHandler(deps: SyncDeps): (context: FunctionContext, event: EventLike) => Promise<FunctionResponse> {
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
      const summary = await runResync({ ...deps, log }, "event");
      return { status: 200, body: summary };
    }

    const { namespace, name, action } = trigger;
    if (!inScope(deps.config.scope, namespace)) {
      metrics.events.inc({ type: action, outcome: "skipped" });
      log.debug({ namespace, name }, "AppMonitor outside WATCH_NAMESPACES: skipped");
      return { status: 200, body: { namespace, name, skipped: "namespace not watched (WATCH_NAMESPACES)" } };
    }
    try {
      const result = await syncOne({ ...deps, log }, namespace, name);
      metrics.events.inc({ type: action, outcome: "handled" });
      log.info({ namespace, name, uid: trigger.uid, rule: result.rule, ruleReady: result.ruleReady?.reason }, "AppMonitor reconciled");
      return { status: 200, body: result };
    } catch (error) {
      if (action === "delete") {
        // Best effort: the garbage collector removes the rule through its ownerReference, and
        // the next resync removes it if that was orphaned.
        metrics.events.inc({ type: action, outcome: "failed" });
        const reason = error instanceof HttpError ? error.reason : String(error);
        log.warn({ namespace, name, err: error instanceof HttpError ? (error.cause ?? error) : error }, "delete not completed; left to the garbage collector and the next resync");
        return { status: 200, body: { namespace, name, deleteFailed: reason } };
      }
      metrics.events.inc({ type: action, outcome: "failed" });
      throw error;
    }
  };
}
