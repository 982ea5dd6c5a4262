// alert-receiver's sender token to the Broker (functions/alert-receiver/sink.ts): with Knative
// Eventing's authentication-oidc, its SinkBinding mounts an OIDC token at /oidc/token and renews it
// there; each event carries the file's current content as a bearer token, and none while there is
// no file. Against a local HTTP server standing in for the Broker's ingress.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile, rm } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { CloudEvent, HTTP } from "cloudevents";
import { DEFAULT_SINK_TOKEN_FILE, readConfig } from "../../../functions/alert-receiver/config.ts";
import { statusCheckingTransport } from "../../../functions/alert-receiver/sink.ts";
import { tempDir, type TempDir } from "../../support/temp-dir.ts";

let server: Server;
let url: URL;
let dir: TempDir;
const seen: IncomingHttpHeaders[] = [];

before(async () => {
  dir = await tempDir("sink-token");
  server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume().on("end", () => res.writeHead(202).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
});
after(async () => {
  server.close();
  await dir.remove();
});

const message = () => HTTP.binary(new CloudEvent({ id: "1", source: "/test", type: "test", data: { a: 1 } }));

test("the SinkBinding's token file, read at each send: a renewed token goes with the next event, none without the file", async () => {
  const file = path.join(dir.path, "token");
  const sink = statusCheckingTransport(url, 2_000, file);
  try {
    await sink.transport(message());
    await writeFile(file, "first.token\n");
    await sink.transport(message());
    await writeFile(file, "second.token");
    await sink.transport(message());
    await rm(file);
    await sink.transport(message());
  } finally {
    sink.close();
  }
  assert.deepEqual(seen.map((h) => h.authorization), [undefined, "Bearer first.token", "Bearer second.token", undefined]);
});

test("SINK_TOKEN_FILE defaults to where Knative's SinkBinding mounts it", () => {
  assert.equal(DEFAULT_SINK_TOKEN_FILE, "/oidc/token");
  assert.equal(readConfig({ K_SINK: "http://broker.example/", WEBHOOK_TOKEN: "t" }).sinkTokenFile, "/oidc/token");
  assert.equal(readConfig({ K_SINK: "http://broker.example/", WEBHOOK_TOKEN: "t", SINK_TOKEN_FILE: "/var/run/token" }).sinkTokenFile, "/var/run/token");
});
