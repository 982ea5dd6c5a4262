/**
 * The API server's own count of the requests it served (`apiserver_request_total` on its
 * `/metrics`, https://kubernetes.io/docs/reference/instrumentation/metrics/), read with the
 * stack's admin credential, so a test or bench can count the calls a function made.
 */
import https from "node:https";
import type * as k8s from "@kubernetes/client-node";

/** Requests served, keyed `VERB resource` or `VERB resource/subresource` (e.g. `PATCH prometheusrules`). */
export type RequestCounts = ReadonlyMap<string, number>;

/**
 * Reads `apiserver_request_total`, summed over codes, scopes and groups, for the resources named
 * in `resources` (plural names, e.g. `appmonitors`); WATCH requests are left out (a watch is one
 * long request, not a call per change).
 * @throws Error when `/metrics` does not answer 200.
 */
export async function apiserverRequests(kc: k8s.KubeConfig, resources: readonly string[]): Promise<RequestCounts> {
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined) throw new Error("the kubeconfig names no cluster");
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const request = https.get(new URL("/metrics", server), options, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`GET /metrics: HTTP ${response.statusCode}: ${body.slice(0, 200)}`))));
    });
    request.on("error", reject);
  });
  const wanted = new Set(resources);
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const labels = new Map([...line.matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1] ?? "", m[2] ?? ""]));
    const resource = labels.get("resource") ?? "";
    const verb = labels.get("verb") ?? "";
    if (!wanted.has(resource) || verb === "WATCH") continue;
    const sub = labels.get("subresource") ?? "";
    const key = `${verb} ${resource}${sub === "" ? "" : `/${sub}`}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}

/** `after - before` per key, keeping only keys that grew. */
export function requestsBetween(before: RequestCounts, after: RequestCounts): Map<string, number> {
  const grew = new Map<string, number>();
  for (const [key, n] of after) {
    const delta = n - (before.get(key) ?? 0);
    if (delta > 0) grew.set(key, delta);
  }
  return grew;
}

/** Sum of the counts whose key starts with one of `verbs` (e.g. `["POST", "PUT", "PATCH", "APPLY", "DELETE"]`; the API server counts a server-side apply as `APPLY`). */
export function countVerbs(counts: RequestCounts, verbs: readonly string[]): number {
  let sum = 0;
  for (const [key, n] of counts) if (verbs.includes(key.slice(0, key.indexOf(" ")))) sum += n;
  return sum;
}
