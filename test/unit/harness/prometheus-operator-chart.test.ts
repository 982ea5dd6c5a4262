// What the operator stack writes as kube-prometheus-stack's defaults: the kubelet ServiceMonitor's
// endpoints (cAdvisor at 10 s with staleness tracked, no resource endpoint) and the cAdvisor
// relabelings that drop container_spec_*, the general rules, the Prometheus's and Alertmanager's
// placement and images, and the operator's flags.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cadvisorMetricRelabelings, chartServices, generalRules, KUBELET_SERVICE, kubeletServiceMonitor, kubeStateMetricsObjects, type Manifest } from "../../harness/stack/prometheus-operator-chart.ts";
import { alertmanagerResource, prometheusOperatorArgs, prometheusResource, type OperatorOnRealNode } from "../../harness/stack/prometheus-operator.ts";

const node: OperatorOnRealNode = {
  images: { prometheus: "localhost/appmonitor/prometheus:v3.16.0", alertmanager: "localhost/appmonitor/alertmanager:bookworm-x", configReloader: "localhost/appmonitor/prometheus-config-reloader:v0.93.1" },
  archives: [],
  placement: { nodeSelector: { "appmonitor.kubedemo.com/node": "real" }, tolerations: [{ key: "t", operator: "Exists", effect: "NoSchedule" }] },
  kubeStateMetrics: { ip: "10.245.255.1", port: 18080 },
};

/** Whether the relabelings drop a series named `name` (with a Pod, so the last rule keeps it). */
function dropped(name: string): boolean {
  return cadvisorMetricRelabelings().some((r) => r.action === "drop" && (r.sourceLabels as string[])[0] === "__name__" && new RegExp(`^(?:${String(r.regex)})$`).test(name));
}

test("the kubelet ServiceMonitor scrapes /metrics, /metrics/cadvisor and /metrics/probes of the operator's kubelet Service, not /metrics/resource, labelling metrics_path", () => {
  const spec = kubeletServiceMonitor().spec as { endpoints: { path?: string; relabelings: { targetLabel: string }[]; metricRelabelings?: unknown[] }[]; namespaceSelector: { matchNames: string[] } };
  assert.deepEqual(spec.endpoints.map((e) => e.path ?? "/metrics"), ["/metrics", "/metrics/cadvisor", "/metrics/probes"]);
  assert.deepEqual(spec.namespaceSelector.matchNames, [KUBELET_SERVICE.namespace]);
  for (const e of spec.endpoints) assert.equal(e.relabelings[0]?.targetLabel, "metrics_path");
  assert.deepEqual(spec.endpoints.filter((e) => e.metricRelabelings).map((e) => e.path ?? "/metrics"), ["/metrics", "/metrics/cadvisor"]);
});

test("cAdvisor is scraped every 10 s with its timestamps and their staleness tracked, so a dead container's series ends at the next scrape; no other endpoint sets an interval", () => {
  const endpoints = (kubeletServiceMonitor().spec as { endpoints: Record<string, unknown>[] }).endpoints;
  const cadvisor = endpoints.find((e) => e.path === "/metrics/cadvisor");
  assert.deepEqual([cadvisor?.interval, cadvisor?.honorTimestamps, cadvisor?.trackTimestampsStaleness], ["10s", true, true]);
  assert.deepEqual(endpoints.filter((e) => e.interval !== undefined).map((e) => e.path), ["/metrics/cadvisor"]);
});

test("the chart's general rules: Watchdog always firing, InfoInhibitor while a namespace has info alerts alone, both severity none; selected by the release label", () => {
  const rule = generalRules() as Manifest & { spec: { groups: { name: string; rules: { alert: string; expr: string; labels: Record<string, string> }[] }[] } };
  assert.equal(rule.metadata.labels?.release, "prometheus");
  const [group] = rule.spec.groups;
  assert.deepEqual(group?.rules.map((r) => r.alert), ["TargetDown", "Watchdog", "InfoInhibitor"]);
  const byName = new Map(group?.rules.map((r) => [r.alert, r]));
  assert.equal(byName.get("Watchdog")?.expr, "vector(1)");
  assert.match(byName.get("InfoInhibitor")?.expr ?? "", /ALERTS\{severity = "info"\}/);
  for (const name of ["Watchdog", "InfoInhibitor"]) assert.equal(byName.get(name)?.labels.severity, "none", name);
});

test("the chart's cAdvisor relabelings drop container_spec_memory_limit_bytes and keep the working set and the OOM counter", () => {
  assert.equal(dropped("container_spec_memory_limit_bytes"), true);
  assert.equal(cadvisorMetricRelabelings().length, 8, "the chart's eight");
  for (const kept of ["container_memory_working_set_bytes", "container_oom_events_total", "container_memory_rss"]) assert.equal(dropped(kept), false, kept);
});

test("on the real node the Prometheus and the Alertmanager run the images built here, placed there, under the chart's security context; without it on kwok's Nodes", () => {
  const prom = prometheusResource("v3.16.0", node).spec as Record<string, unknown>;
  assert.equal(prom.image, node.images.prometheus);
  assert.deepEqual(prom.nodeSelector, node.placement.nodeSelector);
  assert.equal(prom.serviceAccountName, "prometheus-kube-prometheus-prometheus");
  assert.deepEqual(prom.securityContext, { runAsGroup: 2000, runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000 });
  const am = alertmanagerResource("v0.25.0", node).spec as Record<string, unknown>;
  assert.equal(am.image, node.images.alertmanager);
  assert.equal(am.alertmanagerConfigMatcherStrategy, undefined, "the operator's default, OnNamespace");
  const fake = prometheusResource("v2.42.0").spec as Record<string, unknown>;
  assert.deepEqual([fake.image, fake.nodeSelector], [undefined, { type: "kwok" }]);
});

test("the operator gets the config reloader image and the kubelet Service only on the real node", () => {
  const flags = prometheusOperatorArgs(8080, node);
  assert.ok(flags.includes(`--prometheus-config-reloader=${node.images.configReloader}`));
  assert.ok(flags.includes(`--kubelet-service=${KUBELET_SERVICE.namespace}/${KUBELET_SERVICE.name}`));
  assert.ok(flags.includes("--kubelet-selector=appmonitor.kubedemo.com/node=real"), "the real node's kubelet alone");
  assert.equal(prometheusOperatorArgs(8080).some((f) => f.startsWith("--kubelet-service")), false);
});

test("the Services the chart puts in front: the Alertmanager's is the one the Prometheus's alerting names; kube-state-metrics' points at the host process", () => {
  const alerting = (prometheusResource("v3.16.0", node).spec as { alerting: { alertmanagers: { name: string; port: string }[] } }).alerting.alertmanagers[0];
  const services = chartServices();
  const am = services.find((s) => s.metadata.name === alerting?.name) as { spec: { ports: { name: string }[] } } | undefined;
  assert.equal(am?.spec.ports[0]?.name, alerting?.port);
  const endpoints = kubeStateMetricsObjects(node.kubeStateMetrics).find((o) => o.kind === "Endpoints") as { subsets: { addresses: { ip: string }[]; ports: { port: number }[] }[] } | undefined;
  assert.deepEqual([endpoints?.subsets[0]?.addresses[0]?.ip, endpoints?.subsets[0]?.ports[0]?.port], ["10.245.255.1", 18080]);
});
