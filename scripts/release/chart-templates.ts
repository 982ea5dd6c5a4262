/**
 * The Helm chart's templates, generated from the two install profiles as kustomize renders them
 * (knative/ and knative/eventing-only/), so that the chart and the kustomize tree cannot drift:
 * every object of both profiles becomes a template, unchanged but for the holes the chart's values
 * fill. Pure: rendered objects in, template files out (`build-chart.ts` does the I/O).
 *
 * The holes (the chart's values, charts/appmonitor/values.yaml):
 * - the install's namespace: the profiles are rendered with {@link NAMESPACE_SENTINEL} as their
 *   namespace (knative/namespace/namespace.yaml renamed), so every place kustomize makes follow it
 *   (metadata, subjects, the policy's username, the Triggers' filters) becomes
 *   `{{ $.Release.Namespace }}`; the Namespace itself is Helm's (`--namespace`, `--create-namespace`);
 * - each container's image: `appmonitor.image` (registry, tag, digest);
 * - the functions' resources (`appmonitor.resources`) and the environment the values name
 *   ({@link ENV_VALUES}), each read through `appmonitor.value`, which takes this chart's default
 *   ({@link defaultsTemplate}) for a key the values lack: `helm upgrade --reuse-values` from an
 *   older release renders with that release's values alone; and `WATCH_NAMESPACES` for
 *   memory-scaler and rule-sync when `watchNamespaces` is set;
 * - the webhook token's Secret (`appmonitor.webhookSecretName`);
 * - the install's ceilings (`ceilings`): the ConfigMap `appmonitor-ceilings`'s keys, which
 *   memory-scaler's environment and the ceilings policy read, and on memory-scaler's Pod template
 *   a checksum of that ConfigMap ({@link CEILINGS_CHECKSUM_ANNOTATION}), so a change of the values
 *   rolls memory-scaler, which reads them when it starts;
 * - `watchNamespaces`: the ClusterRoleBindings of memory-scaler, rule-sync and the ApiServerSource
 *   become RoleBindings in those namespaces, and the ApiServerSource selects only them;
 * - knative/network/'s NetworkPolicies: rendered when `networkPolicies.enabled`, each peer's
 *   selectors from `networkPolicies.<peer>` ({@link NETWORK_PEERS});
 * - `requireSenderIdentity`: memory-scaler's and rule-sync's `REQUIRE_SENDER_IDENTITY`;
 * - Helm's labels on every object, and the profile: an object of one profile only is rendered
 *   only for it (`profile: serving` or `eventing-only`).
 * The CRD is not a template: Helm installs `crds/` once and never deletes it.
 */
import { stringify } from "yaml";
import type { Manifest } from "../lib/manifest.ts";
import { kubePrometheusStackValuesYaml } from "../alertmanager-routing.ts";
import { CEILINGS, CEILINGS_CONFIGMAP } from "../../functions/memory-scaler/ceilings.ts";

/** The namespace the profiles are rendered with, to be found and templated: no other string of the install contains it. */
export const NAMESPACE_SENTINEL = "chart-release-namespace";

/** A rendered object: a manifest as kustomize writes it. */
export type RenderedObject = Manifest;

/** The two profiles, each object with the knative/ file it came from (kustomize's origin annotation, `path`). */
export interface RenderedProfiles {
  readonly serving: readonly RenderedObject[];
  readonly "eventing-only": readonly RenderedObject[];
}

/** The profiles' names, as `values.profile` takes them. */
export const PROFILES = ["serving", "eventing-only"] as const;

/** kustomize's annotation that names the file an object came from (`buildMetadata: [originAnnotations]`). */
export const ORIGIN_ANNOTATION = "config.kubernetes.io/origin";

/** Each shipped image (as knative/ names it, without tag) and the key of `values.images` that names it. */
export const IMAGE_KEYS: Readonly<Record<string, string>> = {
  "ghcr.io/kubedemo/appmonitor-alert-receiver": "alertReceiver",
  "ghcr.io/kubedemo/appmonitor-memory-scaler": "memoryScaler",
  "ghcr.io/kubedemo/appmonitor-rule-sync": "ruleSync",
  "ghcr.io/kubedemo/appmonitor-dead-letter": "deadLetter",
};

/** Each workload (Knative Service or Deployment) of the install and its key in `values.resources`. */
export const WORKLOAD_KEYS: Readonly<Record<string, string>> = {
  "alert-receiver": "alertReceiver",
  "memory-scaler": "memoryScaler",
  "rule-sync": "ruleSync",
  "appmonitor-dead-letter": "deadLetter",
};

/** The environment variables the values set, by container: the template expression of each. */
export const ENV_VALUES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "alert-receiver": { LOG_LEVEL: `include "appmonitor.value" (list $ "logLevel") | quote` },
  "memory-scaler": {
    PROMETHEUS_URL: `include "appmonitor.value" (list $ "prometheusUrl") | quote`,
    ALLOW_UNVERIFIED_ALERTS: `include "appmonitor.allowUnverifiedAlerts" $ | quote`,
    DEFAULT_MAX_MEMORY: `include "appmonitor.value" (list $ "defaultMaxMemory") | quote`,
    ALERTMANAGER_URL: `include "appmonitor.value" (list $ "alertmanagerUrl") | quote`,
    LOG_LEVEL: `include "appmonitor.value" (list $ "logLevel") | quote`,
    PAUSE_SCALING: `include "appmonitor.value" (list $ "pauseScaling") | quote`,
    REQUIRE_SENDER_IDENTITY: `include "appmonitor.requireSenderIdentity" $ | quote`,
  },
  "rule-sync": {
    PROMETHEUS_URL: `include "appmonitor.value" (list $ "prometheusUrl") | quote`,
    ALERTMANAGER_URL: `include "appmonitor.value" (list $ "alertmanagerUrl") | quote`,
    METRIC_SOURCE: `include "appmonitor.value" (list $ "metricSource") | quote`,
    RULE_LABELS: `include "appmonitor.ruleLabels" $ | quote`,
    ALERT_SEVERITY: `include "appmonitor.alertSeverity" $ | quote`,
    LOG_LEVEL: `include "appmonitor.value" (list $ "logLevel") | quote`,
    REQUIRE_SENDER_IDENTITY: `include "appmonitor.requireSenderIdentity" $ | quote`,
  },
};

/** A NetworkPolicy peer: the selectors of one `from` entry. */
export interface NetworkPeer {
  readonly namespaceSelector: { readonly matchLabels: Readonly<Record<string, string>> };
  readonly podSelector?: { readonly matchLabels: Readonly<Record<string, string>> };
}

const inNamespace = (name: string, pod?: string): NetworkPeer => ({
  namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": name } },
  ...(pod === undefined ? {} : { podSelector: { matchLabels: { "app.kubernetes.io/name": pod } } }),
});

/**
 * Each peer knative/network/'s NetworkPolicies name, as they name it, by its key in
 * `values.networkPolicies`, whose `namespaceSelector` (and `podSelector`, for a peer that has one)
 * replace it; absent values (kept from a release before them) fall back to these.
 */
export const NETWORK_PEERS: Readonly<Record<string, NetworkPeer>> = {
  alertmanager: inNamespace("monitoring", "alertmanager"),
  prometheus: inNamespace("monitoring", "prometheus"),
  knativeEventing: inNamespace("knative-eventing"),
  knativeServing: inNamespace("knative-serving"),
};

/** The annotation of memory-scaler's Pod template that changes with the ceilings' ConfigMap (Helm's own: not in knative/). */
export const CEILINGS_CHECKSUM_ANNOTATION = "appmonitor.kubedemo.com/ceilings-checksum";

/** The workload that reads the ceilings' ConfigMap as its environment. */
const CEILINGS_READER = "memory-scaler";

/** The containers that get `WATCH_NAMESPACES` from `values.watchNamespaces`. */
export const SCOPED_CONTAINERS: ReadonlySet<string> = new Set(["memory-scaler", "rule-sync"]);

/** The ClusterRoleBindings that become RoleBindings in each watched namespace. */
export const SCOPED_BINDINGS: ReadonlySet<string> = new Set(["appmonitor-memory-scaler", "appmonitor-rule-sync", "appmonitor-source"]);

/** The webhook token's Secret as knative/ names it (the chart makes it, or takes yours: `webhook.existingSecret`). */
export const WEBHOOK_SECRET = "appmonitor-webhook";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };

/** What a marker stands for in the YAML text: a scalar, a block under a key, or lines in place of a list item or map entry. */
type Hole = { readonly kind: "scalar"; readonly expr: string } | { readonly kind: "block"; readonly expr: string } | { readonly kind: "lines"; readonly lines: (indent: string) => string[] };

/** Markers in one document's YAML and what replaces them. */
class Holes {
  readonly holes = new Map<string, Hole>();
  add(hole: Hole): string {
    const marker = `HELMHOLE${String(this.holes.size).padStart(3, "0")}X`;
    this.holes.set(marker, hole);
    return marker;
  }
  /** The YAML text with each marker replaced. @throws Error when a marker was lost (a bug here). */
  fill(text: string): string {
    const out = text.split("\n").flatMap((line) => {
      const m = /^(\s*)(- )?(?:([^\s:][^:]*): )?(HELMHOLE\d{3}X)(?:: \S+)?$/.exec(line);
      const hole = m?.[4] === undefined ? undefined : this.holes.get(m[4]);
      if (!m || !hole || hole.kind === "scalar") return [line];
      const indent = m[1] ?? "";
      if (hole.kind === "lines") return hole.lines(indent + (m[2] ?? ""));
      return [`${indent}${m[2] ?? ""}${m[3]}:`, `${indent}  {{- ${hole.expr} | nindent ${indent.length + (m[2] ? 4 : 2)} }}`];
    }).join("\n");
    let filled = out;
    for (const [marker, hole] of this.holes) if (hole.kind === "scalar") filled = filled.replaceAll(marker, `{{ ${hole.expr} }}`);
    if (/HELMHOLE\d{3}X/.test(filled)) throw new Error(`a template hole was not filled: ${/.*HELMHOLE\d{3}X.*/.exec(filled)?.[0]}`);
    return filled;
  }
}

const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** Every string of `value` with the sentinel namespace templated. */
function templateNamespace(value: Json, holes: Holes, namespace: string): Json {
  if (typeof value === "string") return value.includes(NAMESPACE_SENTINEL) ? value.replaceAll(NAMESPACE_SENTINEL, holes.add({ kind: "scalar", expr: namespace })) : value;
  if (Array.isArray(value)) return value.map((v) => templateNamespace(v, holes, namespace));
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templateNamespace(v, holes, namespace)]));
  return value;
}

/** The image hole of a container, when its image is one of {@link IMAGE_KEYS}. */
function imageHole(image: string, holes: Holes): string {
  const repository = image.replace(/@sha256:[0-9a-f]{64}$/, "").replace(/:[\w.-]+$/, "");
  const key = IMAGE_KEYS[repository];
  if (key === undefined) throw new Error(`image ${image}: not one of the chart's images (${Object.keys(IMAGE_KEYS).join(", ")}); add it to IMAGE_KEYS and values.images`);
  return holes.add({ kind: "scalar", expr: `include "appmonitor.image" (list $ "${key}")` });
}

/** The Pod spec of a Pod, or of a Deployment's or Knative Service's Pod template, or undefined. */
function podSpecOf(o: Obj): Obj | undefined {
  if (o.kind === "Pod") return isObj(o.spec) ? o.spec : undefined;
  return isObj(o.spec) && isObj(o.spec.template) && isObj(o.spec.template.spec) ? o.spec.template.spec : undefined;
}

/** The containers of {@link podSpecOf}, or undefined. */
function podContainers(o: Obj): Obj[] | undefined {
  const spec = podSpecOf(o);
  return spec && Array.isArray(spec.containers) ? spec.containers.filter(isObj) : undefined;
}

/** Knative Serving's annotations of a revision's scale bounds, which `values.replicas` sets for a Knative Service. */
export const MIN_SCALE_ANNOTATION = "autoscaling.knative.dev/min-scale";
export const MAX_SCALE_ANNOTATION = "autoscaling.knative.dev/max-scale";

/**
 * The scheduling values on a Pod spec (`appmonitor.podScheduling`: imagePullSecrets, nodeSelector,
 * tolerations, affinity, priorityClassName), each only when set, so the defaults render knative/'s.
 */
function schedulingHole(holes: Holes): string {
  return holes.add({ kind: "lines", lines: (indent) => [
    `${indent}{{- with include "appmonitor.podScheduling" $ }}`,
    `${indent}{{- . | nindent ${indent.length} }}`,
    `${indent}{{- end }}`,
  ] });
}

/**
 * `values.replicas.<key>` on a workload: a Deployment's `spec.replicas`; a Knative Service's
 * min-scale (Serving's autoscaler owns its replica count), and its max-scale raised to at least
 * that, which Serving would otherwise refuse. Unset, knative/'s own.
 */
function templateReplicas(o: Obj, key: string, holes: Holes): void {
  if (o.kind === "Deployment" && isObj(o.spec) && typeof o.spec.replicas === "number") {
    o.spec.replicas = holes.add({ kind: "scalar", expr: `include "appmonitor.replicas" (list $ "${key}" ${o.spec.replicas})` });
  }
  const metadata = isObj(o.spec) && isObj(o.spec.template) && isObj(o.spec.template.metadata) ? o.spec.template.metadata : undefined;
  const annotations = isObj(metadata?.annotations) ? metadata.annotations : undefined;
  if (o.kind !== "Service" || annotations === undefined) return;
  const min = Number(annotations[MIN_SCALE_ANNOTATION] ?? 0);
  if (annotations[MIN_SCALE_ANNOTATION] !== undefined) annotations[MIN_SCALE_ANNOTATION] = holes.add({ kind: "scalar", expr: `include "appmonitor.replicas" (list $ "${key}" ${min}) | quote` });
  const max = annotations[MAX_SCALE_ANNOTATION];
  if (max !== undefined) annotations[MAX_SCALE_ANNOTATION] = holes.add({ kind: "scalar", expr: `max ${Number(max)} (include "appmonitor.replicas" (list $ "${key}" 0) | int) | toString | quote` });
}

/** Fills the holes of one workload's Pod template, or a Pod's spec (containers, the webhook Secret volume, scheduling, replicas). */
function templatePodSpec(o: Obj, holes: Holes): void {
  const name = isObj(o.metadata) ? String(o.metadata.name) : "";
  const workloadKey = WORKLOAD_KEYS[name];
  if (workloadKey !== undefined) templateReplicas(o, workloadKey, holes);
  for (const container of podContainers(o) ?? []) {
    const cname = String(container.name);
    container.image = imageHole(String(container.image), holes);
    if (workloadKey !== undefined && container.resources !== undefined) container.resources = holes.add({ kind: "block", expr: `include "appmonitor.resources" (list $ "${workloadKey}")` });
    const env = Array.isArray(container.env) ? container.env.filter(isObj) : [];
    for (const entry of env) {
      const expr = ENV_VALUES[cname]?.[String(entry.name)];
      if (expr !== undefined) entry.value = holes.add({ kind: "scalar", expr });
    }
    if (SCOPED_CONTAINERS.has(cname)) {
      env.push({ name: holes.add({ kind: "lines", lines: (indent) => [
        `${" ".repeat(indent.length - 2)}{{- with $.Values.watchNamespaces }}`,
        `${indent}name: WATCH_NAMESPACES`,
        `${" ".repeat(indent.length)}value: {{ join "," . | quote }}`,
        `${" ".repeat(indent.length - 2)}{{- end }}`,
      ] }) });
      container.env = env;
    }
  }
  const template = isObj(o.spec) && isObj(o.spec.template) ? o.spec.template : undefined;
  if (name === CEILINGS_READER && template !== undefined) {
    const metadata = isObj(template.metadata) ? template.metadata : {};
    const annotations = isObj(metadata.annotations) ? metadata.annotations : {};
    annotations[CEILINGS_CHECKSUM_ANNOTATION] = holes.add({ kind: "scalar", expr: `include (print $.Template.BasePath "/${ceilingsTemplateFile()}") $ | sha256sum | quote` });
    template.metadata = { ...metadata, annotations };
  }
  const spec = podSpecOf(o);
  if (spec !== undefined) spec[schedulingHole(holes)] = "x";
  for (const volume of Array.isArray(spec?.volumes) ? spec.volumes.filter(isObj) : []) {
    if (isObj(volume.secret) && volume.secret.secretName === WEBHOOK_SECRET) volume.secret.secretName = holes.add({ kind: "scalar", expr: `include "appmonitor.webhookSecretName" $` });
  }
}

/** A JSON value as a Helm template expression that builds it (`dict`, `list`, quoted strings). */
function helmLiteral(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `(list ${value.map(helmLiteral).join(" ")})`;
  if (isObj(value)) return `(dict ${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)} ${helmLiteral(v)}`).join(" ")})`;
  throw new Error(`no Helm literal for ${JSON.stringify(value)}`);
}

/**
 * Fills the holes of a NetworkPolicy: each `from` peer's selectors from `values.networkPolicies`.
 * @throws Error naming a peer that is not one of {@link NETWORK_PEERS} (knative/network/ changed: add it there and to values).
 */
function templateNetworkPolicy(o: Obj, holes: Holes): void {
  const rules = isObj(o.spec) && Array.isArray(o.spec.ingress) ? o.spec.ingress.filter(isObj) : [];
  for (const peer of rules.flatMap((rule) => (Array.isArray(rule.from) ? rule.from.filter(isObj) : []))) {
    const key = Object.keys(NETWORK_PEERS).find((k) => JSON.stringify(NETWORK_PEERS[k]) === JSON.stringify(peer));
    if (key === undefined) throw new Error(`NetworkPolicy ${String((o.metadata as Obj).name)}: peer ${JSON.stringify(peer)} is not one of NETWORK_PEERS (${Object.keys(NETWORK_PEERS).join(", ")})`);
    for (const selector of ["namespaceSelector", "podSelector"] as const) {
      if (peer[selector] === undefined) continue;
      peer[selector] = holes.add({ kind: "block", expr: `toYaml (dig "${key}" "${selector}" ${helmLiteral(peer[selector])} ($.Values.networkPolicies | default dict))` });
    }
  }
}

/** The template file of the ceilings' ConfigMap (knative/admission/appmonitor-ceilings.yaml, as {@link templateFile} names it). */
const ceilingsTemplateFile = (): string => `admission-${CEILINGS_CONFIGMAP}.yaml`;

/** `kind/name` of an object, as the chart's file and condition names read. */
const keyOf = (o: RenderedObject) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`;

/**
 * One object as template text (a `---` document), holes filled.
 * @param namespace the expression of the install's namespace (`$.Release.Namespace`, or `.` inside a range).
 * @param releaseLabel its `release` label becomes `prometheusRelease`'s (none when that is empty).
 */
export function objectTemplate(object: RenderedObject, namespace = "$.Release.Namespace", releaseLabel = false): string {
  const holes = new Holes();
  const o = templateNamespace(structuredClone(object) as unknown as Json, holes, namespace) as Obj;
  const metadata = o.metadata as Obj;
  const annotations = isObj(metadata.annotations) ? metadata.annotations : undefined;
  if (annotations) {
    delete annotations[ORIGIN_ANNOTATION];
    if (Object.keys(annotations).length === 0) delete metadata.annotations;
  }
  const labels = isObj(metadata.labels) ? metadata.labels : {};
  labels[holes.add({ kind: "lines", lines: (indent) => [`${indent}{{- include "appmonitor.labels" $ | nindent ${indent.length} }}`] })] = "x";
  if (releaseLabel && RELEASE_LABEL in labels) {
    delete labels[RELEASE_LABEL];
    labels[holes.add({ kind: "lines", lines: (indent) => [`${indent}{{- with include "appmonitor.prometheusRelease" $ }}`, `${indent}${RELEASE_LABEL}: {{ . | quote }}`, `${indent}{{- end }}`] })] = "x";
  }
  metadata.labels = labels;
  if (podContainers(o)) templatePodSpec(o, holes);
  if (o.kind === "ConfigMap" && metadata.name === CEILINGS_CONFIGMAP) {
    // Each key from values.ceilings ("" unset), whatever knative/ ships.
    o.data = Object.fromEntries(CEILINGS.map((c) => [c.variable, holes.add({ kind: "scalar", expr: `include "appmonitor.ceiling" (list $ "${c.key}") | quote` })]));
  }
  if (o.kind === "NetworkPolicy") templateNetworkPolicy(o, holes);
  if (o.kind === "ApiServerSource" && isObj(o.spec)) {
    o.spec.namespaceSelector = holes.add({ kind: "block", expr: `include "appmonitor.namespaceSelector" $` });
  }
  // Helm reads YAML 1.1, where a bare Off (an enum value of the CRD) is false: quote such strings.
  return `---\n${holes.fill(stringify(o, { lineWidth: 0, version: "1.1" }).trimEnd())}\n`;
}

/** A ClusterRoleBinding of {@link SCOPED_BINDINGS} as the template that binds cluster-wide, or in each watched namespace. */
function bindingTemplate(binding: RenderedObject): string {
  const roleBinding = { ...structuredClone(binding), kind: "RoleBinding", metadata: { ...structuredClone(binding.metadata), namespace: "WATCHED" } } as RenderedObject;
  const scoped = objectTemplate(roleBinding).replace(/^(\s*)namespace: WATCHED$/m, "$1namespace: {{ . }}");
  return [
    "{{- if not $.Values.watchNamespaces }}",
    objectTemplate(binding).trimEnd(),
    "{{- else }}",
    "{{- range $.Values.watchNamespaces }}",
    scoped.trimEnd(),
    "{{- end }}",
    "{{- end }}",
    "",
  ].join("\n");
}

/**
 * The file an object came from (origin annotation, relative to its profile's root), e.g.
 * `rbac/memory-scaler.yaml`, as a template file name: `templates/rbac-memory-scaler.yaml`. A file
 * of knative/eventing-only/'s own (the only one without a folder) is named for that folder.
 */
function templateFile(object: RenderedObject): string {
  const origin = object.metadata.annotations?.[ORIGIN_ANNOTATION];
  const file = origin === undefined ? undefined : /path: (\S+)/.exec(origin)?.[1]?.replace(/^(\.\.\/)+/, "");
  if (file === undefined) throw new Error(`${keyOf(object)}: no ${ORIGIN_ANNOTATION} annotation (render with buildMetadata: [originAnnotations])`);
  const named = file.includes("/") ? file : `eventing-only/${file}`;
  return `templates/${named.replace(/\.ya?ml$/, "").replaceAll("/", "-")}.yaml`;
}

/**
 * The chart's generated templates, by file name (`templates/rbac-memory-scaler.yaml`, …), each
 * headed by a line naming its source. Objects the two profiles share are unconditional; an object
 * of one profile only, or that differs between them, is rendered for its profile only.
 * @throws Error on an object without an origin, an image the chart does not know, or a Namespace
 *   that is not the sentinel one.
 */
export function chartTemplates(profiles: RenderedProfiles): Map<string, string> {
  const files = new Map<string, string[]>();
  const add = (file: string, text: string) => files.set(file, [...(files.get(file) ?? []), text]);
  const byKey = (list: readonly RenderedObject[]) => new Map(list.map((o) => [keyOf(o), o]));
  const serving = byKey(profiles.serving);
  const eventingOnly = byKey(profiles["eventing-only"]);
  const strip = (o: RenderedObject | undefined) => {
    if (o === undefined) return undefined;
    const copy = structuredClone(o) as { metadata: { annotations?: Record<string, string> } };
    delete copy.metadata.annotations?.[ORIGIN_ANNOTATION];
    return JSON.stringify(copy);
  };
  for (const key of [...new Set([...serving.keys(), ...eventingOnly.keys()])]) {
    const s = serving.get(key);
    const e = eventingOnly.get(key);
    const any = (s ?? e) as RenderedObject;
    if (any.kind === "Namespace") {
      if (any.metadata.name !== NAMESPACE_SENTINEL) throw new Error(`Namespace ${any.metadata.name}: the profiles were not rendered with the sentinel namespace`);
      continue;
    }
    if (any.kind === "CustomResourceDefinition") continue;
    const render = (o: RenderedObject) => {
      if (o.kind === "NetworkPolicy") return `{{- if include "appmonitor.networkPoliciesEnabled" $ }}\n${objectTemplate(o).trimEnd()}\n{{- end }}\n`;
      return o.kind === "ClusterRoleBinding" && SCOPED_BINDINGS.has(o.metadata.name) ? bindingTemplate(o) : objectTemplate(o);
    };
    if (s && e && strip(s) === strip(e)) {
      add(templateFile(s), render(s));
      continue;
    }
    for (const [profile, o] of [["serving", s], ["eventing-only", e]] as const) {
      if (o) add(templateFile(o), `{{- if eq $.Values.profile "${profile}" }}\n${render(o).trimEnd()}\n{{- end }}\n`);
    }
  }
  return new Map([...files].sort(([a], [b]) => a.localeCompare(b)).map(([file, texts]) => [
    file,
    `{{- /* Generated by scripts/release/build-chart.ts from knative/ (${file.slice("templates/".length)}); edit knative/, not this file. */}}\n${texts.join("")}`,
  ]));
}

/** The named template that holds kube-prometheus-stack's values routing the alerts, for NOTES.txt. */
export const ALERTMANAGER_VALUES_TEMPLATE = "appmonitor.kubePrometheusStackValues";

/**
 * `templates/_alertmanager.tpl`: {@link ALERTMANAGER_VALUES_TEMPLATE}, the values of
 * scripts/alertmanager-routing.ts with alert-receiver's address in the release's namespace, so
 * what `helm install` prints is what docs/install.md gives.
 * @throws Error when the values hold template syntax of their own (Helm would run it).
 */
export function alertmanagerValuesTemplate(): string {
  const text = kubePrometheusStackValuesYaml(NAMESPACE_SENTINEL);
  if (text.includes("{{")) throw new Error("the kube-prometheus-stack values hold {{, which Helm would run as a template");
  return [
    "{{- /* Generated by scripts/release/build-chart.ts from scripts/alertmanager-routing.ts; edit that, not this file. */}}",
    `{{- define "${ALERTMANAGER_VALUES_TEMPLATE}" -}}`,
    text.replaceAll(NAMESPACE_SENTINEL, "{{ .Release.Namespace }}").trimEnd(),
    "{{- end }}",
    "",
  ].join("\n");
}

/** The named template that holds the chart's values.yaml as JSON: `appmonitor.value`'s defaults. */
export const DEFAULTS_TEMPLATE = "appmonitor.defaults";

/**
 * `templates/_defaults.tpl`: {@link DEFAULTS_TEMPLATE}, the chart's default values (values.yaml,
 * parsed) as JSON. `helm upgrade --reuse-values` replaces values.yaml with the last release's
 * values, so a key added since has no value there; `appmonitor.value` falls back to this.
 * @throws Error when the values hold template syntax (Helm would run it).
 */
export function defaultsTemplate(values: Readonly<Record<string, unknown>>): string {
  const json = JSON.stringify(values);
  // Only {{ opens an action: JSON has it only inside a string.
  if (json.includes("{{")) throw new Error("the chart's values hold {{, which Helm would run as a template");
  return [
    "{{- /* Generated by scripts/release/build-chart.ts from values.yaml; edit that, not this file. */}}",
    `{{- define "${DEFAULTS_TEMPLATE}" -}}`,
    json,
    "{{- end }}",
    "",
  ].join("\n");
}

/** Chart.yaml's annotation that holds the release's digest of each image by its key in `values.images` (JSON), which `appmonitor.image` pins an untagged image by. */
export const DIGESTS_ANNOTATION = "appmonitor.kubedemo.com/image-digests";

/** The label kube-prometheus-stack's Prometheus selects rules and monitors by (`release: <its release>`); the chart's `prometheusRelease`. */
export const RELEASE_LABEL = "release";

/** Each kind of knative/monitoring/ and its toggle under `values.monitoring` (`monitoring.<key>.enabled`). */
export const MONITORING_TOGGLES: Readonly<Record<string, string>> = { PodMonitor: "podMonitor", PrometheusRule: "selfAlerts" };

/**
 * `templates/monitoring.yaml`: knative/monitoring/'s objects (the PodMonitor, the alerts on
 * appmonitor), each with its `release` label from `prometheusRelease`, each rendered where the
 * cluster serves its kind of prometheus-operator's API and its toggle ({@link MONITORING_TOGGLES})
 * and `monitoring.enabled` are on; elsewhere it could not be created.
 * @throws Error when an object holds template syntax of its own (Helm would run it), or is of a kind without a toggle.
 */
export function monitoringTemplate(objects: readonly RenderedObject[]): string {
  const templates = objects.map((o) => {
    if (JSON.stringify(o).includes("{{")) throw new Error(`${keyOf(o)} holds {{, which Helm would run as a template`);
    const toggle = MONITORING_TOGGLES[o.kind];
    if (toggle === undefined) throw new Error(`${keyOf(o)}: no toggle for kind ${o.kind}; add it to MONITORING_TOGGLES and values.monitoring`);
    return [
      `{{- if and (include "appmonitor.monitoringEnabled" (list $ "${toggle}")) ($.Capabilities.APIVersions.Has "${o.apiVersion}/${o.kind}") }}`,
      objectTemplate(o, "$.Release.Namespace", true).trimEnd(),
      "{{- end }}",
    ].join("\n");
  });
  return ["{{- /* Generated by scripts/release/build-chart.ts from knative/monitoring/; edit that, not this file. */}}", ...templates, ""].join("\n");
}

/** The workloads (the eventing-only profile's Deployments of {@link WORKLOAD_KEYS}), each with its readiness probe's path. */
function workloadsOf(profiles: RenderedProfiles): { name: string; key: string; object: RenderedObject; readinessPath: string }[] {
  return profiles["eventing-only"].filter((o) => o.kind === "Deployment" && WORKLOAD_KEYS[o.metadata.name] !== undefined).map((o) => {
    const container = podContainers(o as unknown as Obj)?.[0];
    const probe = isObj(container?.readinessProbe) && isObj(container.readinessProbe.httpGet) ? container.readinessProbe.httpGet : undefined;
    if (typeof probe?.path !== "string") throw new Error(`${keyOf(o)}: no readinessProbe.httpGet.path on its first container`);
    return { name: o.metadata.name, key: WORKLOAD_KEYS[o.metadata.name] as string, object: o, readinessPath: probe.path };
  }).sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * `templates/poddisruptionbudgets.yaml`: for each workload whose `values.replicas` is above 1, a
 * PodDisruptionBudget (`maxUnavailable: 1`) over its Pods (the Deployment's selector, which the
 * Knative Service's revisions' Pods carry too), so a drain keeps one serving. None at one replica:
 * there it could only block the drain (maxUnavailable 0) or allow what no budget prevents.
 */
export function disruptionBudgetsTemplate(profiles: RenderedProfiles): string {
  const budgets = workloadsOf(profiles).map(({ name, key, object }) => {
    const selector = (object.spec as { selector?: unknown } | undefined)?.selector;
    if (!isObj(selector)) throw new Error(`${keyOf(object)}: no spec.selector`);
    const budget = {
      apiVersion: "policy/v1", kind: "PodDisruptionBudget",
      metadata: { name, namespace: NAMESPACE_SENTINEL, labels: { "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "appmonitor" } },
      spec: { maxUnavailable: 1, selector },
    } as unknown as RenderedObject;
    return [`{{- if gt (include "appmonitor.replicas" (list $ "${key}" 0) | int) 1 }}`, objectTemplate(budget).trimEnd(), "{{- end }}"].join("\n");
  });
  return ["{{- /* Generated by scripts/release/build-chart.ts from knative/ (the workloads); the chart's own objects. */}}", ...budgets, ""].join("\n");
}

/** The name of the `helm test` Pod. */
export const RELEASE_TEST_POD = "appmonitor-test";

/** The image the `helm test` Pod runs its script with (node is on its PATH): alert-receiver's, one the release ships. */
const RELEASE_TEST_IMAGE_OF = "alert-receiver";

/**
 * `templates/tests/release-test.yaml`: the `helm test` Pod (`helm.sh/hook: test`), which runs
 * `script` (scripts/release/release-test.mjs) with `node` in alert-receiver's image. Its
 * environment: `READINESS_URLS`, each workload's readiness endpoint through its Service
 * (`http://<name>.<namespace>.svc.cluster.local<path>`, port 80 in both profiles); `SELF_ALERTS`,
 * the alert names of knative/monitoring/'s PrometheusRule, and `PROMETHEUS_URL` (`prometheusUrl`),
 * empty when `monitoring.selfAlerts` is off (no check). Scheduled as the workloads are.
 * @throws Error when the script holds `{{` (Helm would run it), or a workload has no readiness path.
 */
export function releaseTestTemplate(profiles: RenderedProfiles, monitoring: readonly RenderedObject[], script: string): string {
  if (script.includes("{{")) throw new Error("the release test's script holds {{, which Helm would run as a template");
  const workloads = workloadsOf(profiles);
  const image = podContainers(workloads.find((w) => w.name === RELEASE_TEST_IMAGE_OF)?.object as unknown as Obj)?.[0];
  if (image === undefined) throw new Error(`no ${RELEASE_TEST_IMAGE_OF} workload for the release test's image`);
  const urls = Object.fromEntries(workloads.map((w) => [w.name, `http://${w.name}.${NAMESPACE_SENTINEL}.svc.cluster.local${w.readinessPath}`]));
  const alerts = monitoring.filter((o) => o.kind === "PrometheusRule").flatMap((o) =>
    ((o.spec as { groups?: { rules?: { alert?: string }[] }[] } | undefined)?.groups ?? []).flatMap((g) => (g.rules ?? []).flatMap((r) => (r.alert ? [r.alert] : []))));
  const pod = {
    apiVersion: "v1", kind: "Pod",
    metadata: {
      name: RELEASE_TEST_POD, namespace: NAMESPACE_SENTINEL,
      labels: { "app.kubernetes.io/name": RELEASE_TEST_POD, "app.kubernetes.io/part-of": "appmonitor" },
      // Kept after it ran (until the next helm test), so `kubectl logs` shows why it failed.
      annotations: { "helm.sh/hook": "test", "helm.sh/hook-delete-policy": "before-hook-creation" },
    },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      containers: [{
        name: "check",
        image: image.image,
        command: ["node", "--input-type=module", "-e", script],
        env: [
          { name: "READINESS_URLS", value: JSON.stringify(urls) },
          { name: "SELF_ALERTS", value: JSON.stringify(alerts) },
          { name: "PROMETHEUS_URL", value: "PROMETHEUS_URL_HOLE" },
        ],
        resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "128Mi" } },
        securityContext: image.securityContext ?? null,
      }],
    },
  } as unknown as RenderedObject;
  const text = objectTemplate(pod).replace("PROMETHEUS_URL_HOLE", '{{ include "appmonitor.testPrometheusUrl" $ | quote }}');
  return `{{- /* Generated by scripts/release/build-chart.ts from knative/ and scripts/release/release-test.mjs; edit those, not this file. */}}\n${text}`;
}

/**
 * `templates/eventing-event-policy.yaml`: knative/eventing/event-policy.yaml's EventPolicy (who may
 * send to the Broker), rendered with `requireSenderIdentity` only: Eventing's webhook refuses an
 * EventPolicy while its `authentication-oidc` feature is off, which that value requires on.
 * @param objects its objects, in namespace {@link NAMESPACE_SENTINEL}.
 * @throws Error when an object holds template syntax of its own (Helm would run it).
 */
export function eventPolicyTemplate(objects: readonly RenderedObject[]): string {
  for (const o of objects) if (JSON.stringify(o).includes("{{")) throw new Error(`${keyOf(o)} holds {{, which Helm would run as a template`);
  return [
    "{{- /* Generated by scripts/release/build-chart.ts from knative/eventing/event-policy.yaml; edit that, not this file. */}}",
    '{{- if eq (include "appmonitor.requireSenderIdentity" $) "true" }}',
    ...objects.map((o) => objectTemplate(o).trimEnd()),
    "{{- end }}",
    "",
  ].join("\n");
}
