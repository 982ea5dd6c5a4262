/**
 * Graceful shutdown of an HTTP server, per Knative's runtime contract (SIGTERM → stop taking
 * new requests, finish the ones in flight, exit): stop listening, close idle keep-alive
 * connections as soon as their last response finished, and cut whatever is left after a
 * timeout.
 */
import type { Server } from "node:http";

/** Counts requests in flight and closes a server once they are done. */
export class Drainer {
  #server: Server;
  #inFlight = 0;
  #draining = false;
  #closed: Promise<void> | undefined;

  constructor(server: Server) {
    this.#server = server;
  }

  /** True once {@link close} was called. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Requests received and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Call when a request arrives; the returned function when its response is finished or aborted (idempotent). */
  track(): () => void {
    this.#inFlight += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#inFlight -= 1;
      // A keep-alive connection whose last response just finished would otherwise keep the server open.
      if (this.#draining) setImmediate(() => this.#server.closeIdleConnections());
    };
  }

  /**
   * Stops accepting connections and resolves when every connection closed, at most
   * `timeoutMs` later (then the remaining connections are destroyed). Idempotent.
   */
  close(timeoutMs: number): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      this.#draining = true;
      const timer = setTimeout(() => this.#server.closeAllConnections(), timeoutMs);
      this.#server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      this.#server.closeIdleConnections();
    });
    return this.#closed;
  }
}
