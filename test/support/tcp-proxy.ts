/**
 * A TCP proxy a test can cut, stall and restore, to take a server (the API server) away from a
 * client and give it back without touching the server, which other tests share.
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
  /**
   * Stops passing bytes either way and closes nothing: open connections stay open, new ones are
   * accepted, what is written to them is taken and held. A server behind a dropped route or a
   * lost NAT entry looks so to its client: no reset, no FIN, no answer, ever.
   */
  stall(): void;
  /** Passes on what {@link TcpProxy.stall} held, in order, and everything after it. */
  unstall(): void;
  /**
   * Drops every chunk from a client from now on until {@link TcpProxy.cut}, those
   * {@link TcpProxy.setLatency} still holds included (not those {@link TcpProxy.stall} holds), and
   * resolves once every request passed on has been answered: on each connection the last chunk
   * passed went to the client, and none has passed for `quietMs`. So a test can cut after an
   * answer and before the next request, without racing the answer on its way back.
   * Rejects after `timeoutMs` if a request is still unanswered (a server that hangs, a request
   * whose rest was dropped).
   */
  drain(quietMs?: number, timeoutMs?: number): Promise<void>;
}

/** Starts a proxy from a free port on 127.0.0.1 to `host:port`. */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let listenPort = 0;
  let latencyMs = 0;
  let stalled = false;
  /** Chunks held while stalled, in arrival order, each with where it goes. */
  let held: { to: Socket; chunk: Buffer }[] = [];
  /** Connections accepted while stalled: their upstream is dialled on unstall, so the server cannot time them out meanwhile. */
  let dialLater: (() => void)[] = [];
  let dropping = false;
  /** Per client connection: whether the last chunk passed went to the server (a request awaits its answer). */
  const awaiting = new Map<Socket, boolean>();
  let lastPassed = 0;

  const pass = (to: Socket | undefined, chunk: Buffer, early: Buffer[]): void => {
    if (to === undefined) early.push(chunk);
    else if (stalled) held.push({ to, chunk });
    else if (!to.destroyed) {
      to.write(chunk);
      lastPassed = Date.now();
    }
  };

  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
  };

  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const s = createServer((client) => {
        track(client);
        let upstream: Socket | undefined;
        /** What the client sent before its upstream was dialled. */
        const early: Buffer[] = [];
        const dial = (): void => {
          if (client.destroyed) return;
          const socket = connect(port, host);
          track(socket);
          upstream = socket;
          for (const chunk of early.splice(0)) socket.write(chunk);
          socket.on("data", (chunk: Buffer) => {
            awaiting.set(client, false);
            pass(client, chunk, []);
          });
          socket.on("close", () => client.destroy());
        };
        // Equal delays keep the chunks in order: timers of the same duration fire in the order set.
        const toServer = (chunk: Buffer): void => {
          if (dropping) return;
          awaiting.set(client, true);
          pass(upstream, chunk, early);
        };
        client.on("data", (chunk: Buffer) => {
          if (latencyMs === 0) toServer(chunk);
          else setTimeout(() => toServer(chunk), latencyMs);
        });
        client.on("close", () => {
          awaiting.delete(client);
          upstream?.destroy();
        });
        if (stalled) dialLater.push(dial);
        else dial();
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
    held = [];
    dialLater = [];
    dropping = false;
    if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  return {
    port: listenPort,
    cut,
    resume: listen,
    stop: cut,
    setLatency: (ms) => (latencyMs = ms),
    stall: () => {
      stalled = true;
    },
    unstall: () => {
      stalled = false;
      const flushing = held;
      held = [];
      for (const { to, chunk } of flushing) if (!to.destroyed) to.write(chunk);
      for (const dial of dialLater.splice(0)) dial();
    },
    drain: async (quietMs = 200, timeoutMs = 10_000) => {
      dropping = true;
      const deadline = Date.now() + timeoutMs;
      const answered = (): boolean => [...awaiting.values()].every((a) => !a) && Date.now() - lastPassed >= quietMs;
      while (!answered()) {
        if (Date.now() > deadline) throw new Error(`tcp proxy: a request through it still unanswered after ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
  };
}
