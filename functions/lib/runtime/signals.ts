/**
 * Process signals, per Knative's runtime contract: SIGTERM (and SIGINT, for a terminal)
 * starts a graceful stop; the process exits 0 once drained, 1 if stopping failed. A second
 * signal while draining exits at once with 1.
 */
import type { Logger } from "pino";

/** Installs the handlers; `stop` is the server's graceful close. */
export function exitOnSignals(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn({ signal }, "second signal while draining: exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, "shutting down");
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
