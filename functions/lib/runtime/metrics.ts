/**
 * Prometheus metrics of the runtime: one registry per server with prom-client's default
 * process metrics, request counts and latencies, and the function's own metrics.
 * Exposition format: https://prometheus.io/docs/instrumenting/exposition_formats/
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Which part of the server answered; a bounded label, never the raw path. */
export type RouteLabel = "function" | "health" | "metrics" | "other";

/** The runtime's request metrics. */
export interface RuntimeMetrics {
  readonly registry: Registry;
  /** `appmonitor_http_requests_total{route,method,code}`. */
  readonly requests: Counter<"route" | "method" | "code">;
  /** `appmonitor_http_request_duration_seconds{route,code}`, seconds. */
  readonly duration: Histogram<"route" | "code">;
  /**
   * `appmonitor_http_requests_aborted_total{route,method}`: requests whose connection closed
   * before their answer was written in full (the client gave up, or the connection was cut).
   * Counted here instead of in `requests` and `duration`, where they would show as the status
   * the answer never reached the client with.
   */
  readonly aborted: Counter<"route" | "method">;
  /** `appmonitor_http_oversize_bodies_total`: requests refused with 413 for a body over the limit. */
  readonly oversizeBodies: Counter;
  /**
   * `appmonitor_http_oversize_body_bytes_total`: their bytes, each as its `Content-Length` said,
   * or, for a chunked upload, the bytes read when the limit was passed (at least the limit + 1).
   */
  readonly oversizeBodyBytes: Counter;
}

/**
 * A fresh registry labelled `function=<name>` with default metrics and the request metrics
 * (answered, aborted, refused as too large).
 * Fresh rather than prom-client's global one so several servers can live in one process.
 */
export function createRuntimeMetrics(functionName: string): RuntimeMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ function: functionName });
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "appmonitor_http_requests_total",
    help: "HTTP requests served, by route (function, health, metrics, other), method and status code.",
    labelNames: ["route", "method", "code"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "appmonitor_http_request_duration_seconds",
    help: "Time from request received to response finished, in seconds.",
    labelNames: ["route", "code"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const aborted = new Counter({
    name: "appmonitor_http_requests_aborted_total",
    help: "HTTP requests whose connection closed before the answer was written in full (the client gave up), by route and method.",
    labelNames: ["route", "method"] as const,
    registers: [registry],
  });
  const oversizeBodies = new Counter({
    name: "appmonitor_http_oversize_bodies_total",
    help: "Requests refused with 413 because the body was over the limit; a sender never retries them, so their content is lost.",
    registers: [registry],
  });
  const oversizeBodyBytes = new Counter({
    name: "appmonitor_http_oversize_body_bytes_total",
    help: "Bytes of the bodies refused with 413: the Content-Length, or for a chunked upload the bytes read when the limit was passed.",
    registers: [registry],
  });
  return { registry, requests, duration, aborted, oversizeBodies, oversizeBodyBytes };
}
