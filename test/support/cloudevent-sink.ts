/**
 * A CloudEvents sink for tests: an HTTP server on 127.0.0.1 that decodes every request with
 * the CloudEvents SDK (`HTTP.toEvent`, binary and structured mode), validates it and keeps
 * it. It can be stopped and started again on the same port (a sink that goes down) and told
 * to answer with an error status.
 */
import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server } from "node:http";
import { CloudEvent, HTTP } from "cloudevents";

/** One request the sink accepted. */
export interface ReceivedEvent {
  readonly event: CloudEvent<unknown>;
  /** Content mode, from the content type (`application/cloudevents+json` → structured). */
  readonly mode: "binary" | "structured";
  readonly headers: IncomingHttpHeaders;
}

/** A running (or stopped) sink. */
export interface TestSink {
  readonly url: string;
  readonly port: number;
  /** Valid events received, in arrival order (duplicates included). */
  readonly received: ReceivedEvent[];
  /** Requests that did not decode to a valid CloudEvent (answered 400). */
  readonly rejected: { headers: IncomingHttpHeaders; body: string; error: string }[];
  /**
   * Answer every request with `status` (without keeping the event); `undefined` → back to 202.
   * With `only`, just the events it picks get `status`; the others are kept and answered 202.
   */
  failWith(status: number | undefined, only?: (event: CloudEvent<unknown>) => boolean): void;
  /** Holds every answer this many milliseconds (0: none), so a delivery stays in flight. */
  answerAfter(ms: number): void;
  /** Stops listening and cuts open connections: senders get connection errors. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

/** Starts a sink on 127.0.0.1 (`port` 0 = any free port). */
export async function startSink(port = 0): Promise<TestSink> {
  const received: ReceivedEvent[] = [];
  const rejected: TestSink["rejected"] = [];
  let failure: number | undefined;
  let failOnly: ((event: CloudEvent<unknown>) => boolean) | undefined;
  let delayMs = 0;
  const handler = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => setTimeout(() => answer(), delayMs));
    const answer = (): void => {
      if (failure !== undefined && failOnly === undefined) {
        res.writeHead(failure).end();
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      try {
        const decoded = HTTP.toEvent({ headers: req.headers, body });
        if (Array.isArray(decoded)) throw new Error("batch");
        const event = decoded as CloudEvent<unknown>;
        event.validate();
        if (failure !== undefined && failOnly?.(event) === true) {
          res.writeHead(failure).end();
          return;
        }
        const contentType = req.headers["content-type"] ?? "";
        received.push({ event, mode: contentType.startsWith("application/cloudevents+json") ? "structured" : "binary", headers: req.headers });
        res.writeHead(202).end();
      } catch (error) {
        rejected.push({ headers: req.headers, body, error: (error as Error).message });
        res.writeHead(400).end();
      }
    };
  };
  let server: Server = createServer(handler);
  const listen = (onPort: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(onPort, "127.0.0.1", () => {
        server.off("error", reject);
        const address = server.address();
        resolve(typeof address === "object" && address !== null ? address.port : onPort);
      });
    });
  const boundPort = await listen(port);
  return {
    url: `http://127.0.0.1:${boundPort}/`,
    port: boundPort,
    received,
    rejected,
    failWith: (status, only) => {
      failure = status;
      failOnly = only;
    },
    answerAfter: (ms) => {
      delayMs = ms;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    start: async () => {
      if (server.listening) return;
      server = createServer(handler);
      await listen(boundPort);
    },
  };
}
