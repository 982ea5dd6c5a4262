/**
 * Kubernetes Events (events.k8s.io/v1) that tell users what memory-scaler did or refused to do,
 * shown by `kubectl describe` of the workload, the Pod or the AppMonitor.
 * API: https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/
 *
 * An Event's name is derived from the CloudEvent id, the reason and the object it regards, so
 * the re-deliveries of one alert write one Event, not one per delivery (a second create answers
 * 409 AlreadyExists, which counts as recorded).
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import * as k8s from "@kubernetes/client-node";
import { LRUCache } from "lru-cache";
import { apiStatus, isConflict } from "../../lib/kube-api-errors.ts";
import type { EventSpec } from "../events.ts";
import type { Cluster } from "./cluster.ts";

/** `reportingController`: a qualified name identifying memory-scaler in every Event it writes. */
export const REPORTING_CONTROLLER = "kubedemo.com/memory-scaler";
/** `action` of every Event: what memory-scaler was doing. */
export const EVENT_ACTION = "ScaleMemory";
/** The API server refuses a `note` longer than 1 kB (validation of events.k8s.io/v1). */
export const MAX_NOTE_LENGTH = 1024;
/** `reportingInstance` is at most 128 characters. */
const MAX_INSTANCE_LENGTH = 128;

/**
 * The Event object for `spec`, observed at `now`. The name is `<regarding name>.<16 hex>` — a
 * DNS subdomain (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-subdomain-names)
 * since the regarding object's name is one — deterministic in key, reason and regarding object.
 */
export function buildEvent(spec: EventSpec, reportingInstance: string, now: Date): k8s.EventsV1Event {
  const digest = createHash("sha256")
    .update([spec.key, spec.reason, spec.regarding.kind ?? "", spec.regarding.uid ?? spec.regarding.name].join("\u0000"))
    .digest("hex")
    .slice(0, 16);
  const prefix = spec.regarding.name.slice(0, 200).replace(/[.-]+$/, "");
  const note = spec.note.length > MAX_NOTE_LENGTH ? `${spec.note.slice(0, MAX_NOTE_LENGTH - 1)}…` : spec.note;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `${prefix}.${digest}`, namespace: spec.regarding.namespace },
    // MicroTime: the client serialises this Date subclass with the 6 fractional digits the API server requires.
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: reportingInstance.slice(0, MAX_INSTANCE_LENGTH),
    action: EVENT_ACTION,
    reason: spec.reason,
    type: spec.type,
    note,
    regarding: spec.regarding,
    ...(spec.related === undefined ? {} : { related: spec.related }),
  };
}

/** Writes Events; never throws. */
export interface EventRecorder {
  /** Resolves `undefined` when recorded (or already recorded), else a one-line description of the failure. */
  record(spec: EventSpec): Promise<string | undefined>;
}

/** `reportingInstance`: this process, by host name (the Pod name under Knative). */
export function defaultReportingInstance(): string {
  return `memory-scaler-${hostname()}`;
}

/** Event names remembered as written, per process; the oldest is forgotten beyond this. */
export const MAX_KNOWN_EVENTS = 10_000;

/**
 * An {@link EventRecorder} that creates Events through `cluster`. The names it created, or found
 * already there (409), are remembered (at most {@link MAX_KNOWN_EVENTS}, least recently used
 * forgotten first), and a report of a remembered name writes nothing: the repair of a last scale's
 * `Scaled` Events (the README's "What it does", step 3a) runs for every later alert of the workload and would
 * otherwise cost each of them a round trip of creates answered 409. An Event deleted since (its TTL)
 * is not written again by this process; another instance, or this one after a restart, would.
 */
export function createEventRecorder(cluster: Cluster, reportingInstance = defaultReportingInstance(), now: () => Date = () => new Date()): EventRecorder {
  const known = new LRUCache<string, true>({ max: MAX_KNOWN_EVENTS });
  return {
    async record(spec) {
      const event = buildEvent(spec, reportingInstance, now());
      const name = `${spec.regarding.namespace}/${event.metadata?.name ?? ""}`;
      if (known.has(name)) return undefined;
      try {
        await cluster.createEvent(spec.regarding.namespace, event);
        known.set(name, true);
        return undefined;
      } catch (error) {
        if (isConflict(error)) {
          known.set(name, true);
          return undefined;
        }
        return `could not record ${spec.type} Event ${spec.reason} on ${spec.regarding.kind ?? "object"} ${spec.regarding.name}: ${apiStatus(error).message}`;
      }
    },
  };
}
