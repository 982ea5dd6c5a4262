/**
 * The working-set series selector every query of appmonitor's shares: rule-sync's generated rules
 * (`functions/rule-sync/rule.ts`) and memory-scaler's queries of Prometheus
 * (`functions/memory-scaler/kube/prometheus.ts`: the evidence of an alert, the peak a down-step
 * weighs). One builder, so that what the rule alerted on and what memory-scaler reads back are
 * the same series. Pure.
 *
 * Working set: `container_memory_working_set_bytes{namespace,pod,container}` (cAdvisor, and the
 * kubelet's resource metrics), the measure the kubelet evicts by
 * (https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/#eviction-signals);
 * it comes from cAdvisor whatever rule-sync's `METRIC_SOURCE` (that names the limit's source only).
 */
import { promqlString, regexQuote } from "./promql.ts";

/** The series of the working set, in bytes. */
export const WORKING_SET_METRIC = "container_memory_working_set_bytes";

// Series of the pause container (Docker-era `POD`) and of the Pod-level cgroup (`""`) are not
// containers anyone can scale.
const ANY_CONTAINER = 'container!="", container!="POD"';

/**
 * Longest prefix of a generated Pod name kept whole: the API server cuts a `generateName` to 58
 * characters before adding 5 random ones (k8s.io/apiserver names.SimpleNameGenerator), and a
 * Deployment's Pods are named after its ReplicaSet, itself `<deployment>-<hash>`.
 */
const GENERATED_PREFIX_MAX = 58;

/**
 * The container matchers: without `names`, any container but the pause container and the
 * Pod-level cgroup; with them, exactly those names (`container=~"a|b"`, each regex-quoted; PromQL
 * anchors the regex), which are DNS labels and so never empty nor `POD`.
 */
export function containerMatchers(names: readonly string[] | undefined): string {
  if (names === undefined) return ANY_CONTAINER;
  return `container=~${promqlString([...new Set(names)].map(regexQuote).join("|"))}`;
}

/**
 * The matcher of the Pods named after workload `name` (`<name>-…`: a Deployment's
 * `<name>-<hash>-<suffix>`, a StatefulSet's `<name>-<ordinal>`, a DaemonSet's or ReplicaSet's
 * `<name>-<suffix>`, a Knative Service's Revision Pods `<name>-<00001>-deployment-<hash>-<suffix>`). Neither cAdvisor nor kube-state-metrics' Pod series name the workload above a
 * ReplicaSet, so the name is a filter, not proof: a workload whose name extends it (`web-api`
 * beside `web`) passes too.
 */
export function workloadPodMatcher(name: string): string {
  return `pod=~${promqlString(`${regexQuote(`${name}-`.slice(0, GENERATED_PREFIX_MAX))}.+`)}`;
}

/**
 * The working set series within `scope` (matchers such as `namespace="x", pod=~"…"`) of the
 * containers `containers` names (`containerMatchers`), not reduced.
 */
export function workingSetSeries(scope: string, containers: string): string {
  return `${WORKING_SET_METRIC}{${scope}, ${containers}}`;
}

/**
 * The memory limit series within `scope` of the containers `containers` names, in bytes, not
 * reduced: kube-state-metrics' `kube_pod_container_resource_limits{resource="memory"}`, and with
 * `cadvisor` first cAdvisor's `container_spec_memory_limit_bytes`, where a relabeling did not drop
 * it (rule-sync's `rule.ts`, "Metric sources"). An unlimited container's 0 is left out.
 */
export function memoryLimitSeries(scope: string, containers: string, cadvisor: boolean): string {
  const ksm = `kube_pod_container_resource_limits{${scope}, resource="memory", ${containers}} > 0`;
  return cadvisor ? `container_spec_memory_limit_bytes{${scope}, ${containers}} > 0 or ${ksm}` : ksm;
}
