// memory-scaler's small pure parts, as tables: the event's data, the status it keeps, the
// Prometheus check, the Events it writes, the Pod it dry-runs, whether
// an alert is an AppMonitor rule's and whether its AppMonitor governs the workload.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CloudEvent } from "cloudevents";
import { DEFAULT_KUBE_API_TIMEOUT_MS } from "../../../functions/lib/kubeconfig.ts";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import { podForAdmission } from "../../../functions/memory-scaler/scale/write.ts";
import { readConfig } from "../../../functions/memory-scaler/config.ts";
import { FIRING_TYPE, RESOLVED_TYPE, validateAlertEventData } from "../../../functions/lib/alert-event.ts";
import { readAlertEvent } from "../../../functions/memory-scaler/incoming-event.ts";
import { windowedKey } from "../../../functions/memory-scaler/events.ts";
import { buildEvent, MAX_NOTE_LENGTH, REPORTING_CONTROLLER } from "../../../functions/memory-scaler/kube/event-recorder.ts";
import { alertOrigin, governingAppMonitor, namedAppMonitor, type NamespaceAppMonitors, validAppMonitors } from "../../../functions/memory-scaler/scale/governing.ts";
import type { Workload } from "../../../functions/memory-scaler/model.ts";
import { formatScaleRecord, type RecordedScale } from "../../../functions/memory-scaler/model.ts";
import { recordState, type ScaleEntry, withScales } from "../../../functions/memory-scaler/status/recent-scales.ts";
import { repairOf } from "../../../functions/memory-scaler/status/repair.ts";
import { workingSetQuery } from "../../../functions/memory-scaler/kube/prometheus.ts";
import { checkThreshold } from "../../../functions/memory-scaler/scale/evidence.ts";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";

const validate = validateAlertEventData;

const goodData = {
  alertname: "AppMonitorMemoryHigh",
  status: "firing",
  namespace: "team-a",
  pod: "memhog-5d8f-x2",
  container: "memhog",
  appmonitor: "mymonitor",
  value: 81.25,
  fingerprint: "a1b2c3d4e5f60718",
  startsAt: "2025-06-01T11:59:00Z",
  endsAt: null,
  labels: { alertname: "AppMonitorMemoryHigh" },
  annotations: {},
  generatorURL: "",
};

function cloudEvent(over: Record<string, unknown> = {}): CloudEvent<unknown> {
  return new CloudEvent<unknown>({
    id: "e1",
    source: "/alertmanager",
    type: FIRING_TYPE,
    subject: "namespaces/team-a/pods/memhog-5d8f-x2",
    datacontenttype: "application/json",
    data: goodData,
    ...over,
  });
}

function httpStatusOf(thunk: () => unknown): { status: number; details: unknown } {
  try {
    thunk();
  } catch (error) {
    assert.ok(error instanceof HttpError, `expected HttpError, got ${String(error)}`);
    return { status: error.status, details: error.details };
  }
  assert.fail("did not throw");
}

describe("readAlertEvent", () => {
  it("accepts a firing event and returns its data", () => {
    const event = readAlertEvent(cloudEvent(), validate);
    assert.equal(event.kind, "firing");
    assert.equal(event.id, "e1");
    assert.equal(event.data.pod, "memhog-5d8f-x2");
  });

  it("accepts a resolved event", () => {
    const event = readAlertEvent(cloudEvent({ type: RESOLVED_TYPE, data: { ...goodData, status: "resolved", endsAt: "2025-06-01T12:05:00Z" } }), validate);
    assert.equal(event.kind, "resolved");
  });

  it("parses JSON data that arrived as text", () => {
    const event = readAlertEvent(cloudEvent({ data: JSON.stringify(goodData) }), validate);
    assert.equal(event.data.namespace, "team-a");
  });

  const refused: { name: string; over: Record<string, unknown>; path: string }[] = [
    { name: "another type", over: { type: "com.example.other" }, path: "/type" },
    { name: "no data", over: { data: undefined }, path: "/data" },
    { name: "data that is not JSON", over: { data: "{not json" }, path: "/data" },
    { name: "a missing required field", over: { data: { ...goodData, pod: undefined } }, path: "/data" },
    { name: "a namespace that is not a DNS label", over: { data: { ...goodData, namespace: "Team_A" } }, path: "/data/namespace" },
    { name: "an unknown field", over: { data: { ...goodData, extra: 1 } }, path: "/data" },
    { name: "a status contradicting the type", over: { data: { ...goodData, status: "resolved" } }, path: "/data/status" },
    { name: "a subject naming another Pod", over: { subject: "namespaces/team-a/pods/other" }, path: "/subject" },
  ];
  for (const c of refused) {
    it(`refuses ${c.name} with 400 and an error list`, () => {
      const { status, details } = httpStatusOf(() => readAlertEvent(cloudEvent(c.over), validate));
      assert.equal(status, 400);
      assert.ok(Array.isArray(details) && details.length > 0);
      assert.ok((details as { path: string }[]).some((d) => d.path.startsWith(c.path)), JSON.stringify(details));
    });
  }
});

describe("readConfig", () => {
  it("defaults", () => {
    const config = readConfig({});
    assert.equal(config.kubeconfig, undefined);
    assert.equal(config.prometheusUrl, undefined);
    assert.equal(config.scaleMaxAttempts, 5);
    assert.equal(config.recentScalesLimit, 10);
    assert.equal(config.kubeApiTimeoutMs, DEFAULT_KUBE_API_TIMEOUT_MS);
    assert.equal(config.prometheusTimeoutMs, 2_000);
  });
  it("reads KUBE_API_TIMEOUT_MS", () => {
    assert.equal(readConfig({ KUBE_API_TIMEOUT_MS: "2500" }).kubeApiTimeoutMs, 2500);
  });
  const bad: [string, Record<string, string>][] = [
    ["KUBECONFIG", { KUBECONFIG: "/nonexistent/kubeconfig" }],
    ["KUBE_API_TIMEOUT_MS", { KUBE_API_TIMEOUT_MS: "99" }],
    ["KUBE_API_TIMEOUT_MS", { KUBE_API_TIMEOUT_MS: "10s" }],
    ["PROMETHEUS_URL", { PROMETHEUS_URL: "ftp://prometheus" }],
    ["RECENT_SCALES_LIMIT", { RECENT_SCALES_LIMIT: "21" }],
    ["SCALE_MAX_ATTEMPTS", { SCALE_MAX_ATTEMPTS: "0" }],
  ];
  for (const [variable, env] of bad) {
    it(`names ${variable} when it is invalid`, () => {
      assert.throws(() => readConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === variable);
    });
  }
});

describe("withScales", () => {
  const change = { container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } };
  const entry = (time: string, name: string, dryRun = false): ScaleEntry => ({ time, workload: { kind: "Deployment", name }, changes: [change], dryRun });

  it("counts real scales, keeps the latest time and lists newest first", () => {
    const status = withScales({ conditions: [{ type: "RuleReady", status: "True", reason: "Synced", message: "", lastTransitionTime: "2025-01-01T00:00:00Z" }] }, [
      entry("2025-06-01T12:00:00Z", "a"),
      entry("2025-06-01T12:00:05Z", "b"),
    ], 10);
    assert.equal(status.scaleCount, 2);
    assert.equal(status.lastScaleTime, "2025-06-01T12:00:05Z");
    assert.deepEqual(status.recentScales?.map((r) => r.workload.name), ["b", "a"]);
    assert.equal(status.conditions?.[0]?.type, "RuleReady", "rule-sync's conditions are kept");
  });

  it("bounds recentScales", () => {
    const entries = Array.from({ length: 15 }, (_, i) => entry(new Date(Date.UTC(2025, 5, 1, 12, 0, i)).toISOString(), `w${i}`));
    const status = withScales({ scaleCount: 7 }, entries, 10);
    assert.equal(status.recentScales?.length, 10);
    assert.equal(status.recentScales?.[0]?.workload.name, "w14");
    assert.equal(status.scaleCount, 22);
  });

  it("counts one scale once, however often it is written; a repair goes where its time puts it", () => {
    const b = entry("2025-06-01T12:00:05Z", "b");
    const once = withScales(undefined, [entry("2025-06-01T12:00:00Z", "a"), entry("2025-06-01T12:00:09Z", "c")], 10);
    const repaired = withScales(once, [{ ...b, repair: true }], 10);
    const twice = withScales(repaired, [b, { ...b, repair: true }], 10);
    assert.equal(repaired.scaleCount, 3);
    assert.deepEqual(twice, repaired);
    assert.deepEqual(repaired.recentScales?.map((r) => r.workload.name), ["c", "b", "a"]);
    assert.equal(repaired.lastScaleTime, "2025-06-01T12:00:09Z");
  });

  it("a repair of a scale the bounded list may have dropped is not counted; a new scale always is", () => {
    const full = withScales(undefined, Array.from({ length: 3 }, (_, i) => entry(`2025-06-01T12:00:0${i + 5}Z`, `w${i}`)), 3);
    const old = entry("2025-06-01T12:00:01Z", "z");
    assert.deepEqual(withScales(full, [{ ...old, repair: true }], 3), full);
    const sameSecond = withScales(full, [entry("2025-06-01T12:00:05Z", "y")], 3);
    assert.equal(sameSecond.scaleCount, 4);
  });

  it("two scales of one workload in one second, by two events, count twice; each event's scale once", () => {
    const first: ScaleEntry = { ...entry("2025-06-01T12:00:05Z", "a"), event: "e1" };
    const second: ScaleEntry = { ...entry("2025-06-01T12:00:05Z", "a"), event: "e2" };
    const both = withScales(withScales(undefined, [first], 10), [second], 10);
    assert.equal(both.scaleCount, 2);
    assert.deepEqual(both.recentScales?.map((r) => r.event), ["e2", "e1"]);
    assert.deepEqual(withScales(both, [{ ...first, repair: true }, second], 10), both);
  });

  it("lists a dry run without counting it, and once", () => {
    const once = withScales(undefined, [entry("2025-06-01T12:00:00Z", "a", true)], 10);
    const twice = withScales(once, [entry("2025-06-01T12:01:00Z", "a", true)], 10);
    assert.equal(twice.scaleCount, 0);
    assert.equal(twice.lastScaleTime, undefined);
    assert.equal(twice.recentScales?.length, 1);
    assert.equal((twice.recentScales?.[0] as { dryRun?: boolean }).dryRun, true);
  });
});

describe("recordState", () => {
  const rec = (time: string, name: string, dryRun = false): RecordedScale => ({
    time,
    workload: { kind: "Deployment", name },
    container: "c",
    from: { limit: "1Gi" },
    to: { limit: "2Gi" },
    ...(dryRun ? { dryRun: true } : {}),
  });
  const scale = { time: "2025-06-01T12:00:05Z", workload: { kind: "Deployment", name: "a" } };
  const table: [string, RecordedScale[], string][] = [
    ["an empty list", [], "missing"],
    ["a list not full: nothing dropped", [rec("2025-06-01T12:00:09Z", "b")], "missing"],
    ["listed", [rec("2025-06-01T12:00:09Z", "b"), rec("2025-06-01T12:00:05Z", "a")], "recorded"],
    ["listed with another spelling of the time", [rec("2025-06-01T12:00:05.000Z", "a")], "recorded"],
    ["another workload at that time", [rec("2025-06-01T12:00:05Z", "b"), rec("2025-06-01T12:00:00Z", "c")], "missing"],
    ["only a dry run of it", [rec("2025-06-01T12:00:05Z", "a", true), rec("2025-06-01T12:00:00Z", "c")], "missing"],
    ["older entries listed: it cannot have been dropped", [rec("2025-06-01T12:00:09Z", "b"), rec("2025-06-01T12:00:01Z", "c")], "missing"],
    ["full, every entry as new or newer: it may have been dropped", [rec("2025-06-01T12:00:09Z", "b"), rec("2025-06-01T12:00:05Z", "c")], "unknown"],
  ];
  for (const [name, recent, want] of table) {
    it(`${name}: ${want}`, () => assert.equal(recordState(recent, scale, 2), want));
  }
  const byEvent: [string, RecordedScale[], string][] = [
    ["listed with its event id", [{ ...rec("2025-06-01T12:00:05Z", "a"), event: "e1" }], "recorded"],
    ["listed without an event id (an older version's entry)", [rec("2025-06-01T12:00:05Z", "a")], "recorded"],
    ["the same workload and second by another event", [{ ...rec("2025-06-01T12:00:05Z", "a"), event: "e0" }], "missing"],
  ];
  for (const [name, recent, want] of byEvent) {
    it(`event e1: ${name}: ${want}`, () => assert.equal(recordState(recent, { ...scale, event: "e1" }, 2), want));
  }
});

describe("repairOf", () => {
  const from = { request: "256Mi", limit: "384Mi" };
  const to = { request: "512Mi", limit: "768Mi" };
  const changes = [{ container: "memhog", from, to }];
  const time = "2025-06-01T12:00:00Z";
  const record = formatScaleRecord({ time, appmonitor: "m", event: "e1", multiplier: 2, changes });
  const workload = { kind: "Deployment", name: "web" };
  const listed = { time, workload, container: "memhog", from, to };
  type Case = [string, { lastScale?: string; record?: string; appmonitor?: string; status?: Record<string, unknown> }, "none" | "events" | "events+status"];
  const table: Case[] = [
    ["never scaled", {}, "none"],
    ["scaled before records were written", { lastScale: time }, "none"],
    ["an unreadable record", { lastScale: time, record: "{not json" }, "none"],
    ["a record without its changes", { lastScale: time, record: JSON.stringify({ time, appmonitor: "m", event: "e1", multiplier: 2, changes: [] }) }, "none"],
    ["a record of an older scale than the last-scale annotation", { lastScale: "2025-06-01T12:10:00Z", record }, "none"],
    ["another AppMonitor's scale", { lastScale: time, record, appmonitor: "other" }, "none"],
    ["status never written", { lastScale: time, record }, "events+status"],
    ["status without it, older entries listed", { lastScale: time, record, status: { scaleCount: 4, recentScales: [{ ...listed, time: "2025-06-01T11:00:00Z" }] } }, "events+status"],
    ["status records it", { lastScale: time, record, status: { scaleCount: 1, recentScales: [listed] } }, "events"],
    ["status records it with its event id", { lastScale: time, record, status: { scaleCount: 1, recentScales: [{ ...listed, event: "e1" }] } }, "events"],
    ["status records another event's scale of that second", { lastScale: time, record, status: { scaleCount: 1, recentScales: [{ ...listed, event: "e0" }] } }, "events+status"],
    ["status without it, only newer entries, not full", { lastScale: time, record, status: { scaleCount: 2, recentScales: [{ ...listed, workload: { kind: "Deployment", name: "x" }, time: "2025-06-01T12:05:00Z" }] } }, "events+status"],
    ["status may have dropped it: full, only newer entries", { lastScale: time, record, status: { scaleCount: 30, recentScales: [{ ...listed, workload: { kind: "Deployment", name: "x" }, time: "2025-06-01T12:05:00Z" }, { ...listed, workload: { kind: "Deployment", name: "y" }, time: "2025-06-01T12:04:00Z" }] } }, "events"],
  ];
  for (const [name, input, want] of table) {
    it(`${name}: ${want}`, () => {
      const repair = repairOf({ lastScale: input.lastScale, record: input.record, workload, appmonitor: input.appmonitor ?? "m", status: input.status, limit: 2 });
      const got = repair.action === "none" ? "none" : repair.entry === undefined ? "events" : "events+status";
      assert.equal(got, want);
      if (repair.action === "repair") {
        assert.deepEqual(repair.record, { time, appmonitor: "m", event: "e1", multiplier: 2, changes });
        if (repair.entry !== undefined) assert.deepEqual(repair.entry, { time, workload, event: "e1", changes, dryRun: false, repair: true });
      }
    });
  }
});

describe("Prometheus check", () => {
  it("quotes names into the query", () => {
    assert.equal(
      workingSetQuery("ns", "p-1", ["a", "b.c"]),
      'max by (container) (container_memory_working_set_bytes{namespace="ns",pod="p-1",container=~"a|b\\\\.c"})',
    );
  });

  const change = (container: string) => ({ container, from: { limit: "384Mi" }, to: { limit: "768Mi" } });
  const pod = [{ name: "hot", limit: "384Mi" }, { name: "cold", limit: "384Mi" }, { name: "unseen", limit: "384Mi" }];
  it("keeps containers at or above the threshold, skips the others with a reason", () => {
    const mi = 1024 * 1024;
    const { keep, skipped } = checkThreshold([change("hot"), change("cold"), change("unseen")], pod, new Map([["hot", 288 * mi], ["cold", 100 * mi]]), 75);
    assert.deepEqual(keep.map((c) => c.container), ["hot"], "288Mi of 384Mi is exactly 75%");
    assert.deepEqual(skipped.map((s) => [s.container, s.reason]), [["cold", "BelowThreshold"], ["unseen", "NotMeasured"]]);
    assert.equal(skipped[0]?.percent, 26.04);
  });
});

describe("buildEvent", () => {
  const regarding = { apiVersion: "apps/v1", kind: "Deployment", name: "memhog", namespace: "team-a", uid: "u1" };
  const now = new Date("2025-06-01T12:00:00.123Z");
  it("is an events.k8s.io/v1 Event with a deterministic name and a microsecond time", () => {
    const a = buildEvent({ type: "Normal", reason: "Scaled", note: "n", regarding, key: "e1" }, "i", now);
    const b = buildEvent({ type: "Normal", reason: "Scaled", note: "other", regarding, key: "e1" }, "i", now);
    const c = buildEvent({ type: "Normal", reason: "Scaled", note: "n", regarding, key: "e2" }, "i", now);
    assert.equal(a.metadata?.name, b.metadata?.name);
    assert.notEqual(a.metadata?.name, c.metadata?.name);
    assert.match(a.metadata?.name ?? "", /^memhog\.[0-9a-f]{16}$/);
    assert.equal(a.metadata?.namespace, "team-a");
    assert.equal(a.reportingController, REPORTING_CONTROLLER);
    assert.equal(JSON.parse(JSON.stringify({ t: a.eventTime })).t, "2025-06-01T12:00:00.123000Z");
  });
  it("cuts a long note to 1 kB", () => {
    const event = buildEvent({ type: "Warning", reason: "AdmissionRefused", note: "x".repeat(5000), regarding, key: "e1" }, "i", now);
    assert.equal(event.note?.length, MAX_NOTE_LENGTH);
  });
});

describe("windowedKey", () => {
  const at = (iso: string) => new Date(iso);
  const cases: { name: string; a: [string, string, number, string]; b: [string, string, number, string]; same: boolean }[] = [
    { name: "two alerts in one window, different event ids", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 300, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:04:59Z", 300, "e2"], same: true },
    { name: "the next window", a: ["Deployment/web/u1", "2025-06-01T12:04:59Z", 300, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:05:00Z", 300, "e1"], same: false },
    { name: "another workload in the same window", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 300, "e1"], b: ["Deployment/api/u2", "2025-06-01T12:00:01Z", 300, "e1"], same: false },
    { name: "a namesake created since (another uid)", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 300, "e1"], b: ["Deployment/web/u3", "2025-06-01T12:00:01Z", 300, "e1"], same: false },
    { name: "no cooldown: one per event id", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 0, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 0, "e2"], same: false },
    { name: "no cooldown, the same event re-delivered", a: ["Deployment/web/u1", "2025-06-01T12:00:01Z", 0, "e1"], b: ["Deployment/web/u1", "2025-06-01T12:09:00Z", 0, "e1"], same: true },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.same ? "one key" : "two keys"}`, () => {
      const key = ([subject, time, window, event]: [string, string, number, string]) => windowedKey(subject, at(time), window, event);
      assert.equal(key(c.a) === key(c.b), c.same, `${key(c.a)} vs ${key(c.b)}`);
    });
  }
});

describe("podForAdmission", () => {
  it("is the template as a Pod with the new memory of its containers and native sidecars, nothing else changed", () => {
    const workload: Workload = {
      kind: "Deployment",
      name: "web",
      namespace: "ns",
      object: {
        metadata: { name: "web" },
        spec: {
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              containers: [
                { name: "app", image: "i", resources: { requests: { memory: "256Mi", cpu: "100m" }, limits: { memory: "384Mi" } } },
                { name: "side", image: "j", resources: { limits: { memory: "64Mi" } } },
              ],
              initContainers: [
                { name: "migrate", image: "m", resources: { limits: { memory: "1Gi" } } },
                { name: "proxy", image: "p", restartPolicy: "Always", resources: { requests: { memory: "32Mi" }, limits: { memory: "64Mi" } } },
              ],
            },
          },
        },
      },
    };
    const pod = podForAdmission(workload, [
      { container: "app", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } },
      { container: "proxy", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } },
    ]);
    assert.equal(pod.metadata?.generateName, "web-");
    assert.deepEqual(pod.metadata?.labels, { app: "web" });
    assert.deepEqual(pod.spec?.containers[0]?.resources, { requests: { memory: "512Mi", cpu: "100m" }, limits: { memory: "768Mi" } });
    assert.deepEqual(pod.spec?.containers[1]?.resources, { limits: { memory: "64Mi" } });
    assert.deepEqual(pod.spec?.initContainers?.map((c) => [c.name, c.resources]), [
      ["migrate", { limits: { memory: "1Gi" } }],
      ["proxy", { requests: { memory: "64Mi" }, limits: { memory: "128Mi" } }],
    ], "a native sidecar gets its change, an init container keeps its memory");
    assert.equal(workload.object.spec.template.spec?.containers[0]?.resources?.limits?.memory, "384Mi", "the template is not modified");
  });
});

describe("alertOrigin", () => {
  const ours = { alertname: "AppMonitorMemoryHigh", appmonitor: "mymonitor", namespace: "team-a", pod: "memhog-5d8f-x2", labels: { alertname: "AppMonitorMemoryHigh", appmonitor: "mymonitor" } };
  // kube-state-metrics scraped without honor_labels: its own namespace/pod win, the Pod's move to exported_*.
  const ksm = {
    alertname: "KubePodNotReady",
    namespace: "monitoring",
    pod: "kube-state-metrics-6f7d9c4b8-q2x7l",
    labels: { alertname: "KubePodNotReady", namespace: "monitoring", pod: "kube-state-metrics-6f7d9c4b8-q2x7l", exported_namespace: "team-a", exported_pod: "memhog-5d8f-x2" },
  };
  const cases: { name: string; data: Parameters<typeof alertOrigin>[0]; want: string; message?: RegExp }[] = [
    { name: "a generated rule's alert names its AppMonitor", data: ours, want: "mymonitor threshold" },
    { name: "with trigger threshold, as alert-receiver sends it", data: { ...ours, trigger: "threshold" }, want: "mymonitor threshold" },
    { name: "the OOM-kill alert", data: { ...ours, alertname: "AppMonitorOOMKilled", trigger: "oomKilled" }, want: "mymonitor oomKilled" },
    { name: "the OOM-kill alert from an older alert-receiver (no trigger)", data: { ...ours, alertname: "AppMonitorOOMKilled" }, want: "mymonitor oomKilled" },
    {
      name: "trigger oomKilled on the threshold alert",
      data: { ...ours, trigger: "oomKilled" },
      want: "NotAppMonitorAlert",
      message: /trigger oomKilled contradicts its alertname AppMonitorMemoryHigh \(trigger threshold\)/,
    },
    { name: "trigger threshold on the OOM-kill alert", data: { ...ours, alertname: "AppMonitorOOMKilled", trigger: "threshold" }, want: "NotAppMonitorAlert", message: /contradicts/ },
    { name: "no appmonitor label", data: { ...ours, appmonitor: undefined, labels: { alertname: "AppMonitorMemoryHigh" } }, want: "NotAppMonitorAlert", message: /has no appmonitor label/ },
    { name: "an empty appmonitor label", data: { ...ours, appmonitor: "" }, want: "NotAppMonitorAlert", message: /has no appmonitor label/ },
    { name: "another alertname, even with an appmonitor label", data: { ...ours, alertname: "KubeContainerOOMKilled" }, want: "NotAppMonitorAlert", message: /alertname is "KubeContainerOOMKilled", not AppMonitorMemoryHigh or AppMonitorOOMKilled/ },
    { name: "no alertname", data: { ...ours, alertname: "" }, want: "NotAppMonitorAlert", message: /alertname is ""/ },
    {
      name: "kube-state-metrics scraped without honor_labels",
      data: ksm,
      want: "NotAppMonitorAlert",
      message: /no appmonitor label; .*monitoring\/kube-state-metrics-6f7d9c4b8-q2x7l.*exported_namespace=team-a, exported_pod=memhog-5d8f-x2.*honor_labels: true/,
    },
    { name: "exported_pod on an otherwise well-formed alert", data: { ...ours, labels: { ...ours.labels, exported_pod: "x" } }, want: "NotAppMonitorAlert", message: /exported_pod=x/ },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.want}`, () => {
      const origin = alertOrigin(c.data);
      assert.equal(origin.result === "appmonitor" ? `${origin.name} ${origin.trigger}` : origin.reason, c.want);
      if (c.message !== undefined) assert.match(origin.result === "none" ? origin.message : "", c.message);
    });
  }
});

describe("namedAppMonitor and governingAppMonitor", () => {
  const spec = { memThresholdPercent: 75, memMultiplier: 2 };
  const annotated = { metadata: { labels: { app: "x" }, annotations: { "app-monitor.kubedemo.com/monitor": "true" } } };
  const labelled = { metadata: { labels: { app: "x" } } };
  const workload = (template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } }) => ({ kind: "Deployment", name: "web", template });
  const am = (name: string, amSpec: unknown) => ({ metadata: { name, namespace: "ns" }, spec: amSpec });
  const selecting = (name: string, app: string) => am(name, { ...spec, selector: { matchLabels: { app } } });
  const monitors = (...items: unknown[]) => validAppMonitors("ns", items);

  const namedCases: { name: string; list: NamespaceAppMonitors; named: string; want: string; message?: RegExp }[] = [
    { name: "the named one", list: monitors(am("a", spec), am("b", spec)), named: "b", want: "b" },
    { name: "none in the namespace", list: monitors(), named: "a", want: "NoAppMonitor", message: /^no AppMonitor in namespace ns$/ },
    { name: "only invalid ones, counted", list: monitors(am("bad", { memThresholdPercent: 0, memMultiplier: 2 })), named: "bad", want: "NoAppMonitor", message: /no AppMonitor in namespace ns \(1 invalid\)/ },
    { name: "the named one is gone, others exist", list: monitors(am("a", spec)), named: "deleted", want: "NoAppMonitor", message: /AppMonitor deleted, whose rule raised the alert, does not exist in namespace ns/ },
    { name: "the named one is invalid", list: monitors(am("a", spec), am("bad", { memThresholdPercent: 0, memMultiplier: 2 })), named: "bad", want: "NoAppMonitor", message: /AppMonitor bad, .*has an invalid spec/ },
  ];
  for (const c of namedCases) {
    it(`namedAppMonitor: ${c.name} → ${c.want}`, () => {
      const result = namedAppMonitor(c.list, c.named);
      assert.equal(result.result === "found" ? result.appMonitor.metadata.name : result.reason, c.want);
      if (c.message !== undefined) assert.match(result.result === "none" ? result.message : "", c.message);
    });
  }
  it("namedAppMonitor applies the spec defaults", () => {
    const result = namedAppMonitor(monitors(am("a", spec)), "a");
    assert.equal(result.result === "found" && result.appMonitor.spec.cooldownSeconds, 300);
  });

  type Template = Parameters<typeof workload>[0];
  const governingCases: { name: string; template: Template; list: NamespaceAppMonitors; named: string; want: string; message?: RegExp }[] = [
    { name: "an annotated template: every AppMonitor of the namespace covers it, the named one governs", template: annotated, list: monitors(am("a", spec), am("b", spec)), named: "b", want: "b" },
    { name: "a selector matching the template's labels", template: labelled, list: monitors(selecting("s", "x")), named: "s", want: "s" },
    { name: "an unannotated, unselected template", template: labelled, list: monitors(am("a", spec)), named: "a", want: "NotCovered", message: /Deployment web: its Pod template lacks the annotation/ },
    { name: "a template without metadata", template: {}, list: monitors(am("a", spec), selecting("s", "x")), named: "s", want: "NotCovered" },
    {
      name: "the named AppMonitor selects other Pods, another selects these",
      template: labelled,
      list: monitors(selecting("db-mon", "db"), selecting("web-mon", "x"), selecting("also", "x")),
      named: "db-mon",
      want: "AppMonitorNotGoverning",
      message: /AppMonitor db-mon, whose rule raised the alert, does not cover Deployment web .*governed by AppMonitor also, AppMonitor web-mon/,
    },
    { name: "…and the one that selects them governs its own alerts", template: labelled, list: monitors(selecting("db-mon", "db"), selecting("web-mon", "x")), named: "web-mon", want: "web-mon" },
  ];
  for (const c of governingCases) {
    it(`governingAppMonitor: ${c.name} → ${c.want}`, () => {
      const named = namedAppMonitor(c.list, c.named);
      assert.equal(named.result, "found");
      if (named.result !== "found") return;
      const result = governingAppMonitor(workload(c.template), c.list, named.appMonitor);
      assert.equal(result.result === "governed" ? result.appMonitor.metadata.name : result.reason, c.want);
      if (c.message !== undefined) assert.match(result.result === "none" ? result.message : "", c.message);
    });
  }
});
