/**
 * What memory-scaler and rule-sync report about their own access to the API server, so that an
 * operator learns what to fix without reading stack traces:
 *
 * - A permission the authorizer denied (`kubeconfig.ts` observes every 403): a Warning Event
 *   `PermissionDenied` on the function's ServiceAccount naming verb, resource and namespace
 *   (`kubectl describe serviceaccount -n appmonitor rule-sync`), the counter
 *   `appmonitor_kubernetes_permission_denied_total{verb,group,resource}` and a log line. The
 *   events that needed it fail with 500 (`kube-api-errors.ts`), are retried, then go to the
 *   dead-letter sink. The Event needs `create` on `events.k8s.io` events in the ServiceAccount's
 *   namespace (both functions' RBAC grants it); without it, the counter and the log remain.
 * - Credentials loaded again after a 401: `appmonitor_kubernetes_credential_reloads_total{result}`
 *   and a log line.
 *
 * One permission is reported (logged, Event written) at most once per {@link REPORT_INTERVAL_MS};
 * the Event's name is derived from the permission, so replicas and restarts write one Event per
 * permission until the API server's event TTL (1 h by default) removes it. The counter counts
 * every refusal.
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import { apiStatus, describePermission, isConflict, type DeniedPermission } from "./kube-api-errors.ts";
import type { FunctionKubeConfig, KubeAccessObserver } from "./kubeconfig.ts";

/** `reason` of the Warning Event. */
export const PERMISSION_DENIED_REASON = "PermissionDenied";
/** `action` of the Warning Event: what the function was doing. */
export const PERMISSION_DENIED_ACTION = "CallKubernetesAPI";
/** One permission is reported at most once in this window, in ms. */
export const REPORT_INTERVAL_MS = 10 * 60_000;
/** Permissions remembered for {@link REPORT_INTERVAL_MS}; beyond, the oldest is forgotten. */
const MAX_REMEMBERED = 256;

/** The ServiceAccount a user name is (`system:serviceaccount:<namespace>:<name>`), else undefined. */
export function serviceAccountOf(user: string): { namespace: string; name: string } | undefined {
  const match = /^system:serviceaccount:([a-z0-9-]{1,63}):([a-z0-9.-]{1,253})$/.exec(user);
  return match === null ? undefined : { namespace: match[1] ?? "", name: match[2] ?? "" };
}

/**
 * The Warning Event telling that `functionName`'s ServiceAccount lacks `permission`, observed at
 * `now`; undefined when the refused user is no ServiceAccount (a laptop's kubeconfig): there is
 * no object to hang it on. Its name is `<ServiceAccount>.<16 hex>`, deterministic in the
 * permission, so a second create answers 409 AlreadyExists.
 */
export function permissionDeniedEvent(permission: DeniedPermission, functionName: string, reportingInstance: string, now: Date): k8s.EventsV1Event | undefined {
  const account = serviceAccountOf(permission.user);
  if (account === undefined) return undefined;
  const what = describePermission(permission);
  const digest = createHash("sha256")
    .update([PERMISSION_DENIED_REASON, permission.verb, permission.group, permission.resource, permission.namespace ?? ""].join("\u0000"))
    .digest("hex")
    .slice(0, 16);
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `${account.name.slice(0, 200)}.${digest}`, namespace: account.namespace },
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: `kubedemo.com/${functionName}`,
    reportingInstance: reportingInstance.slice(0, 128),
    action: PERMISSION_DENIED_ACTION,
    reason: PERMISSION_DENIED_REASON,
    type: "Warning",
    note: `${functionName} may not ${what}: the API server's authorizer refused ServiceAccount ${account.namespace}/${account.name}. Grant it in its RBAC (knative/rbac/${functionName}.yaml); until then the events that need it fail with 500, are retried, then go to the dead-letter sink.`,
    regarding: { apiVersion: "v1", kind: "ServiceAccount", namespace: account.namespace, name: account.name },
  };
}

/** What {@link createKubeAccessReporter} needs. */
export interface KubeAccessReporterDeps {
  readonly functionName: string;
  readonly registry: Registry;
  readonly log: Logger;
  /** POST events.k8s.io/v1 events in `namespace`. */
  readonly createEvent: (namespace: string, event: k8s.EventsV1Event) => Promise<void>;
  readonly now?: () => Date;
  /** `reportingInstance` of the Events; default `<function>-<host name>` (the Pod name under Knative). */
  readonly reportingInstance?: string;
}

/** The observer that reports refused permissions and credential reloads (see the module's header). */
export function createKubeAccessReporter(deps: KubeAccessReporterDeps): Required<KubeAccessObserver> {
  const now = deps.now ?? (() => new Date());
  const instance = deps.reportingInstance ?? `${deps.functionName}-${hostname()}`;
  const denied = new Counter({
    name: "appmonitor_kubernetes_permission_denied_total",
    help: "Kubernetes API requests the authorizer refused (403), by the verb, API group and resource the function lacks.",
    labelNames: ["verb", "group", "resource"] as const,
    registers: [deps.registry],
  });
  const reloads = new Counter({
    name: "appmonitor_kubernetes_credential_reloads_total",
    help: "Kubernetes credentials loaded again after the API server refused them (401), by result (ok, failed).",
    labelNames: ["result"] as const,
    registers: [deps.registry],
  });
  const reported = new Map<string, number>();

  /** True the first time in the window; remembers it. */
  const firstInWindow = (key: string, at: number): boolean => {
    const last = reported.get(key);
    if (last !== undefined && at - last < REPORT_INTERVAL_MS) return false;
    reported.delete(key);
    reported.set(key, at);
    if (reported.size > MAX_REMEMBERED) reported.delete(reported.keys().next().value ?? "");
    return true;
  };

  return {
    forbidden(permission) {
      denied.inc({ verb: permission.verb, group: permission.group, resource: permission.resource });
      const at = now();
      if (!firstInWindow([permission.user, permission.verb, permission.group, permission.resource, permission.namespace ?? ""].join("\u0000"), at.getTime())) return;
      const { user, ...missing } = permission;
      deps.log.warn({ user, missing, permission: describePermission(permission) }, "the API server's authorizer refused a request: a permission is missing from the function's RBAC");
      const event = permissionDeniedEvent(permission, deps.functionName, instance, at);
      if (event?.metadata?.namespace === undefined) return;
      deps.createEvent(event.metadata.namespace, event).catch((error: unknown) => {
        if (!isConflict(error)) deps.log.warn({ permission: describePermission(permission), problem: apiStatus(error).message }, "could not record the PermissionDenied Event");
      });
    },
    credentialsReloaded(error) {
      reloads.inc({ result: error === undefined ? "ok" : "failed" });
      if (error === undefined) deps.log.info("the API server refused the credentials (401): loaded them again, retrying the request once");
      else deps.log.warn({ err: error }, "the API server refused the credentials (401) and loading them again failed: keeping the previous ones");
    },
  };
}

/**
 * Reports `kc`'s refused permissions and credential reloads: a {@link createKubeAccessReporter}
 * writing its Events through `kc` itself, set as `kc`'s observer.
 */
export function reportKubeAccess(kc: FunctionKubeConfig, deps: Omit<KubeAccessReporterDeps, "createEvent">): void {
  const events = kc.makeApiClient(k8s.EventsV1Api);
  kc.observe(
    createKubeAccessReporter({
      ...deps,
      createEvent: async (namespace, body) => {
        await events.createNamespacedEvent({ namespace, body, fieldManager: `appmonitor-${deps.functionName}` });
      },
    }),
  );
}
