// The functions' Knative Services rendered as a Deployment and a ClusterIP Service, read back from
// the repository's own knative/services/*.yaml: the Pod template is Knative's, with what Knative
// adds (PORT, K_SERVICE, the port-80 address) and without what only Knative understands.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { repoRoot } from "../../harness/stack/paths.ts";
import { FUNCTION_SELECTOR_LABEL, functionDeployment, functionService } from "../../harness/stack/function-pods.ts";
import { REAL_NODE_PLACEMENT } from "../../harness/stack/real-node-config.ts";
import { FUNCTION_NAMES, type KnativeService } from "../../support/knative.ts";

const services = Object.fromEntries(FUNCTION_NAMES.map((name) => [
  name, parse(readFileSync(path.join(repoRoot, "knative/services", `${name}.yaml`), "utf8")) as KnativeService,
])) as Record<(typeof FUNCTION_NAMES)[number], KnativeService>;

test("each function's Deployment keeps its Knative Pod template: ServiceAccount, image, env, probes, resources, securityContext, volumes", () => {
  for (const name of FUNCTION_NAMES) {
    const ksvc = services[name];
    const deployment = functionDeployment(ksvc);
    const kspec = ksvc.spec.template.spec;
    const pod = deployment.spec?.template.spec;
    const [kcontainer] = kspec.containers;
    const [container] = pod?.containers ?? [];
    assert.equal(deployment.metadata?.namespace, "appmonitor", name);
    assert.equal(deployment.spec?.replicas, 1, name);
    assert.equal(pod?.serviceAccountName, kspec.serviceAccountName, name);
    assert.equal(pod?.automountServiceAccountToken, kspec.automountServiceAccountToken, name);
    assert.deepEqual(pod?.volumes, kspec.volumes, name);
    for (const field of ["name", "image", "ports", "readinessProbe", "livenessProbe", "resources", "securityContext", "volumeMounts"] as const) {
      assert.deepEqual(container?.[field], kcontainer?.[field], `${name} ${field}`);
    }
    for (const e of kcontainer?.env ?? []) assert.ok(container?.env?.some((c) => c.name === e.name && c.value === e.value), `${name} keeps ${e.name}`);
    assert.equal(container?.imagePullPolicy, "IfNotPresent", "imported images, no registry");
    assert.deepEqual(deployment.spec?.selector.matchLabels, { [FUNCTION_SELECTOR_LABEL]: name });
    assert.deepEqual(deployment.spec?.template.metadata?.labels, ksvc.spec.template.metadata?.labels);
  }
});

test("what Knative adds is added (PORT, K_SERVICE, K_CONFIGURATION, K_REVISION) and what only Knative reads is dropped", () => {
  const deployment = functionDeployment(services["memory-scaler"]);
  const env = Object.fromEntries((deployment.spec?.template.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
  assert.equal(env.PORT, "8080");
  assert.equal(env.K_SERVICE, "memory-scaler");
  assert.equal(env.K_CONFIGURATION, "memory-scaler");
  assert.ok(env.K_REVISION);
  assert.ok(!("timeoutSeconds" in (deployment.spec?.template.spec ?? {})), "timeoutSeconds is Knative's");
  assert.ok(!Object.keys(deployment.metadata?.labels ?? {}).some((k) => k.includes("knative.dev")), "no Knative label");
  assert.ok(!Object.keys(deployment.spec?.template.metadata?.annotations ?? {}).some((k) => k.includes("knative.dev")), "no autoscaling annotation");
});

test("env changes replace, add and remove variables; placement puts the Pods on the real node", () => {
  const deployment = functionDeployment(services["memory-scaler"], {
    env: { PROMETHEUS_URL: undefined, LOG_LEVEL: "debug", EXTRA: "1" },
    placement: REAL_NODE_PLACEMENT,
  });
  const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
  assert.ok(!env.some((e) => e.name === "PROMETHEUS_URL"), "removed");
  assert.deepEqual(env.filter((e) => e.name === "LOG_LEVEL"), [{ name: "LOG_LEVEL", value: "debug" }], "replaced, once");
  assert.ok(env.some((e) => e.name === "EXTRA" && e.value === "1"), "added");
  assert.deepEqual(deployment.spec?.template.spec?.nodeSelector, REAL_NODE_PLACEMENT.nodeSelector);
  assert.deepEqual(deployment.spec?.template.spec?.tolerations, REAL_NODE_PLACEMENT.tolerations);
});

test("each function's Service is a ClusterIP on port 80 to its container port, selecting its Deployment's Pods", () => {
  for (const name of FUNCTION_NAMES) {
    const service = functionService(services[name]);
    const deployment = functionDeployment(services[name]);
    assert.equal(service.spec?.type, "ClusterIP");
    assert.deepEqual(service.spec?.ports, [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }]);
    assert.deepEqual(service.spec?.selector, deployment.spec?.selector.matchLabels);
    assert.equal(service.metadata?.namespace, "appmonitor");
  }
});

test("a Knative Service the rendering cannot map is refused with its name", () => {
  const ksvc = services["rule-sync"];
  const twoContainers = { ...ksvc, spec: { template: { ...ksvc.spec.template, spec: { ...ksvc.spec.template.spec, containers: [...ksvc.spec.template.spec.containers, ...ksvc.spec.template.spec.containers] } } } };
  assert.throws(() => functionDeployment(twoContainers), /rule-sync: expected one container/);
  const noNamespace = { ...ksvc, metadata: { name: "rule-sync" } };
  assert.throws(() => functionDeployment(noNamespace), /rule-sync: no namespace/);
});
