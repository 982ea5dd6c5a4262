/**
 * Names as kube-prometheus-stack gives them for a release `prometheus` (whose `release` label
 * rule-sync's shipped `RULE_LABELS=release=prometheus` matches) installed in `monitoring`.
 */
export const PROMETHEUS_OPERATOR = {
  namespace: "monitoring",
  release: "prometheus",
  serviceAccount: "prometheus-operator",
  prometheus: "prometheus-kube-prometheus-prometheus",
  alertmanager: "prometheus-kube-prometheus-alertmanager",
} as const;
