/**
 * What the functions answer a Knative delivery, held against Knative's retry table
 * (test/support/knative-delivery.ts: 2xx delivered; 5xx, 404, 408, 409, 429 retried; any other
 * answer to the dead-letter sink at once). One row per failure class, each saying whether a retry
 * can fix it: a transient failure must be retried (else the event is dropped into the
 * dead-letter sink while a retry would have handled it), a permanent one must not be (else the
 * same refusal is repeated `retry` times over minutes before it lands there anyway). The status
 * of each row is produced by the functions' own code, not restated.
 */
import { manifestFile } from "../../harness/lib/manifests.ts";
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CloudEvent } from "cloudevents";
import { pino } from "pino";
import { Registry } from "prom-client";
import { FIRING_TYPE, validateAlertEventData } from "../../../functions/lib/alert-event.ts";
import { STATUS_OF_CLASS, type ApiErrorClass } from "../../../functions/lib/kube-api-errors.ts";
import { acknowledge, BATCH_MEDIA_TYPE, decodeCloudEvent } from "../../../functions/lib/runtime/cloudevent.ts";
import { HttpError, toHttpError } from "../../../functions/lib/runtime/errors.ts";
import { invoke } from "../../../functions/lib/runtime/invoke.ts";
import type { FunctionResponse } from "../../../functions/lib/runtime/types.ts";
import { readAlertEvent } from "../../../functions/memory-scaler/incoming-event.ts";
import { createPrometheusVerifier } from "../../../functions/memory-scaler/kube/prometheus.ts";
import { readConfig as readRuleSyncConfig } from "../../../functions/rule-sync/config.ts";
import { RESYNC_EVENT_TYPE } from "../../../functions/rule-sync/incoming-event.ts";
import { createHandler as createRuleSyncHandler } from "../../../functions/rule-sync/handler.ts";
import { createMetrics as createRuleSyncMetrics } from "../../../functions/rule-sync/metrics.ts";
import { backoffSeconds, durationSeconds, knativeVerdict, type DeliverySpec, type KnativeVerdict } from "../../support/knative-delivery.ts";
import { alertEvent } from "../../support/memory-scaler.ts";
import { alertData } from "../../support/memory-scaler-fakes.ts";
import { apiError as ruleApiError, FakeCluster as RuleCluster } from "../../support/rule-sync-fakes.ts";

const silent = pino({ level: "silent" });

/** Transient: a retry may succeed, so Knative must retry it. Permanent: the same event fails the same way every time. */
type Nature = "transient" | "permanent";

/** What Knative must do with a failure of each nature. */
const EXPECTED: Readonly<Record<Nature, KnativeVerdict>> = { transient: "retried", permanent: "dead-lettered" };

/** Every class of failed Kubernetes API call (functions/lib/kube-api-errors.ts), the function's answer being `STATUS_OF_CLASS`. */
const API_FAILURES: Readonly<Record<ApiErrorClass, { nature: Nature; why: string }>> = {
  NotFound: { nature: "transient", why: "an object deleted under a write: a retry reads again and decides `gone`" },
  NotServed: { nature: "transient", why: "a CRD not installed yet (install order) or gone for a while" },
  Conflict: { nature: "transient", why: "another writer won the compare-and-swap: a retry reads again" },
  PatchConflict: { nature: "transient", why: "the same lost compare-and-swap, as a JSON Patch test reports it" },
  Refused: { nature: "permanent", why: "validation or admission refused the object this event leads to: the same event leads to it again" },
  Forbidden: { nature: "transient", why: "the function's RBAC lacks a grant: an operator grants it, not the event's fault" },
  Unauthorized: { nature: "transient", why: "a token being rotated: the kubelet writes a fresh one" },
  TimedOut: { nature: "transient", why: "no complete answer within KUBE_API_TIMEOUT_MS: a silent connection, or an API server too slow" },
  Unavailable: { nature: "transient", why: "the API server down, overloaded or timed out" },
  Throttled: { nature: "transient", why: "API Priority and Fairness said wait" },
  Unexpected: { nature: "transient", why: "our request is malformed (a bug): retried like any 500, then dead-lettered for a replay once fixed" },
};

/**
 * The status the runtime's server answers for what `run` returns or throws: a response's status,
 * an HttpError's, express's body-parser errors' 4xx, anything else 500 (server.ts, `fail`).
 */
async function answered(run: () => unknown): Promise<number> {
  try {
    const response = (await run()) as FunctionResponse | undefined;
    return response?.status ?? 204;
  } catch (error) {
    return toHttpError(error).status;
  }
}

const binary = (headers: Record<string, string>) => ({ "ce-specversion": "1.0", "ce-id": "e1", "ce-source": "/s", "ce-type": FIRING_TYPE, "content-type": "application/json", ...headers });
const validate = validateAlertEventData;
const noHandler = { kind: "cloudevent" as const, instance: { handle: async () => ({ outcome: "handled" }) } };
/** A Prometheus client whose every query fails the way `get` says. */
const prometheus = (get: () => Promise<unknown>) => createPrometheusVerifier(new URL("http://prometheus.test:9090"), 1000, { get } as never);
function ruleSync(cluster = new RuleCluster()) {
  return createRuleSyncHandler({ cluster, config: readRuleSyncConfig({}), metrics: createRuleSyncMetrics(new Registry()), log: silent, now: () => new Date("2026-05-01T00:00:00Z") });
}

/** The functions' answers that are not a failed API call: who answers, what it met, how it is produced. */
const ANSWERS: { who: string; what: string; nature: Nature | "handled"; status: () => Promise<number> }[] = [
  { who: "both", what: "an event handled, whatever the outcome (scaled, skipped, ignored, a rule written, resynced)", nature: "handled", status: () => answered(() => acknowledge({ outcome: "skipped", reason: "Cooldown" })) },
  { who: "both", what: "not a CloudEvent 1.0 (an attribute missing)", nature: "permanent", status: () => answered(() => decodeCloudEvent({ ...binary({}), "ce-type": undefined }, Buffer.from("{}"))) },
  { who: "both", what: "a batch of CloudEvents", nature: "permanent", status: () => answered(() => decodeCloudEvent({ "content-type": BATCH_MEDIA_TYPE }, Buffer.from("[]"))) },
  { who: "both", what: "a body over 1 MiB", nature: "permanent", status: () => answered(() => { throw Object.assign(new Error("request entity too large"), { status: 413, expose: true }); }) },
  { who: "both", what: "an event POSTed to a path other than /", nature: "permanent", status: () => answered(() => invoke(noHandler, { log: silent, requestId: "r", signal: new AbortController().signal }, { method: "POST", path: "/typo", query: new URLSearchParams(), headers: binary({}), body: Buffer.from("{}") })) },
  { who: "both", what: "a bug (anything unexpected thrown)", nature: "transient", status: () => answered(() => { throw new TypeError("x is undefined"); }) },
  { who: "memory-scaler", what: "another event type", nature: "permanent", status: () => answered(() => readAlertEvent(alertEvent({ namespace: "ns", pod: "p" }).cloneWith({ type: "com.example.other" }), validate)) },
  { who: "memory-scaler", what: "data not matching the alert schema", nature: "permanent", status: () => answered(() => readAlertEvent(new CloudEvent({ type: FIRING_TYPE, source: "/s", data: { not: "an alert" } }), validate)) },
  { who: "memory-scaler", what: "data whose status contradicts the type", nature: "permanent", status: () => answered(() => readAlertEvent(new CloudEvent({ type: FIRING_TYPE, source: "/s", data: { ...alertData(), status: "resolved" } }), validate)) },
  { who: "memory-scaler", what: "Prometheus unreachable", nature: "transient", status: () => answered(() => prometheus(async () => { throw new Error("connect ECONNREFUSED"); }).workingSets("ns", "p", ["c"])) },
  { who: "memory-scaler", what: "Prometheus answering 503 or 429", nature: "transient", status: () => answered(() => prometheus(async () => ({ status: 503, data: "" })).workingSets("ns", "p", ["c"])) },
  { who: "memory-scaler", what: "Prometheus refusing our query (4xx: a bug of ours)", nature: "transient", status: () => answered(() => prometheus(async () => ({ status: 400, data: "" })).workingSets("ns", "p", ["c"])) },
  { who: "rule-sync", what: "an event type it does not handle", nature: "permanent", status: () => answered(() => ruleSync()({ log: silent, requestId: "r", signal: new AbortController().signal }, { type: "com.example.other" })) },
  { who: "rule-sync", what: "data that is not an AppMonitor", nature: "permanent", status: () => answered(() => ruleSync()({ log: silent, requestId: "r", signal: new AbortController().signal }, { type: "dev.knative.apiserver.resource.add", data: { kind: "Pod" } })) },
  {
    who: "rule-sync", what: "a resync that left an AppMonitor unreconciled", nature: "transient",
    status: () => answered(() => {
      const cluster = new RuleCluster();
      cluster.addMonitor("a", { memThresholdPercent: 75, memMultiplier: 2 });
      cluster.fail.applyRule = () => ruleApiError(503, { reason: "ServiceUnavailable", message: "etcd down" });
      return ruleSync(cluster)({ log: silent, requestId: "r", signal: new AbortController().signal }, { type: RESYNC_EVENT_TYPE });
    }),
  },
];

describe("every answer of the functions against Knative's retry table", () => {
  for (const [kind, { nature, why }] of Object.entries(API_FAILURES) as [ApiErrorClass, (typeof API_FAILURES)[ApiErrorClass]][]) {
    const status = STATUS_OF_CLASS[kind];
    it(`an API call failed with ${kind} (${why}): ${status}, ${EXPECTED[nature]}`, () => {
      assert.equal(knativeVerdict(status), EXPECTED[nature]);
      assert.equal(new HttpError(status, kind).transient, nature === "transient", "the runtime's own idea of transient agrees");
    });
  }

  for (const row of ANSWERS) {
    it(`${row.who}: ${row.what}: ${row.nature === "handled" ? "delivered" : EXPECTED[row.nature]}`, async () => {
      const status = await row.status();
      const expected = row.nature === "handled" ? "delivered" : EXPECTED[row.nature];
      assert.equal(knativeVerdict(status), expected, `answered ${status}`);
      if (row.nature !== "handled") assert.equal(new HttpError(status, row.what).transient, row.nature === "transient", `answered ${status}`);
    });
  }
});

describe("Knative's verdicts", () => {
  const table: [number, KnativeVerdict][] = [
    [200, "delivered"], [202, "delivered"], [204, "delivered"],
    [301, "dead-lettered"], [400, "dead-lettered"], [401, "dead-lettered"], [403, "dead-lettered"], [405, "dead-lettered"], [410, "dead-lettered"], [413, "dead-lettered"], [415, "dead-lettered"], [422, "dead-lettered"],
    [404, "retried"], [408, "retried"], [409, "retried"], [429, "retried"], [500, "retried"], [502, "retried"], [503, "retried"], [504, "retried"],
  ];
  for (const [status, verdict] of table) it(`${status} → ${verdict}`, () => assert.equal(knativeVerdict(status), verdict));
});

describe("the shipped delivery spec", () => {
  it("the Broker and every Trigger: 8 retries, exponential from 1 s: waits of 1, 2, 4 … 128 s, 255 s in all", async () => {
    const specs: { where: string; delivery: DeliverySpec }[] = [];
    for (const file of ["broker.yaml", "triggers.yaml"]) {
      for (const manifest of await manifestFile(`knative/eventing/${file}`)) {
        const object = manifest as unknown as { kind: string; metadata: { name: string }; spec: { delivery: DeliverySpec } };
        specs.push({ where: `${object.kind} ${object.metadata.name}`, delivery: object.spec.delivery });
      }
    }
    assert.equal(specs.length, 8, "the Broker and its seven Triggers");
    for (const { where, delivery } of specs) {
      assert.deepEqual(backoffSeconds(delivery), [1, 2, 4, 8, 16, 32, 64, 128], where);
    }
  });

  it("reads ISO 8601 durations and both policies as Knative does", () => {
    assert.equal(durationSeconds("PT1S"), 1);
    assert.equal(durationSeconds("PT0.5S"), 0.5);
    assert.equal(durationSeconds("PT1M30S"), 90);
    assert.throws(() => durationSeconds("P1D"));
    assert.deepEqual(backoffSeconds({ retry: 3, backoffPolicy: "linear", backoffDelay: "PT2S" }), [0, 2, 4], "go-retryablehttp numbers the waits from 0");
    assert.deepEqual(backoffSeconds({ retry: 2 }), [0, 0], "without a policy and delay, retries at once");
  });
});
