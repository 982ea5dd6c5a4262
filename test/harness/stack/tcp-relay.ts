/**
 * `node test/harness/stack/tcp-relay.ts <listen host> <listen port> <target host> <target port>`: a plain
 * TCP relay, run detached by the stack. It makes the API server, which listens on 127.0.0.1 alone,
 * reachable on the real node's IP too, where the `kubernetes` Service's endpoint points: a Pod's
 * connection to 10.96.0.1:443 is rewritten by kube-proxy to `<node IP>:<port>` and relayed here to
 * `127.0.0.1:<port>`. TLS passes through untouched (the API server's certificate and the client's
 * token are end to end). Exits on SIGTERM; a port already in use is an exit with status 1.
 */
import { connect, createServer } from "node:net";

const [listenHost, listenPort, targetHost, targetPort] = process.argv.slice(2);
if (!listenHost || !listenPort || !targetHost || !targetPort) {
  console.error("usage: node tcp-relay.ts <listen host> <listen port> <target host> <target port>");
  process.exit(2);
}

const server = createServer((client) => {
  const upstream = connect(Number(targetPort), targetHost);
  client.pipe(upstream);
  upstream.pipe(client);
  // Either side closing or failing ends both: the peer sees the same as a direct connection would.
  for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
    a.on("error", () => b.destroy());
    a.on("close", () => b.destroy());
  }
});
server.on("error", (error) => {
  console.error(`tcp-relay ${listenHost}:${listenPort}: ${error.message}`);
  process.exit(1);
});
server.listen(Number(listenPort), listenHost, () => console.log(`tcp-relay: ${listenHost}:${listenPort} → ${targetHost}:${targetPort}`));
process.on("SIGTERM", () => process.exit(0));
