/** A free TCP port on 127.0.0.1, for components that must be told their port up front. */
import { createServer } from "node:net";

/**
 * Asks the kernel for a free port on 127.0.0.1 and releases it. Another process could take
 * it before the caller binds; for our own short-lived test components that race is harmless
 * (start-up fails loudly with EADDRINUSE).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no port assigned"))));
    });
  });
}
