/**
 * Where an event's time went inside Knative Eventing's data plane, read from its Pods' logs after
 * a slow delivery: what the filter received (its per-event debug line, `broker-filter-log.ts`) and
 * every warning or error logged over the same window by the ingress, the in-memory channel's
 * dispatcher and the filter, and by the controllers that give them their Triggers' subscriptions.
 * Read only when a delivery was slow, so a run's output says which hop held it without anyone
 * running it again.
 */
import * as k8s from "@kubernetes/client-node";
import { EVENTING_NAMESPACE } from "./eventing-manifests.ts";
import { parseFilterLog } from "./broker-filter-log.ts";

/** The data plane's Pods, by name prefix, in the order an event passes them, then its controllers'. */
const EVENTING_PODS = ["mt-broker-ingress-", "imc-dispatcher-", "mt-broker-filter-", "eventing-controller-", "imc-controller-", "mt-broker-controller-"] as const;

/**
 * Lines that say where events of `eventType` spent the window from `since` (ms since the epoch) to
 * now: for each Trigger, how many the filter received and the first and last receipt (seconds after
 * `since`), then each warning or error of those Pods (`<pod>: <level> <msg> <key> <error>`, the
 * last 20). A log that cannot be read is named as such, not thrown.
 * @throws the API error when the Pods of `knative-eventing` cannot be listed.
 */
export async function eventingTrail(kc: k8s.KubeConfig, since: number, eventType: string): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const sinceSeconds = Math.ceil((Date.now() - since) / 1000) + 1;
  const pods = (await core.listNamespacedPod({ namespace: EVENTING_NAMESPACE })).items
    .filter((p) => EVENTING_PODS.some((prefix) => p.metadata?.name?.startsWith(prefix)) && p.status?.phase === "Running");
  const lines: string[] = [];
  const problems: string[] = [];
  const byTrigger = new Map<string, number[]>();
  for (const pod of pods) {
    const name = pod.metadata?.name ?? "";
    let log: string;
    try {
      log = await core.readNamespacedPodLog({ name, namespace: EVENTING_NAMESPACE, sinceSeconds });
    } catch (error) {
      lines.push(`${name}: log not read (${(error as Error).message})`);
      continue;
    }
    for (const r of parseFilterLog(log)) {
      if (r.eventType === eventType && r.at >= since) byTrigger.set(r.trigger, [...(byTrigger.get(r.trigger) ?? []), r.at]);
    }
    for (const line of log.split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string; "knative.dev/key"?: string };
        const key = entry["knative.dev/key"];
        if (entry.level === "warn" || entry.level === "error") problems.push(`${name}: ${entry.level} ${entry.msg ?? ""}${key ? ` ${key}` : ""}${entry.error ? ` ${entry.error}` : ""}`);
      } catch {
        // Not a JSON line: start-up banners.
      }
    }
  }
  const after = (at: number) => `${((at - since) / 1000).toFixed(1)} s`;
  for (const [trigger, times] of byTrigger) lines.push(`filter received ${times.length} for Trigger ${trigger}, first at ${after(Math.min(...times))}, last at ${after(Math.max(...times))}`);
  if (byTrigger.size === 0) lines.push(`filter received none of type ${eventType}`);
  lines.push(...problems.slice(-20));
  if (problems.length === 0) lines.push("no warning or error from the data plane or its controllers");
  return lines;
}
