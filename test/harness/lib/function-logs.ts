/**
 * A function Pod's log as the runtime writes it: one JSON object a line (pino), read through the
 * API. Each request has one access line (`msg: "request"`) with its status and, once the
 * CloudEvent it carried was decoded, the event's id and type (functions/lib/runtime/server.ts),
 * so the deliveries of one event, retries included, can be counted and timed.
 */
import type * as k8s from "@kubernetes/client-node";

/** One log line; fields as the runtime and the function wrote them. */
export type LogLine = Record<string, unknown> & { time?: string; msg?: string; eventId?: string; status?: number };

/** A Pod, by name and namespace. */
export interface PodRef {
  readonly name: string;
  readonly namespace: string;
}

/** The JSON lines of `pod`'s log (of the last `sinceSeconds` seconds, when given); other lines are passed over. */
export async function readJsonLog(core: k8s.CoreV1Api, pod: PodRef, sinceSeconds?: number): Promise<LogLine[]> {
  const text = await core.readNamespacedPodLog({ name: pod.name, namespace: pod.namespace, ...(sinceSeconds === undefined ? {} : { sinceSeconds }) });
  return text.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as LogLine);
}

/** One delivery of an event to a function: when it was answered (ms since the epoch) and with what. */
export interface Delivery {
  readonly at: number;
  readonly status: number;
}

/** The deliveries of event `eventId` in `lines`, in order: one access line each. */
export function deliveriesOf(lines: readonly LogLine[], eventId: string): Delivery[] {
  return lines
    .filter((line) => line.msg === "request" && line.eventId === eventId && typeof line.status === "number" && typeof line.time === "string")
    .map((line) => ({ at: Date.parse(line.time as string), status: line.status as number }));
}
