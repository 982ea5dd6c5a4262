// The stack runs the shipped Eventing-only profile, not a rendering of its own: its overlay
// (test/harness/stack/stack-profile.ts) rendered by kustomize over a copy of knative/ differs from
// `kubectl kustomize knative/eventing-only` only where this machine needs it (no PROMETHEUS_URL, so ALLOW_UNVERIFIED_ALERTS, images used as imported, K_SINK without Eventing), and in another
// namespace only by that namespace.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { renderStackProfile, isEventingObject } from "../../harness/stack/stack-profile.ts";
import { kubectlBinary, kustomize, type Manifest } from "../../support/knative.ts";
import { objectKey, overlayDifferences } from "../../support/profiles.ts";
import { tempDir } from "../../support/temp-dir.ts";

async function render(options: Parameters<typeof renderStackProfile>[1]): Promise<Manifest[]> {
  const kubectl = await kubectlBinary();
  const scratch = await tempDir("appmonitor-stack-profile");
  try {
    return await renderStackProfile(path.join(scratch.path, "work"), options, async (dir) => (await promisify(execFile)(kubectl, ["kustomize", dir], { maxBuffer: 32 << 20 })).stdout);
  } finally {
    await scratch.remove();
  }
}

/** Every difference between the shipped profile and the stack's, as `key path: shipped → stack`. */
function differences(shipped: Manifest[], stack: Manifest[], key = objectKey): string[] {
  const byKey = new Map(stack.map((o) => [key(o), o]));
  assert.deepEqual([...byKey.keys()].sort(), shipped.map(key).sort(), "the same objects");
  return shipped.flatMap((o) => overlayDifferences(o, byKey.get(key(o))).map((d) => `${objectKey(o)} ${d.path}: ${JSON.stringify(d.shipped)} → ${JSON.stringify(d.rendered)}`));
}

const pullPolicy = (name: string) => `apps/v1 Deployment appmonitor/${name} /spec/template/spec/containers/0/imagePullPolicy: undefined → "IfNotPresent"`;
const common = [
  ...["alert-receiver", "appmonitor-dead-letter", "memory-scaler", "rule-sync"].map(pullPolicy),
  ...["memory-scaler", "rule-sync"].map((name) => `apps/v1 Deployment appmonitor/${name} /spec/template/spec/containers/0/env/0/value: "http://prometheus-operated.monitoring.svc.cluster.local:9090" → ""`),
  `apps/v1 Deployment appmonitor/memory-scaler /spec/template/spec/containers/0/env/1/value: "false" → "true"`,
];

test("with Eventing: the shipped profile but for PROMETHEUS_URL and the pull policy", async () => {
  const [shipped, stack] = await Promise.all([kustomize("knative/eventing-only"), render({ sink: "sinkbinding" })]);
  assert.deepEqual(differences(shipped, stack).sort(), [...common].sort());
});

test("on the operator stack the shipped PROMETHEUS_URL stays: the kube-prometheus-stack address exists there", async () => {
  const [shipped, stack] = await Promise.all([kustomize("knative/eventing-only"), render({ sink: "sinkbinding", shippedPrometheus: true })]);
  assert.deepEqual(differences(shipped, stack).sort(), common.filter((d) => !d.includes("/env/")).sort());
});

test("without Eventing: alert-receiver's K_SINK is memory-scaler's Service, the one more difference", async () => {
  const [shipped, stack] = await Promise.all([kustomize("knative/eventing-only"), render({ sink: "memory-scaler" })]);
  const found = differences(shipped, stack);
  const env = "apps/v1 Deployment appmonitor/alert-receiver /spec/template/spec/containers/0/env: ";
  assert.deepEqual(found.filter((d) => !d.startsWith(env)).sort(), [...common].sort());
  const receiver = stack.find((o) => o.kind === "Deployment" && o.metadata.name === "alert-receiver") as unknown as { spec: { template: { spec: { containers: { env: unknown[] }[] } } } };
  const shippedEnv = (shipped.find((o) => o.kind === "Deployment" && o.metadata.name === "alert-receiver") as unknown as typeof receiver).spec.template.spec.containers[0]?.env ?? [];
  assert.deepEqual(receiver.spec.template.spec.containers[0]?.env, [{ name: "K_SINK", value: "http://memory-scaler.appmonitor.svc.cluster.local" }, ...shippedEnv]);
});

test("in another namespace: the same objects there, and the same differences", async () => {
  const [shipped, stack] = await Promise.all([kustomize("knative/eventing-only"), render({ sink: "sinkbinding", namespace: "elsewhere" })]);
  const moved = (o: Manifest) => objectKey(o).replace(" elsewhere/", " appmonitor/").replace(/ \/elsewhere$/, " /appmonitor");
  const found = differences(shipped, stack, moved).filter((d) => !/"appmonitor" → "elsewhere"|appmonitor:memory-scaler|namespaces\/appmonitor\//.test(d));
  assert.deepEqual(found.sort(), [...common].sort());
  assert.ok(stack.every((o) => o.metadata.namespace === undefined || o.metadata.namespace === "elsewhere"));
});

test("the Eventing objects are the *.knative.dev kinds, the dead-letter sink, its RBAC and NetworkPolicy, and the ApiServerSource's RBAC", async () => {
  const stack = await render({ sink: "sinkbinding" });
  const eventing = stack.filter(isEventingObject).map((o) => `${o.kind}/${o.metadata.name}`).sort();
  assert.deepEqual(eventing, [
    "ApiServerSource/appmonitors", "Broker/default", "ClusterRole/appmonitor-dead-letter", "ClusterRole/appmonitor-source", "ClusterRoleBinding/appmonitor-dead-letter",
    "ClusterRoleBinding/appmonitor-source", "Deployment/appmonitor-dead-letter", "NetworkPolicy/appmonitor-dead-letter", "PingSource/rule-sync-resync", "Service/appmonitor-dead-letter",
    "ServiceAccount/appmonitor-dead-letter", "ServiceAccount/appmonitor-source", "SinkBinding/alert-receiver",
    ...["memory-scaler-alert-firing", "memory-scaler-rollouts-ping", "rule-sync-appmonitor-add", "rule-sync-appmonitor-delete", "rule-sync-appmonitor-update", "rule-sync-resync", "rule-sync-resync-ping"].map((t) => `Trigger/${t}`),
  ].sort());
});

test("the Serving profile (knative/): the shipped one but for the images, by digest, PROMETHEUS_URL and ALLOW_UNVERIFIED_ALERTS", async () => {
  const digest = (n: number) => `sha256:${String(n).repeat(64)}`;
  const imageDigests = { "ghcr.io/kubedemo/appmonitor-alert-receiver": digest(1), "ghcr.io/kubedemo/appmonitor-memory-scaler": digest(2), "ghcr.io/kubedemo/appmonitor-rule-sync": digest(3), "ghcr.io/kubedemo/appmonitor-dead-letter": digest(4) };
  const [shipped, stack] = await Promise.all([kustomize("knative"), render({ sink: "sinkbinding", profile: "serving", imageDigests })]);
  const ksvc = (name: string) => `serving.knative.dev/v1 Service appmonitor/${name} /spec/template/spec/containers/0`;
  assert.deepEqual(differences(shipped, stack).sort(), [
    // The Knative Services are named as the functions, but for the sink's (appmonitor-dead-letter).
    ...Object.entries(imageDigests).map(([name, d]) => {
      const fn = name.slice("ghcr.io/kubedemo/appmonitor-".length);
      return `${ksvc(fn === "dead-letter" ? "appmonitor-dead-letter" : fn)}/image: "${name}:latest" → "${name}@${d}"`;
    }),
    ...["memory-scaler", "rule-sync"].map((name) => `${ksvc(name)}/env/0/value: "http://prometheus-operated.monitoring.svc.cluster.local:9090" → ""`),
    `${ksvc("memory-scaler")}/env/1/value: "false" → "true"`,
  ].sort());
});
