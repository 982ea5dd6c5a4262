/**
 * rule-sync's access to the API server: AppMonitors (read, list, status) through
 * `CustomObjectsApi`, PrometheusRules (read, list, server-side apply, delete) through the
 * generic `KubernetesObjectApi`. The only module that talks to Kubernetes; everything it
 * returns is plain data for `plan.ts`.
 *
 * RBAC it needs (knative/rbac/rule-sync.yaml): `appmonitors` get, list; `appmonitors/status`
 * patch; `appmonitors/finalizers` update (the rule's ownerReference sets blockOwnerDeletion);
 * `prometheusrules` get, list, create, patch, delete; and `events.k8s.io` events create, for the
 * Warning Events on AppMonitors (`events.ts`) and the one on its own ServiceAccount that names a
 * permission it lacks (`functions/lib/kube-access-report.ts`).
 */
import * as k8s from "@kubernetes/client-node";
import type { IPrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { APPMONITOR_GROUP, APPMONITOR_PLURAL, APPMONITOR_VERSION } from "../lib/appmonitor.ts";
import { isConflict, isObjectNotFound } from "../lib/kube-api-errors.ts";
import { scopeNamespaces, type NamespaceScope } from "../lib/namespace-scope.ts";
import type { ObservedAppMonitor, ObservedRule, RuleRef } from "./plan.ts";
import { PROMETHEUS_RULE_API_VERSION, PROMETHEUS_RULE_KIND } from "./rule.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "./rule-config.ts";
import type { StatusApply } from "./status.ts";

/** Page size of list calls. */
const PAGE = 500;

/** What happened to a delete with preconditions. */
export type DeleteOutcome = "deleted" | "gone" | "changed";

/** The calls rule-sync makes; tests substitute a fake. Errors are the client's, unchanged. */
export interface Cluster {
  /** The AppMonitor, or undefined on 404. */
  readAppMonitor(namespace: string, name: string): Promise<ObservedAppMonitor | undefined>;
  /** Every AppMonitor in scope (all pages). */
  listAppMonitors(scope: NamespaceScope): Promise<ObservedAppMonitor[]>;
  /** The PrometheusRule, or undefined on 404. */
  readRule(namespace: string, name: string): Promise<ObservedRule | undefined>;
  /** Every PrometheusRule in scope labelled as rule-sync's (all pages). */
  listManagedRules(scope: NamespaceScope): Promise<ObservedRule[]>;
  /** Server-side apply (create or replace our fields), forced; returns the object as stored. */
  applyRule(rule: IPrometheusRule): Promise<ObservedRule>;
  /** Deletes the rule if it still has `ref`'s uid and resourceVersion: `changed` when not (409), `gone` on 404. */
  deleteRule(ref: RuleRef): Promise<DeleteOutcome>;
  /** Server-side apply of the status subresource, forced: `gone` on 404, `conflict` when its resourceVersion is stale (409). */
  applyStatus(body: StatusApply): Promise<"written" | "gone" | "conflict">;
  /** One cheap list per resource type in scope; throws when the API server does not answer or a CRD is missing. */
  probe(scope: NamespaceScope): Promise<void>;
  /** Creates an events.k8s.io/v1 Event in `namespace`. */
  createEvent(namespace: string, event: k8s.EventsV1Event): Promise<void>;
}

/** Creates the {@link Cluster} of a KubeConfig; `fieldManager` names every apply. */
export function createCluster(kc: k8s.KubeConfig, fieldManager: string): Cluster {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const events = kc.makeApiClient(k8s.EventsV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const applyHeaders = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply);
  const am = { group: APPMONITOR_GROUP, version: APPMONITOR_VERSION, plural: APPMONITOR_PLURAL };

  const rules = { group: "monitoring.coreos.com", version: "v1", plural: "prometheusrules" };

  // Custom resources are listed through CustomObjectsApi: KubernetesObjectApi's list loses the
  // `continue` token of a custom resource's list, so every page after the first would be missed.
  const listIn = async <T>(
    resource: { group: string; version: string; plural: string }, namespace: string | undefined, limit: number, all: boolean, labelSelector?: string,
  ): Promise<T[]> => {
    const items: T[] = [];
    let token: string | undefined;
    do {
      const page = { ...resource, limit, ...(labelSelector === undefined ? {} : { labelSelector }), ...(token === undefined ? {} : { _continue: token }) };
      const list = (namespace === undefined ? await custom.listClusterCustomObject(page) : await custom.listNamespacedCustomObject({ ...page, namespace })) as {
        items?: T[];
        metadata?: { continue?: string };
      };
      items.push(...(list.items ?? []));
      token = list.metadata?.continue || undefined;
    } while (all && token !== undefined);
    return items;
  };
  const listAppMonitorsIn = (namespace: string | undefined, limit: number, all: boolean) => listIn<ObservedAppMonitor>(am, namespace, limit, all);
  const listRulesIn = (namespace: string | undefined, limit: number, all: boolean, labelSelector?: string) =>
    listIn<ObservedRule>(rules, namespace, limit, all, labelSelector);

  return {
    async readAppMonitor(namespace, name) {
      try {
        return (await custom.getNamespacedCustomObject({ ...am, namespace, name })) as ObservedAppMonitor;
      } catch (error) {
        if (isObjectNotFound(error)) return undefined;
        throw error;
      }
    },

    async listAppMonitors(scope) {
      const lists = await Promise.all(scopeNamespaces(scope).map((ns) => listAppMonitorsIn(ns, PAGE, true)));
      return lists.flat();
    },

    async readRule(namespace, name) {
      try {
        return (await objects.read({ apiVersion: PROMETHEUS_RULE_API_VERSION, kind: PROMETHEUS_RULE_KIND, metadata: { namespace, name } })) as ObservedRule;
      } catch (error) {
        if (isObjectNotFound(error)) return undefined;
        throw error;
      }
    },

    async listManagedRules(scope) {
      const selector = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
      const lists = await Promise.all(scopeNamespaces(scope).map((ns) => listRulesIn(ns, PAGE, true, selector)));
      return lists.flat();
    },

    async applyRule(rule) {
      // KubernetesObjectApi types the spec as a plain object; the PrometheusRule is one.
      const stored = await objects.patch(rule as k8s.KubernetesObject, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
      return stored as ObservedRule;
    },

    async deleteRule(ref) {
      try {
        await objects.delete(
          { apiVersion: PROMETHEUS_RULE_API_VERSION, kind: PROMETHEUS_RULE_KIND, metadata: { namespace: ref.namespace, name: ref.name } },
          undefined, undefined, undefined, undefined, undefined,
          { preconditions: { uid: ref.uid, ...(ref.resourceVersion === undefined ? {} : { resourceVersion: ref.resourceVersion }) } },
        );
        return "deleted";
      } catch (error) {
        if (isObjectNotFound(error)) return "gone";
        if (isConflict(error)) return "changed";
        throw error;
      }
    },

    async applyStatus(body) {
      try {
        await custom.patchNamespacedCustomObjectStatus(
          { ...am, namespace: body.metadata.namespace, name: body.metadata.name, body, fieldManager, force: true },
          applyHeaders,
        );
        return "written";
      } catch (error) {
        if (isObjectNotFound(error)) return "gone";
        if (isConflict(error)) return "conflict";
        throw error;
      }
    },

    async probe(scope) {
      const [namespace] = scopeNamespaces(scope);
      await Promise.all([listAppMonitorsIn(namespace, 1, false), listRulesIn(namespace, 1, false)]);
    },

    async createEvent(namespace, body) {
      await events.createNamespacedEvent({ namespace, body, fieldManager });
    },
  };
}
