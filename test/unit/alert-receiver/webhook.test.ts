/** Reading a webhook request (functions/alert-receiver/webhook.ts): content type, JSON, version, schema. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readWebhook } from "../../../functions/alert-receiver/webhook.ts";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import type { FunctionRequest } from "../../../functions/lib/runtime/types.ts";

/** The example from Alertmanager's documentation (webhook_config), filled in. */
const documented = {
  version: "4",
  groupKey: '{}:{alertname="MemoryHigh"}',
  truncatedAlerts: 0,
  status: "firing",
  receiver: "alert-receiver",
  groupLabels: { alertname: "MemoryHigh" },
  commonLabels: { alertname: "MemoryHigh", namespace: "default" },
  commonAnnotations: {},
  externalURL: "http://alertmanager:9093",
  alerts: [
    {
      status: "firing",
      labels: { alertname: "MemoryHigh", namespace: "default", pod: "memhog-1" },
      annotations: { value: "80" },
      startsAt: "2024-05-01T10:00:00.123456789Z",
      endsAt: "0001-01-01T00:00:00Z",
      generatorURL: "http://prometheus:9090/graph",
      fingerprint: "a1b2c3d4e5f60718",
    },
  ],
};

function request(body: string, contentType: string | null = "application/json"): FunctionRequest {
  return {
    method: "POST",
    path: "/",
    query: new URLSearchParams(),
    headers: contentType === null ? {} : { "content-type": contentType },
    body: Buffer.from(body),
  };
}

function withAlert(change: Record<string, unknown>): string {
  return JSON.stringify({ ...documented, alerts: [{ ...documented.alerts[0], ...change }] });
}

describe("readWebhook", () => {
  it("accepts the documented payload, with or without a charset, and unknown extra fields", () => {
    assert.equal(readWebhook(request(JSON.stringify(documented))).alerts.length, 1);
    assert.equal(readWebhook(request(JSON.stringify(documented), "application/json; charset=utf-8")).receiver, "alert-receiver");
    assert.equal(readWebhook(request(JSON.stringify({ ...documented, futureField: 1 }))).version, "4");
  });

  const refused: { name: string; body: string; contentType?: string; status: number; message: RegExp; detail?: RegExp }[] = [
    { name: "no content type", body: "{}", contentType: "", status: 415, message: /application\/json, got none/ },
    { name: "text/plain", body: "{}", contentType: "text/plain", status: 415, message: /text\/plain/ },
    { name: "an empty body", body: "", status: 400, message: /empty body/ },
    { name: "malformed JSON", body: "{\"version\":", status: 400, message: /^malformed JSON/ },
    { name: "a JSON array", body: "[]", status: 400, message: /JSON object/ },
    { name: "JSON null", body: "null", status: 400, message: /JSON object/ },
    { name: "no version", body: JSON.stringify({ ...documented, version: undefined }), status: 400, message: /no version/ },
    { name: "version 3", body: JSON.stringify({ ...documented, version: "3" }), status: 400, message: /unsupported payload version "3"/ },
    { name: "a numeric version", body: JSON.stringify({ ...documented, version: 4 }), status: 400, message: /unsupported payload version 4/ },
    { name: "alerts not an array", body: JSON.stringify({ ...documented, alerts: {} }), status: 400, message: /schema/, detail: /\/alerts/ },
    { name: "an alert without fingerprint", body: withAlert({ fingerprint: undefined }), status: 400, message: /schema/, detail: /fingerprint/ },
    { name: "a numeric label value", body: withAlert({ labels: { pod: 1 } }), status: 400, message: /schema/, detail: /\/alerts\/0\/labels\/pod/ },
    { name: "a startsAt that is not RFC 3339", body: withAlert({ startsAt: "yesterday" }), status: 400, message: /schema/, detail: /startsAt/ },
    { name: "an unknown alert status", body: withAlert({ status: "pending" }), status: 400, message: /schema/, detail: /status/ },
    { name: "negative truncatedAlerts", body: JSON.stringify({ ...documented, truncatedAlerts: -1 }), status: 400, message: /schema/, detail: /truncatedAlerts/ },
  ];
  for (const testCase of refused) {
    it(`refuses ${testCase.name} with ${testCase.status}`, () => {
      assert.throws(
        () => readWebhook(request(testCase.body, testCase.contentType === "" ? null : testCase.contentType)),
        (error: unknown) => {
          assert.ok(error instanceof HttpError);
          assert.equal(error.status, testCase.status);
          assert.match(error.reason, testCase.message);
          if (testCase.detail !== undefined) assert.match(JSON.stringify(error.details), testCase.detail);
          return true;
        },
      );
    });
  }

  it("reports at most 20 schema errors", () => {
    const alerts = Array.from({ length: 50 }, () => ({ status: "nope" }));
    assert.throws(
      () => readWebhook(request(JSON.stringify({ ...documented, alerts }))),
      (error: unknown) => error instanceof HttpError && Array.isArray(error.details) && error.details.length === 20,
    );
  });
});
