/**
 * The shipped Eventing-only profile (knative/eventing-only/) as the stack's real node runs it: the
 * very files users apply, rendered by kustomize through an overlay of the stack's own that changes
 * only what this machine needs, as a user's overlay would for their cluster:
 *   - memory-scaler's and rule-sync's `PROMETHEUS_URL` are empty (unset): the stack's Prometheus
 *     listens on 127.0.0.1, which no Pod reaches, and the shipped kube-prometheus-stack address
 *     does not exist here, so memory-scaler scales without re-checking the working set, which it
 *     does only when told so (`ALLOW_UNVERIFIED_ALERTS=true`, set here), and rule-sync reports
 *     RuleReady and MetricsReady `Unknown` `PrometheusNotConfigured`; on the operator stack
 *     (`shippedPrometheus`) that address exists and the shipped values stay;
 *   - the images are used as imported into the node (`imagePullPolicy: IfNotPresent`): a `:latest`
 *     tag would mean `Always`;
 *   - without Eventing (`sink: "memory-scaler"`), alert-receiver's `K_SINK` is memory-scaler's
 *     Service (DESIGN.md allows it), where the SinkBinding would inject the Broker's address.
 * The Serving profile (knative/ itself, `profile: "serving"`) the same way, where Serving runs
 * beside Eventing (`serving-install.ts`): the same `PROMETHEUS_URL`s and `ALLOW_UNVERIFIED_ALERTS`, the four function
 * images (the dead-letter sink's among them) named by their digests in the stack's registry (as a release names them; Serving
 * resolves no digest, and the real node pulls them from that registry), and no pull policy:
 * a digest means `IfNotPresent` already. Its Knative Services are
 * patched by JSON patch with a `test` of the variable's name (a strategic merge on a custom
 * resource would replace the whole containers list).
 * Another namespace is chosen as users choose it: in a copy of knative/, namespace.yaml renamed.
 * Placement on the real node is not the overlay's: the namespace's annotations give every Pod in
 * it the node's nodeSelector and toleration (`placeNamespace`).
 */
import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";
import type { Manifest } from "../../../scripts/lib/manifest.ts";
import { parseManifests } from "../lib/manifests.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { CLUSTER_DOMAIN } from "./real-node-config.ts";

/** The namespace of knative/namespace/namespace.yaml, the install's as shipped. */
export const SHIPPED_NAMESPACE = "appmonitor";

/** How the stack adapts the profile. */
export interface StackProfileOptions {
  /** The install's namespace (default {@link SHIPPED_NAMESPACE}). */
  readonly namespace?: string;
  /** Where alert-receiver's CloudEvents go: the SinkBinding's Broker (default), or memory-scaler's Service when Eventing does not run. */
  readonly sink?: "sinkbinding" | "memory-scaler";
  /** Keep the shipped `PROMETHEUS_URL`s: the stack runs kube-prometheus-stack's Prometheus where they point. */
  readonly shippedPrometheus?: boolean;
  /** Which shipped profile: knative/eventing-only/ (default) or the Serving one, knative/. */
  readonly profile?: "eventing-only" | "serving";
  /** With `profile: "serving"`: each function image's digest (`sha256:…`), by the name knative/services gives it without its tag. */
  readonly imageDigests?: Readonly<Record<string, string>>;
}

/** Where each profile is, relative to knative/'s parent. */
const PROFILE_DIRS = { "eventing-only": "knative/eventing-only", serving: "knative" } as const;

/**
 * The stack's patches of the Serving profile: an empty `PROMETHEUS_URL` (the first variable of
 * both) for memory-scaler and rule-sync, and memory-scaler's `ALLOW_UNVERIFIED_ALERTS` (its second) `"true"`.
 */
function servingPatches(options: StackProfileOptions): object[] {
  if (options.shippedPrometheus) return [];
  const env = (i: number) => `/spec/template/spec/containers/0/env/${i}`;
  const set = (i: number, name: string, value: string) => [{ op: "test", path: `${env(i)}/name`, value: name }, { op: "replace", path: `${env(i)}/value`, value }];
  return [
    { name: "memory-scaler", ops: [...set(0, "PROMETHEUS_URL", ""), ...set(1, "ALLOW_UNVERIFIED_ALERTS", "true")] },
    { name: "rule-sync", ops: set(0, "PROMETHEUS_URL", "") },
  ].map(({ name, ops }) => ({ target: { group: "serving.knative.dev", kind: "Service", name }, patch: stringify(ops) }));
}

/**
 * The stack's overlay (`kustomization.yaml` text) over `profileDir`, relative to the overlay's own
 * directory (e.g. `../knative/eventing-only`). Pure text from plain data.
 */
export function stackProfileKustomization(profileDir: string, options: StackProfileOptions): string {
  if (options.profile === "serving") {
    const digests = Object.entries(options.imageDigests ?? {}).map(([name, digest]) => ({ name, digest }));
    return [
      "# Written by test/harness/stack/stack-profile.ts: the shipped Serving profile as the stack's real node runs it (see there for why).",
      stringify({ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources: [profileDir], images: digests, patches: servingPatches(options) }),
    ].join("\n");
  }
  const namespace = options.namespace ?? SHIPPED_NAMESPACE;
  // One patch per Deployment: a strategic merge keeps the shipped order of the variables it names.
  const env = (deployment: string, vars: Readonly<Record<string, string>>) => ({
    target: { group: "apps", kind: "Deployment", name: deployment },
    patch: stringify({
      apiVersion: "apps/v1", kind: "Deployment", metadata: { name: deployment },
      spec: { template: { spec: { containers: [{ name: deployment, env: Object.entries(vars).map(([name, value]) => ({ name, value })) }] } } },
    }),
  });
  const patches = [
    ...(options.shippedPrometheus ? [] : [env("memory-scaler", { PROMETHEUS_URL: "", ALLOW_UNVERIFIED_ALERTS: "true" }), env("rule-sync", { PROMETHEUS_URL: "" })]),
    ...(options.sink === "memory-scaler" ? [env("alert-receiver", { K_SINK: `http://memory-scaler.${namespace}.svc.${CLUSTER_DOMAIN}` })] : []),
    {
      target: { group: "apps", kind: "Deployment" },
      patch: stringify([{ op: "add", path: "/spec/template/spec/containers/0/imagePullPolicy", value: "IfNotPresent" }]),
    },
  ];
  return [
    "# Written by test/harness/stack/stack-profile.ts: the shipped profile as the stack's real node runs it (see there for why).",
    stringify({ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources: [profileDir], patches }),
  ].join("\n");
}

/**
 * Renders the Eventing-only profile (or `options.profile`'s) for the stack into `workDir` (emptied first): a copy of
 * knative/ (its namespace.yaml renamed when `namespace` is another), the stack's overlay beside it,
 * and the rendered objects in `rendered.yaml`.
 * @param kustomize renders a kustomization directory (the stack's `kubectl kustomize`), returning its YAML.
 * @returns the objects, in kustomize's order.
 * @throws Error when namespace.yaml has no `name: appmonitor` line to rename, or as `kustomize` does.
 */
export async function renderStackProfile(workDir: string, options: StackProfileOptions, kustomize: (dir: string) => Promise<string>): Promise<Manifest[]> {
  await rm(workDir, { recursive: true, force: true });
  const copy = path.join(workDir, "knative");
  await cp(path.join(repoRoot, "knative"), copy, { recursive: true });
  const namespace = options.namespace ?? SHIPPED_NAMESPACE;
  if (namespace !== SHIPPED_NAMESPACE) {
    const file = path.join(copy, "namespace", "namespace.yaml");
    const text = await readFile(file, "utf8");
    const renamed = text.replace(new RegExp(`^  name: ${SHIPPED_NAMESPACE}$`, "m"), `  name: ${namespace}`);
    if (renamed === text) throw new Error(`${file}: no "name: ${SHIPPED_NAMESPACE}" line to rename`);
    await writeFile(file, renamed);
  }
  const overlay = path.join(workDir, "stack");
  await mkdir(overlay, { recursive: true });
  await writeFile(path.join(overlay, "kustomization.yaml"), stackProfileKustomization(`../${PROFILE_DIRS[options.profile ?? "eventing-only"]}`, options));
  const yaml = await kustomize(overlay);
  await writeFile(path.join(workDir, "rendered.yaml"), yaml);
  return parseManifests(yaml, `the stack's ${options.profile ?? "eventing-only"} profile (${overlay})`);
}

/** The names of the objects beside the `*.knative.dev` kinds that only Eventing uses: the dead-letter sink's Deployment, Service, ServiceAccount, RBAC and NetworkPolicy, the ApiServerSource's ServiceAccount and RBAC. */
const EVENTING_ONLY_NAMES: ReadonlySet<string> = new Set(["appmonitor-dead-letter", "appmonitor-source"]);

/** Whether an object of the profile only serves Knative Eventing (see {@link EVENTING_ONLY_NAMES}). */
export function isEventingObject(o: Manifest): boolean {
  return o.apiVersion.split("/")[0]?.endsWith(".knative.dev") === true || EVENTING_ONLY_NAMES.has(o.metadata.name);
}
