/**
 * kube-state-metrics beside the real node: the source of its OOM kills. cAdvisor counts a kill on
 * the killed container's cgroup, which goes away with the container when its PID 1 is the process
 * killed, so `container_oom_events_total` never moves for the kill that makes a crash loop
 * (google/cadvisor#3015; docs/development.md, "The real node"). kube-state-metrics reads the kubelet's report of
 * it from the API instead: `kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}`
 * and the restart counter, which rule-sync's `kube-state-metrics` source reads.
 *
 * A host process (the stack runs no image of it), built from the pinned module (test/harness/bins/ksm),
 * reading the API with a token of the ServiceAccount its own `examples/standard` manifests
 * define and the ClusterRole they grant it, bound to 127.0.0.1, scraped by the stack's Prometheus
 * as kube-prometheus scrapes it (`honor_labels`). The pure parts (flags, scrape job) are exported
 * for tests; {@link startKubeStateMetrics} does the I/O.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { MONITOR_ANNOTATION } from "../../../functions/lib/appmonitor.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { startProcess, waitReady, type Started } from "./processes.ts";

/** The ServiceAccount of kube-state-metrics' own manifests (examples/standard/service-account.yaml). */
export const KUBE_STATE_METRICS_SERVICE_ACCOUNT = { namespace: "kube-system", name: "kube-state-metrics" } as const;

/** The files of kube-state-metrics' `examples/standard/` that build.sh copies beside the binary: its RBAC, applied as shipped. */
export const KUBE_STATE_METRICS_RBAC_FILES = ["service-account.yaml", "cluster-role.yaml", "cluster-role-binding.yaml"] as const;

/** Ports of kube-state-metrics on 127.0.0.1: `/metrics` (the objects' series) and telemetry (its own, and `/readyz`). */
export interface KubeStateMetricsPorts {
  readonly metrics: number;
  readonly telemetry: number;
}

/** How kube-state-metrics runs: where its `/metrics` listens, and with which collectors. */
export interface KubeStateMetricsOptions {
  readonly kubeconfig: string;
  readonly ports: KubeStateMetricsPorts;
  /** The address of `/metrics` (default 127.0.0.1); the real node's IP where its Pods scrape it. */
  readonly host?: string;
  /**
   * kube-prometheus-stack's defaults (`kube-state-metrics` subchart: every collector, no
   * annotation or label allowlist), for the operator stack, rather than this stack's own.
   */
  readonly chartDefaults?: boolean;
}

/**
 * kube-state-metrics' flags: `/metrics` on `host`, telemetry on 127.0.0.1 (its default `::` is
 * every address). By default Pods alone, the only objects rule-sync's rules read, which keeps its
 * watch and memory small, with the opt-in annotation and every Pod label exported
 * (`kube_pod_annotations`, `kube_pod_labels`), which the rules join on to select the covered Pods
 * (functions/rule-sync/rule.ts); with `chartDefaults`, none of those three flags.
 */
export function kubeStateMetricsArgs(opts: KubeStateMetricsOptions): string[] {
  const own = ["--resources=pods", `--metric-annotations-allowlist=pods=[${MONITOR_ANNOTATION}]`, "--metric-labels-allowlist=pods=[*]"];
  return [
    `--kubeconfig=${opts.kubeconfig}`,
    `--host=${opts.host ?? "127.0.0.1"}`,
    `--port=${opts.ports.metrics}`,
    "--telemetry-host=127.0.0.1",
    `--telemetry-port=${opts.ports.telemetry}`,
    ...(opts.chartDefaults ? [] : own),
  ];
}

/**
 * Prometheus's scrape job for kube-state-metrics, as kube-prometheus makes it: `honor_labels`, so
 * the `namespace`, `pod` and `container` labels name the Pod described, not the exporter (without
 * it they would move to `exported_namespace` and `exported_pod`, which memory-scaler refuses).
 */
export function kubeStateMetricsScrapeJob(ports: KubeStateMetricsPorts, host = "127.0.0.1"): Record<string, unknown> {
  return {
    job_name: "kube-state-metrics",
    honor_labels: true,
    static_configs: [{ targets: [`${host}:${ports.metrics}`] }],
  };
}

/** What {@link startKubeStateMetrics} needs. */
export interface StartKubeStateMetricsInput {
  /** The binary (test/harness/bins/ksm). */
  readonly bin: string;
  /** The directory holding {@link KUBE_STATE_METRICS_RBAC_FILES}. */
  readonly rbacDir: string;
  /** Where its kubeconfig is written. */
  readonly dir: string;
  readonly apiserverUrl: string;
  /** The stack's CA certificate file (PEM). */
  readonly caFile: string;
  readonly ports: KubeStateMetricsPorts;
  readonly host?: string;
  readonly chartDefaults?: boolean;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (name: string) => string;
  readonly record: (s: Started, endpoint: string) => Promise<void>;
  readonly core: k8s.CoreV1Api;
  readonly rbac: k8s.RbacAuthorizationV1Api;
}

/**
 * Applies kube-state-metrics' RBAC as it ships (ServiceAccount, ClusterRole, ClusterRoleBinding),
 * writes a kubeconfig with a token of that ServiceAccount (TokenRequest, 7 days, as Prometheus's
 * kubelet token), starts it and waits until it answers `/readyz`.
 * @throws StepError when a manifest is missing or not the kind expected; ComponentError when
 *   it exits or does not get ready, with its log tail.
 */
export async function startKubeStateMetrics(input: StartKubeStateMetricsInput): Promise<void> {
  const manifest = async (file: string) => {
    const text = await readFile(path.join(input.rbacDir, file), "utf8").catch((error: unknown) => {
      throw new StepError("kube-state-metrics' RBAC", `${path.join(input.rbacDir, file)}: ${(error as Error).message}; run bash test/harness/bins/build.sh`);
    });
    return parse(text) as { kind?: string };
  };
  const [sa, role, binding] = await Promise.all(KUBE_STATE_METRICS_RBAC_FILES.map(manifest));
  const { namespace, name } = KUBE_STATE_METRICS_SERVICE_ACCOUNT;
  if (sa?.kind !== "ServiceAccount" || role?.kind !== "ClusterRole" || binding?.kind !== "ClusterRoleBinding") {
    throw new StepError("kube-state-metrics' RBAC", `expected a ServiceAccount, a ClusterRole and a ClusterRoleBinding in ${input.rbacDir}`);
  }
  await input.core.createNamespacedServiceAccount({ namespace, body: sa as k8s.V1ServiceAccount });
  await input.rbac.createClusterRole({ body: role as k8s.V1ClusterRole });
  await input.rbac.createClusterRoleBinding({ body: binding as k8s.V1ClusterRoleBinding });
  const res = await input.core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { expirationSeconds: 7 * 24 * 3600, audiences: [] } } });
  const token = res.status?.token;
  if (!token) throw new StepError("kube-state-metrics' token", `TokenRequest for ${namespace}/${name} returned no token`);
  const kubeconfig = path.join(input.dir, "kube-state-metrics.kubeconfig");
  await writeFile(kubeconfig, stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "appmonitor-stack", cluster: { server: input.apiserverUrl, "certificate-authority": input.caFile } }],
    users: [{ name, user: { token } }],
    contexts: [{ name: "appmonitor-stack", context: { cluster: "appmonitor-stack", user: name } }],
    "current-context": "appmonitor-stack",
  }), { mode: 0o600 });
  const ksm = startProcess("kube-state-metrics", input.bin, kubeStateMetricsArgs({ kubeconfig, ports: input.ports, ...(input.host ? { host: input.host } : {}), ...(input.chartDefaults ? { chartDefaults: true } : {}) }), input.log("kube-state-metrics"), input.env);
  await input.record(ksm, `http://${input.host ?? "127.0.0.1"}:${input.ports.metrics}/metrics`);
  await waitReady(ksm, async () => (await fetch(`http://127.0.0.1:${input.ports.telemetry}/readyz`, { signal: AbortSignal.timeout(2000) })).ok, 60_000);
}
