/**
 * MetricsReady from the series counts (functions/rule-sync/series-check.ts): the queries of each
 * side, and the verdict for kube-prometheus-stack's defaults, a Prometheus without
 * kube-state-metrics, an empty namespace, containers without limits and a missing allowlist.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { METRICS_READY, METRICS_REASONS, PROMETHEUS_REASONS } from "../../../functions/rule-sync/conditions.ts";
import type { MetricSource } from "../../../functions/rule-sync/rule-config.ts";
import { checkRuleInput, type RuleInput } from "../../../functions/rule-sync/rule-input.ts";
import {
  clusterSeriesQuery,
  metricsReady,
  metricsReadyUnknown,
  namespaceSeriesQuery,
  needsClusterCounts,
  readCounts,
  type SeriesCounts,
} from "../../../functions/rule-sync/series-check.ts";

const URL_ = "http://prometheus:9090";

function monitor(spec: Partial<RuleInput["spec"]> = {}): RuleInput {
  return checkRuleInput({ metadata: { name: "mymonitor", namespace: "shop", uid: "u", generation: 1 }, spec: { memThresholdPercent: 75, forSeconds: 60, ...spec } });
}

const counts = (entries: Record<string, number>): SeriesCounts => new Map(Object.entries(entries));

describe("the queries", () => {
  it("count each side of the cadvisor expression in the namespace, tagged by side", () => {
    assert.equal(
      namespaceSeriesQuery(monitor(), "cadvisor"),
      [
        'label_replace(count(container_memory_working_set_bytes{namespace="shop", container!="", container!="POD"}), "side", "workingSet", "", "")',
        '  or label_replace(count(container_spec_memory_limit_bytes{namespace="shop", container!="", container!="POD"} > 0), "side", "cadvisorLimit", "", "")',
        '  or label_replace(count(kube_pod_container_resource_limits{namespace="shop", resource="memory", container!="", container!="POD"} > 0), "side", "ksmLimit", "", "")',
      ].join("\n"),
    );
  });

  it("with kube-state-metrics, the covered Pods too, and spec.containers and spec.selector as the rule has them", () => {
    const query = namespaceSeriesQuery(monitor({ containers: ["app"], selector: { matchLabels: { app: "memhog" } } }), "kube-state-metrics");
    assert.doesNotMatch(query, /container_spec_memory_limit_bytes/);
    assert.match(query, /container_memory_working_set_bytes\{namespace="shop", container=~"app"\}/);
    assert.match(query, /label_replace\(count\(kube_pod_annotations\{namespace="shop", annotation_app_monitor_kubedemo_com_monitor="true"\} or kube_pod_labels\{namespace="shop", label_app="memhog"\}\), "side", "coveredPods", "", ""\)/);
  });

  it("over the whole of Prometheus, the same query for every AppMonitor", () => {
    const query = clusterSeriesQuery();
    for (const side of ["workingSet", "cadvisorLimit", "ksmLimit", "podAnnotations", "monitorAnnotation"]) assert.match(query, new RegExp(`"side", "${side}"`));
    assert.match(query, /count\(kube_pod_annotations\{annotation_app_monitor_kubedemo_com_monitor!=""\}\)/);
  });

  it("read the answer's samples by side", () => {
    const read = readCounts([{ metric: { side: "workingSet" }, value: 4 }, { metric: { side: "ksmLimit" }, value: 2 }, { metric: {}, value: 9 }, { metric: { side: "x" }, value: Number.NaN }]);
    assert.deepEqual([...read], [["workingSet", 4], ["ksmLimit", 2]]);
  });
});

describe("metricsReady", () => {
  const everything = counts({ workingSet: 50, cadvisorLimit: 40, ksmLimit: 40, podAnnotations: 30, monitorAnnotation: 3 });
  // kube-prometheus-stack's defaults: cAdvisor's container_spec_* dropped, kube-state-metrics scraped.
  const chartDefaults = counts({ workingSet: 50, ksmLimit: 40, podAnnotations: 30 });
  const noKsm = counts({ workingSet: 50 });
  const table: [string, MetricSource, RuleInput, SeriesCounts, SeriesCounts, "True" | "False", string, RegExp][] = [
    ["cadvisor, both sides there", "cadvisor", monitor(), counts({ workingSet: 2, cadvisorLimit: 2, ksmLimit: 2 }), everything, "True", METRICS_REASONS.found,
      /^Prometheus at http:\/\/prometheus:9090 has series for every side of the rule in namespace shop: the working set \(container_memory_working_set_bytes\), the limit \(container_spec_memory_limit_bytes, kube_pod_container_resource_limits\)$/],
    ["cadvisor on kube-prometheus-stack's defaults: the limit from kube-state-metrics", "cadvisor", monitor(), counts({ workingSet: 2, ksmLimit: 2 }), chartDefaults, "True", METRICS_REASONS.found,
      /the limit \(kube_pod_container_resource_limits\)$/],
    ["cadvisor with container_spec_* dropped and no kube-state-metrics: the limit, the chart's drop and the fix", "cadvisor", monitor(), counts({ workingSet: 2 }), noKsm, "False", METRICS_REASONS.limitNotScraped,
      /^no memory limit series in Prometheus at http:\/\/prometheus:9090: neither container_spec_memory_limit_bytes \(kube-prometheus-stack drops it: its kubelet\.serviceMonitor\.cAdvisorMetricRelabelings drop container_spec_\.\*\) nor kube-state-metrics' kube_pod_container_resource_limits \(kube-state-metrics is not scraped\); scrape kube-state-metrics .* or keep container_spec_memory_limit_bytes \(docs\/install\.md, "MetricsReady"\)$/],
    ["kube-state-metrics source without kube-state-metrics: the limit first, then the covered Pods", "kube-state-metrics", monitor(), counts({ workingSet: 2 }), noKsm, "False", METRICS_REASONS.limitNotScraped,
      /^no kube_pod_container_resource_limits series in Prometheus at .*: kube-state-metrics is not scraped, and METRIC_SOURCE=kube-state-metrics reads the limit from it; .*; and no kube_pod_annotations series in Prometheus at .*kube-state-metrics is not scraped/],
    ["no cAdvisor at all: the working set's scrape", "cadvisor", monitor(), counts({ ksmLimit: 2 }), counts({ ksmLimit: 40 }), "False", METRICS_REASONS.workingSetNotScraped,
      /^no container_memory_working_set_bytes series in Prometheus at .*: it does not scrape the kubelets' cAdvisor endpoint \(\/metrics\/cadvisor\)/],
    ["a namespace with no Pod yet: no matching series, neither side misconfigured", "cadvisor", monitor(), counts({}), everything, "False", METRICS_REASONS.noMatchingSeries,
      /^no container_memory_working_set_bytes series for namespace shop: no such container runs there yet.*; and no container of namespace shop has a memory limit in container_spec_memory_limit_bytes or kube_pod_container_resource_limits: set one in its Pod template/],
    ["a misconfiguration outranks an empty namespace", "cadvisor", monitor(), counts({}), noKsm, "False", METRICS_REASONS.limitNotScraped, /^no container_memory_working_set_bytes series for namespace shop.*; and no memory limit series in Prometheus/],
    ["containers without a limit, named by spec.containers", "cadvisor", monitor({ containers: ["app", "app", "side"] }), counts({ workingSet: 2 }), everything, "False", METRICS_REASONS.noMatchingSeries,
      /^no container of namespace shop \(containers app, side\) has a memory limit/],
    ["kube-state-metrics without the annotation allowlist", "kube-state-metrics", monitor(), counts({ workingSet: 2, ksmLimit: 2 }), counts({ workingSet: 50, ksmLimit: 40, podAnnotations: 30 }), "False", METRICS_REASONS.coveredPodsNotExported,
      /carries the label annotation_app_monitor_kubedemo_com_monitor: kube-state-metrics exports the annotation only when started with --metric-annotations-allowlist=pods=\[app-monitor\.kubedemo\.com\/monitor\]/],
    ["kube-state-metrics with a selector: the labels allowlist is named too", "kube-state-metrics", monitor({ selector: { matchLabels: { app: "x" } } }), counts({ workingSet: 2, ksmLimit: 2 }), counts({ workingSet: 50, ksmLimit: 40, podAnnotations: 30 }), "False", METRICS_REASONS.noMatchingSeries,
      /is annotated app-monitor\.kubedemo\.com\/monitor: "true" or matches spec\.selector in kube_pod_annotations \/ kube_pod_labels: no such Pod runs there yet, or kube-state-metrics lacks --metric-labels-allowlist/],
    ["kube-state-metrics, every side there", "kube-state-metrics", monitor(), counts({ workingSet: 2, ksmLimit: 2, coveredPods: 1 }), everything, "True", METRICS_REASONS.found,
      /the limit \(kube_pod_container_resource_limits\), the covered Pods \(kube_pod_annotations\)$/],
  ];
  for (const [what, source, m, inNamespace, inCluster, status, reason, message] of table) {
    it(what, () => {
      assert.equal(needsClusterCounts(source, inNamespace), status === "False");
      const condition = metricsReady(m, source, inNamespace, inCluster, URL_);
      assert.deepEqual([condition.type, condition.status, condition.reason], [METRICS_READY, status, reason]);
      assert.match(condition.message, message);
    });
  }

  it("holds no counts: the same sides with other numbers say the same", () => {
    assert.deepEqual(metricsReady(monitor(), "cadvisor", counts({ workingSet: 2, ksmLimit: 2 }), everything, URL_), metricsReady(monitor(), "cadvisor", counts({ workingSet: 9, ksmLimit: 7 }), everything, URL_));
  });

  it("a limit of 0 everywhere (no container with a limit) is a limit side without series", () => {
    // The query counts `> 0`, so such containers are absent from the namespace's count.
    assert.equal(metricsReady(monitor(), "cadvisor", counts({ workingSet: 3 }), counts({ workingSet: 3, cadvisorLimit: 3 }), URL_).reason, METRICS_REASONS.noMatchingSeries);
  });
});

describe("metricsReadyUnknown", () => {
  it("is Unknown with the Prometheus reason and what to check", () => {
    const condition = metricsReadyUnknown({ namespace: "shop" }, { kind: "unreachable", url: "http://127.0.0.1:9", error: "connect ECONNREFUSED 127.0.0.1:9" });
    assert.deepEqual([condition.status, condition.reason], ["Unknown", PROMETHEUS_REASONS.unreachable]);
    assert.match(condition.message, /^whether the series of the rule's expression exist for namespace shop is not known: Prometheus at http:\/\/127\.0\.0\.1:9 did not answer/);
  });
});

describe("MetricsReady names a missing heap series", () => {
  const watching = monitor({ containerPolicies: [{ containerName: "api", runtime: "Node.js", heapMetrics: "Watch" }, { containerName: "*", runtime: "JVM", heapMetrics: "Watch" }] });
  const sides = { workingSet: 2, cadvisorLimit: 2, ksmLimit: 2 };

  it("the namespace query counts each watch's heap percent, tagged heap:<containerName>", () => {
    const query = namespaceSeriesQuery(watching, "cadvisor");
    assert.match(query, /label_replace\(count\(\( {3}100 \* sum by \(namespace, pod, container\) \(nodejs_heap_size_used_bytes\{namespace="shop", container=~"api"\}\).*nodejs_heap_old_space_limit_bytes.*\), "side", "heap:api", "", ""\)/);
    assert.match(query, /jvm_memory_max_bytes\{namespace="shop", container!="", container!="POD", container!~"api", area="heap"\} > 0.*"side", "heap:\*"/);
    assert.doesNotMatch(namespaceSeriesQuery(monitor(), "cadvisor"), /heap:/);
  });

  it("a watch without series is HeapSeriesNotFound, naming the runtime's metrics and the labels; with every heap there, True names them", () => {
    const missing = metricsReady(watching, "cadvisor", counts({ ...sides, "heap:*": 3 }), counts({}), URL_);
    assert.equal(missing.status, "False");
    assert.equal(missing.reason, METRICS_REASONS.heapSeriesNotFound);
    assert.match(missing.message, /^no Node\.js heap series for container api in namespace shop, so heapMetrics: Watch never alerts: the program must export nodejs_heap_size_used_bytes with nodejs_heap_old_space_limit_bytes \(prom-client, with the program's nodejs_heap_old_space_limit_bytes gauge\), scraped with the namespace, pod and container labels of its Pod/);
    assert.equal(needsClusterCounts("cadvisor", counts({ ...sides })), false, "a missing heap asks nothing of the whole of Prometheus");
    const found = metricsReady(watching, "cadvisor", counts({ ...sides, "heap:api": 1, "heap:*": 3 }), counts({}), URL_);
    assert.equal(found.reason, METRICS_REASONS.found);
    assert.match(found.message, /, the heap of container api \(Node\.js\), the other containers \(JVM\)$/);
  });

  it("a misconfigured side outranks a missing heap", () => {
    const both = metricsReady(watching, "cadvisor", counts({}), counts({ ksmLimit: 4 }), URL_);
    assert.equal(both.reason, METRICS_REASONS.workingSetNotScraped);
    assert.match(both.message, /; and no JVM heap series for the containers its \* entry covers/);
  });
});
