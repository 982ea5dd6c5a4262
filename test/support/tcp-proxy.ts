/**
 * A TCP proxy a test can cut and restore, to take a server (the API server) away from a client
 * and give it back without touching the server, which other tests share.
 */
import { createServer, connect } from "node:net";
import type { Server, Socket } from "node:net";

/** A running proxy on 127.0.0.1. */
export interface TcpProxy {
  /** The port clients connect to; the same after {@link TcpProxy.resume}. */
  readonly port: number;
  /** Stops listening and destroys every open connection: clients see resets, then refusals. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  resume(): Promise<void>;
  /** Same as {@link TcpProxy.cut}; for `after` hooks. */
  stop(): Promise<void>;
  /**
   * Holds every chunk from a client this many milliseconds before passing it on (0: none), so a
   * request through the proxy stays in flight long enough for a test to act meanwhile.
   */
  setLatency(ms: number): void;
}

/** Starts a proxy from a free port on 127.0.0.1 to `host:port`. */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let listenPort = 0;
  let latencyMs = 0;

  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = connect(port, host);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on("close", () => sockets.delete(socket));
          socket.on("error", () => undefined);
        }
        // Equal delays keep the chunks in order: timers of the same duration fire in the order set.
        client.on("data", (chunk: Buffer) => {
          if (latencyMs === 0) upstream.write(chunk);
          else setTimeout(() => upstream.write(chunk), latencyMs);
        });
        upstream.pipe(client);
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      });
      s.once("error", reject);
      s.listen(listenPort, "127.0.0.1", () => {
        const address = s.address();
        listenPort = typeof address === "object" && address !== null ? address.port : 0;
        server = s;
        resolve();
      });
    });

  const cut = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  return { port: listenPort, cut, resume: listen, stop: cut, setLatency: (ms) => (latencyMs = ms) };
}
