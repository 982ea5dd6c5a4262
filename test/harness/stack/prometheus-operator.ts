/**
 * The real prometheus-operator on the stack (`up --prometheus-operator`): every
 * monitoring.coreos.com CRD, the operator as a host process reading the API with a token of its
 * own ServiceAccount bound to the ClusterRole it ships, and a Prometheus, an Alertmanager and the
 * Alertmanager's configuration Secret written as kube-prometheus-stack's defaults make them for a
 * Helm release named {@link PROMETHEUS_OPERATOR}.release (each field names the chart's values key
 * it follows). Built by test/harness/bins/build.sh from the pinned module (`promop/`).
 *
 * The operator generates what Prometheus and Alertmanager load (the rule files ConfigMap
 * `prometheus-<name>-rulefiles-0`, the Secret `alertmanager-<name>-generated`). Without the real
 * node its StatefulSets' Pods go to kwok's fake Nodes and a test loads the generated files into
 * real processes. With the real node ({@link OperatorOnRealNode}) they run there for real, from
 * images built here (upstream Prometheus, Debian's Alertmanager, the operator's config reloader),
 * with the ServiceAccount, Services and ServiceMonitors the chart adds
 * (`prometheus-operator-chart.ts`): the config reloader loads each rule the operator writes, and
 * the Prometheus scrapes the kubelet and kube-state-metrics as on a default install. The stack's
 * own Prometheus and Alertmanager processes stay as they are either way. The pure parts are
 * exported for tests; {@link startPrometheusOperator} does the I/O.
 */
import { execFile } from "node:child_process";
import { readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type * as k8s from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { freePort } from "../lib/free-port.ts";
import { KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG } from "../../../scripts/alertmanager-routing.ts";
import { chartLabels, chartServices, generalRules, KUBELET_SERVICE, kubeletServiceMonitor, kubeStateMetricsObjects, PROMETHEUS_POD_SERVICE_ACCOUNT, prometheusRbac } from "./prometheus-operator-chart.ts";
import { PROMETHEUS_OPERATOR } from "./prometheus-operator-names.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { startProcess, waitReady, type Started } from "./processes.ts";

export { PROMETHEUS_OPERATOR };

/** What `up --prometheus-operator` records in the stack's state. */
export interface PrometheusOperatorState {
  /** The operator's version (`operator --version`). */
  readonly version: string;
  readonly namespace: string;
  /** The `release` label value the Prometheus selects rules, monitors and probes by. */
  readonly release: string;
  /** Names of the Prometheus and Alertmanager resources in {@link namespace}. */
  readonly prometheus: string;
  readonly alertmanager: string;
  /** The operator's own `/metrics`. */
  readonly metricsUrl: string;
  /**
   * With the real node: the Prometheus and Alertmanager Pods the operator runs there, at their Pod
   * IPs (routed to the host, unlike ClusterIPs), and the versions they run.
   */
  readonly onRealNode?: { readonly prometheusUrl: string; readonly alertmanagerUrl: string; readonly prometheusVersion: string; readonly alertmanagerVersion: string };
}

/** The operator's Prometheus and Alertmanager run on the real node: their images and placement. */
export interface OperatorOnRealNode {
  /** Image references as imported into the node's containerd (`localhost/appmonitor/...`). */
  readonly images: { readonly prometheus: string; readonly alertmanager: string; readonly configReloader: string };
  /** The image archives to import. */
  readonly archives: readonly string[];
  /** nodeSelector and tolerations that put a Pod on the real node. */
  readonly placement: { readonly nodeSelector: Record<string, string>; readonly tolerations: readonly Record<string, string>[] };
  /** Where kube-state-metrics (a host process) listens, for its Service's EndpointSlice. */
  readonly kubeStateMetrics: { readonly ip: string; readonly port: number };
}

/**
 * The operator's flags: its web server (metrics, `/healthz`) on 127.0.0.1 without TLS (it would
 * look for a serving certificate under /etc/tls/private); all namespaces. With the real node, the
 * config reloader image built here and the kubelet Service kube-prometheus-stack turns on for its
 * kubelet ServiceMonitor (`prometheusOperator.kubeletService.enabled: true`), of the real node's
 * kubelet; without it, no kubelet Service, not needed for rules and routing.
 */
export function prometheusOperatorArgs(port: number, node?: Pick<OperatorOnRealNode, "images" | "placement">): string[] {
  const base = [`--web.listen-address=127.0.0.1:${port}`, "--web.enable-tls=false", "--log-level=info"];
  if (!node) return base;
  // The kubelets of the real node alone: kwok's fake Nodes have 127.0.0.1 as their address, which
  // an Endpoints object refuses, and the operator would then write none at all.
  const selector = Object.entries(node.placement.nodeSelector).map(([k, v]) => `${k}=${v}`).join(",");
  return [...base, `--prometheus-config-reloader=${node.images.configReloader}`, `--kubelet-service=${KUBELET_SERVICE.namespace}/${KUBELET_SERVICE.name}`,
    "--kubelet-endpoints=true", `--kubelet-selector=${selector}`];
}

/**
 * The chart's Pod security context of both (`prometheus.prometheusSpec.securityContext`,
 * `alertmanager.alertmanagerSpec.securityContext`), less its `seccompProfile`.
 */
const CHART_SECURITY_CONTEXT = { runAsGroup: 2000, runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000 };

/** Where a resource's Pods run: the real node, from an image built here, or kwok's fake Nodes. */
function podPlacement(node: OperatorOnRealNode | undefined, image: string | undefined): Record<string, unknown> {
  // Not the chart's: without the real node the Pods go to kwok's fake Nodes, as no image runs there.
  if (!node || image === undefined) return { nodeSelector: { type: "kwok" } };
  return { image, imagePullPolicy: "IfNotPresent", nodeSelector: node.placement.nodeSelector, tolerations: node.placement.tolerations, securityContext: CHART_SECURITY_CONTEXT };
}

/** Selects what carries the release label, as the chart's `*SelectorNilUsesHelmValues: true` does. */
const releaseSelector = () => ({ matchLabels: { release: PROMETHEUS_OPERATOR.release } });

/**
 * The Prometheus resource as kube-prometheus-stack's defaults render it (keys under
 * `prometheus.prometheusSpec`). `version` is the Prometheus the stack runs, so the operator
 * generates configuration for it (the chart sets it from `image.tag`).
 */
export function prometheusResource(version: string, node?: OperatorOnRealNode): Record<string, unknown> {
  const { namespace, prometheus, alertmanager } = PROMETHEUS_OPERATOR;
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "Prometheus",
    metadata: { name: prometheus, namespace, labels: chartLabels("prometheus") },
    spec: {
      version,
      replicas: 1, // replicas: 1
      // ruleSelector: {} with ruleSelectorNilUsesHelmValues: true → the release label.
      ruleSelector: releaseSelector(),
      ruleNamespaceSelector: {}, // ruleNamespaceSelector: {} → every namespace
      // serviceMonitorSelector / podMonitorSelector / probeSelector / scrapeConfigSelector: {} with
      // their *NilUsesHelmValues: true; their namespace selectors {}.
      serviceMonitorSelector: releaseSelector(),
      serviceMonitorNamespaceSelector: {},
      podMonitorSelector: releaseSelector(),
      podMonitorNamespaceSelector: {},
      probeSelector: releaseSelector(),
      probeNamespaceSelector: {},
      scrapeConfigSelector: releaseSelector(),
      scrapeConfigNamespaceSelector: {},
      // The chart points its Prometheus at its Alertmanager's Service, port http-web, API v2
      // (alertmanager.apiVersion: v2, alertmanager.alertmanagerSpec.portName, routePrefix: /).
      alerting: { alertmanagers: [{ namespace, name: alertmanager, port: "http-web", pathPrefix: "/", apiVersion: "v2" }] },
      retention: "10d", // retention: 10d
      ...(node ? { serviceAccountName: PROMETHEUS_POD_SERVICE_ACCOUNT } : {}), // prometheus.serviceAccount.create: true
      ...podPlacement(node, node?.images.prometheus),
    },
  };
}

/**
 * The Alertmanager resource as kube-prometheus-stack's defaults render it (keys under
 * `alertmanager.alertmanagerSpec`). `version` is the Alertmanager the stack runs (the chart sets it
 * from `image.tag`), so the generated configuration is one it loads.
 */
export function alertmanagerResource(version: string, node?: OperatorOnRealNode): Record<string, unknown> {
  const { namespace, alertmanager } = PROMETHEUS_OPERATOR;
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "Alertmanager",
    metadata: { name: alertmanager, namespace, labels: chartLabels("alertmanager") },
    spec: {
      version,
      replicas: 1, // replicas: 1
      alertmanagerConfigSelector: {}, // alertmanagerConfigSelector: {} → every AlertmanagerConfig
      alertmanagerConfigNamespaceSelector: {}, // alertmanagerConfigNamespaceSelector: {} → in every namespace
      // alertmanagerConfigMatcherStrategy: {} is not rendered: the operator's default, OnNamespace.
      retention: "120h", // retention: 120h
      portName: "http-web", // portName: http-web
      routePrefix: "/", // routePrefix: /
      ...podPlacement(node, node?.images.alertmanager),
    },
  };
}

/**
 * The Alertmanager configuration kube-prometheus-stack writes into the Secret
 * `alertmanager-<name>` (its values' `alertmanager.config` default, as appmonitor's routing
 * source keeps it: scripts/alertmanager-routing.ts): the inhibit rules, one `null` receiver, where
 * a user puts Slack or a pager, grouped by namespace, Watchdog sent there too.
 */
export function alertmanagerBaseConfig(): Record<string, unknown> {
  return structuredClone(KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG) as unknown as Record<string, unknown>;
}

/** The Secret that holds `config` as the Alertmanager's base configuration (its default `configSecret`). */
export function alertmanagerConfigSecret(config: Record<string, unknown>): k8s.V1Secret {
  const { namespace, alertmanager } = PROMETHEUS_OPERATOR;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `alertmanager-${alertmanager}`, namespace, labels: chartLabels("alertmanager") },
    stringData: { "alertmanager.yaml": stringify(config) },
  };
}

/** What {@link startPrometheusOperator} needs. */
export interface StartPrometheusOperatorInput {
  /** build.sh's `prometheus-operator/` directory: the binaries, `crds/` and `rbac/`. */
  readonly dir: string;
  /** The stack's state directory (the operator's kubeconfig goes there). */
  readonly stateDir: string;
  readonly kubectl: string;
  /** The stack's admin kubeconfig, for applying the CRDs. */
  readonly adminKubeconfig: string;
  readonly apiserverUrl: string;
  /** The stack's CA certificate file (PEM). */
  readonly caFile: string;
  /** Versions of the Prometheus and Alertmanager the stack runs, e.g. `v2.42.0`. */
  readonly prometheusVersion: string;
  readonly alertmanagerVersion: string;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (name: string) => string;
  readonly record: (s: Started, endpoint: string) => Promise<void>;
  readonly core: k8s.CoreV1Api;
  readonly rbac: k8s.RbacAuthorizationV1Api;
  readonly objects: k8s.KubernetesObjectApi;
  /** Run the Prometheus and Alertmanager on the real node (their images already imported there). */
  readonly node?: OperatorOnRealNode;
}

/**
 * Installs the CRDs (server-side apply: several exceed the last-applied annotation's limit) and
 * waits until they are Established; applies the operator's ClusterRole as it ships, with a
 * ServiceAccount and binding of ours; starts the operator with a token of that ServiceAccount
 * (TokenRequest, 7 days) and waits for `/healthz`; creates the chart's general rules, the
 * Alertmanager's base Secret, the Alertmanager and the Prometheus, and waits until the operator
 * has generated the Alertmanager's configuration and the Prometheus's rule files ConfigMap.
 * @throws StepError when a file is missing or kubectl fails; ComponentError when the
 *   operator exits or does not get ready, with its log tail.
 */
export async function startPrometheusOperator(input: StartPrometheusOperatorInput): Promise<PrometheusOperatorState> {
  const run = promisify(execFile);
  const crdDir = path.join(input.dir, "crds");
  const crds = (await readdir(crdDir).catch(() => [])).filter((f) => f.endsWith(".yaml")).map((f) => path.join(crdDir, f));
  if (crds.length === 0) throw new StepError("prometheus-operator's CRDs", `no CRDs in ${crdDir}; run bash test/harness/bins/build.sh`);
  const kubectl = async (...args: string[]) => {
    try {
      await run(input.kubectl, [`--kubeconfig=${input.adminKubeconfig}`, ...args], { timeout: 120_000, maxBuffer: 16 << 20 });
    } catch (error) {
      throw new StepError("prometheus-operator's CRDs", `kubectl ${args[0]}: ${(error as { stderr?: string }).stderr ?? String(error)}`);
    }
  };
  const files = crds.flatMap((f) => ["-f", f]);
  await kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=appmonitor-stack", ...files);
  await kubectl("wait", "--for=condition=Established", "--timeout=60s", ...files);

  const { namespace, serviceAccount } = PROMETHEUS_OPERATOR;
  const role = parse(await readFile(path.join(input.dir, "rbac", "prometheus-operator-cluster-role.yaml"), "utf8")) as k8s.V1ClusterRole;
  if (role.kind !== "ClusterRole" || !role.metadata?.name) throw new StepError("prometheus-operator's RBAC", `expected a ClusterRole in ${input.dir}/rbac`);
  // The real node has made the namespace already, for its kubelet's scraper.
  await input.core.createNamespace({ body: { metadata: { name: namespace } } }).catch((error: { code?: number }) => {
    if (error.code !== 409) throw error;
  });
  await input.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: serviceAccount } } });
  await input.rbac.createClusterRole({ body: role });
  await input.rbac.createClusterRoleBinding({
    body: {
      metadata: { name: role.metadata.name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name },
      subjects: [{ kind: "ServiceAccount", name: serviceAccount, namespace }],
    },
  });
  const res = await input.core.createNamespacedServiceAccountToken({ name: serviceAccount, namespace, body: { spec: { expirationSeconds: 7 * 24 * 3600, audiences: [] } } });
  const token = res.status?.token;
  if (!token) throw new StepError("prometheus-operator's token", `TokenRequest for ${namespace}/${serviceAccount} returned no token`);
  const kubeconfig = path.join(input.stateDir, "prometheus-operator.kubeconfig");
  await writeFile(kubeconfig, stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "appmonitor-stack", cluster: { server: input.apiserverUrl, "certificate-authority": input.caFile } }],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: "appmonitor-stack", context: { cluster: "appmonitor-stack", user: serviceAccount } }],
    "current-context": "appmonitor-stack",
  }), { mode: 0o600 });

  const bin = path.join(input.dir, "operator");
  const { stdout } = await run(bin, ["--version"]).catch((error: unknown) => {
    throw new StepError("prometheus-operator", `${bin} --version: ${String(error)}; run bash test/harness/bins/build.sh`);
  });
  const version = /version (\S+)/.exec(stdout)?.[1] ?? "unknown";
  const port = await freePort();
  const metricsUrl = `http://127.0.0.1:${port}/metrics`;
  // The operator reads KUBECONFIG (it has no flag for it).
  const operator = startProcess("prometheus-operator", bin, prometheusOperatorArgs(port, input.node), input.log("prometheus-operator"), { ...input.env, KUBECONFIG: kubeconfig });
  await input.record(operator, metricsUrl);
  await waitReady(operator, async () => (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) })).ok, 60_000);

  const { node } = input;
  if (node) {
    for (const object of [...prometheusRbac(), ...chartServices(), kubeletServiceMonitor(), ...kubeStateMetricsObjects(node.kubeStateMetrics)]) {
      await input.objects.create(object as k8s.KubernetesObject);
    }
  }
  await input.objects.create(generalRules() as k8s.KubernetesObject);
  await input.objects.create(alertmanagerConfigSecret(alertmanagerBaseConfig()));
  await input.objects.create(alertmanagerResource(input.alertmanagerVersion, node) as k8s.KubernetesObject);
  await input.objects.create(prometheusResource(input.prometheusVersion, node) as k8s.KubernetesObject);
  const { prometheus, alertmanager } = PROMETHEUS_OPERATOR;
  await waitReady(operator, async () => {
    await input.core.readNamespacedSecret({ namespace, name: `alertmanager-${alertmanager}-generated` });
    await input.core.readNamespacedConfigMap({ namespace, name: `prometheus-${prometheus}-rulefiles-0` });
    return true;
  }, 60_000);
  const state = { version, namespace, release: PROMETHEUS_OPERATOR.release, prometheus, alertmanager, metricsUrl };
  if (!node) return state;
  const [prometheusIp, alertmanagerIp] = await Promise.all([
    readyPodIp(operator, input.core, `prometheus-${prometheus}-0`),
    readyPodIp(operator, input.core, `alertmanager-${alertmanager}-0`),
  ]);
  const prometheusUrl = `http://${prometheusIp}:9090`;
  const alertmanagerUrl = `http://${alertmanagerIp}:9093`;
  // Ready Pods answer their readiness probes; the host's own check says the route to them works.
  await waitReady(operator, async () => (await fetch(`${prometheusUrl}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok, 60_000);
  await waitReady(operator, async () => (await fetch(`${alertmanagerUrl}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok, 60_000);
  return { ...state, onRealNode: { prometheusUrl, alertmanagerUrl, prometheusVersion: input.prometheusVersion, alertmanagerVersion: input.alertmanagerVersion } };
}

/**
 * The IP of the operator's StatefulSet Pod `name` once it is Ready (up to 180 s: the first start
 * waits for its config reloader's first configuration).
 * @throws StepError when it is not, naming its containers' states; it wraps the operator's
 *   ComponentError when the operator exits meanwhile.
 */
async function readyPodIp(operator: Started, core: k8s.CoreV1Api, name: string): Promise<string> {
  const { namespace } = PROMETHEUS_OPERATOR;
  let ip = "";
  let seen = "no Pod yet";
  try {
    await waitReady(operator, async () => {
      const pod = await core.readNamespacedPod({ namespace, name }).catch(() => undefined);
      if (!pod) return false;
      seen = JSON.stringify([...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].map((c) => ({ name: c.name, ready: c.ready, state: c.state })));
      ip = pod.status?.podIP ?? "";
      return ip !== "" && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
    }, 180_000);
  } catch (error) {
    throw new StepError("prometheus-operator's StatefulSets on the real node", `${namespace}/${name} not Ready: ${seen}: ${(error as Error).message}`, { cause: error });
  }
  return ip;
}

/** The version a Debian binary reports (`prometheus --version` → `v2.42.0`), for the resources' `version`. */
export async function binaryVersion(bin: string): Promise<string> {
  const { stdout, stderr } = await promisify(execFile)(bin, ["--version"]);
  const v = /version (\d+\.\d+\.\d+)/.exec(stdout + stderr)?.[1];
  if (!v) throw new StepError("prometheus-operator", `no version in \`${bin} --version\``);
  return `v${v}`;
}
