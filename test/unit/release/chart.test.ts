// The Helm chart (scripts/release/build-chart.ts) against the kustomize install it is generated
// from: built, linted by the real helm (test/harness/bins/helm), rendered by `helm template` and
// compared object by object with `kubectl kustomize` of each profile, in the shipped namespace and
// in another. Equal but for what is Helm's (its labels, the webhook Secret it makes, the Namespace
// and the CRD it leaves to --create-namespace and crds/) and the images, which name the release's
// registry. So the chart and knative/ cannot drift; and each value does what values.yaml says.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { buildChart, renderMonitoring, renderProfiles } from "../../../scripts/release/build-chart.ts";
import { CEILINGS_CHECKSUM_ANNOTATION, IMAGE_KEYS, type RenderedObject } from "../../../scripts/release/chart-templates.ts";
import { buildBinaries } from "../../../scripts/lib/binaries.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { objectKey, overlayDifferences } from "../../support/profiles.ts";
import { tempDir, type TempDir } from "../../support/temp-dir.ts";

const run = promisify(execFile);
let scratch: TempDir;
let chart = "";
let helm = "";
let kubectl = "";

before(async () => {
  const bin = await buildBinaries();
  [helm, kubectl] = [path.join(bin, "helm"), path.join(bin, "kubectl")];
  scratch = await tempDir("appmonitor-chart");
  chart = await buildChart(scratch.path, {}, kubectl);
});
after(() => scratch.remove());

/** `helm template` of the chart, its objects. @throws Error with helm's stderr. */
async function template(namespace: string, set: readonly string[] = []): Promise<RenderedObject[]> {
  try {
    const { stdout } = await run(helm, ["template", "appmonitor", chart, "--namespace", namespace, ...set.flatMap((s) => ["--set", s])], { maxBuffer: 32 << 20 });
    return parseAllDocuments(stdout).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null);
  } catch (error) {
    throw new Error(`helm template: ${(error as { stderr?: string }).stderr ?? String(error)}`, { cause: error });
  }
}

const HELM_LABELS = ["app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"];

/** An object with Helm's labels gone and each image named by its key in values.images. */
function normalized(o: RenderedObject, images: Readonly<Record<string, string>>): RenderedObject {
  const copy = structuredClone(o) as RenderedObject & { metadata: { labels?: Record<string, string> } };
  for (const label of HELM_LABELS) delete copy.metadata.labels?.[label];
  if (copy.metadata.labels && Object.keys(copy.metadata.labels).length === 0) delete copy.metadata.labels;
  // Helm's own: memory-scaler rolls when the ceilings' ConfigMap changes.
  const podMetadata = (copy as { spec?: { template?: { metadata?: { annotations?: Record<string, string> } } } }).spec?.template?.metadata;
  delete podMetadata?.annotations?.[CEILINGS_CHECKSUM_ANNOTATION];
  if (podMetadata?.annotations && Object.keys(podMetadata.annotations).length === 0) delete podMetadata.annotations;
  const containers = (copy as { spec?: { template?: { spec?: { containers?: { image: string }[] } } } }).spec?.template?.spec?.containers ?? [];
  for (const c of containers) {
    const repository = c.image.replace(/@sha256:[0-9a-f]{64}$/, "").replace(/:[\w.-]+$/, "");
    c.image = `image of ${images[repository] ?? `unknown ${repository}`}`;
  }
  return copy;
}

/** The chart's image repositories (at the default registry), by key, for {@link normalized}. */
async function chartImages(): Promise<Record<string, string>> {
  const values = parseAllDocuments(await readFile(path.join(chart, "values.yaml"), "utf8"))[0]?.toJS() as { image: { registry: string }; images: Record<string, { name: string }> };
  return Object.fromEntries(Object.entries(values.images).map(([key, image]) => [`${values.image.registry}/${image.name}`, key]));
}

/** Every difference between kustomize's objects and helm's, as `key path: kustomize → helm`, and the objects only one has. */
async function drift(profile: "serving" | "eventing-only", namespace: string): Promise<{ differences: string[]; onlyKustomize: string[]; onlyHelm: string[] }> {
  const [kustomized, helmed, images] = await Promise.all([
    renderProfiles(kubectl, { namespace }).then((p) => p[profile]),
    template(namespace, [`profile=${profile}`]),
    chartImages(),
  ]);
  const k = new Map(kustomized.map((o) => [objectKey(o), normalized(o, IMAGE_KEYS)]));
  const h = new Map(helmed.map((o) => [objectKey(o), normalized(o, images)]));
  return {
    differences: [...k].flatMap(([key, o]) => (h.has(key) ? overlayDifferences(o, h.get(key)).map((d) => `${key} ${d.path}: ${JSON.stringify(d.shipped)} → ${JSON.stringify(d.rendered)}`) : [])),
    onlyKustomize: [...k.keys()].filter((key) => !h.has(key)).sort(),
    onlyHelm: [...h.keys()].filter((key) => !k.has(key)).sort(),
  };
}

describe("the chart", () => {
  for (const set of [[], ["profile=serving"], ["watchNamespaces={team-a,team-b}"], ["webhook.existingSecret=mine", "prometheusUrl=", "allowUnverifiedAlerts=true"]]) {
    test(`helm lint passes${set.length ? ` with ${set.join(" ")}` : ""}`, async () => {
      const { stdout } = await run(helm, ["lint", "--strict", chart, ...set.flatMap((s) => ["--set", s])]);
      assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  }

  test("its CRD is knative/'s, byte for byte, in crds/ (Helm installs it once and keeps it)", async () => {
    assert.equal(await readFile(path.join(chart, "crds", "appmonitor.yaml"), "utf8"), await readFile(path.join(repoRoot, "knative", "crd", "appmonitor.yaml"), "utf8"));
  });

  test("Chart.yaml carries package.json's version as version and appVersion", async () => {
    const { version } = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
    const facts = parseAllDocuments(await readFile(path.join(chart, "Chart.yaml"), "utf8"))[0]?.toJS() as { version: string; appVersion: string };
    assert.deepEqual([facts.version, facts.appVersion], [version, version]);
  });

  for (const profile of ["serving", "eventing-only"] as const) {
    for (const namespace of ["appmonitor", "tools"]) {
      test(`${profile} in namespace ${namespace}: helm template renders what kubectl kustomize does, but for Helm's own`, async () => {
        const found = await drift(profile, namespace);
        assert.deepEqual(found.differences, []);
        assert.deepEqual(found.onlyKustomize, ["apiextensions.k8s.io/v1 CustomResourceDefinition /appmonitors.kubedemo.com", `v1 Namespace /${namespace}`]);
        assert.deepEqual(found.onlyHelm, [`v1 ConfigMap ${namespace}/appmonitor-dashboard`, `v1 Secret ${namespace}/appmonitor-webhook`]);
      });
    }
  }

  test("where prometheus-operator's API is, it renders knative/monitoring/'s PodMonitor and the alerts on appmonitor as kustomize does, but for Helm's own", async () => {
    const namespace = "tools";
    const [monitors, helmed] = await Promise.all([renderMonitoring(kubectl, namespace), template(namespace)]);
    assert.equal(helmed.some((o) => o.kind === "PodMonitor"), false, "not without the API");
    const { stdout } = await run(helm, ["template", "appmonitor", chart, "--namespace", namespace, "--api-versions", "monitoring.coreos.com/v1/PodMonitor", "--show-only", "templates/monitoring.yaml"]);
    const rendered = parseAllDocuments(stdout).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null);
    assert.deepEqual(rendered.map(objectKey).sort(), monitors.map(objectKey).sort());
    const byKey = new Map(rendered.map((o) => [objectKey(o), normalized(o, {})]));
    for (const o of monitors) assert.deepEqual(overlayDifferences(normalized(o, {}), byKey.get(objectKey(o))), [], objectKey(o));
  });
});

describe("the chart's values", () => {
  const find = (objects: RenderedObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name) as
    (RenderedObject & { spec: Record<string, unknown> & { template: { spec: { containers: { env: { name: string; value: string }[]; image: string }[]; volumes?: { secret?: { secretName: string } }[] } } } }) | undefined;
  /** A container's literal env (not what it reads from a ConfigMap). */
  const env = (o: ReturnType<typeof find>) => Object.fromEntries((o?.spec.template.spec.containers[0]?.env ?? []).filter((e) => !("valueFrom" in e)).map((e) => [e.name, e.value]));

  test("image.registry is the one value that moves every image, digests kept", async () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const objects = await template("appmonitor", ["profile=eventing-only", "image.registry=registry.example.com/team", `images.memoryScaler.digest=${digest}`]);
    const images = objects.flatMap((o) => (o as unknown as { spec?: { template?: { spec?: { containers?: { image: string }[] } } } }).spec?.template?.spec?.containers?.map((c) => c.image) ?? []).sort();
    const { version } = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
    assert.deepEqual(images, [
      `registry.example.com/team/appmonitor-alert-receiver:${version}`,
      `registry.example.com/team/appmonitor-dead-letter:${version}`,
      `registry.example.com/team/appmonitor-memory-scaler:${version}@${digest}`,
      `registry.example.com/team/appmonitor-rule-sync:${version}`,
    ]);
  });

  test("the default profile is eventing-only: Deployments, no Knative Service", async () => {
    const objects = await template("appmonitor");
    assert.deepEqual(objects.filter((o) => o.kind === "Deployment").map((o) => o.metadata.name).sort(), ["alert-receiver", "appmonitor-dead-letter", "memory-scaler", "rule-sync"]);
    assert.equal(objects.some((o) => o.apiVersion.startsWith("serving.knative.dev/")), false);
  });

  test("prometheusUrl, allowUnverifiedAlerts, defaultMaxMemory, alertmanagerUrl, metricSource, ruleLabels, alertSeverity, logLevel and pauseScaling reach the functions' environment", async () => {
    const objects = await template("appmonitor", ["profile=eventing-only", "prometheusUrl=", "defaultMaxMemory=16Gi", "alertmanagerUrl=", "metricSource=kube-state-metrics", "ruleLabels.release=kps", "ruleLabels.team=a", "alertSeverity=critical", "logLevel=debug", "pauseScaling=true"]);
    assert.deepEqual(env(find(objects, "Deployment", "memory-scaler")), { PROMETHEUS_URL: "", ALLOW_UNVERIFIED_ALERTS: "false", DEFAULT_MAX_MEMORY: "16Gi", ALERTMANAGER_URL: "", LOG_LEVEL: "debug", PAUSE_SCALING: "true", REQUIRE_SENDER_IDENTITY: "false" });
    const defaults = env(find(await template("appmonitor"), "Deployment", "memory-scaler"));
    assert.deepEqual([defaults.PAUSE_SCALING, defaults.ALLOW_UNVERIFIED_ALERTS], ["false", "false"], "not paused, and no scale without Prometheus, by default");
    const unverified = env(find(await template("appmonitor", ["prometheusUrl=", "allowUnverifiedAlerts=true"]), "Deployment", "memory-scaler"));
    assert.deepEqual([unverified.PROMETHEUS_URL, unverified.ALLOW_UNVERIFIED_ALERTS], ["", "true"]);
    // Values kept from a release before allowUnverifiedAlerts (helm upgrade --reuse-values): off.
    assert.equal(env(find(await template("appmonitor", ["allowUnverifiedAlerts=null"]), "Deployment", "memory-scaler")).ALLOW_UNVERIFIED_ALERTS, "false");
    assert.deepEqual(env(find(objects, "Deployment", "rule-sync")), { PROMETHEUS_URL: "", ALERTMANAGER_URL: "", METRIC_SOURCE: "kube-state-metrics", RULE_LABELS: "release=kps,team=a", ALERT_SEVERITY: "critical", LOG_LEVEL: "debug", REQUIRE_SENDER_IDENTITY: "false" });
  });

  test("ceilings: the ConfigMap the policy and memory-scaler read holds them, memory-scaler reads each key, and a change rolls it", async () => {
    const configMap = (objects: RenderedObject[]) => (objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "appmonitor-ceilings") as unknown as { data: Record<string, string> }).data;
    const checksum = (objects: RenderedObject[]) => (find(objects, "Deployment", "memory-scaler")?.spec.template as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations?.[CEILINGS_CHECKSUM_ANNOTATION];
    const unset = await template("appmonitor");
    assert.deepEqual(configMap(unset), { MAX_MEMORY: "", MAX_MEM_MULTIPLIER: "", MIN_COOLDOWN_SECONDS: "", LEAK_GUARD_MAX_SCALES: "", LEAK_GUARD_MIN_WINDOW_SECONDS: "" });
    const set = await template("appmonitor", ["ceilings.maxMemory=16Gi", "ceilings.maxMemMultiplier=1.5", "ceilings.minCooldownSeconds=600", "ceilings.leakGuardMaxScales=2", "ceilings.leakGuardMinWindowSeconds=3600"]);
    assert.deepEqual(configMap(set), { MAX_MEMORY: "16Gi", MAX_MEM_MULTIPLIER: "1.5", MIN_COOLDOWN_SECONDS: "600", LEAK_GUARD_MAX_SCALES: "2", LEAK_GUARD_MIN_WINDOW_SECONDS: "3600" });
    const refs = (find(set, "Deployment", "memory-scaler")?.spec.template.spec.containers[0]?.env as { name: string; valueFrom?: { configMapKeyRef?: { name: string; key: string } } }[]).flatMap((e) => (e.valueFrom?.configMapKeyRef?.name === "appmonitor-ceilings" ? [`${e.name}=${e.valueFrom.configMapKeyRef.key}`] : []));
    assert.deepEqual(refs, Object.keys(configMap(set)).map((k) => `${k}=${k}`));
    assert.match(checksum(unset) ?? "", /^[0-9a-f]{64}$/);
    assert.notEqual(checksum(set), checksum(unset), "memory-scaler's Pod template changes with the ceilings");
    // Values kept from a release before the ceilings (helm upgrade --reuse-values): no bound.
    assert.deepEqual(configMap(await template("appmonitor", ["ceilings=null"])), configMap(unset));
    const binding = set.find((o) => o.kind === "ValidatingAdmissionPolicyBinding" && o.metadata.name === "appmonitor-ceilings") as unknown as { spec: { paramRef: { name: string; namespace: string } } };
    assert.deepEqual([binding.spec.paramRef.name, binding.spec.paramRef.namespace], ["appmonitor-ceilings", "appmonitor"]);
  });

  test("prometheusRelease is the one value the rules' labels, the PodMonitor and the alerts on appmonitor follow; ruleLabels add to it", async () => {
    const withApi = async (set: string[]) => {
      const { stdout } = await run(helm, ["template", "appmonitor", chart, "--namespace", "appmonitor", "--api-versions", "monitoring.coreos.com/v1/PodMonitor", ...set.flatMap((v) => ["--set", v])], { maxBuffer: 32 << 20 });
      return parseAllDocuments(stdout).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null);
    };
    const releaseOf = (objects: RenderedObject[]) => [
      env(find(objects, "Deployment", "rule-sync")).RULE_LABELS,
      ...["PodMonitor", "PrometheusRule"].map((kind) => objects.find((o) => o.kind === kind)?.metadata.labels?.release),
    ];
    assert.deepEqual(releaseOf(await withApi([])), ["release=prometheus", "prometheus", "prometheus"]);
    assert.deepEqual(releaseOf(await withApi(["prometheusRelease=kps"])), ["release=kps", "kps", "kps"]);
    assert.deepEqual(releaseOf(await withApi(["prometheusRelease=", "ruleLabels.team=a"])), ["team=a", undefined, undefined]);
    // Values kept from a release before prometheusRelease and monitoring (helm upgrade --reuse-values): ruleLabels' release, and the monitoring objects.
    assert.deepEqual(releaseOf(await withApi(["prometheusRelease=null", "monitoring=null", "ruleLabels.release=old"])), ["release=old", "old", "old"]);
    assert.equal((await withApi(["monitoring.enabled=false"])).some((o) => o.kind === "PodMonitor" || o.kind === "PrometheusRule"), false);
  });

  test("webhook.existingSecret: alert-receiver mounts yours and the chart makes none; else it makes appmonitor-webhook with a 64-character token", async () => {
    const mine = await template("appmonitor", ["webhook.existingSecret=mine"]);
    assert.equal(find(mine, "Secret", "appmonitor-webhook"), undefined);
    const receiver = find(mine, "Deployment", "alert-receiver");
    assert.equal(receiver?.spec.template.spec.volumes?.[0]?.secret?.secretName, "mine");
    const made = find(await template("appmonitor"), "Secret", "appmonitor-webhook") as unknown as { data: { token: string } };
    assert.equal(Buffer.from(made.data.token, "base64").toString().length, 64);
  });

  test("watchNamespaces: RoleBindings in each listed namespace instead of ClusterRoleBindings, the source watches those, WATCH_NAMESPACES set; Nodes and the dead-letter sink's Events stay cluster-wide", async () => {
    const objects = await template("appmonitor", ["profile=eventing-only", "watchNamespaces={team-a,team-b}"]);
    const bindings = objects.filter((o) => o.kind === "ClusterRoleBinding").map((o) => o.metadata.name).sort();
    // The sink records a dead letter on whatever AppMonitor it names, a namespace left out of the scope included;
    // a TokenReview is cluster-scoped.
    assert.deepEqual(bindings, ["appmonitor-dead-letter", "appmonitor-memory-scaler-nodes", "appmonitor-memory-scaler-sender-review", "appmonitor-rule-sync-sender-review"]);
    const roleBindings = objects.filter((o) => o.kind === "RoleBinding").map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();
    assert.deepEqual(roleBindings, [
      "appmonitor/appmonitor-memory-scaler-events",
      ...["team-a", "team-b"].flatMap((ns) => ["appmonitor-memory-scaler", "appmonitor-rule-sync", "appmonitor-source"].map((n) => `${ns}/${n}`)),
    ].sort());
    const nodes = objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === "appmonitor-memory-scaler-nodes") as unknown as { rules: unknown[] };
    assert.deepEqual(nodes.rules, [{ apiGroups: [""], resources: ["nodes"], verbs: ["list"] }]);
    assert.deepEqual(find(objects, "ApiServerSource", "appmonitors")?.spec.namespaceSelector, { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: ["team-a", "team-b"] }] });
    for (const name of ["memory-scaler", "rule-sync"]) assert.equal(env(find(objects, "Deployment", name)).WATCH_NAMESPACES, "team-a,team-b", name);
    assert.equal(env(find(objects, "Deployment", "alert-receiver")).WATCH_NAMESPACES, undefined);
  });

  test("requireSenderIdentity: REQUIRE_SENDER_IDENTITY of memory-scaler and rule-sync, and the Broker's EventPolicy, which Eventing refuses while its OIDC feature is off, only then", async () => {
    const policies = (objects: RenderedObject[]) => objects.filter((o) => o.kind === "EventPolicy").map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    const off = await template("team");
    assert.deepEqual(policies(off), []);
    const on = await template("team", ["requireSenderIdentity=true"]);
    for (const name of ["memory-scaler", "rule-sync"]) {
      assert.equal(env(find(off, "Deployment", name)).REQUIRE_SENDER_IDENTITY, "false", name);
      assert.equal(env(find(on, "Deployment", name)).REQUIRE_SENDER_IDENTITY, "true", name);
    }
    assert.deepEqual(policies(on), ["team/appmonitor-broker"]);
    // Values kept from a release before it (helm upgrade --reuse-values): off.
    assert.equal(env(find(await template("team", ["requireSenderIdentity=null"]), "Deployment", "memory-scaler")).REQUIRE_SENDER_IDENTITY, "false");
  });

  test("networkPolicies: one per function, each peer's selectors from its value, none when disabled", async () => {
    type Policy = { spec: { podSelector: { matchLabels: Record<string, string> }; ingress: { from: Record<string, unknown>[] }[] } };
    const peers = (objects: RenderedObject[], name: string) => (find(objects, "NetworkPolicy", name) as unknown as Policy).spec.ingress.map((rule) => rule.from);
    const shipped = await template("appmonitor");
    assert.deepEqual(shipped.filter((o) => o.kind === "NetworkPolicy").map((o) => o.metadata.name).sort(), ["alert-receiver", "appmonitor-dead-letter", "memory-scaler", "rule-sync"]);
    const moved = await template("appmonitor", [
      "networkPolicies.alertmanager.namespaceSelector.matchLabels.team=obs", "networkPolicies.alertmanager.podSelector.matchLabels.app=am",
      "networkPolicies.prometheus.namespaceSelector.matchLabels.team=obs", "networkPolicies.knativeEventing.namespaceSelector.matchLabels.team=eventing",
    ]);
    const obs = { "kubernetes.io/metadata.name": "monitoring", team: "obs" };
    assert.deepEqual(peers(moved, "alert-receiver"), [
      [{ namespaceSelector: { matchLabels: obs }, podSelector: { matchLabels: { "app.kubernetes.io/name": "alertmanager", app: "am" } } }],
      [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "knative-serving" } } }],
      [{ namespaceSelector: { matchLabels: obs }, podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } } }],
    ]);
    assert.deepEqual(peers(moved, "memory-scaler")[0], [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "knative-eventing", team: "eventing" } } }]);
    // Values kept from a release before them (helm upgrade --reuse-values): knative/'s peers.
    const kept = await template("appmonitor", ["networkPolicies=null"]);
    for (const name of ["alert-receiver", "memory-scaler"]) assert.deepEqual(peers(kept, name), peers(shipped, name), name);
    assert.equal((await template("appmonitor", ["networkPolicies.enabled=false"])).some((o) => o.kind === "NetworkPolicy"), false);
  });

  const refused: [string, RegExp][] = [
    ["profile=knative", /profile/],
    ["metricSource=kubelet", /metricSource/],
    ["watchNamespaces={Team_A}", /watchNamespaces/],
    ["images.memoryScaler.digest=latest", /digest/],
    ["imageRegistry=x", /imageRegistry/],
    ["alertSeverity=info", /alertSeverity: info is inhibited/],
    ["prometheusRelease=a b", /prometheusRelease/],
    ["ceilings.maxMemory=lots", /maxMemory/],
    ["ceilings.leakGuardMaxScales=11", /leakGuardMaxScales/],
    ["ceilings.maxMemoryCeiling=1Gi", /maxMemoryCeiling/],
    ["prometheusUrl=", /prometheusUrl is empty: memory-scaler would scale on every alert it is sent, unchecked against Prometheus, so it refuses to start; .*allowUnverifiedAlerts=true/],
    ["allowUnverifiedAlerts=yes", /allowUnverifiedAlerts/],
    ["requireSenderIdentity=yes", /requireSenderIdentity/],
    ["networkPolicies.prometheus.podSelector.matchLabel.app=x", /matchLabel/],
  ];
  for (const [set, names] of refused) {
    test(`a bad value is refused with its name: ${set}`, async () => {
      await assert.rejects(template("appmonitor", [set]), (error: Error) => names.test(error.message));
    });
  }
});
