// The Vertical Pod Autoscaler on the real node, so the comparison with it (`npm run bench -- vs-vpa`)
// cannot rot: its recommender, updater and admission-controller and metrics-server run as Pods
// there from their projects' own manifests (test/harness/stack/vpa-install.ts), metrics-server
// serves the resource metrics API through the API server's aggregation layer, and the recommender
// writes a memory recommendation for memhog's Deployment (`InPlaceOrRecreate`,
// `RequestsAndLimits`, as the comparison runs it) from the working set it reads there.
//
// On the run's shared real-node stack (real-node-file.ts); the VPA is removed at the end, so the
// run's later files' Pods are admitted without its webhook.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { REAL_NODE, REAL_NODE_PLACEMENT } from "../harness/stack/real-node-config.ts";
import { installVpa, METRICS_API_SERVICE, uninstallVpa, VPA_DEPLOYMENTS, type VpaInstallation } from "../harness/stack/vpa-install.ts";
import { VPA_NAMESPACE } from "../harness/stack/vpa-manifests.ts";
import { ceil, parseQuantity } from "../../functions/lib/quantity.ts";
import { memhogManifest } from "../support/memory-scaler.ts";
import { type RealNodeFile, startRealNodeFile } from "../support/real-node-file.ts";
import { waitFor } from "../support/stack.ts";
import { REAL_NODE_SETUP_TIMEOUT_MS } from "../support/setup-timeout.ts";

const Mi = 1 << 20;
const NS = "vpa-smoke";
let stack: RealNodeFile | undefined;
let vpa: VpaInstallation | undefined;
let installing = false;

before(async () => {
  stack = await startRealNodeFile("appmonitor-vpa-", { sets: { vpa: true } });
  installing = true;
  vpa = await installVpa(stack.state, (line) => process.stderr.write(`# ${line}\n`));
  await stack.namespace(NS);
}, { timeout: REAL_NODE_SETUP_TIMEOUT_MS });

after(async () => {
  // Also after an install that failed part way: the shared stack's later files need it gone.
  if (stack && installing) await uninstallVpa(stack.state).catch((error: Error) => process.stderr.write(`# VPA uninstall: ${error.message}\n`));
  await stack?.stop();
});

test("the VPA's recommender, updater and admission-controller and metrics-server run as Pods on the real node, and the metrics API is Available", async (t) => {
  const { core } = stack as RealNodeFile;
  const pods = (await core.listNamespacedPod({ namespace: VPA_NAMESPACE })).items;
  for (const name of VPA_DEPLOYMENTS) {
    const pod = pods.find((p) => p.metadata?.name?.startsWith(`${name}-`) && p.status?.phase === "Running");
    assert.ok(pod, `a Running Pod of ${name}`);
    assert.equal(pod.spec?.nodeName, REAL_NODE.name, `${name} on the real node`);
  }
  const service = await (stack as RealNodeFile).kc.makeApiClient(k8s.ApiregistrationV1Api).readAPIService({ name: METRICS_API_SERVICE });
  assert.equal(service.status?.conditions?.find((c) => c.type === "Available")?.status, "True");
  t.diagnostic(`VPA ${vpa?.vpaVersion}, metrics-server ${vpa?.metricsServerVersion}: installed and serving in ${vpa?.seconds.toFixed(1)} s`);
});

test("memhog holding 320Mi: metrics-server reports its working set, and the recommender writes a memory target that covers it, above its 250Mi floor", { timeout: 300_000 }, async (t) => {
  const { kc, apps } = stack as RealNodeFile;
  const manifest = await memhogManifest();
  const container = manifest.spec?.template.spec?.containers[0];
  assert.ok(container !== undefined && manifest.spec?.template.spec !== undefined);
  container.env = [{ name: "MEMHOG_TARGET", value: "320Mi" }, { name: "MEMHOG_RATE", value: "256Mi" }];
  container.imagePullPolicy = "IfNotPresent";
  container.resources = { requests: { memory: "384Mi", cpu: "10m" }, limits: { memory: "512Mi" } };
  Object.assign(manifest.spec.template.spec, REAL_NODE_PLACEMENT, { terminationGracePeriodSeconds: 1 });
  await apps.createNamespacedDeployment({ namespace: NS, body: { ...manifest, metadata: { ...manifest.metadata, namespace: NS } } });
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await custom.createNamespacedCustomObject({
    group: "autoscaling.k8s.io", version: "v1", plural: "verticalpodautoscalers", namespace: NS,
    body: {
      apiVersion: "autoscaling.k8s.io/v1", kind: "VerticalPodAutoscaler", metadata: { name: "memhog" },
      spec: {
        targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "memhog" },
        updatePolicy: { updateMode: "InPlaceOrRecreate" },
        resourcePolicy: { containerPolicies: [{ containerName: "*", controlledValues: "RequestsAndLimits" }] },
      },
    },
  });

  const t0 = Date.now();
  const metrics = new k8s.Metrics(kc);
  const workingSet = await waitFor("memhog's working set from the metrics API", async () => {
    const list = await metrics.getPodMetrics(NS).catch(() => undefined);
    const memory = list?.items.find((p) => p.metadata.name.startsWith("memhog-"))?.containers.find((c) => c.name === "memhog")?.usage.memory;
    const bytes = memory === undefined ? 0 : Number(ceil(parseQuantity(memory)));
    return bytes >= 320 * Mi ? bytes : undefined;
  }, 120_000, 1000);
  const metricsSeconds = (Date.now() - t0) / 1000;

  type Recommendation = { containerName?: string; target?: { memory?: string }; lowerBound?: { memory?: string }; upperBound?: { memory?: string } };
  // The recommender's target is a high percentile of the peaks it has seen plus its safety margin,
  // and never below its floor (--pod-recommendation-min-memory-mb, 250Mi): held above that floor,
  // memhog's target can only come from the working set the recommender read. Its first ones may
  // predate memhog's full 320Mi.
  const seen = new Set<string>();
  const recommendation = await waitFor("the recommender's target for memhog covering the 320Mi it holds", async () => {
    const object = (await custom.getNamespacedCustomObject({ group: "autoscaling.k8s.io", version: "v1", plural: "verticalpodautoscalers", namespace: NS, name: "memhog" })) as { status?: { recommendation?: { containerRecommendations?: Recommendation[] } } };
    const found = object.status?.recommendation?.containerRecommendations?.find((r) => r.containerName === "memhog" && r.target?.memory);
    if (found?.target?.memory) seen.add(found.target.memory);
    return found && Number(ceil(parseQuantity(found.target?.memory ?? "0"))) >= 320 * Mi ? found : undefined;
  }, 180_000, 1000).catch((error: Error) => {
    throw new Error(`${error.message}; targets seen: ${[...seen].join(", ") || "none"}`, { cause: error });
  });
  t.diagnostic(`targets seen ${[...seen].join(" → ")}; working set ${(workingSet / Mi).toFixed(0)}Mi in the metrics API ${metricsSeconds.toFixed(1)} s after the create; recommendation ${((Date.now() - t0) / 1000).toFixed(1)} s after: target ${recommendation.target?.memory}, bounds ${recommendation.lowerBound?.memory}..${recommendation.upperBound?.memory}`);
});
