/**
 * Health endpoints, as Knative's Node runtime serves them
 * (https://github.com/nodeshift/faas-js-runtime#health-checks):
 *
 * - `GET /health/liveness` → 200 `{ "status": "ok" }` while the process serves requests.
 * - `GET /health/readiness` → 200 `{ "status": "ok" }` when the function says it is ready,
 *   503 `{ "status": "not ready", "reason": … }` when it is not, when its check throws or
 *   takes longer than the timeout, and while the server drains after SIGTERM.
 */
import type { ReadinessResult } from "./types.ts";

/** Path of the liveness probe. */
export const LIVENESS_PATH = "/health/liveness";
/** Path of the readiness probe. */
export const READINESS_PATH = "/health/readiness";

/** A probe answer: HTTP status and JSON body. */
export interface ProbeAnswer {
  readonly status: 200 | 503;
  readonly body: { readonly status: "ok" | "not ready"; readonly reason?: string };
}

/** Answer of the liveness probe: the process got here, so it is alive. */
export function liveness(): ProbeAnswer {
  return { status: 200, body: { status: "ok" } };
}

/**
 * Answer of the readiness probe.
 * @param check the function's readiness check (absent → ready)
 * @param draining true once shutdown began: not ready, so the load balancer stops sending
 * @param timeoutMs a check still pending after this many ms counts as not ready
 */
export async function readiness(
  check: (() => Promise<ReadinessResult>) | undefined,
  draining: boolean,
  timeoutMs: number,
): Promise<ProbeAnswer> {
  if (draining) return notReady("shutting down");
  if (check === undefined) return { status: 200, body: { status: "ok" } };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ReadinessResult>((resolve) => {
    timer = setTimeout(() => resolve({ ready: false, reason: `readiness check took longer than ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    const result = await Promise.race([check(), timeout]);
    return result.ready ? { status: 200, body: { status: "ok" } } : notReady(result.reason);
  } catch (error) {
    return notReady(error instanceof Error ? error.message : String(error));
  } finally {
    clearTimeout(timer);
  }
}

function notReady(reason: string): ProbeAnswer {
  return { status: 503, body: { status: "not ready", reason } };
}
