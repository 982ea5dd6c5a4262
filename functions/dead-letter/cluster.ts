/**
 * The dead-letter sink's access to the API server: the only module that talks to Kubernetes.
 *
 * RBAC it needs (knative/rbac/dead-letter.yaml): `events.k8s.io` events create (in any namespace:
 * an Event lives in the namespace of the object it regards), `kubedemo.com` appmonitors get (is
 * the AppMonitor an event names there, and its uid, which `kubectl describe` matches Events by).
 */
import * as k8s from "@kubernetes/client-node";
import { APPMONITOR_GROUP, APPMONITOR_PLURAL, APPMONITOR_VERSION } from "../lib/appmonitor.ts";
import { isConflict, isObjectNotFound } from "../lib/kube-api-errors.ts";

/** The calls the sink makes; tests substitute a fake. Errors are the client's, unchanged. */
export interface Cluster {
  /** The AppMonitor's uid; `""` when the object carries none; undefined when it does not exist (404). */
  appMonitorUid(namespace: string, name: string): Promise<string | undefined>;
  /** Creates the Event: `created`, or `exists` when one of its name is there already (409). */
  createEvent(event: k8s.EventsV1Event): Promise<"created" | "exists">;
}

/** The {@link Cluster} of `kc`. */
export function createCluster(kc: k8s.KubeConfig): Cluster {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const events = kc.makeApiClient(k8s.EventsV1Api);
  return {
    async appMonitorUid(namespace, name) {
      try {
        const found = (await custom.getNamespacedCustomObject({ group: APPMONITOR_GROUP, version: APPMONITOR_VERSION, namespace, plural: APPMONITOR_PLURAL, name })) as { metadata?: { uid?: string } };
        return found.metadata?.uid ?? "";
      } catch (error) {
        if (isObjectNotFound(error)) return undefined;
        throw error;
      }
    },
    async createEvent(event) {
      try {
        await events.createNamespacedEvent({ namespace: event.metadata?.namespace ?? "", body: event, fieldManager: "appmonitor-dead-letter" });
        return "created";
      } catch (error) {
        if (isConflict(error)) return "exists";
        throw error;
      }
    },
  };
}
