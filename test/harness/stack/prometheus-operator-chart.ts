/**
 * What kube-prometheus-stack's defaults (chart 88.5.3) add around the operator's Prometheus and
 * Alertmanager: the general rules (Watchdog, InfoInhibitor) always; when they really run (the
 * stack's real node) the Prometheus's ServiceAccount and ClusterRole, the Services the chart puts
 * in front of both, and the ServiceMonitors of the kubelet (its cAdvisor, probes and own
 * endpoints, with the chart's default relabelings) and of kube-state-metrics. Each field names the chart's values key it follows; the objects are written
 * from the chart's documented values, not copied from its templates. Pure: the objects alone,
 * applied by `prometheus-operator.ts`.
 */
import { PROMETHEUS_OPERATOR } from "./prometheus-operator-names.ts";

/** The Service and Endpoints the operator keeps of every Node's kubelet (`--kubelet-service`, the chart's `prometheusOperator.kubeletService`). */
export const KUBELET_SERVICE = { namespace: "kube-system", name: `${PROMETHEUS_OPERATOR.release}-kube-prometheus-kubelet` } as const;

/** The chart's Service in front of kube-state-metrics (its subchart, `kubeStateMetrics.enabled: true`). */
export const KUBE_STATE_METRICS_SERVICE = { namespace: PROMETHEUS_OPERATOR.namespace, name: `${PROMETHEUS_OPERATOR.release}-kube-state-metrics`, port: "http" } as const;

/** The Prometheus's ServiceAccount (`prometheus.serviceAccount.create: true`, named as the Prometheus). */
export const PROMETHEUS_POD_SERVICE_ACCOUNT = PROMETHEUS_OPERATOR.prometheus;

/** Labels kube-prometheus-stack puts on its objects, of which the selectors read `release`. */
export function chartLabels(app: string): Record<string, string> {
  return { app: `kube-prometheus-stack-${app}`, release: PROMETHEUS_OPERATOR.release, "app.kubernetes.io/part-of": "kube-prometheus-stack" };
}

/** A Kubernetes object as written here. */
export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } };

/**
 * The Prometheus's ServiceAccount and the ClusterRole the chart grants it (its
 * `templates/prometheus/clusterrole.yaml` rules, as its docs list them: discovery of Nodes,
 * Services, Endpoints, EndpointSlices and Pods, `nodes/metrics`, Ingresses, and `/metrics`), bound.
 */
export function prometheusRbac(): Manifest[] {
  const { namespace } = PROMETHEUS_OPERATOR;
  const name = PROMETHEUS_POD_SERVICE_ACCOUNT;
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace, labels: chartLabels("prometheus") } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name, labels: chartLabels("prometheus") },
      rules: [
        { apiGroups: [""], resources: ["nodes", "nodes/metrics", "services", "endpoints", "pods"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["networking.k8s.io"], resources: ["ingresses"], verbs: ["get", "list", "watch"] },
        { nonResourceURLs: ["/metrics", "/metrics/cadvisor"], verbs: ["get"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name, labels: chartLabels("prometheus") },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ kind: "ServiceAccount", name, namespace }],
    },
  ];
}

/**
 * The chart's Services of the Prometheus and the Alertmanager (`prometheus.service`,
 * `alertmanager.service`: port `http-web`, 9090 and 9093), selecting the Pods by the labels the
 * operator gives them. The Prometheus's `alerting` names the Alertmanager's.
 */
export function chartServices(): Manifest[] {
  const { namespace, prometheus, alertmanager } = PROMETHEUS_OPERATOR;
  const service = (name: string, app: string, port: number, selector: Record<string, string>): Manifest => ({
    apiVersion: "v1", kind: "Service", metadata: { name, namespace, labels: { ...chartLabels(app), "self-monitor": "true" } },
    spec: { type: "ClusterIP", ports: [{ name: "http-web", port, targetPort: port, protocol: "TCP" }], selector },
  });
  return [
    service(prometheus, "prometheus", 9090, { "app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": prometheus }),
    service(alertmanager, "alertmanager", 9093, { "app.kubernetes.io/name": "alertmanager", alertmanager }),
  ];
}

/**
 * The chart's default `kubelet.serviceMonitor.cAdvisorMetricRelabelings`: drops of series it says
 * overlap with kube-state-metrics or are rarely used, `container_spec.*` among them (so
 * `container_spec_memory_limit_bytes` is gone: the case docs/install.md's MetricsReady names), and
 * of the cgroup-level series without a Pod.
 */
export function cadvisorMetricRelabelings(): Record<string, unknown>[] {
  const drop = (regex: string, sourceLabels = ["__name__"]) => ({ sourceLabels, action: "drop", regex });
  return [
    drop("container_cpu_(cfs_throttled_seconds_total|load_average_10s|system_seconds_total|user_seconds_total)"),
    drop("container_fs_(io_current|io_time_seconds_total|io_time_weighted_seconds_total|reads_merged_total|sector_reads_total|sector_writes_total|writes_merged_total)"),
    drop("container_memory_(mapped_file|swap)"),
    drop("container_(file_descriptors|tasks_state|threads_max)"),
    drop("container_memory_failures_total;hierarchy", ["__name__", "scope"]),
    drop("container_network_.*;(cali|cilium|cni|lxc|nodelocaldns|tunl).*", ["__name__", "interface"]),
    drop("container_spec.*"),
    drop(".+;", ["id", "pod"]),
  ];
}

/**
 * The chart's kubelet ServiceMonitor (`kubelet.serviceMonitor`): HTTPS to each kubelet of the
 * operator's kubelet Service with the Pod's ServiceAccount token and `insecureSkipVerify`
 * (`https: true`, `insecureSkipVerify: true`), `honorLabels`, job from `k8s-app`, a
 * `metrics_path` label from `__metrics_path__` (`relabelings`, `cAdvisorRelabelings`,
 * `probesRelabelings`), and the endpoints the defaults turn on: `/metrics` (`kubelet: true`),
 * `/metrics/cadvisor` (`cAdvisor: true`) and `/metrics/probes` (`probes: true`); not
 * `/metrics/resource` (`resource: false`). No `interval` (`interval: ""`) but cAdvisor's.
 */
export function kubeletServiceMonitor(): Manifest {
  const metricsPath = [{ action: "replace", sourceLabels: ["__metrics_path__"], targetLabel: "metrics_path" }];
  const endpoint = (fields: Record<string, unknown>) => ({
    port: "https-metrics", scheme: "https", // https: true
    tlsConfig: { caFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", insecureSkipVerify: true }, // insecureSkipVerify: true
    bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
    honorLabels: true, // honorLabels: true
    honorTimestamps: true, // honorTimestamps: true
    ...fields,
  });
  return {
    apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor",
    metadata: { name: `${PROMETHEUS_OPERATOR.release}-kube-prometheus-kubelet`, namespace: PROMETHEUS_OPERATOR.namespace, labels: chartLabels("kubelet") },
    spec: {
      attachMetadata: { node: false }, // attachMetadata.node: false
      jobLabel: "k8s-app",
      namespaceSelector: { matchNames: [KUBELET_SERVICE.namespace] }, // kubelet.namespace: kube-system
      selector: { matchLabels: { "app.kubernetes.io/name": "kubelet", "k8s-app": "kubelet" } },
      endpoints: [
        endpoint({
          // metricRelabelings: fewer buckets of the kubelet's storage operations.
          metricRelabelings: [{ action: "drop", sourceLabels: ["__name__", "le"], regex: "(csi_operations|storage_operation_duration)_seconds_bucket;(0.25|2.5|15|25|120|600)(\\.0)?" }],
          relabelings: metricsPath,
        }),
        endpoint({
          path: "/metrics/cadvisor",
          // cAdvisorInterval: 10s, cAdvisor's housekeeping interval: no sample missed.
          interval: "10s",
          // trackTimestampsStaleness: true: cAdvisor's samples carry timestamps, and without it a
          // container that is gone (OOM-killed, restarted in the same Pod) keeps its last value
          // for five minutes; with it the series ends at the next scrape.
          trackTimestampsStaleness: true,
          metricRelabelings: cadvisorMetricRelabelings(),
          relabelings: metricsPath, // cAdvisorRelabelings
        }),
        endpoint({ path: "/metrics/probes", relabelings: metricsPath }), // probesRelabelings; probesMetricRelabelings: []
      ],
    },
  };
}

/**
 * The chart's PrometheusRule of its `general.rules` group (`defaultRules.rules.general: true`):
 * TargetDown, Watchdog (always firing, routed to the `null` receiver, the pipeline's heartbeat) and
 * InfoInhibitor (firing while a namespace has info alerts and no warning or critical one; the
 * Alertmanager's inhibit rules then silence those info alerts). Selected by the Prometheus as
 * every rule of the release is; annotations from `defaultRules.runbookUrl`.
 */
export function generalRules(): Manifest {
  const runbook = (name: string) => `https://runbooks.prometheus-operator.dev/runbooks/general/${name}`;
  return {
    apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule",
    metadata: {
      name: `${PROMETHEUS_OPERATOR.release}-kube-prometheus-general.rules`, namespace: PROMETHEUS_OPERATOR.namespace,
      labels: { app: "kube-prometheus-stack", release: PROMETHEUS_OPERATOR.release, "app.kubernetes.io/part-of": "kube-prometheus-stack" },
    },
    spec: {
      groups: [{
        name: "general.rules",
        rules: [
          {
            alert: "TargetDown",
            annotations: {
              description: "{{ printf \"%.4g\" $value }}% of the {{ $labels.job }}/{{ $labels.service }} targets in {{ $labels.namespace }} namespace are down.",
              runbook_url: runbook("targetdown"),
              summary: "One or more targets are unreachable.",
            },
            expr: "100 * (count(up == 0) BY (cluster, job, namespace, service) / count(up) BY (cluster, job, namespace, service)) > 10",
            for: "10m",
            labels: { severity: "warning" },
          },
          {
            alert: "Watchdog",
            annotations: {
              description: "This is an alert meant to ensure that the entire alerting pipeline is functional.\nThis alert is always firing, therefore it should always be firing in Alertmanager\nand always fire against a receiver. There are integrations with various notification\nmechanisms that send a notification when this alert is not firing. For example the\n\"DeadMansSnitch\" integration in PagerDuty.\n",
              runbook_url: runbook("watchdog"),
              summary: "An alert that should always be firing to certify that Alertmanager is working properly.",
            },
            expr: "vector(1)",
            labels: { severity: "none" },
          },
          {
            alert: "InfoInhibitor",
            annotations: {
              description: "This is an alert that is used to inhibit info alerts.\nBy themselves, the info-level alerts are sometimes very noisy, but they are relevant when combined with\nother alerts.\nThis alert fires whenever there's a severity=\"info\" alert, and stops firing when another alert with a\nseverity of 'warning' or 'critical' starts firing on the same namespace.\nThis alert should be routed to a null receiver and configured to inhibit alerts with severity=\"info\".\n",
              runbook_url: runbook("infoinhibitor"),
              summary: "Info-level alert inhibition.",
            },
            expr: "group by (namespace) (ALERTS{severity = \"info\"} == 1) unless on (namespace) group by (namespace) (ALERTS{alertname != \"InfoInhibitor\", alertstate = \"firing\", severity =~ \"warning|critical\"} == 1)",
            labels: { severity: "none" },
          },
        ],
      }],
    },
  };
}

/**
 * kube-state-metrics as the chart's subchart puts it behind a Service, and its ServiceMonitor
 * (`kube-state-metrics.prometheus.monitor`: port `http`, `honorLabels: true`). The stack runs
 * kube-state-metrics as a host process on the node IP, so the Service has no selector and an
 * Endpoints object of ours names that address.
 */
export function kubeStateMetricsObjects(address: { ip: string; port: number }): Manifest[] {
  const { namespace, name, port } = KUBE_STATE_METRICS_SERVICE;
  const labels = { "app.kubernetes.io/name": "kube-state-metrics", "app.kubernetes.io/instance": PROMETHEUS_OPERATOR.release, release: PROMETHEUS_OPERATOR.release };
  return [
    { apiVersion: "v1", kind: "Service", metadata: { name, namespace, labels }, spec: { type: "ClusterIP", ports: [{ name: port, port: 8080, targetPort: address.port, protocol: "TCP" }] } },
    // Endpoints, not an EndpointSlice: the operator's Prometheus discovers ServiceMonitors' targets
    // through Endpoints by default (`serviceDiscoveryRole`), and nothing mirrors a slice into them.
    {
      apiVersion: "v1", kind: "Endpoints", metadata: { name, namespace, labels },
      subsets: [{ addresses: [{ ip: address.ip }], ports: [{ name: port, port: address.port, protocol: "TCP" }] }],
    },
    {
      apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor", metadata: { name, namespace, labels },
      spec: {
        jobLabel: "app.kubernetes.io/name",
        selector: { matchLabels: { "app.kubernetes.io/name": "kube-state-metrics", "app.kubernetes.io/instance": PROMETHEUS_OPERATOR.release } },
        endpoints: [{ port, honorLabels: true }],
      },
    },
  ];
}
