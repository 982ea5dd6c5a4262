/**
 * alert-receiver: Alertmanager webhook in, one CloudEvent per alert out to `$K_SINK`.
 * Started with `npm run function -- alert-receiver`; configuration in `config.ts`, endpoint
 * and status codes in `handler.ts`, the alert → event rules in `mapping.ts`.
 */
import type { HttpFunctionDefinition } from "../lib/runtime/types.ts";
import { challengeFor, createAuthenticator } from "./auth.ts";
import { readConfig } from "./config.ts";
import type { AlertReceiverConfig } from "./config.ts";
import { createHandler } from "./handler.ts";
import { createMetrics } from "./metrics.ts";
import { createSender, statusCheckingTransport } from "./sink.ts";

/** The function definition the runtime serves. */
export const fn: HttpFunctionDefinition<AlertReceiverConfig> = {
  name: "alert-receiver",
  kind: "http",
  configure: readConfig,
  init(config, deps) {
    if (config.auth.mode === "none") {
      deps.log.warn("WEBHOOK_AUTH=none: accepting webhooks without authentication; use only on a trusted local network");
    }
    deps.log.info({ sink: config.sink.href, mode: config.mode, delivery: config.delivery }, "configured");
    const { maxAttempts, baseDelayMs, maxDelayMs, timeoutMs, concurrency, deadlineMs } = config.delivery;
    const sink = statusCheckingTransport(config.sink, timeoutMs, config.sinkTokenFile);
    return {
      handle: createHandler({
        authenticate: createAuthenticator(config.auth),
        challenge: challengeFor(config.auth),
        send: createSender(sink.transport, config.mode),
        retryPolicy: { maxAttempts, baseDelayMs, maxDelayMs },
        concurrency,
        deadlineMs,
        metrics: createMetrics(deps.registry),
      }),
      close: async () => sink.close(),
    };
  },
};
