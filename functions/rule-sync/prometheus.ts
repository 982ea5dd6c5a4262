/**
 * rule-sync's access to Prometheus's HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/):
 * the rule groups it has loaded (`GET /api/v1/rules`) and instant queries (`POST /api/v1/query`).
 * The only module that talks to Prometheus; what it returns is plain data for `rule-loaded.ts`
 * and `series-check.ts`.
 *
 * Every request is bounded as a whole, headers and body (`PROMETHEUS_TIMEOUT_MS`). A failure is
 * a {@link PrometheusError}: `unreachable` when no answer came (refused, a name that does not
 * resolve, the timeout), `apiError` when the answer is not the API's success (an HTTP error, a
 * body that is not its JSON, `status: "error"`): a PROMETHEUS_URL that points at something else.
 */
import { isRecord } from "../lib/is-record.ts";
import type { LoadedGroup, LoadedRule } from "./rule-loaded.ts";
import { RULE_GENERATION_ANNOTATION } from "./rule.ts";

/** Why a request to Prometheus failed; `message` is stable for the same failure (no times, no ids). */
export class PrometheusError extends Error {
  /** `unreachable`: no answer; `apiError`: an answer that is not the API's success. */
  readonly kind: "unreachable" | "apiError";

  constructor(kind: "unreachable" | "apiError", message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PrometheusError";
    this.kind = kind;
  }
}

/** One sample of an instant vector. */
export interface Sample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The calls rule-sync makes to Prometheus; tests substitute a fake. */
export interface PrometheusApi {
  /** The base URL, as the conditions name it. */
  readonly url: string;
  /**
   * The alerting rule groups Prometheus has loaded, by name. `names`, when given, asks only for
   * those (`rule_group[]`; a Prometheus older than the filter answers all, which is fine).
   * @throws PrometheusError
   */
  ruleGroups(names?: readonly string[]): Promise<Map<string, LoadedGroup>>;
  /**
   * An instant query's samples.
   * @throws PrometheusError, also when the result is not a vector.
   */
  query(expr: string): Promise<Sample[]>;
}

/** Past this many names, {@link PrometheusApi.ruleGroups} asks for every group rather than a URL this long. */
const MAX_GROUP_FILTER = 50;

/**
 * The groups of a `/api/v1/rules` answer's `data`, by name: each rule's name, health, last
 * error and {@link RULE_GENERATION_ANNOTATION}. Pure.
 * @throws PrometheusError `apiError` when `data.groups` is not a list.
 */
export function parseRuleGroups(data: unknown): Map<string, LoadedGroup> {
  const groups = isRecord(data) ? data.groups : undefined;
  if (!Array.isArray(groups)) throw new PrometheusError("apiError", "the answer to GET /api/v1/rules has no data.groups list");
  const byName = new Map<string, LoadedGroup>();
  for (const group of groups) {
    if (!isRecord(group) || typeof group.name !== "string") continue;
    const rules: LoadedRule[] = [];
    for (const rule of Array.isArray(group.rules) ? group.rules : []) {
      if (!isRecord(rule)) continue;
      const annotations = isRecord(rule.annotations) ? rule.annotations : {};
      const generation = annotations[RULE_GENERATION_ANNOTATION];
      rules.push({
        name: typeof rule.name === "string" ? rule.name : "",
        generation: typeof generation === "string" ? generation : undefined,
        health: typeof rule.health === "string" ? rule.health : "unknown",
        lastError: typeof rule.lastError === "string" && rule.lastError !== "" ? rule.lastError : undefined,
      });
    }
    byName.set(group.name, { name: group.name, file: typeof group.file === "string" ? group.file : "", rules });
  }
  return byName;
}

/**
 * The samples of an instant query answer's `data`. Pure.
 * @throws PrometheusError `apiError` when it is not a vector.
 */
export function parseVector(data: unknown, expr: string): Sample[] {
  if (!isRecord(data) || data.resultType !== "vector" || !Array.isArray(data.result)) {
    throw new PrometheusError("apiError", `the answer to the query ${expr.slice(0, 80)}… is not a vector`);
  }
  const samples: Sample[] = [];
  for (const item of data.result) {
    if (!isRecord(item) || !Array.isArray(item.value)) continue;
    const metric: Record<string, string> = {};
    if (isRecord(item.metric)) for (const [k, v] of Object.entries(item.metric)) if (typeof v === "string") metric[k] = v;
    samples.push({ metric, value: Number(item.value[1]) });
  }
  return samples;
}

/**
 * A {@link PrometheusApi} for the Prometheus at `baseUrl`, with the built-in fetch.
 *
 * @param baseUrl e.g. `http://prometheus-operated.monitoring.svc:9090` (a path prefix is kept).
 * @param timeoutMs per request, from its start to the answer's last byte.
 * @param onRequest called once per request with its endpoint and result (`ok`, `unreachable`, `apiError`), for metrics.
 */
export function createPrometheusApi(baseUrl: URL, timeoutMs: number, onRequest: (endpoint: "rules" | "query", result: string) => void = () => {}): PrometheusApi {
  const base = baseUrl.href.endsWith("/") ? baseUrl.href : `${baseUrl.href}/`;
  const shown = baseUrl.href.replace(/\/$/, "");

  /** One request; the API's `data` on success. */
  const call = async (endpoint: "rules" | "query", what: string, url: URL, init: RequestInit): Promise<unknown> => {
    try {
      let response: Response;
      try {
        response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), headers: { accept: "application/json", ...init.headers } });
      } catch (error) {
        throw new PrometheusError("unreachable", describeFetchError(error, timeoutMs), { cause: error });
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        throw new PrometheusError("unreachable", `the answer to ${what} was cut off: ${describeFetchError(error, timeoutMs)}`, { cause: error });
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new PrometheusError("apiError", `HTTP ${response.status} to ${what}, not JSON`);
      }
      if (!response.ok || !isRecord(body) || body.status !== "success") {
        const error = isRecord(body) && typeof body.error === "string" ? `: ${body.error.slice(0, 200)}` : "";
        throw new PrometheusError("apiError", `HTTP ${response.status} to ${what}${error}`);
      }
      onRequest(endpoint, "ok");
      return body.data;
    } catch (error) {
      onRequest(endpoint, error instanceof PrometheusError ? error.kind : "apiError");
      throw error;
    }
  };

  return {
    url: shown,
    async ruleGroups(names) {
      const url = new URL("api/v1/rules", base);
      url.searchParams.set("type", "alert");
      // Ignored by a Prometheus older than these filters, which then answers everything.
      url.searchParams.set("exclude_alerts", "true");
      if (names !== undefined && names.length <= MAX_GROUP_FILTER) for (const name of names) url.searchParams.append("rule_group[]", name);
      return parseRuleGroups(await call("rules", "GET /api/v1/rules", url, { method: "GET" }));
    },
    async query(expr) {
      // POST, form-encoded: an expression of several selectors would make a long URL.
      const data = await call("query", "POST /api/v1/query", new URL("api/v1/query", base), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ query: expr }).toString(),
      });
      return parseVector(data, expr);
    },
  };
}

/** fetch's failure in one stable line: its cause's code and message (`connect ECONNREFUSED 10.0.0.1:9090`, `getaddrinfo ENOTFOUND prom`), or the timeout (also `alertmanager.ts`'s). */
export function describeFetchError(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${timeoutMs} ms`;
  const cause = (error as { cause?: unknown }).cause;
  // Both address families refused: an AggregateError whose own message is empty.
  if (cause instanceof AggregateError && cause.errors.length > 0) return cause.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join(", ");
  if (cause instanceof Error && cause.message !== "") return cause.message;
  return error instanceof Error ? error.message : String(error);
}
