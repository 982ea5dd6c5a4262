/**
 * The shared function runtime through real HTTP: CloudEvent decoding (binary, structured,
 * malformed, batch) and the empty 204 answer to a handled event, HTTP functions, health,
 * metrics, body limit, error mapping, logs and graceful drain. Fixture functions are defined here; the server runs in-process.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { Writable } from "node:stream";
import { after, describe, it } from "node:test";
import { CloudEvent, HTTP } from "cloudevents";
import { Counter } from "prom-client";
import { ConfigError, readString } from "../../functions/lib/runtime/env.ts";
import { HttpError, RequestAbortedError } from "../../functions/lib/runtime/errors.ts";
import { startServer } from "../../functions/lib/runtime/server.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import type { FunctionDefinition, FunctionRequest, ReadinessResult } from "../../functions/lib/runtime/types.ts";
import { startFunction } from "../support/function-server.ts";
import { scrape } from "../support/prometheus-text.ts";
import { waitUntil } from "../harness/lib/wait-until.ts";

const event = new CloudEvent({
  id: "evt-1",
  type: "com.example.test",
  source: "/test",
  subject: "namespaces/default/pods/p",
  datacontenttype: "application/json",
  data: { hello: "world" },
});

/** What the CloudEvent fixture saw and reports. */
interface EventState {
  readiness: ReadinessResult | Error;
  calls: number;
  /** The events handled, as the function got them, with its configured suffix. */
  received: { id: string; type: string; data: unknown; suffix: string }[];
}

/** A CloudEvent function that records what it got, or fails on request, and counts calls. */
function echoEvents(state: EventState): FunctionDefinition<{ suffix: string }> {
  return {
    name: "echo-events",
    kind: "cloudevent",
    configure: (env) => ({ suffix: readString(env, "ECHO_SUFFIX") ?? "" }),
    init: (config, deps) => {
      const handled = new Counter({ name: "echo_handled_total", help: "events handled", registers: [deps.registry] });
      return {
        handle: async (_context, received) => {
          state.calls += 1;
          handled.inc();
          if (received.type === "com.example.permanent") throw new HttpError(422, "cannot handle", { details: ["reason one"] });
          if (received.type === "com.example.bug") throw new Error("secret internal detail");
          if (received.type === "com.example.verbose") throw new HttpError(400, "too much to say", { details: Array.from({ length: 40 }, (_, i) => `schema error number ${i}`) });
          if (received.type === "com.example.sentence") return { outcome: "not one word" };
          state.received.push({ id: received.id, type: received.type, data: received.data, suffix: config.suffix });
          return { outcome: "echoed", reason: "Asked" };
        },
        readiness: async () => {
          if (state.readiness instanceof Error) throw state.readiness;
          return state.readiness;
        },
      };
    },
  };
}

/**
 * An HTTP function that echoes the request; `/slow` answers after `release()`; `/until-gone`
 * answers 200 once its client has closed the connection, and keeps the reason it was told.
 */
function echoHttp(state: { seen: FunctionRequest[]; slow: Promise<void>; closed: boolean; gone?: unknown }): FunctionDefinition<null> {
  return {
    name: "echo-http",
    kind: "http",
    configure: () => null,
    init: () => ({
      handle: async (context, req) => {
        state.seen.push(req);
        if (req.path === "/slow") await state.slow;
        if (req.path === "/until-gone") {
          await new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
          state.gone = context.signal.reason;
          return { status: 200, body: "too late" };
        }
        if (req.path === "/nothing") return;
        return { status: 201, body: { method: req.method, path: req.path, q: req.query.get("q"), bytes: req.body.length } };
      },
      close: async () => {
        state.closed = true;
      },
    }),
  };
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

describe("CloudEvent functions", async () => {
  const state: EventState = { readiness: { ready: true }, calls: 0, received: [] };
  const lines: Record<string, unknown>[] = [];
  const capture = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const server: RunningServer = await startServer(
    echoEvents(state),
    { HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "debug", ECHO_SUFFIX: "!" },
    { logDestination: capture },
  );
  after(() => server.close());

  it("decodes binary mode and hands the function the event", async () => {
    const message = HTTP.binary(event);
    const response = await fetch(server.url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    assert.equal(response.status, 204);
    assert.deepEqual(state.received.at(-1), { id: "evt-1", type: "com.example.test", data: { hello: "world" }, suffix: "!" });
  });

  it("decodes structured mode", async () => {
    const message = HTTP.structured(event.cloneWith({ id: "evt-2" }));
    const response = await fetch(server.url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    assert.equal(response.status, 204);
    assert.equal(state.received.at(-1)?.id, "evt-2");
  });

  it("answers a handled event 204 with the outcome in headers, no body, no content type and no ce-* header", async () => {
    const message = HTTP.binary(event.cloneWith({ id: "evt-3" }));
    const response = await fetch(server.url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get("x-appmonitor-outcome"), "echoed");
    assert.equal(response.headers.get("x-appmonitor-reason"), "Asked");
    assert.equal((await response.arrayBuffer()).byteLength, 0);
    assert.equal(response.headers.get("content-type"), null);
    assert.deepEqual([...response.headers.keys()].filter((name) => name.startsWith("ce-")), []);
  });

  const malformed: { name: string; headers: Record<string, string>; body: string; status: number; detail: RegExp }[] = [
    { name: "binary without ce-type", headers: { "ce-id": "1", "ce-source": "/s", "ce-specversion": "1.0", "content-type": "application/json" }, body: "{}", status: 400, detail: /type/ },
    { name: "structured, not JSON", headers: { "content-type": "application/cloudevents+json" }, body: "{nope", status: 400, detail: /JSON/ },
    { name: "structured without source", headers: { "content-type": "application/cloudevents+json" }, body: JSON.stringify({ id: "1", type: "t", specversion: "1.0" }), status: 400, detail: /source/ },
    { name: "no CloudEvent at all", headers: { "content-type": "application/json" }, body: "{}", status: 400, detail: /no cloud event/ },
    { name: "a batch", headers: { "content-type": "application/cloudevents-batch+json" }, body: JSON.stringify([JSON.parse(event.toString())]), status: 415, detail: /batch/ },
  ];
  for (const testCase of malformed) {
    it(`answers ${testCase.status} with the error list for ${testCase.name}`, async () => {
      const before = state.calls;
      const response = await fetch(server.url, { method: "POST", headers: testCase.headers, body: testCase.body });
      assert.equal(response.status, testCase.status);
      const body = await json(response);
      assert.ok(Array.isArray(body.details) && body.details.length > 0, JSON.stringify(body));
      assert.match(JSON.stringify(body.details), testCase.detail);
      assert.equal(state.calls, before, "the function must not be called");
    });
  }

  it("maps an HttpError to its status and details, anything else to a short 500", async () => {
    const permanent = HTTP.binary(event.cloneWith({ type: "com.example.permanent" }));
    const r1 = await fetch(server.url, { method: "POST", headers: permanent.headers as Record<string, string>, body: permanent.body as string });
    assert.equal(r1.status, 422);
    assert.deepEqual(await json(r1), { error: "cannot handle", details: ["reason one"] });
    const bug = HTTP.binary(event.cloneWith({ type: "com.example.bug" }));
    const r2 = await fetch(server.url, { method: "POST", headers: bug.headers as Record<string, string>, body: bug.body as string });
    assert.equal(r2.status, 500);
    assert.deepEqual(await json(r2), { error: "internal error" });
    const logged = lines.find((line) => line.level === "error");
    assert.ok(logged, "a 500 is logged at error level");
    assert.match(JSON.stringify(logged), /secret internal detail/);
  });

  it("answers 500 when the function's outcome is not one header-safe word", async () => {
    const message = HTTP.binary(event.cloneWith({ type: "com.example.sentence" }));
    const response = await fetch(server.url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    assert.equal(response.status, 500);
    assert.deepEqual(await json(response), { error: "internal error" });
    assert.equal(response.headers.get("x-appmonitor-outcome"), null);
  });

  it("keeps an error answer within 768 bytes (Knative's dead-letter path crashes on a longer one), the details in full in the log", async () => {
    const message = HTTP.binary(event.cloneWith({ id: "evt-verbose", type: "com.example.verbose" }));
    const response = await fetch(server.url, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    assert.equal(response.status, 400);
    const text = await response.text();
    assert.ok(Buffer.byteLength(text) <= 768, `${Buffer.byteLength(text)} bytes`);
    const body = JSON.parse(text) as { error: string; details: string[]; detailsOmitted: number };
    assert.equal(body.error, "too much to say");
    assert.equal(body.details[0], "schema error number 0");
    assert.equal(body.details.length + body.detailsOmitted, 40);
    const line = lines.find((l) => l.msg === "request refused" && l.reason === "too much to say");
    assert.equal((line?.details as unknown[] | undefined)?.length, 40);
  });

  it("serves CloudEvents at POST / only: another method 405, a POST elsewhere 400 (a 404 would be retried by Knative)", async () => {
    assert.equal((await fetch(server.url)).status, 405);
    assert.equal((await fetch(`${server.url}/elsewhere`)).status, 405);
    const message = HTTP.binary(event.cloneWith({ id: "evt-elsewhere" }));
    const elsewhere = await fetch(`${server.url}/elsewhere`, { method: "POST", headers: message.headers as Record<string, string>, body: message.body as string });
    assert.equal(elsewhere.status, 400);
    assert.match(String((await json(elsewhere)).error), /POSTed to \/, not to \/elsewhere/);
    assert.ok(!state.received.some((e) => e.id === "evt-elsewhere"), "not handled");
  });

  it("refuses a body over 1 MiB with 413, counts it and its bytes, and accepts one of exactly 1 MiB", async () => {
    const [refusedBefore, bytesBefore] = await Promise.all(["appmonitor_http_oversize_bodies_total", "appmonitor_http_oversize_body_bytes_total"].map((name) => scrape(`${server.url}/metrics`, name)));
    const big = JSON.stringify({ pad: "x".repeat(1024 * 1024) });
    const over = HTTP.binary(event.cloneWith({ data: undefined }));
    const r1 = await fetch(server.url, { method: "POST", headers: over.headers as Record<string, string>, body: big });
    assert.equal(r1.status, 413);
    const lost = lines.find((line) => line.status === 413 && line.level === "warn");
    assert.equal(lost?.contentLength, Buffer.byteLength(big), "the refused body's size is logged");
    assert.equal(lost?.bytesRead, 0, "a declared length over the limit is refused before the body is read");
    assert.equal(lost?.limitBytes, 1024 * 1024);
    assert.match(String(lost?.msg), /its content is lost/);
    assert.equal((await scrape(`${server.url}/metrics`, "appmonitor_http_oversize_bodies_total")) - (refusedBefore ?? 0), 1);
    assert.equal((await scrape(`${server.url}/metrics`, "appmonitor_http_oversize_body_bytes_total")) - (bytesBefore ?? 0), Buffer.byteLength(big));
    const exact = `"${"x".repeat(1024 * 1024 - 2)}"`;
    const r2 = await fetch(server.url, { method: "POST", headers: over.headers as Record<string, string>, body: exact });
    assert.equal(r2.status, 204);
    assert.equal((await scrape(`${server.url}/metrics`, "appmonitor_http_oversize_bodies_total")) - (refusedBefore ?? 0), 1, "a body at the limit is not counted");
  });

  it("refuses a chunked body over 1 MiB with 413 and logs the bytes read when it passed the limit", async () => {
    const [refusedBefore, bytesBefore] = await Promise.all(["appmonitor_http_oversize_bodies_total", "appmonitor_http_oversize_body_bytes_total"].map((name) => scrape(`${server.url}/metrics`, name)));
    const over = HTTP.binary(event.cloneWith({ id: "evt-chunked", data: undefined }));
    const chunk = Buffer.alloc(64 * 1024, "x");
    const status = await new Promise<number>((resolve, reject) => {
      // No Content-Length: Node sends the body chunked, as a streaming sender does.
      const req = request(server.url, { method: "POST", headers: { ...(over.headers as Record<string, string>), "transfer-encoding": "chunked" } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      for (let i = 0; i < 20; i += 1) req.write(chunk);
      req.end();
    });
    assert.equal(status, 413);
    const lost = lines.filter((line) => line.status === 413 && line.level === "warn").at(-1);
    assert.equal(lost?.contentLength, null, "a chunked upload declares no length");
    const bytesRead = Number(lost?.bytesRead);
    assert.ok(bytesRead > 1024 * 1024 && bytesRead <= 20 * chunk.length, `bytesRead ${String(lost?.bytesRead)}`);
    assert.equal((await scrape(`${server.url}/metrics`, "appmonitor_http_oversize_bodies_total")) - (refusedBefore ?? 0), 1);
    assert.equal((await scrape(`${server.url}/metrics`, "appmonitor_http_oversize_body_bytes_total")) - (bytesBefore ?? 0), bytesRead);
  });

  it("delegates readiness to the function and keeps liveness independent", async () => {
    assert.equal((await fetch(`${server.url}/health/readiness`)).status, 200);
    state.readiness = { ready: false, reason: "warming up" };
    const notReady = await fetch(`${server.url}/health/readiness`);
    assert.equal(notReady.status, 503);
    assert.deepEqual(await json(notReady), { status: "not ready", reason: "warming up" });
    state.readiness = new Error("api server unreachable");
    assert.deepEqual(await json(await fetch(`${server.url}/health/readiness`)), { status: "not ready", reason: "api server unreachable" });
    assert.equal((await fetch(`${server.url}/health/liveness`)).status, 200);
    assert.equal((await fetch(`${server.url}/health/liveness`, { method: "POST" })).status, 405);
    state.readiness = { ready: true };
  });

  it("exposes default, runtime and function metrics labelled with the function", async () => {
    const response = await fetch(`${server.url}/metrics`);
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /^process_cpu_user_seconds_total\{function="echo-events"\} /m);
    assert.match(text, /^echo_handled_total\{function="echo-events"\} [1-9]/m);
    assert.match(text, /^appmonitor_http_requests_total\{route="function",method="POST",code="204",function="echo-events"\} [1-9]/m);
  });

  it("logs JSON lines: requests at info with the event's id and type and a handled event's outcome, probes at debug", () => {
    const requests = lines.filter((line) => line.msg === "request");
    assert.ok(requests.some((line) => line.level === "info" && line.path === "/" && line.function === "echo-events"));
    assert.ok(requests.some((line) => line.status === 204 && line.outcome === "echoed" && line.reason === "Asked"), JSON.stringify(requests));
    assert.ok(requests.filter((line) => line.status !== 204).every((line) => line.outcome === undefined));
    // Each delivery of an event has its line by the event's id, failed ones too: a retried event's attempts can be counted.
    assert.ok(requests.some((line) => line.status === 204 && line.eventId === "evt-1" && line.eventType === "com.example.test"), JSON.stringify(requests));
    for (const [type, status] of [["com.example.permanent", 422], ["com.example.bug", 500]] as const) {
      assert.ok(requests.some((line) => line.status === status && line.eventType === type && typeof line.eventId === "string"), `${type}: ${JSON.stringify(requests)}`);
    }
    assert.ok(requests.some((line) => line.status === 400 && line.eventId === undefined), "an event that could not be decoded has no id to name");
    assert.ok(requests.some((line) => line.status === 400 && line.eventId === "evt-verbose"), "one the function refused has");
    const probes = requests.filter((line) => line.path === "/health/liveness");
    assert.ok(probes.length > 0);
    assert.ok(probes.every((line) => line.level === "debug"));
  });
});

describe("HTTP functions", async () => {
  let release = (): void => undefined;
  const state = { seen: [] as FunctionRequest[], slow: new Promise<void>((resolve) => (release = resolve)), closed: false };
  const server = await startFunction(echoHttp(state));
  after(() => server.close());

  it("receives method, path, query and the raw body, without express", async () => {
    const response = await fetch(`${server.url}/hook?q=42`, { method: "PUT", headers: { "content-type": "text/weird" }, body: "abc" });
    assert.equal(response.status, 201);
    assert.deepEqual(await json(response), { method: "PUT", path: "/hook", q: "42", bytes: 3 });
    const seen = state.seen.at(-1);
    assert.ok(seen !== undefined && Buffer.isBuffer(seen.body));
    assert.equal(seen.body.toString(), "abc");
    assert.equal(seen.headers["content-type"], "text/weird");
  });

  it("answers 204 when the function returns nothing", async () => {
    assert.equal((await fetch(`${server.url}/nothing`, { method: "POST" })).status, 204);
  });

  it("drains an in-flight request on close, refuses new connections, then closes the function", async () => {
    const port = new URL(server.url).port;
    const inFlight = new Promise<number>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path: "/slow", method: "POST", agent: false }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      req.end("x");
    });
    // The request has reached the function once it is recorded.
    while (!state.seen.some((req) => req.path === "/slow")) await new Promise((resolve) => setTimeout(resolve, 10));
    const closing = server.close();
    await assert.rejects(fetch(`${server.url}/hook`, { method: "POST" }), "new requests are refused while draining");
    assert.equal(state.closed, false, "close() waits for the in-flight request");
    release();
    assert.equal(await inFlight, 201);
    await closing;
    assert.equal(state.closed, true);
  });
});

describe("a request whose client gives up before the answer", async () => {
  const lines: Record<string, unknown>[] = [];
  const capture = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const state: { seen: FunctionRequest[]; slow: Promise<void>; closed: boolean; gone?: unknown } = { seen: [], slow: Promise.resolve(), closed: false };
  const server = await startFunction(echoHttp(state), { LOG_LEVEL: "info" }, { logDestination: capture });
  after(() => server.close());

  it("tells the function, logs the request as aborted and counts it so, not as the 200 the function returned", async () => {
    const metric = (name: string, labels: Record<string, string>) => scrape(`${server.url}/metrics`, name, labels);
    const answered200 = { route: "function", method: "POST", code: "200" };
    const okBefore = await metric("appmonitor_http_requests_total", answered200);
    const client = new AbortController();
    const answer = fetch(`${server.url}/until-gone`, { method: "POST", headers: { "x-request-id": "given-up-1" }, body: "x", signal: client.signal });
    while (!state.seen.some((req) => req.path === "/until-gone")) await new Promise((resolve) => setTimeout(resolve, 10));
    client.abort();
    await assert.rejects(answer);
    const line = await waitUntil("the access line", () => lines.find((l) => l.msg === "request" && l.requestId === "given-up-1"));
    assert.deepEqual([line.aborted, line.status, line.level, line.path], [true, null, "warn", "/until-gone"], JSON.stringify(line));
    assert.ok(state.gone instanceof RequestAbortedError, String(state.gone));
    assert.equal(await metric("appmonitor_http_requests_aborted_total", { route: "function", method: "POST" }), 1);
    assert.equal((await metric("appmonitor_http_requests_total", answered200)) - okBefore, 0, "not counted as answered");
    // An answer written in full is not aborted, whatever the client does afterwards.
    assert.equal((await fetch(`${server.url}/hook`, { method: "POST", body: "x" })).status, 201);
    assert.equal(await metric("appmonitor_http_requests_aborted_total", { route: "function", method: "POST" }), 1);
  });
});

describe("start-up configuration", () => {
  const cases: { env: Record<string, string>; variable: string }[] = [
    { env: { PORT: "eighty" }, variable: "PORT" },
    { env: { PORT: "70000" }, variable: "PORT" },
    { env: { LOG_LEVEL: "loud" }, variable: "LOG_LEVEL" },
  ];
  for (const { env, variable } of cases) {
    it(`refuses ${JSON.stringify(env)} naming ${variable}`, async () => {
      await assert.rejects(startFunction(echoHttp({ seen: [], slow: Promise.resolve(), closed: false }), env), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.variable, variable);
        assert.ok(error.message.startsWith(`${variable}: `));
        return true;
      });
    });
  }
});
