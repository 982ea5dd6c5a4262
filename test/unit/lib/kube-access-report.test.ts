// functions/lib/kube-access-report.ts: the Warning Event that names a permission the function's
// RBAC lacks (a table), and the reporter: every refusal counted, each permission logged and
// recorded once per window, credential reloads counted.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { Registry } from "prom-client";
import {
  createKubeAccessReporter,
  PERMISSION_DENIED_REASON,
  permissionDeniedEvent,
  REPORT_INTERVAL_MS,
  serviceAccountOf,
} from "../../../functions/lib/kube-access-report.ts";
import type { DeniedPermission } from "../../../functions/lib/kube-api-errors.ts";
import { apiError } from "../../support/rule-sync-fakes.ts";

const silent = pino({ level: "silent" });
const patchDeployments: DeniedPermission = { user: "system:serviceaccount:appmonitor:memory-scaler", verb: "patch", resource: "deployments", group: "apps", namespace: "team-a" };
const listAtCluster: DeniedPermission = { user: "system:serviceaccount:appmonitor:rule-sync", verb: "list", resource: "appmonitors", group: "kubedemo.com", namespace: undefined };

describe("permissionDeniedEvent", () => {
  const now = new Date("2026-05-01T12:00:00.123Z");
  const table: { name: string; permission: DeniedPermission; fn: string; account?: { namespace: string; name: string }; note?: RegExp }[] = [
    { name: "a namespaced permission", permission: patchDeployments, fn: "memory-scaler", account: { namespace: "appmonitor", name: "memory-scaler" }, note: /^memory-scaler may not patch deployments\.apps in namespace team-a: .*knative\/rbac\/memory-scaler\.yaml/ },
    { name: "a cluster-scoped one", permission: listAtCluster, fn: "rule-sync", account: { namespace: "appmonitor", name: "rule-sync" }, note: /may not list appmonitors\.kubedemo\.com at the cluster scope/ },
    { name: "a user that is no ServiceAccount", permission: { ...patchDeployments, user: "alice" }, fn: "memory-scaler" },
  ];
  for (const row of table) {
    it(row.name, () => {
      const event = permissionDeniedEvent(row.permission, row.fn, `${row.fn}-pod-1`, now);
      if (row.account === undefined) {
        assert.equal(event, undefined);
        return;
      }
      assert.ok(event);
      assert.equal(event.type, "Warning");
      assert.equal(event.reason, PERMISSION_DENIED_REASON);
      assert.deepEqual(event.regarding, { apiVersion: "v1", kind: "ServiceAccount", ...row.account });
      assert.equal(event.metadata?.namespace, row.account.namespace, "in the ServiceAccount's namespace");
      assert.match(event.metadata?.name ?? "", new RegExp(`^${row.account.name}\\.[0-9a-f]{16}$`));
      assert.equal(event.reportingController, `kubedemo.com/${row.fn}`);
      assert.match(event.note ?? "", row.note ?? /./);
      assert.ok((event.note ?? "").length <= 1024);
    });
  }

  it("is named after the permission only: the same permission, the same Event; another, another", () => {
    const name = (p: DeniedPermission, at: string): string | undefined => permissionDeniedEvent(p, "memory-scaler", "i", new Date(at))?.metadata?.name;
    assert.equal(name(patchDeployments, "2026-01-01T00:00:00Z"), name(patchDeployments, "2026-01-01T00:05:00Z"));
    assert.notEqual(name(patchDeployments, "2026-01-01T00:00:00Z"), name({ ...patchDeployments, namespace: "team-b" }, "2026-01-01T00:00:00Z"));
  });

  const accounts: [string, { namespace: string; name: string } | undefined][] = [
    ["system:serviceaccount:appmonitor:rule-sync", { namespace: "appmonitor", name: "rule-sync" }],
    ["system:serviceaccount:appmonitor", undefined],
    ["system:node:n1", undefined],
    ["alice", undefined],
  ];
  for (const [user, expected] of accounts) it(`serviceAccountOf(${JSON.stringify(user)})`, () => assert.deepEqual(serviceAccountOf(user), expected));
});

describe("createKubeAccessReporter", () => {
  async function value(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
    const found = (await registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
    return found?.value ?? 0;
  }

  function setup(createEvent: (namespace: string, event: k8s.EventsV1Event) => Promise<void>) {
    const registry = new Registry();
    let clock = Date.parse("2026-05-01T12:00:00Z");
    const reporter = createKubeAccessReporter({ functionName: "memory-scaler", registry, log: silent, createEvent, now: () => new Date(clock), reportingInstance: "memory-scaler-1" });
    return { registry, reporter, advance: (ms: number) => (clock += ms) };
  }

  it("counts every refusal and writes one Event per permission per window", async () => {
    const written: [string, k8s.EventsV1Event][] = [];
    const { registry, reporter, advance } = setup(async (namespace, event) => void written.push([namespace, event]));
    for (let i = 0; i < 5; i++) reporter.forbidden(patchDeployments);
    reporter.forbidden({ ...patchDeployments, namespace: "team-b" });
    assert.equal(await value(registry, "appmonitor_kubernetes_permission_denied_total", { verb: "patch", group: "apps", resource: "deployments" }), 6);
    assert.deepEqual(written.map(([namespace, e]) => [namespace, e.regarding?.name]), [["appmonitor", "memory-scaler"], ["appmonitor", "memory-scaler"]]);
    advance(REPORT_INTERVAL_MS);
    reporter.forbidden(patchDeployments);
    assert.equal(written.length, 3, "again after the window");
  });

  it("never throws when the Event cannot be written (no grant for Events, or one already there)", async () => {
    const failures = [apiError(409, { reason: "AlreadyExists", message: "exists" }), apiError(403, { reason: "Forbidden", message: "no" }), new Error("socket hang up")];
    for (const failure of failures) {
      const { reporter } = setup(async () => Promise.reject(failure));
      assert.doesNotThrow(() => reporter.forbidden(listAtCluster));
    }
    await new Promise((resolve) => setImmediate(resolve));
  });

  it("writes no Event for a user that is no ServiceAccount, but counts it", async () => {
    let writes = 0;
    const { registry, reporter } = setup(async () => void (writes += 1));
    reporter.forbidden({ ...listAtCluster, user: "alice" });
    assert.equal(writes, 0);
    assert.equal(await value(registry, "appmonitor_kubernetes_permission_denied_total", { verb: "list", group: "kubedemo.com", resource: "appmonitors" }), 1);
  });

  it("counts credential reloads by result", async () => {
    const { registry, reporter } = setup(async () => undefined);
    reporter.credentialsReloaded();
    reporter.credentialsReloaded();
    reporter.credentialsReloaded(new Error("no such file"));
    assert.equal(await value(registry, "appmonitor_kubernetes_credential_reloads_total", { result: "ok" }), 2);
    assert.equal(await value(registry, "appmonitor_kubernetes_credential_reloads_total", { result: "failed" }), 1);
  });
});
