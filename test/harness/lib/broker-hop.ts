/**
 * What the Broker adds to an event's way to memory-scaler on the stack's real node, measured on
 * real components: the same firing CloudEvent (an alert no AppMonitor rule raised, which
 * memory-scaler answers `skipped NotAppMonitorAlert` without reading anything, so each event costs
 * the function the same) is posted from the host either to the Broker ingress's Pod (ingress →
 * in-memory channel → filter → Trigger → memory-scaler) or straight to memory-scaler's Pod. The
 * latency of one event is the time from the POST to memory-scaler's log line for its id (pino's
 * `time`, ISO with ms; the Pods share the host's clock), so both paths are measured to the same point,
 * though the Broker answers 202 before it delivers.
 */
import { randomUUID } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { CloudEvent, HTTP } from "cloudevents";
import { readJsonLog, type PodRef } from "./function-logs.ts";
import { alertEvent } from "./alert-event.ts";

/** Where the two paths start: `http://<Pod IP>:<port><path>` of the ingress and of memory-scaler. */
export interface HopTargets {
  readonly brokerIngressUrl: string;
  readonly memoryScalerUrl: string;
}

/** Latencies of one path, ms: each event's, and their median and 99th percentile. */
export interface PathLatency {
  readonly samples: number[];
  readonly p50: number;
  readonly p99: number;
}

/** The nearest-rank percentile `p` (0–100) of `values`. @throws Error when `values` is empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new Error("no values");
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/** POSTs `event` in binary mode; returns the HTTP status. */
async function post(url: string, event: CloudEvent<unknown>): Promise<number> {
  const message = HTTP.binary(event);
  const res = await fetch(url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string, signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  return res.status;
}

/** memory-scaler's log lines since `sinceSeconds` ago, by event id: the first line's `time` (ISO, ms), as ms since the epoch. */
async function loggedTimes(core: k8s.CoreV1Api, pod: PodRef, sinceSeconds: number): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  // The runtime binds `eventId` to every line logged while the event is handled (invoke.ts).
  for (const { time, eventId } of await readJsonLog(core, pod, sinceSeconds)) {
    if (eventId && time && !times.has(eventId)) times.set(eventId, Date.parse(time));
  }
  return times;
}

/**
 * Posts one probe event to `url` and waits up to `timeoutMs` for memory-scaler's log line for it.
 * @returns the ms from the POST to that line, or undefined when it did not come in time.
 * @throws Error when the POST is refused.
 */
async function probe(core: k8s.CoreV1Api, url: string, pod: PodRef, timeoutMs: number): Promise<number | undefined> {
  const id = randomUUID();
  const event = alertEvent({ namespace: "broker-hop", pod: "none", alertname: "BrokerHopProbe", id });
  const sent = Date.now();
  const status = await post(url, event);
  if (status >= 300) throw new Error(`POST ${url}: ${status}`);
  while (Date.now() < sent + timeoutMs) {
    const at = (await loggedTimes(core, pod, 30)).get(id);
    if (at !== undefined) return at - sent;
    await new Promise((r) => setTimeout(r, 5));
  }
  return undefined;
}

/**
 * Waits until an event posted to `url` reaches memory-scaler: Ready conditions are not enough
 * through the Broker, as the in-memory channel's dispatcher learns a new Trigger's subscription
 * a little after it is Ready, and fans an event out to the subscribers it knows then (none: the
 * event is accepted and dropped), and the ingress may answer 500 while it cannot yet hand events
 * to the channel, or answer only after the subscriber's retries. One probe every 2 s. The default bound is wide: a Broker created again with its
 * Triggers in the same namespace has taken 47 s under `npm test` (docs/development.md, where it
 * names `waitForDelivery`).
 * @throws Error when none arrives within `timeoutMs` (default 180 000), with the last refusal if any.
 */
export async function waitForDelivery(core: k8s.CoreV1Api, url: string, pod: PodRef, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let refused: Error | undefined;
  for (;;) {
    try {
      if ((await probe(core, url, pod, 2_000)) !== undefined) return;
    } catch (error) {
      // A 5xx is the Broker not serving yet, and so is a POST unanswered in its 10 s: the in-memory
      // channel answers once the subscribers have, retries included (a Service whose Pods were
      // just replaced). Anything else (a 4xx: a wrong path) will not change.
      if (!/: 5\d\d$/.test((error as Error).message) && (error as Error).name !== "TimeoutError") throw error;
      refused = error as Error;
      await new Promise((r) => setTimeout(r, 2_000));
    }
    if (Date.now() > deadline) throw new Error(`no event posted to ${url} reached memory-scaler in ${timeoutMs / 1000} s${refused ? ` (last refusal: ${refused.message})` : ""}`, { cause: refused });
  }
}

/**
 * Sends `count` events along one path, one at a time (the next once the previous is answered and,
 * through the Broker, delivered: bounded, no queueing in the measurement), and returns their
 * latencies. Call {@link waitForDelivery} first.
 * @param url where to POST (the ingress's Broker path or memory-scaler's root).
 * @param pod memory-scaler's Pod, whose log shows each event's arrival.
 * @throws Error when a POST is refused or an event does not reach memory-scaler within 10 s.
 */
export async function measurePath(core: k8s.CoreV1Api, url: string, pod: PodRef, count: number): Promise<PathLatency> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const latency = await probe(core, url, pod, 10_000);
    if (latency === undefined) throw new Error(`an event posted to ${url} did not reach memory-scaler in 10 s`);
    samples.push(latency);
  }
  return { samples, p50: percentile(samples, 50), p99: percentile(samples, 99) };
}
