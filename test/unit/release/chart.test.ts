// The Helm chart (scripts/release/build-chart.ts) against the kustomize install it is generated
// from: built, linted by the real helm (test/harness/bins/helm), rendered by `helm template` and
// compared object by object with `kubectl kustomize` of each profile, in the shipped namespace and
// in another. Equal but for what is Helm's (its labels, the webhook Secret it makes, the Namespace
// and the CRD it leaves to --create-namespace and crds/, the helm test Pod) and the images, which
// name the release's registry. So the chart and knative/ cannot drift; and each value does what values.yaml says.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { buildChart, renderMonitoring, renderProfiles } from "../../../scripts/release/build-chart.ts";
import { CEILINGS_CHECKSUM_ANNOTATION, IMAGE_KEYS, MAX_SCALE_ANNOTATION, MIN_SCALE_ANNOTATION, RELEASE_TEST_POD, WORKLOAD_KEYS, type RenderedObject } from "../../../scripts/release/chart-templates.ts";
import { buildBinaries } from "../../../scripts/lib/binaries.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { objectKey, overlayDifferences } from "../../support/profiles.ts";
import { releaseCommit } from "../../support/previous-release.ts";
import { tempDir, type TempDir } from "../../support/temp-dir.ts";

const run = promisify(execFile);
let scratch: TempDir;
let chart = "";
let helm = "";
let kubectl = "";

before(async () => {
  const bin = await buildBinaries(process.env, undefined, ["kube", "helm"]);
  [helm, kubectl] = [path.join(bin, "helm"), path.join(bin, "kubectl")];
  scratch = await tempDir("appmonitor-chart");
  chart = await buildChart(scratch.path, {}, kubectl);
});
after(() => scratch.remove());

/** `helm template` of the chart (`args`: more of its flags, e.g. `-f FILE`; `chartDir`: another chart), its output. @throws Error with helm's stderr. */
async function templateText(namespace: string, set: readonly string[] = [], args: readonly string[] = [], chartDir = chart): Promise<string> {
  try {
    return (await run(helm, ["template", "appmonitor", chartDir, "--namespace", namespace, ...args, ...set.flatMap((s) => ["--set", s])], { maxBuffer: 32 << 20 })).stdout;
  } catch (error) {
    throw new Error(`helm template: ${(error as { stderr?: string }).stderr ?? String(error)}`, { cause: error });
  }
}

/** `helm template` of the chart, its objects. @throws Error with helm's stderr. */
async function template(namespace: string, set: readonly string[] = [], args: readonly string[] = [], chartDir = chart): Promise<RenderedObject[]> {
  return parseAllDocuments(await templateText(namespace, set, args, chartDir)).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null);
}

/** prometheus-operator's kinds the chart renders its monitoring objects for, as `helm template --api-versions` takes them. */
const MONITORING_APIS = ["monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/PrometheusRule"].flatMap((api) => ["--api-versions", api]);

/** The scheduling values a production install sets, each rendered into every Pod the chart makes. */
const PRODUCTION_VALUES = [
  "imagePullSecrets[0].name=regcred", "nodeSelector.pool=system", "tolerations[0].key=dedicated", "tolerations[0].operator=Equal",
  "tolerations[0].value=system", "tolerations[0].effect=NoSchedule", "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=100",
  "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname",
  "priorityClassName=system-cluster-critical", "replicas.alertReceiver=2", "replicas.ruleSync=3",
];

/** Every container's image of the objects, sorted. */
const imagesOf = (objects: readonly RenderedObject[]) =>
  objects.flatMap((o) => (o as unknown as { spec?: { template?: { spec?: { containers?: { image: string }[] } } } }).spec?.template?.spec?.containers?.map((c) => c.image) ?? []).sort();

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
  for (const set of [[], ["profile=serving"], ["watchNamespaces={team-a,team-b}"], ["webhook.existingSecret=mine", "prometheusUrl=", "allowUnverifiedAlerts=true"],
    ...["eventing-only", "serving"].map((profile) => [`profile=${profile}`, ...PRODUCTION_VALUES]), ["monitoring.podMonitor.enabled=false", "monitoring.selfAlerts.enabled=false", "dashboard.enabled=false"]]) {
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
        assert.deepEqual(found.onlyHelm, [`v1 ConfigMap ${namespace}/appmonitor-dashboard`, `v1 Pod ${namespace}/${RELEASE_TEST_POD}`, `v1 Secret ${namespace}/appmonitor-webhook`]);
      });
    }
  }

  test("where prometheus-operator's API is, it renders knative/monitoring/'s PodMonitor and the alerts on appmonitor as kustomize does, but for Helm's own", async () => {
    const namespace = "tools";
    const [monitors, helmed] = await Promise.all([renderMonitoring(kubectl, namespace), template(namespace)]);
    assert.equal(helmed.some((o) => o.kind === "PodMonitor"), false, "not without the API");
    const { stdout } = await run(helm, ["template", "appmonitor", chart, "--namespace", namespace, ...MONITORING_APIS, "--show-only", "templates/monitoring.yaml"]);
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

  test("image.registry is the one value that moves every image; a digest pins the tag set with it", async () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const objects = await template("appmonitor", ["profile=eventing-only", "image.registry=registry.example.com/team", "images.memoryScaler.tag=1.0", `images.memoryScaler.digest=${digest}`, `images.ruleSync.digest=${digest}`]);
    const { version } = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
    assert.deepEqual(imagesOf(objects), [
      `registry.example.com/team/appmonitor-alert-receiver:${version}`,
      `registry.example.com/team/appmonitor-dead-letter:${version}`,
      `registry.example.com/team/appmonitor-memory-scaler:1.0@${digest}`,
      `registry.example.com/team/appmonitor-rule-sync:${version}`,
    ], "no tag: the chart's appVersion, which a chart built without digests pins by tag alone");
  });

  test("a release's digests pin the appVersion's images (Chart.yaml), whatever digest older values hold", async () => {
    const pins = Object.fromEntries(Object.values(IMAGE_KEYS).map((key, i) => [key, `sha256:${String(i).repeat(64)}`]));
    const pinned = await buildChart(path.join(scratch.path, "pinned"), { digests: pins }, kubectl);
    const { version } = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
    const expected = Object.entries(IMAGE_KEYS).map(([repository, key]) => `${repository}:${version}@${pins[key]}`).sort();
    assert.deepEqual(imagesOf(await template("appmonitor", [], [], pinned)), expected);
    assert.deepEqual(imagesOf(await template("appmonitor", [`images.memoryScaler.digest=sha256:${"f".repeat(64)}`], [], pinned)), expected);
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
      return template("appmonitor", set, MONITORING_APIS);
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

  /** Every Pod spec the chart renders (the workloads' templates, the helm test Pod's), by `kind/name`. */
  const podSpecs = (objects: RenderedObject[]) => new Map(objects.flatMap((o) => {
    const spec = (o as unknown as { spec?: { template?: { spec?: Record<string, unknown> } } & Record<string, unknown> }).spec;
    const podSpec = o.kind === "Pod" ? spec : spec?.template?.spec;
    return podSpec ? [[`${o.kind}/${o.metadata.name}`, podSpec] as const] : [];
  }));

  for (const profile of ["eventing-only", "serving"] as const) {
    test(`${profile}: imagePullSecrets, nodeSelector, tolerations, affinity and priorityClassName reach every function's Pod template and helm test's Pod; unset, none is there`, async () => {
      const kind = profile === "serving" ? "Service" : "Deployment";
      const specs = podSpecs(await template("appmonitor", [`profile=${profile}`, ...PRODUCTION_VALUES]));
      assert.deepEqual([...specs.keys()].sort(), [...Object.keys(WORKLOAD_KEYS).map((name) => `${kind}/${name}`), `Pod/${RELEASE_TEST_POD}`].sort());
      for (const [key, spec] of specs) {
        assert.deepEqual({ imagePullSecrets: spec.imagePullSecrets, nodeSelector: spec.nodeSelector, tolerations: spec.tolerations, affinity: spec.affinity, priorityClassName: spec.priorityClassName }, {
          imagePullSecrets: [{ name: "regcred" }],
          nodeSelector: { pool: "system" },
          tolerations: [{ key: "dedicated", operator: "Equal", value: "system", effect: "NoSchedule" }],
          affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: "kubernetes.io/hostname" } }] } },
          priorityClassName: "system-cluster-critical",
        }, key);
      }
      for (const [key, spec] of podSpecs(await template("appmonitor", [`profile=${profile}`]))) {
        for (const field of ["imagePullSecrets", "nodeSelector", "tolerations", "affinity", "priorityClassName"]) assert.equal(field in spec, false, `${key} ${field}`);
      }
    });
  }

  test("replicas: a Deployment's spec.replicas; a Knative Service's min-scale, max-scale raised to it; unset, the profile's own", async () => {
    const deployments = await template("appmonitor", ["replicas.alertReceiver=2", "replicas.ruleSync=3", "replicas.memoryScaler=0"]);
    const replicas = (name: string) => (find(deployments, "Deployment", name)?.spec as { replicas?: number }).replicas;
    assert.deepEqual(Object.keys(WORKLOAD_KEYS).map(replicas), [2, 0, 3, 1]);
    const scale = (objects: RenderedObject[], name: string) => {
      const annotations = (find(objects, "Service", name)?.spec.template as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations ?? {};
      return [annotations[MIN_SCALE_ANNOTATION], annotations[MAX_SCALE_ANNOTATION]];
    };
    const shipped = await template("appmonitor", ["profile=serving"]);
    assert.deepEqual(Object.keys(WORKLOAD_KEYS).map((name) => scale(shipped, name)), [["1", "5"], ["0", "3"], ["1", "2"], ["1", "2"]]);
    const set = await template("appmonitor", ["profile=serving", "replicas.alertReceiver=2", "replicas.ruleSync=3", "replicas.memoryScaler=0"]);
    assert.deepEqual(Object.keys(WORKLOAD_KEYS).map((name) => scale(set, name)), [["2", "5"], ["0", "3"], ["3", "3"], ["1", "2"]]);
    // Values kept from a release before replicas (helm upgrade --reuse-values): the profile's own.
    assert.deepEqual((await template("appmonitor", ["replicas=null"])).filter((o) => o.kind === "Deployment").map((o) => (o.spec as { replicas: number }).replicas), [1, 1, 1, 1]);
  });

  for (const profile of ["eventing-only", "serving"] as const) {
    test(`${profile}: a PodDisruptionBudget (maxUnavailable 1, the function's Pods) for each function with more than one replica, none at one`, async () => {
      const budgets = (objects: RenderedObject[]) => objects.filter((o) => o.kind === "PodDisruptionBudget").map((o) => ({ name: o.metadata.name, spec: o.spec }));
      assert.deepEqual(budgets(await template("appmonitor", [`profile=${profile}`, "replicas.alertReceiver=1"])), []);
      const objects = await template("appmonitor", [`profile=${profile}`, "replicas.alertReceiver=2", "replicas.ruleSync=3", "replicas.deadLetter=1"]);
      assert.deepEqual(budgets(objects), ["alert-receiver", "rule-sync"].map((name) => ({ name, spec: { maxUnavailable: 1, selector: { matchLabels: { "app.kubernetes.io/name": name } } } })));
      // The budget selects the function's Pods: the labels of its Pod template.
      for (const name of ["alert-receiver", "rule-sync"]) {
        const labels = (find(objects, profile === "serving" ? "Service" : "Deployment", name)?.spec.template as unknown as { metadata: { labels: Record<string, string> } }).metadata.labels;
        assert.equal(labels["app.kubernetes.io/name"], name);
      }
    });
  }

  test("monitoring.podMonitor.enabled and monitoring.selfAlerts.enabled each turn off their object, dashboard.enabled the dashboard; each where its kind is served", async () => {
    const kinds = async (set: string[], args = MONITORING_APIS) => (await template("appmonitor", set, args)).filter((o) => ["PodMonitor", "PrometheusRule"].includes(o.kind) || o.metadata.name === "appmonitor-dashboard").map((o) => o.kind).sort();
    assert.deepEqual(await kinds([]), ["ConfigMap", "PodMonitor", "PrometheusRule"]);
    assert.deepEqual(await kinds(["monitoring.podMonitor.enabled=false"]), ["ConfigMap", "PrometheusRule"]);
    assert.deepEqual(await kinds(["monitoring.selfAlerts.enabled=false"]), ["ConfigMap", "PodMonitor"]);
    assert.deepEqual(await kinds(["dashboard.enabled=false"]), ["PodMonitor", "PrometheusRule"]);
    assert.deepEqual(await kinds(["monitoring.enabled=false"]), ["ConfigMap"]);
    assert.deepEqual(await kinds([], ["--api-versions", "monitoring.coreos.com/v1/PrometheusRule"]), ["ConfigMap", "PrometheusRule"], "only the PrometheusRule CRD: the PodMonitor could not be created");
  });

  test("helm test's Pod: a test hook in alert-receiver's image, each function's readiness endpoint in the release's namespace, the self-alerts' names and prometheusUrl", async () => {
    const monitors = await renderMonitoring(kubectl, "tools");
    const alertNames = monitors.flatMap((o) => o.kind === "PrometheusRule" ? (o.spec as { groups: { rules: { alert?: string }[] }[] }).groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : []))) : []);
    assert.ok(alertNames.length >= 5, alertNames.join(", "));
    const testPod = async (set: string[]) => {
      const pod = (await template("tools", set)).find((o) => o.kind === "Pod") as RenderedObject & { spec: { containers: { image: string; command: string[]; env: { name: string; value: string }[] }[] } };
      return { pod, env: Object.fromEntries(pod.spec.containers[0]?.env.map((e) => [e.name, e.value]) ?? []) };
    };
    const { pod, env: testEnv } = await testPod(["prometheusUrl=http://prometheus.example:9090"]);
    assert.equal(pod.metadata.annotations?.["helm.sh/hook"], "test");
    assert.match(pod.spec.containers[0]?.image ?? "", /\/appmonitor-alert-receiver:/);
    assert.deepEqual(pod.spec.containers[0]?.command.slice(0, 3), ["node", "--input-type=module", "-e"]);
    assert.equal(pod.spec.containers[0]?.command[3], await readFile(path.join(repoRoot, "scripts", "release", "release-test.mjs"), "utf8"));
    assert.deepEqual(JSON.parse(testEnv.READINESS_URLS ?? ""), Object.fromEntries(Object.keys(WORKLOAD_KEYS).map((name) => [name, `http://${name}.tools.svc.cluster.local/health/readiness`])));
    assert.deepEqual(JSON.parse(testEnv.SELF_ALERTS ?? ""), alertNames);
    assert.equal(testEnv.PROMETHEUS_URL, "http://prometheus.example:9090");
    assert.equal((await testPod(["monitoring.selfAlerts.enabled=false"])).env.PROMETHEUS_URL, "", "no self-alerts of the chart's: none to check");
  });

  test("as a subchart: a values file with global and a parent's keys at the top level renders; a typo inside one of the chart's objects is refused with its name", async () => {
    const file = path.join(scratch.path, "parent-values.yaml");
    await writeFile(file, "global:\n  imageRegistry: registry.example.com\n  storageClass: fast\nenabled: true\nparentOnly:\n  anything: 1\n");
    const objects = await template("appmonitor", [], ["-f", file]);
    assert.ok(objects.some((o) => o.kind === "Deployment" && o.metadata.name === "memory-scaler"));
    const { stdout } = await run(helm, ["lint", "--strict", chart, "-f", file]);
    assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    await writeFile(file, "global: {}\nmonitoring:\n  podMonitr:\n    enabled: false\n");
    await assert.rejects(template("appmonitor", [], ["-f", file]), (error: Error) => /podMonitr/.test(error.message));
  });

  test("webhook.existingSecret, the GitOps setting: two helm template renders are the same, no Secret of the chart's; without it each render makes a new token", async () => {
    const gitops = ["webhook.existingSecret=appmonitor-webhook-sealed"];
    const [first, second] = [await templateText("appmonitor", gitops), await templateText("appmonitor", gitops)];
    assert.equal(first, second);
    assert.equal(parseAllDocuments(first).some((d) => (d.toJS() as RenderedObject | null)?.kind === "Secret"), false);
    assert.equal(find(parseAllDocuments(first).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null), "Deployment", "alert-receiver")?.spec.template.spec.volumes?.[0]?.secret?.secretName, "appmonitor-webhook-sealed");
    // Why: helm template cannot read the cluster, so the chart's own Secret gets a new token each time.
    const token = async () => (find(await template("appmonitor"), "Secret", "appmonitor-webhook") as unknown as { data: { token: string } }).data.token;
    assert.notEqual(await token(), await token());
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
    ["image.registy=x", /registy/],
    ["monitoring.podMonitr.enabled=false", /podMonitr/],
    ["replicas.ruleSinc=2", /ruleSinc/],
    ["replicas.ruleSync=-1", /ruleSync/],
    ["tolerations[0].efect=NoSchedule", /efect/],
    ["affinity.nodeAfinity.x=y", /nodeAfinity/],
    ["imagePullSecrets[0]=regcred", /imagePullSecrets/],
    ["priorityClassName=High_Priority", /priorityClassName/],
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

describe("values written for 0.2.0", () => {
  const oldDigest = `sha256:${"e".repeat(64)}`;
  /** This chart with a template that renders NOTES.txt into a ConfigMap: helm template does not print it. */
  let withNotes = "";
  /** withNotes with 0.2.0's values in place of values.yaml: what `helm upgrade --reuse-values` from 0.2.0 renders with. */
  let reused = "";
  /** 0.2.0's values.yaml as its release packaged it, every digest filled. */
  let oldValues = "";
  before(async () => {
    const commit = await releaseCommit("0.2.0");
    const { stdout } = await run("git", ["show", `${commit}:charts/appmonitor/values.yaml`], { cwd: repoRoot });
    withNotes = path.join(scratch.path, "with-notes");
    await cp(chart, withNotes, { recursive: true });
    const notes = await readFile(path.join(chart, "templates", "NOTES.txt"), "utf8");
    await writeFile(path.join(withNotes, "templates", "notes-as-configmap.yaml"),
      `{{- define "test.notes" }}${notes}{{- end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include "test.notes" . | toJson }}\n`);
    reused = path.join(scratch.path, "reused");
    await cp(withNotes, reused, { recursive: true });
    assert.match(stdout, /eventDisplay:/);
    await writeFile(path.join(reused, "values.yaml"), stdout.replaceAll('digest: ""', `digest: ${oldDigest}`));
    oldValues = path.join(scratch.path, "values-0.2.0.yaml");
    await writeFile(oldValues, stdout.replaceAll('digest: ""', `digest: ${oldDigest}`));
  });

  const notesOf = (objects: RenderedObject[]) => (objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "notes") as unknown as { data: { notes: string } }).data.notes;
  const container = (objects: RenderedObject[], name: string) => (objects.find((o) => o.kind === "Deployment" && o.metadata.name === name) as unknown as
    { spec: { template: { spec: { containers: { env: { name: string; value?: string }[]; resources: unknown }[] } } } }).spec.template.spec.containers[0];
  const envOf = (objects: RenderedObject[], name: string) => Object.fromEntries((container(objects, name)?.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));

  test("helm upgrade --reuse-values from 0.2.0: the schema takes them, each key added since gets values.yaml's default, the images are this chart's, event_display's values are ignored and named", async () => {
    const objects = await template("appmonitor", ["profile=eventing-only"], [], reused);
    const defaults = parseAllDocuments(await readFile(path.join(chart, "values.yaml"), "utf8"))[0]?.toJS() as { resources: { deadLetter: unknown }; alertmanagerUrl: string };
    assert.deepEqual(envOf(objects, "memory-scaler"), {
      PROMETHEUS_URL: "http://prometheus-operated.monitoring.svc.cluster.local:9090", ALLOW_UNVERIFIED_ALERTS: "false", DEFAULT_MAX_MEMORY: "8Gi",
      ALERTMANAGER_URL: defaults.alertmanagerUrl, LOG_LEVEL: "info", PAUSE_SCALING: "false", REQUIRE_SENDER_IDENTITY: "false",
    });
    assert.equal(envOf(objects, "rule-sync").RULE_LABELS, "release=prometheus", "0.2.0's ruleLabels.release");
    const { version } = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
    assert.deepEqual(imagesOf(objects), Object.keys(IMAGE_KEYS).map((repository) => `${repository}:${version}`).sort(), "not 0.2.0's digests");
    assert.deepEqual(container(objects, "appmonitor-dead-letter")?.resources, defaults.resources.deadLetter, "the sink's own resources, not event_display's");
    assert.ok(objects.some((o) => o.kind === "ConfigMap" && o.metadata.name === "appmonitor-dashboard"), "dashboard.enabled's default");
    const notes = notesOf(objects);
    for (const named of ["images.eventDisplay", "resources.deadLetter of 0.2.0", `images.memoryScaler.digest ${oldDigest}`]) assert.ok(notes.includes(named), `NOTES name ${named}:\n${notes}`);
    assert.ok((await template("appmonitor", [], [], reused)).some((o) => o.kind === "Service" && o.apiVersion.startsWith("serving.knative.dev/")), "0.2.0's default profile, serving, is kept");
  });

  test("helm upgrade -f 0.2.0's values.yaml: the schema takes it, and what it ignores is named; this chart's own values name nothing", async () => {
    const objects = await template("appmonitor", [], ["-f", oldValues], withNotes);
    assert.ok(notesOf(objects).includes("images.eventDisplay"));
    assert.equal(notesOf(await template("appmonitor", [], [], withNotes)).includes("WARNING"), false);
  });
});
