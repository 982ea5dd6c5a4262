/**
 * The configuration files the stack writes for its components: the admin kubeconfig, kwok's
 * metrics emulation, Prometheus's scrape config and Alertmanager's starting config.
 */
import { readFileSync } from "node:fs";
import { stringify } from "yaml";

/** Name prefix of the stack's fake Nodes. */
export const nodeNamePrefix = "kwok-node-";

/**
 * The Pod annotation whose quantity kwok reports as each container's memory working set
 * (kwok's own convention: https://kwok.sigs.k8s.io/docs/user/resource-usage-configuration/).
 */
export const usageMemoryAnnotation = "kwok.x-k8s.io/usage-memory";

/**
 * Pod annotation whose value (a whole number; 0 when absent) kwok's cAdvisor emulation reports
 * as every container's `container_oom_events_total`: what cAdvisor counts when the kernel
 * OOM-kills a process of the container. A kwok container never runs, so a test says so here.
 */
export const oomEventsAnnotation = "kwok.x-k8s.io/oom-events";

/** A kubeconfig (YAML) for `server` with an embedded CA and client certificate. */
export function kubeconfig(server: string, caFile: string, certFile: string, keyFile: string, user = "admin"): string {
  const b64 = (f: string) => readFileSync(f).toString("base64");
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "appmonitor-stack", cluster: { server, "certificate-authority-data": b64(caFile) } }],
    users: [{ name: user, user: { "client-certificate-data": b64(certFile), "client-key-data": b64(keyFile) } }],
    contexts: [{ name: "appmonitor-stack", context: { cluster: "appmonitor-stack", user } }],
    "current-context": "appmonitor-stack",
  });
}

/**
 * kwok's resource-usage and metrics emulation: every container of a Pod reports the Pod's
 * `kwok.x-k8s.io/usage-memory` annotation (a quantity; 1Mi when absent) as its working set.
 * Served as the kubelet serves them: `container_memory_working_set_bytes{namespace,pod,container}`
 * on `/metrics/nodes/<node>/metrics/resource`, and with `container_spec_memory_limit_bytes`
 * (the container's memory limit, 0 when it has none) and `container_oom_events_total` (the Pod's
 * `kwok.x-k8s.io/oom-events` annotation, 0 when absent) on `/metrics/nodes/<node>/metrics/cadvisor`.
 */
export function kwokMetricsConfig(): string {
  const usage = {
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "ClusterResourceUsage",
    metadata: { name: "usage-from-annotation" },
    spec: {
      usages: [{
        usage: {
          memory: {
            expression: `"${usageMemoryAnnotation}" in pod.metadata.annotations ? Quantity(pod.metadata.annotations["${usageMemoryAnnotation}"]) : Quantity("1Mi")`,
          },
          cpu: { expression: `Quantity("1m")` },
        },
      }],
    },
  };
  const labels = [
    { name: "container", value: "container.name" },
    { name: "namespace", value: "pod.metadata.namespace" },
    { name: "pod", value: "pod.metadata.name" },
  ];
  const workingSet = {
    name: "container_memory_working_set_bytes", dimension: "container", kind: "gauge", labels,
    help: "Current working set of the container in bytes", value: 'pod.Usage("memory", container.name)',
  };
  const resource = {
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "Metric",
    metadata: { name: "metrics-resource" },
    spec: {
      path: "/metrics/nodes/{nodeName}/metrics/resource",
      metrics: [
        { name: "scrape_error", dimension: "node", help: "1 if there was an error while getting metrics from the node, 0 otherwise", kind: "gauge", value: "0" },
        workingSet,
        { name: "pod_memory_working_set_bytes", dimension: "pod", help: "Current working set of the pod in bytes", kind: "gauge", labels: labels.slice(1), value: 'pod.Usage("memory")' },
      ],
    },
  };
  // The kubelet's cAdvisor endpoint also carries each container's memory limit (0 = none).
  const cadvisor = {
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "Metric",
    metadata: { name: "metrics-cadvisor" },
    spec: {
      path: "/metrics/nodes/{nodeName}/metrics/cadvisor",
      metrics: [
        workingSet,
        { name: "container_spec_memory_limit_bytes", dimension: "container", kind: "gauge", labels,
          help: "Memory limit for the container in bytes (0: no limit)", value: 'container.resources.limits["memory"]' },
        { name: "container_oom_events_total", dimension: "container", kind: "counter", labels,
          help: "Count of out of memory events observed for the container",
          value: `"${oomEventsAnnotation}" in pod.metadata.annotations ? Quantity(pod.metadata.annotations["${oomEventsAnnotation}"]) : Quantity("0")` },
      ],
    },
  };
  return [usage, resource, cadvisor].map((doc) => stringify(doc)).join("---\n");
}

/**
 * How the fake Nodes prove they are alive, as a kubelet does: kwok renews each Node's Lease in
 * `kube-node-lease` (duration `nodeLeaseDurationSeconds`, renewed every quarter of it), and the
 * node lifecycle controller in kube-controller-manager marks a Node `Unknown` (NotReady) when
 * neither its Lease nor its status was renewed for `nodeMonitorGracePeriodSeconds`. The Node
 * status itself is refreshed only about every 10 minutes (kwok's `node-heartbeat-with-lease`
 * stage), so without the Lease every Node goes NotReady a grace period after it started.
 * The values are the kubelet's and kube-controller-manager's defaults: 40 s, renewed every 10 s,
 * against 50 s, which leaves room for four missed renewals on a busy machine.
 */
export const nodeHeartbeat = { nodeLeaseDurationSeconds: 40, nodeMonitorGracePeriodSeconds: 50 } as const;

/**
 * A kwok Stage that makes a Running Pod whose containers are ready Ready again, as its kubelet
 * would the next time it reports.
 * When a Node goes NotReady, kube-controller-manager sets the Ready condition of every Pod on it
 * to False; kwok's own `pod-ready` stage matches only Pending Pods, so without this one such a
 * Pod would stay Running and not Ready for good (a Deployment with no available replica).
 */
export function kwokPodReadyAgainStage(): string {
  return stringify({
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "Stage",
    metadata: { name: "pod-ready-again" },
    spec: {
      resourceRef: { apiGroup: "v1", kind: "Pod" },
      selector: {
        matchExpressions: [
          { key: ".metadata.deletionTimestamp", operator: "DoesNotExist" },
          { key: ".status.phase", operator: "In", values: ["Running"] },
          { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: "NotIn", values: ["True"] },
          { key: '.status.conditions.[] | select( .type == "ContainersReady" ) | .status', operator: "In", values: ["True"] },
        ],
      },
      // A strategic merge patch: conditions merge by type, so only Ready changes.
      next: {
        statusTemplate: [
          "conditions:",
          "- lastTransitionTime: {{ Now | Quote }}",
          '  status: "True"',
          "  type: Ready",
          "",
        ].join("\n"),
      },
    },
  });
}

/** Prometheus's configuration: kwok's per-Node cAdvisor metrics (and any extra jobs), the rule files, Alertmanager. */
export function prometheusConfig(opts: {
  scrapeInterval: string;
  evaluationInterval: string;
  kwokAddress: string;
  nodes: string[];
  rulesGlob: string;
  alertmanagerAddress: string;
  /** Further scrape jobs, as Prometheus's `scrape_configs` entries (the real node's kubelet). */
  extraScrapeConfigs?: Record<string, unknown>[];
}): string {
  return stringify({
    global: { scrape_interval: opts.scrapeInterval, evaluation_interval: opts.evaluationInterval },
    rule_files: [opts.rulesGlob],
    alerting: { alertmanagers: [{ static_configs: [{ targets: [opts.alertmanagerAddress] }] }] },
    scrape_configs: [{
      job_name: "kubelet-cadvisor",
      static_configs: opts.nodes.map((node) => ({
        targets: [opts.kwokAddress],
        labels: { __metrics_path__: `/metrics/nodes/${node}/metrics/cadvisor`, node },
      })),
    }, ...(opts.extraScrapeConfigs ?? [])],
  });
}

/** Alertmanager's starting configuration: one route to a receiver that sends nothing. */
export function alertmanagerConfig(): string {
  return stringify({
    route: { receiver: "null", group_wait: "1s", group_interval: "1s", repeat_interval: "1h" },
    receivers: [{ name: "null" }],
  });
}
