// Whether an alert is an AppMonitor rule's, and whether its AppMonitor governs the target
// (functions/memory-scaler/scale/decide/governing.ts), how an AppMonitor covers a workload and which of
// several acts, as tables.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  alertOrigin,
  type AppMonitorLike,
  byPrecedence,
  type Contender,
  type Coverage,
  coverage,
  governingAppMonitor,
  namedAppMonitor,
  type NamespaceAppMonitors,
  type PodTemplateLike,
  validAppMonitors,
} from "../../../../../functions/memory-scaler/scale/decide/governing.ts";

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
    { name: "the trend alert", data: { ...ours, alertname: "AppMonitorMemoryTrend", trigger: "trend" }, want: "mymonitor trend" },
    { name: "the heap-threshold alert", data: { ...ours, alertname: "AppMonitorHeapThreshold", trigger: "heapThreshold" }, want: "mymonitor heapThreshold" },
    {
      name: "a heap-threshold alert whose trigger says threshold",
      data: { ...ours, alertname: "AppMonitorHeapThreshold", trigger: "threshold" },
      want: "NotAppMonitorAlert",
      message: /trigger threshold contradicts its alertname AppMonitorHeapThreshold \(trigger heapThreshold\)/,
    },
    {
      name: "the trend alert through an alert-receiver that does not know it (trigger threshold)",
      data: { ...ours, alertname: "AppMonitorMemoryTrend", trigger: "threshold" },
      want: "NotAppMonitorAlert",
      message: /trigger threshold contradicts its alertname AppMonitorMemoryTrend \(trigger trend\)/,
    },
    { name: "trigger trend on the threshold alert", data: { ...ours, trigger: "trend" }, want: "NotAppMonitorAlert", message: /contradicts/ },
    {
      name: "trigger oomKilled on the threshold alert",
      data: { ...ours, trigger: "oomKilled" },
      want: "NotAppMonitorAlert",
      message: /trigger oomKilled contradicts its alertname AppMonitorMemoryHigh \(trigger threshold\)/,
    },
    { name: "trigger threshold on the OOM-kill alert", data: { ...ours, alertname: "AppMonitorOOMKilled", trigger: "threshold" }, want: "NotAppMonitorAlert", message: /contradicts/ },
    { name: "no appmonitor label", data: { ...ours, appmonitor: undefined, labels: { alertname: "AppMonitorMemoryHigh" } }, want: "NotAppMonitorAlert", message: /has no appmonitor label/ },
    { name: "an empty appmonitor label", data: { ...ours, appmonitor: "" }, want: "NotAppMonitorAlert", message: /has no appmonitor label/ },
    { name: "another alertname, even with an appmonitor label", data: { ...ours, alertname: "KubeContainerOOMKilled" }, want: "NotAppMonitorAlert", message: /alertname is "KubeContainerOOMKilled", not AppMonitorMemoryHigh or AppMonitorOOMKilled or AppMonitorMemoryTrend/ },
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
  const ref = (name: string) => ({ apiVersion: "apps/v1", kind: "Deployment", name });
  const at = (item: { metadata: object; spec: unknown }, creationTimestamp: string) => ({ ...item, metadata: { ...item.metadata, creationTimestamp } });

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
    { name: "an annotated template: every AppMonitor of the namespace covers it, the first by name governs", template: annotated, list: monitors(am("a", spec), am("b", spec)), named: "a", want: "a" },
    {
      name: "…and the other's alert is a conflict",
      template: annotated,
      list: monitors(am("a", spec), am("b", spec)),
      named: "b",
      want: "AppMonitorConflict",
      message: /AppMonitor b, whose rule raised the alert, covers Deployment web \(annotation\), and so does AppMonitor a \(annotation\), which takes precedence/,
    },
    { name: "a selector matching the template's labels", template: labelled, list: monitors(selecting("s", "x")), named: "s", want: "s" },
    { name: "an unannotated, unselected template", template: labelled, list: monitors(am("a", spec)), named: "a", want: "NotCovered", message: /Deployment web: its Pod template lacks the annotation/ },
    { name: "a template without metadata", template: {}, list: monitors(am("a", spec), selecting("s", "x")), named: "s", want: "NotCovered" },
    {
      name: "the named AppMonitor selects other Pods, another selects these",
      template: labelled,
      list: monitors(selecting("db-mon", "db"), selecting("web-mon", "x"), selecting("also", "x")),
      named: "db-mon",
      want: "AppMonitorNotGoverning",
      message: /AppMonitor db-mon, whose rule raised the alert, does not cover Deployment web .*governed by AppMonitor also, whose own alerts scale it/,
    },
    { name: "…and the one that selects them governs its own alerts", template: labelled, list: monitors(selecting("db-mon", "db"), selecting("web-mon", "x")), named: "web-mon", want: "web-mon" },
    { name: "a targetRef naming the workload, unannotated", template: labelled, list: monitors(am("t", { ...spec, targetRef: ref("web") })), named: "t", want: "t" },
    { name: "a targetRef naming another workload, annotated", template: annotated, list: monitors(am("t", { ...spec, targetRef: ref("db") })), named: "t", want: "NotCovered" },
    { name: "a targetRef beats the namespace's annotation", template: annotated, list: monitors(am("a", spec), am("t", { ...spec, targetRef: ref("web") })), named: "a", want: "AppMonitorConflict", message: /AppMonitor t \(targetRef\), which takes precedence/ },
    { name: "…so the targetRef's alert scales", template: annotated, list: monitors(am("a", spec), am("t", { ...spec, targetRef: ref("web") })), named: "t", want: "t" },
    { name: "a Narrow selector beats a Widen one", template: annotated, list: monitors(selecting("a-wide", "x"), am("z-narrow", { ...spec, selector: { matchLabels: { app: "x" } }, selectorMode: "Narrow" })), named: "z-narrow", want: "z-narrow" },
    { name: "a Narrow selector: the template must be annotated too", template: labelled, list: monitors(am("n", { ...spec, selector: { matchLabels: { app: "x" } }, selectorMode: "Narrow" })), named: "n", want: "NotCovered" },
    { name: "a Narrow selector leaves out annotated templates it does not match", template: annotated, list: monitors(am("n", { ...spec, selector: { matchLabels: { app: "db" } }, selectorMode: "Narrow" })), named: "n", want: "NotCovered" },
    { name: "a selector beats the annotation", template: annotated, list: monitors(am("a", spec), selecting("s", "x")), named: "a", want: "AppMonitorConflict" },
    {
      name: "same precedence: the older governs, whatever the names",
      template: annotated,
      list: monitors(at(am("a", spec), "2026-01-02T00:00:00Z"), at(am("b", spec), "2026-01-01T00:00:00Z")),
      named: "b",
      want: "b",
    },
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

describe("coverage and byPrecedence", () => {
  const annotations = { "app-monitor.kubedemo.com/monitor": "true" };
  const web = { kind: "Deployment", name: "web" };
  const cases: { name: string; template: PodTemplateLike; spec: AppMonitorLike["spec"]; workload?: typeof web; want: Coverage | undefined }[] = [
    { name: "the original demo: annotation only, no selector", template: { metadata: { annotations } }, spec: {}, want: "annotation" },
    { name: "a targetRef names the workload", template: { metadata: {} }, spec: { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } }, workload: web, want: "targetRef" },
    { name: "a targetRef of another kind", template: { metadata: { annotations } }, spec: { targetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name: "web" } }, workload: web, want: undefined },
    { name: "a targetRef without a workload to compare", template: { metadata: { annotations } }, spec: { targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } }, want: undefined },
    { name: "Narrow, annotated and matched", template: { metadata: { annotations, labels: { app: "x" } } }, spec: { selector: { matchLabels: { app: "x" } }, selectorMode: "Narrow" }, want: "narrowSelector" },
    { name: "Widen, matched without the annotation", template: { metadata: { labels: { app: "x" } } }, spec: { selector: { matchLabels: { app: "x" } }, selectorMode: "Widen" }, want: "selector" },
  ];
  for (const c of cases) {
    it(`${c.name} → ${String(c.want)}`, () => {
      assert.equal(coverage(c.template, { spec: c.spec }, c.workload), c.want);
    });
  }

  it("orders by coverage, then age, then name, and leaves its input alone", () => {
    const m = (name: string, creationTimestamp?: string) => ({ metadata: { name, ...(creationTimestamp === undefined ? {} : { creationTimestamp }) }, spec: {} });
    const input: Contender[] = [
      { appMonitor: m("z"), coverage: "annotation" },
      { appMonitor: m("b", "2026-01-02T00:00:00Z"), coverage: "selector" },
      { appMonitor: m("a"), coverage: "selector" },
      { appMonitor: m("c", "2026-01-01T00:00:00Z"), coverage: "selector" },
      { appMonitor: m("y"), coverage: "narrowSelector" },
      { appMonitor: m("x"), coverage: "targetRef" },
    ];
    const before = input.map((c) => c.appMonitor.metadata?.name);
    assert.deepEqual(byPrecedence(input).map((c) => c.appMonitor.metadata?.name), ["x", "y", "c", "b", "a", "z"]);
    assert.deepEqual(input.map((c) => c.appMonitor.metadata?.name), before);
  });

  it("reports every contender of a contested workload, the winner first", () => {
    const list = validAppMonitors("ns", [
      { metadata: { name: "ns-wide" }, spec: { memThresholdPercent: 75, memMultiplier: 2 } },
      { metadata: { name: "exact" }, spec: { memThresholdPercent: 75, memMultiplier: 2, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" } } },
    ]);
    const [nsWide] = list.valid;
    assert.ok(nsWide !== undefined);
    const result = governingAppMonitor({ kind: "Deployment", name: "web", template: { metadata: { annotations } } }, list, nsWide);
    assert.equal(result.result === "none" && result.reason, "AppMonitorConflict");
    assert.deepEqual(result.conflict?.contenders.map((c) => `${c.appMonitor.metadata.name}:${c.coverage}`), ["exact:targetRef", "ns-wide:annotation"]);
    assert.deepEqual(result.conflict.workload, { kind: "Deployment", name: "web" });
  });
});
