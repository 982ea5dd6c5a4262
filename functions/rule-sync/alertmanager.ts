/**
 * rule-sync's access to Alertmanager's v2 API: the alerts it holds, suppressed ones included
 * (`GET /api/v2/alerts`, https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml),
 * to see where an AppMonitor's firing alert went (`alert-delivery.ts` decides). The only module
 * that talks to Alertmanager.
 *
 * Every request is bounded as a whole, headers and body (`ALERTMANAGER_TIMEOUT_MS`). A failure is
 * an {@link AlertmanagerError}, `unreachable` (no answer: refused, a name that does not resolve,
 * the timeout) or `apiError` (an HTTP error, a body that is not the API's list).
 */
import { isRecord } from "../lib/is-record.ts";
import type { ManagedAlert } from "./alert-delivery.ts";
import { describeFetchError } from "./prometheus.ts";

/** Why a request to Alertmanager failed; `message` is stable for the same failure. */
export class AlertmanagerError extends Error {
  /** `unreachable`: no answer; `apiError`: an answer that is not the API's success. */
  readonly kind: "unreachable" | "apiError";

  constructor(kind: "unreachable" | "apiError", message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AlertmanagerError";
    this.kind = kind;
  }
}

/** The calls rule-sync makes to Alertmanager; tests substitute a fake. */
export interface AlertmanagerApi {
  /** The base URL, as the Events name it. */
  readonly url: string;
  /**
   * The alerts matching every matcher of `filters` (e.g. `namespace="shop"`), active, silenced,
   * inhibited and unprocessed alike.
   * @throws AlertmanagerError
   */
  alerts(filters: readonly string[]): Promise<ManagedAlert[]>;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);

/**
 * The alerts of a `GET /api/v2/alerts` answer (a list of `gettableAlert`). Pure; an entry
 * without a fingerprint or labels is left out, a missing list (e.g. `mutedBy` before 0.27) is empty.
 * @throws AlertmanagerError `apiError` when the body is not a list.
 */
export function parseAlerts(body: unknown): ManagedAlert[] {
  if (!Array.isArray(body)) throw new AlertmanagerError("apiError", "the answer to GET /api/v2/alerts is not a list");
  const alerts: ManagedAlert[] = [];
  for (const item of body) {
    if (!isRecord(item) || typeof item.fingerprint !== "string" || !isRecord(item.labels)) continue;
    const status = isRecord(item.status) ? item.status : {};
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(item.labels)) if (typeof v === "string") labels[k] = v;
    alerts.push({
      fingerprint: item.fingerprint,
      labels,
      startsAt: typeof item.startsAt === "string" ? item.startsAt : "",
      state: typeof status.state === "string" ? status.state : "unprocessed",
      inhibitedBy: strings(status.inhibitedBy),
      silencedBy: strings(status.silencedBy),
      mutedBy: strings(status.mutedBy),
      receivers: (Array.isArray(item.receivers) ? item.receivers : []).flatMap((r) => (isRecord(r) && typeof r.name === "string" ? [r.name] : [])),
    });
  }
  return alerts;
}

/**
 * An {@link AlertmanagerApi} for the Alertmanager at `baseUrl`, with the built-in fetch.
 *
 * @param baseUrl e.g. `http://alertmanager-operated.monitoring.svc.cluster.local:9093` (a path prefix is kept).
 * @param timeoutMs per request, from its start to the answer's last byte.
 * @param onRequest called once per request with its result (`ok`, `unreachable`, `apiError`), for metrics.
 */
export function createAlertmanagerApi(baseUrl: URL, timeoutMs: number, onRequest: (result: string) => void = () => {}): AlertmanagerApi {
  const base = baseUrl.href.endsWith("/") ? baseUrl.href : `${baseUrl.href}/`;
  const what = "GET /api/v2/alerts";
  return {
    url: baseUrl.href.replace(/\/$/, ""),
    async alerts(filters) {
      const url = new URL("api/v2/alerts", base);
      for (const flag of ["active", "silenced", "inhibited", "unprocessed"]) url.searchParams.set(flag, "true");
      for (const filter of filters) url.searchParams.append("filter", filter);
      try {
        let response: Response;
        let text: string;
        try {
          response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: "application/json" } });
          text = await response.text();
        } catch (error) {
          throw new AlertmanagerError("unreachable", `${what}: ${describeFetchError(error, timeoutMs)}`, { cause: error });
        }
        if (!response.ok) throw new AlertmanagerError("apiError", `HTTP ${response.status} to ${what}: ${text.slice(0, 200).trim()}`);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw new AlertmanagerError("apiError", `HTTP ${response.status} to ${what}, not JSON`);
        }
        const alerts = parseAlerts(body);
        onRequest("ok");
        return alerts;
      } catch (error) {
        onRequest(error instanceof AlertmanagerError ? error.kind : "apiError");
        throw error;
      }
    },
  };
}
