/**
 * What kube-prometheus-stack's defaults add around the operator's Prometheus and Alertmanager when
 * they really run (the stack's real node): the Prometheus's ServiceAccount and ClusterRole, the
 * Services the chart puts in front of both, and the ServiceMonitors of the kubelet (its cAdvisor,
 * resource, probes and own endpoints, with the chart's default relabelings) and of
 * kube-state-metrics. Each field names the chart's values key it follows; the objects are written
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
  const drop = (regex: string) => ({ sourceLabels: ["__name__"], action: "drop", regex });
  return [
    drop("container_cpu_(cfs_throttled_seconds_total|load_average_10s|system_seconds_total|user_seconds_total)"),
    drop("container_fs_(io_current|io_time_seconds_total|io_time_weighted_seconds_total|reads_merged_total|sector_reads_total|sector_writes_total|writes_merged_total)"),
    drop("container_memory_(mapped_file|swap)"),
    drop("container_(file_descriptors|tasks_state|threads_max)"),
    drop("container_spec.*"),
    { sourceLabels: ["id", "pod"], action: "drop", regex: ".+;" },
  ];
}

/**
 * The chart's kubelet ServiceMonitor (`kubelet.serviceMonitor`): HTTPS to each kubelet of the
 * operator's kubelet Service with the Pod's ServiceAccount token and `insecureSkipVerify`
 * (`https: true`), `honorLabels`, job from `k8s-app` (`kubelet`), a `metrics_path` label from
 * `__metrics_path__` (`relabelings`), and the endpoints `/metrics`, `/metrics/cadvisor`
 * (`cAdvisor: true`, with {@link cadvisorMetricRelabelings}), `/metrics/probes` (`probes: true`)
 * and `/metrics/resource` (`resource: true`).
 */
export function kubeletServiceMonitor(): Manifest {
  const endpoint = (path: string, metricRelabelings?: Record<string, unknown>[]) => ({
    port: "https-metrics", scheme: "https", path, honorLabels: true, honorTimestamps: true,
    bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
    tlsConfig: { caFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", insecureSkipVerify: true },
    relabelings: [{ action: "replace", sourceLabels: ["__metrics_path__"], targetLabel: "metrics_path" }],
    ...(metricRelabelings ? { metricRelabelings } : {}),
  });
  return {
    apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor",
    metadata: { name: `${PROMETHEUS_OPERATOR.release}-kube-prometheus-kubelet`, namespace: PROMETHEUS_OPERATOR.namespace, labels: chartLabels("kubelet") },
    spec: {
      attachMetadata: { node: false },
      jobLabel: "k8s-app",
      namespaceSelector: { matchNames: [KUBELET_SERVICE.namespace] },
      selector: { matchLabels: { "app.kubernetes.io/name": "kubelet", "k8s-app": "kubelet" } },
      endpoints: [
        endpoint("/metrics"),
        endpoint("/metrics/cadvisor", cadvisorMetricRelabelings()),
        endpoint("/metrics/probes"),
        endpoint("/metrics/resource"),
      ],
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
