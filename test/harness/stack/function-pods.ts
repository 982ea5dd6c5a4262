/**
 * The functions as plain Pods: a Knative Service (knative/services/*.yaml) rendered as the
 * Deployment and ClusterIP Service that stand in for its Revision where Knative Serving does not
 * run (the stack's real node). Pure data from plain data; `function-pods-install.ts` applies it.
 *
 * What is kept from the Knative Service: the Pod template's labels, ServiceAccount, token
 * automount, containers (image, ports, env, volume mounts, probes, resources, securityContext)
 * and volumes. What Knative would add is added as Knative adds it: `PORT` (the container port)
 * and `K_SERVICE`/`K_CONFIGURATION`/`K_REVISION` in the environment, and a cluster-local address
 * `http://<name>.<namespace>.svc.cluster.local` on port 80. What has no meaning without Knative is
 * dropped: `timeoutSeconds`, `containerConcurrency`, the autoscaling annotations (one replica) and
 * `networking.knative.dev/visibility`.
 */
import type * as k8s from "@kubernetes/client-node";
import type { KnativeService, ServiceContainer } from "../lib/knative-service.ts";

/** How a function's Pods are adapted to where they run. */
export interface FunctionPodsOptions {
  /**
   * Environment changes, applied after Knative's own variables: a value sets (or replaces) a
   * variable, `undefined` removes it (e.g. a `PROMETHEUS_URL` that no Pod can reach).
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Node selector and tolerations that put the Pods on a node (the real node's placement). */
  readonly placement?: { readonly nodeSelector: Record<string, string>; readonly tolerations: k8s.V1Toleration[] };
  /**
   * The image pull policy: a tag such as `:latest` means `Always` to Kubernetes, which a node
   * with imported images and no registry cannot honour. Default `IfNotPresent`.
   */
  readonly imagePullPolicy?: "IfNotPresent" | "Never" | "Always";
}

/** The label that selects a function's Pods: Knative's `serving.knative.dev/service` stand-in. */
export const FUNCTION_SELECTOR_LABEL = "app.kubernetes.io/name";

/** The container port Knative routes to: the first declared, else 8080 (Knative's default `PORT`). */
export function containerPort(container: ServiceContainer): number {
  return container.ports?.[0]?.containerPort ?? 8080;
}

/** A Knative Service's labels without Knative's own (`networking.knative.dev/visibility`, `serving.knative.dev/…`). */
function ownLabels(labels: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(labels ?? {}).filter(([k]) => !/^(networking|serving)\.knative\.dev\//.test(k)));
}

function renderEnv(service: KnativeService, container: ServiceContainer, options: FunctionPodsOptions): k8s.V1EnvVar[] {
  const name = service.metadata.name;
  const knative: Record<string, string> = {
    PORT: String(containerPort(container)),
    K_SERVICE: name,
    K_CONFIGURATION: name,
    K_REVISION: `${name}-deployment`,
  };
  const env = new Map<string, k8s.V1EnvVar>();
  for (const e of container.env ?? []) env.set(e.name, e as k8s.V1EnvVar);
  for (const [n, value] of Object.entries({ ...knative, ...options.env })) {
    if (value === undefined) env.delete(n);
    else env.set(n, { name: n, value });
  }
  return [...env.values()];
}

/**
 * The Deployment of a function: one replica of the Knative Service's Pod template, in its
 * namespace, selected by {@link FUNCTION_SELECTOR_LABEL}.
 * @throws Error when the Service has no namespace, not exactly one container, or no selector label on its template.
 */
export function functionDeployment(service: KnativeService, options: FunctionPodsOptions = {}): k8s.V1Deployment {
  const { name, namespace } = service.metadata;
  if (!namespace) throw new Error(`Knative Service ${name}: no namespace`);
  const template = service.spec.template;
  const [container, ...more] = template.spec.containers;
  if (!container || more.length > 0) throw new Error(`Knative Service ${name}: expected one container`);
  const labels = template.metadata?.labels ?? {};
  const selected = labels[FUNCTION_SELECTOR_LABEL];
  if (!selected) throw new Error(`Knative Service ${name}: its template has no ${FUNCTION_SELECTOR_LABEL} label`);
  const { timeoutSeconds: _timeout, containerConcurrency: _concurrency, containers: _containers, ...podSpec } = template.spec;
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels: ownLabels(service.metadata.labels) },
    spec: {
      replicas: 1,
      selector: { matchLabels: { [FUNCTION_SELECTOR_LABEL]: selected } },
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          ...(podSpec as Omit<k8s.V1PodSpec, "containers">),
          ...options.placement,
          containers: [{
            ...(container as k8s.V1Container),
            env: renderEnv(service, container, options),
            imagePullPolicy: options.imagePullPolicy ?? "IfNotPresent",
          }],
        },
      },
    },
  };
}

/**
 * The ClusterIP Service of a function: port 80 (`http`) to the container port, as Knative's
 * cluster-local address answers `http://<name>.<namespace>.svc.cluster.local`.
 * @throws Error as {@link functionDeployment} does.
 */
export function functionService(service: KnativeService): k8s.V1Service {
  const deployment = functionDeployment(service);
  const [container] = service.spec.template.spec.containers;
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: service.metadata.name, namespace: service.metadata.namespace, labels: ownLabels(service.metadata.labels) },
    spec: {
      type: "ClusterIP",
      selector: deployment.spec?.selector.matchLabels ?? {},
      ports: [{ name: "http", port: 80, targetPort: containerPort(container as ServiceContainer), protocol: "TCP" }],
    },
  };
}
