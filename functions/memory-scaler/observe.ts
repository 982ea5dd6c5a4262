/**
 * The read step of a firing alert (`scale-flow.ts` steps 1–2): the Pod, its namespace's
 * AppMonitors, HorizontalPodAutoscalers and VerticalPodAutoscalers in parallel (the two lists cost
 * no round trip of their own), then the Pod's owners up to the workload. It reads only as far as
 * the alert can still lead to a scale: no owner is read for a Pod that is gone or for an alert
 * whose AppMonitor is not there. Plain data out, for the pure plan (`plan.ts`).
 *
 * An autoscaler list whose resource type is not served (a 404 without an object: the VPA's CRD not
 * installed) reads as none; any other failure fails the event like every read, since scaling
 * without knowing whether an autoscaler fights it is what the lists are there to prevent.
 */
import type * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";
import { classifyApiError, toHttpFailure } from "../lib/kube-api-errors.ts";
import { vpaView, type VerticalPodAutoscalerView } from "./autoscalers.ts";
import type { Cluster } from "./cluster.ts";
import { namedAppMonitor, validAppMonitors, type NamespaceAppMonitors, type NoneGoverns, type ValidAppMonitor } from "./governing.ts";
import { controllerOf, resolveWorkload, type Workload } from "./owners.ts";

/** What the read step found. */
export type Observation =
  /** Nothing to scale, and nothing to tell anyone: the Pod or its owner is gone, the alert's AppMonitor is not there. */
  | { readonly result: "ended"; readonly reason: "PodGone" | "OwnerGone" | NoneGoverns["reason"]; readonly message: string }
  /** The Pod's owner has no Pod template memory-scaler can scale (a Job, an unknown kind). */
  | { readonly result: "unsupported"; readonly message: string; readonly pod: k8s.V1Pod; readonly named: ValidAppMonitor }
  /** A bare Pod (no controller owner reference): resized in place (`resize-flow.ts`). */
  | { readonly result: "bare"; readonly pod: k8s.V1Pod; readonly monitors: NamespaceAppMonitors; readonly named: ValidAppMonitor }
  | {
      readonly result: "observed";
      readonly pod: k8s.V1Pod;
      /** The namespace's AppMonitors, the invalid ones set apart (and logged). */
      readonly monitors: NamespaceAppMonitors;
      /** The AppMonitor the alert names, valid. */
      readonly named: ValidAppMonitor;
      readonly workload: Workload;
      /** The namespace's HorizontalPodAutoscalers (autoscaling/v2). */
      readonly hpas: readonly k8s.V2HorizontalPodAutoscaler[];
      /** The namespace's VerticalPodAutoscalers; none when the API is not served. */
      readonly vpas: readonly VerticalPodAutoscalerView[];
    };

/** `list`, or none when its resource type is not served; `doing` names it in any other failure. */
async function listOrNone<T>(list: Promise<T[]>, doing: string): Promise<T[]> {
  try {
    return await list;
  } catch (error) {
    if (classifyApiError(error) === "NotServed") return [];
    throw toHttpFailure(error, doing);
  }
}

/**
 * Reads what the plan needs for the alert on Pod `namespace/pod` from AppMonitor `appmonitor`.
 * @throws HttpError when the API server fails (`toHttpFailure`: 503, 429, 500 or 422 by class).
 */
export async function observeFiring(cluster: Cluster, alert: { readonly namespace: string; readonly pod: string; readonly appmonitor: string }, log: Logger): Promise<Observation> {
  const podKey = `${alert.namespace}/${alert.pod}`;
  const [pod, items, hpas, vpas] = await Promise.all([
    cluster.readPod(alert.namespace, alert.pod).catch((error: unknown) => {
      throw toHttpFailure(error, `read Pod ${podKey}`);
    }),
    cluster.listAppMonitors(alert.namespace).catch((error: unknown) => {
      throw toHttpFailure(error, `list AppMonitors in namespace ${alert.namespace}`);
    }),
    listOrNone(cluster.listHorizontalPodAutoscalers(alert.namespace), `list HorizontalPodAutoscalers in namespace ${alert.namespace}`),
    listOrNone(cluster.listVerticalPodAutoscalers(alert.namespace), `list VerticalPodAutoscalers in namespace ${alert.namespace}`),
  ]);
  if (pod === undefined) return { result: "ended", reason: "PodGone", message: `Pod ${podKey} no longer exists` };

  const monitors = validAppMonitors(alert.namespace, items);
  for (const rejected of monitors.rejected) log.warn({ appmonitor: rejected.name, problem: rejected.problem }, "ignoring an AppMonitor with an invalid spec");
  const named = namedAppMonitor(monitors, alert.appmonitor);
  if (named.result === "none") return { result: "ended", reason: named.reason, message: named.message };

  if (controllerOf(pod.metadata) === undefined) return { result: "bare", pod, monitors, named: named.appMonitor };
  // The owner before coverage: coverage is judged on the workload's Pod template, not on the
  // live Pod, whose annotations and labels anyone allowed to edit that one Pod can set.
  const resolution = await resolveWorkload(cluster, pod).catch((error: unknown) => {
    throw toHttpFailure(error, `read the owner of Pod ${podKey}`);
  });
  if (resolution.result === "gone") return { result: "ended", reason: "OwnerGone", message: resolution.message };
  if (resolution.result === "unsupported") return { result: "unsupported", message: resolution.message, pod, named: named.appMonitor };
  return { result: "observed", pod, monitors, named: named.appMonitor, workload: resolution.workload, hpas, vpas: vpas.map(vpaView) };
}
