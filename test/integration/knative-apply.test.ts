// The install against the real API server of the local stack. Knative's CRDs are not installed
// there, so the Kubernetes kinds and the AppMonitor CRD go through a server-side dry run with
// strict field validation; the Knative Services' Pod templates are dry-run as Pods in the
// namespace, which enforces the restricted Pod Security Standard; the RBAC is applied and asked
// about with SubjectAccessReviews; and the CRD, installed for real, accepts the original demo's
// AppMonitor and refuses invalid ones saying why.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { applyFiles } from "../support/install.ts";
import { FUNCTION_NAMES, INSTALL_NAMESPACE, groupVersion, kubectlBinary, kustomize, manifestFile, servicesByFunction, type Manifest } from "../support/knative.ts";
import { runCommand } from "../support/run-command.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";
import { tempDir } from "../support/temp-dir.ts";

let objects: Manifest[] = [];
let kc: k8s.KubeConfig;

/** Objects of kinds the stack's API server serves: Kubernetes' own and the AppMonitor CRD's. */
const servedHere = (o: Manifest): boolean => !groupVersion(o.apiVersion).group.endsWith("knative.dev");

const CRD_FILE = "knative/crd/appmonitor.yaml";
const CRD_NAME = "appmonitors.kubedemo.com";
/** Field manager of this file's applies (the other test files use their own). */
const FIELD_MANAGER = "appmonitor-knative-tests";

before(async () => {
  objects = await kustomize("knative");
  kc = await adminKubeConfig();
  // Shared with other test files: server-side apply, idempotent in any order.
  await applyFiles("knative/namespace/namespace.yaml", "knative/rbac/alert-receiver.yaml", "knative/rbac/memory-scaler.yaml", "knative/rbac/rule-sync.yaml", "knative/rbac/apiserversource.yaml");
  await ensureGeneratedCrd();
});

/**
 * Whether the served CRD is Established with the generated file's versions (schemas, printer
 * columns, subresources). Read with kubectl, as raw JSON: the client's typed model knows
 * `enum`, `default` and `x-kubernetes-*` under other names and would hide them.
 */
async function generatedCrdServed(): Promise<boolean> {
  const [generated] = await manifestFile(CRD_FILE);
  const result = await runCommand(await kubectlBinary(), ["get", "crd", CRD_NAME, "-o", "json"]);
  if (result.code !== 0) return false;
  const served = JSON.parse(result.stdout) as { spec: { versions: unknown }; status?: { conditions?: { type: string; status: string }[] } };
  const established = served.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ?? false;
  return established && isDeepStrictEqual(served.spec.versions, (generated?.spec as { versions: unknown }).versions);
}

/**
 * Installs the generated AppMonitor CRD for real, unless it is already served as generated:
 * `kubectl apply --server-side` of the file, which keeps every field of the schema (a client
 * that sends the CRD through @kubernetes/client-node's typed model drops `enum`, `default` and
 * `x-kubernetes-*`, and another test process may have done so; `spec.versions` is an atomic
 * list, so the last apply wins, hence --force-conflicts).
 */
async function ensureGeneratedCrd(): Promise<void> {
  if (await generatedCrdServed()) return;
  const kubectl = await kubectlBinary();
  const result = await runCommand(kubectl, ["apply", "--server-side", "--force-conflicts", `--field-manager=${FIELD_MANAGER}`, "-f", path.join(repoRoot, CRD_FILE)]);
  assert.equal(result.code, 0, result.stderr);
  await waitFor("the generated AppMonitor CRD served", generatedCrdServed);
}

/**
 * Runs `check` against the generated CRD. When it fails and the served CRD is no longer the
 * generated one (another test process re-applied it meanwhile), installs it again and retries.
 */
async function againstGeneratedCrd(check: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await ensureGeneratedCrd();
    try {
      await check();
      return;
    } catch (error) {
      if (attempt >= 3 || (await generatedCrdServed())) throw error;
    }
  }
}

/** `kubectl apply --server-side --dry-run=server --validate=strict` of `manifests`. */
async function dryRunApply(manifests: readonly object[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dir = await tempDir("knative-dry-run");
  try {
    const file = path.join(dir.path, "objects.yaml");
    await writeFile(file, manifests.map((m) => stringify(m, { version: "1.1" })).join("---\n"));
    return await runCommand(await kubectlBinary(), ["apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=appmonitor-tests", "-f", file]);
  } finally {
    await dir.remove();
  }
}

describe("server-side dry run", () => {
  test("the API server accepts every Kubernetes and CRD object of the install", async () => {
    const served = objects.filter(servedHere);
    const kinds = new Set(served.map((o) => o.kind));
    for (const kind of ["Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]) assert.ok(kinds.has(kind), kind);
    const result = await dryRunApply(served);
    assert.equal(result.code, 0, result.stderr);
    const accepted = result.stdout.split("\n").filter((line) => line.endsWith("(server dry run)"));
    assert.equal(accepted.length, served.length, result.stdout);
  });

  test("strict validation is on: a misspelt field is refused", async () => {
    const role = structuredClone(objects.find((o) => o.kind === "ClusterRole")) as unknown as Record<string, unknown>;
    role.rulez = role.rules;
    const result = await dryRunApply([role]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /\.rulez: field not declared in schema/);
  });

  test("each Service's Pod template is a valid Pod that meets the namespace's restricted Pod Security Standard", async () => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const services = servicesByFunction(objects);
    for (const name of FUNCTION_NAMES) {
      const { metadata, spec } = services[name].spec.template;
      // Revision-only fields are not part of a PodSpec.
      const { timeoutSeconds: _timeout, containerConcurrency: _concurrency, ...podSpec } = spec;
      const pod = { apiVersion: "v1", kind: "Pod", metadata: { name, labels: metadata?.labels }, spec: podSpec } as k8s.V1Pod;
      const created = await core.createNamespacedPod({ namespace: INSTALL_NAMESPACE, body: pod, dryRun: "All" });
      assert.equal(created.spec?.serviceAccountName, name);
      const tokenMounted = (created.spec?.volumes ?? []).some((v) => v.projected?.sources?.some((s) => s.serviceAccountToken));
      assert.equal(tokenMounted, name !== "alert-receiver", `${name}: API token mounted only where the function calls the API`);
    }
  });

  test("the namespace's Pod Security admission does refuse a Pod that is not restricted", async () => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const container = structuredClone(servicesByFunction(objects)["memory-scaler"].spec.template.spec.containers[0]) as k8s.V1Container;
    delete container.securityContext?.seccompProfile;
    await assert.rejects(
      core.createNamespacedPod({ namespace: INSTALL_NAMESPACE, body: { metadata: { name: "not-restricted" }, spec: { containers: [container] } }, dryRun: "All" }),
      (error: unknown) => {
        assert.ok(error instanceof k8s.ApiException, String(error));
        assert.equal(error.code, 403);
        assert.match((JSON.parse(String(error.body)) as { message: string }).message, /violates PodSecurity "restricted:latest": seccompProfile/);
        return true;
      },
    );
  });
});

describe("RBAC as the API server evaluates it", () => {
  async function allowed(serviceAccount: string, namespace: string, group: string, resource: string, verb: string): Promise<boolean> {
    const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
    const review = await authz.createSubjectAccessReview({
      body: { spec: { user: `system:serviceaccount:${INSTALL_NAMESPACE}:${serviceAccount}`, resourceAttributes: { namespace, group, resource, verb } } },
    });
    return review.status?.allowed === true;
  }

  test("the ApiServerSource may get, list and watch AppMonitors in any namespace, and nothing more", async (t) => {
    const elsewhere = await freshNamespace(t);
    for (const namespace of [elsewhere, "default", ""]) {
      for (const verb of ["get", "list", "watch"]) assert.ok(await allowed("appmonitor-source", namespace, "kubedemo.com", "appmonitors", verb), `${verb} in ${namespace || "all namespaces"}`);
      for (const verb of ["create", "update", "patch", "delete"]) assert.ok(!(await allowed("appmonitor-source", namespace, "kubedemo.com", "appmonitors", verb)), `no ${verb}`);
    }
    assert.ok(!(await allowed("appmonitor-source", elsewhere, "", "pods", "list")), "no Pods");
    assert.ok(!(await allowed("appmonitor-source", elsewhere, "", "secrets", "get")), "no Secrets");
  });

  test("alert-receiver may do nothing with the API", async (t) => {
    const elsewhere = await freshNamespace(t);
    for (const [group, resource] of [["kubedemo.com", "appmonitors"], ["", "pods"], ["", "secrets"], ["apps", "deployments"]] as const) {
      for (const verb of ["get", "list"]) assert.ok(!(await allowed("alert-receiver", elsewhere, group, resource, verb)), `${verb} ${resource}`);
    }
  });
});

describe("the AppMonitor CRD, installed", () => {
  const group = "kubedemo.com";
  const version = "v1";
  const plural = "appmonitors";

  test("accepts the original demo's AppMonitor unchanged, and applies the defaults", async (t) => {
    const namespace = await freshNamespace(t);
    const [original] = await manifestFile("knative/examples/appmonitor.yaml");
    assert.deepEqual(original?.spec, { memThresholdPercent: 75, memMultiplier: 2 });
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await againstGeneratedCrd(async () => {
      const created = (await custom.createNamespacedCustomObject({ group, version, namespace, plural, body: original, dryRun: "All" })) as { spec: Record<string, unknown> };
      assert.deepEqual(created.spec, {
        memThresholdPercent: 75,
        memMultiplier: 2,
        mode: "Scale",
        updateMode: "Rollout",
        forSeconds: 60,
        cooldownSeconds: 300,
        selectorMode: "Widen",
        stuckRollout: "Report",
        gitOpsManaged: "Skip",
        heapFlags: "Hold",
        revertBudgetPerHour: 3,
      });
    });
  });

  test("accepts the examples kustomization (memhog and the AppMonitor) in a namespace", async (t) => {
    const namespace = await freshNamespace(t);
    const result = await runCommand(await kubectlBinary(), ["apply", "-k", path.join(repoRoot, "knative", "examples"), "-n", namespace, "--dry-run=server", "--validate=strict"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /deployment\.apps\/memhog created \(server dry run\)/);
    assert.match(result.stdout, /appmonitor\.kubedemo\.com\/mymonitor created \(server dry run\)/);
  });

  const base = { memThresholdPercent: 75, memMultiplier: 2 };
  const webRef = { apiVersion: "apps/v1", kind: "Deployment", name: "web" };
  test("accepts container policies, mode Off among them (a YAML 1.1 reader takes a bare Off for false)", async (t) => {
    const namespace = await freshNamespace(t);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await againstGeneratedCrd(async () => {
      const spec = { ...base, containerPolicies: [{ containerName: "app", minMemory: "256Mi", maxMemory: "2Gi" }, { containerName: "envoy", mode: "Off" }, { containerName: "*", maxMemory: "512Mi" }] };
      const body = { apiVersion: `${group}/${version}`, kind: "AppMonitor", metadata: { name: "policies" }, spec };
      const created = (await custom.createNamespacedCustomObject({ group, version, namespace, plural, body, dryRun: "All" })) as { spec: { containerPolicies: { mode?: string }[] } };
      assert.equal(created.spec.containerPolicies[1]?.mode, "Off");
    });
  });

  test("accepts a targetRef and a Narrow selector", async (t) => {
    const namespace = await freshNamespace(t);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await againstGeneratedCrd(async () => {
      for (const [name, spec] of [["exact", { ...base, targetRef: webRef }], ["narrow", { ...base, selector: { matchExpressions: [{ key: "tier", operator: "In", values: ["web"] }] }, selectorMode: "Narrow" }]] as const) {
        const body = { apiVersion: `${group}/${version}`, kind: "AppMonitor", metadata: { name }, spec };
        const created = (await custom.createNamespacedCustomObject({ group, version, namespace, plural, body, dryRun: "All" })) as { spec: Record<string, unknown> };
        assert.equal(created.spec.memMultiplier, 2);
      }
    });
  });

  const invalid: [string, Record<string, unknown>, RegExp][] = [
    ["threshold 0", { memThresholdPercent: 0, memMultiplier: 2 }, /spec\.memThresholdPercent: Invalid value: 0: .*should be greater than 0/],
    ["threshold 150", { memThresholdPercent: 150, memMultiplier: 2 }, /spec\.memThresholdPercent: Invalid value: 150: .*should be less than or equal to 100/],
    ["multiplier 1", { memThresholdPercent: 75, memMultiplier: 1 }, /spec\.memMultiplier: Invalid value: 1: .*should be greater than 1/],
    ["multiplier 0.5", { memThresholdPercent: 75, memMultiplier: 0.5 }, /spec\.memMultiplier: Invalid value: 0\.5: .*should be greater than 1/],
    ["an unknown mode", { memThresholdPercent: 75, memMultiplier: 2, mode: "Sometimes" }, /spec\.mode: Unsupported value: "Sometimes": supported values: "Scale", "DryRun"/],
    ["no multiplier", { memThresholdPercent: 75 }, /spec\.memMultiplier: Required value/],
    ["an unknown heapFlags", { memThresholdPercent: 75, memMultiplier: 2, heapFlags: "Raise" }, /spec\.heapFlags: Unsupported value: "Raise": supported values: "Hold", "Scale"/],
    ["In without values", { ...base, selector: { matchExpressions: [{ key: "app", operator: "In" }] } }, /spec\.selector\.matchExpressions\[0\]: Invalid value: .*values must be non-empty for operator In and NotIn/],
    ["NotIn with empty values", { ...base, selector: { matchExpressions: [{ key: "app", operator: "NotIn", values: [] }] } }, /spec\.selector\.matchExpressions\[0\]: Invalid value: .*values must be non-empty for operator In and NotIn/],
    ["Exists with values", { ...base, selector: { matchExpressions: [{ key: "app", operator: "Exists", values: ["x"] }] } }, /spec\.selector\.matchExpressions\[0\]: Invalid value: .*values must be empty for operator Exists and DoesNotExist/],
    ["a container named twice", { ...base, containers: ["app", "sidecar", "app"] }, /spec\.containers\[2\]: Duplicate value: "app"/],
    ["a targetRef and a selector", { ...base, targetRef: webRef, selector: { matchLabels: { app: "web" } } }, /spec: Invalid value: .*targetRef and selector are exclusive/],
    ["selectorMode Narrow without a selector", { ...base, selectorMode: "Narrow" }, /spec: Invalid value: .*selectorMode Narrow needs a selector/],
    ["a targetRef of a kind memory-scaler does not scale", { ...base, targetRef: { ...webRef, kind: "CronJob" } }, /spec\.targetRef\.kind: Unsupported value: "CronJob"/],
    ["a targetRef without a name", { ...base, targetRef: { apiVersion: "apps/v1", kind: "Deployment" } }, /spec\.targetRef\.name: Required value/],
    ["a container policy's minMemory above its maxMemory", { ...base, containerPolicies: [{ containerName: "app", minMemory: "2Gi", maxMemory: "1Gi" }] }, /spec\.containerPolicies\[0\]: Invalid value: .*minMemory must not be above maxMemory/],
    ["a container policy named twice", { ...base, containerPolicies: [{ containerName: "app" }, { containerName: "app", mode: "Off" }] }, /spec\.containerPolicies: Invalid value: .*each containerName at most once/],
  ];
  for (const [what, spec, why] of invalid) {
    test(`refuses ${what}, saying why`, async (t) => {
      const namespace = await freshNamespace(t);
      const custom = kc.makeApiClient(k8s.CustomObjectsApi);
      const body = { apiVersion: `${group}/${version}`, kind: "AppMonitor", metadata: { name: "invalid" }, spec };
      await againstGeneratedCrd(() =>
        assert.rejects(custom.createNamespacedCustomObject({ group, version, namespace, plural, body, dryRun: "All" }), (error: unknown) => {
          assert.ok(error instanceof k8s.ApiException, String(error));
          assert.equal(error.code, 422);
          assert.match((JSON.parse(String(error.body)) as { message: string }).message, why);
          return true;
        }),
      );
    });
  }
});
