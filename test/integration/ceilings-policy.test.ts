/**
 * The install's ceilings policy (knative/admission/appmonitor-ceilings-policy.yaml) on the stack's
 * real kube-apiserver, as a namespace's admin meets it (Kubernetes' `admin` role, with
 * knative/rbac/tenants.yaml's share of AppMonitors, under impersonation): an AppMonitor over each
 * ceiling is refused with a message naming the field, its value and the ceiling; one at every
 * ceiling is admitted, memory compared as quantities; an update that leaves an over-ceiling field
 * as it was passes, one that changes it is refused; a malformed ceiling refuses every write,
 * naming it; and without the ConfigMap every AppMonitor is admitted (`parameterNotFoundAction:
 * Allow`, docs/operations.md "Security model").
 *
 * The stack is shared with other test files, which create AppMonitors in namespaces of their own:
 * the shipped binding keeps the shipped ConfigMap, whose empty values bound nothing. The ceilings
 * here are those of further bindings of the same policy, each made from the shipped binding (its
 * `parameterNotFoundAction` too), selecting only this file's namespaces by a label and naming a
 * ConfigMap of its own.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { before, describe, it, type TestContext } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { APPMONITOR_GROUP, APPMONITOR_PLURAL, APPMONITOR_VERSION } from "../../functions/lib/appmonitor.ts";
import { apiStatus } from "../../functions/lib/kube-api-errors.ts";
import { CEILINGS_POLICY } from "../../scripts/ceilings-policy.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { applyFiles } from "../support/install.ts";
import { adminKubeConfig, freshNamespace, waitFor } from "../support/stack.ts";

/** This run's label value: the namespaces its bindings select. */
const RUN = randomBytes(3).toString("hex");
const LABEL = "appmonitor.test/ceilings";
const TENANT = "ceilings-tenant";

/** Within every ceiling below, and at each. */
const AT_CEILINGS = { memThresholdPercent: 80, memMultiplier: 3, cooldownSeconds: 600, maxMemory: "4Gi", containerPolicies: [{ containerName: "app", maxMemory: "4096Mi" }], leakGuard: { maxScales: 2, windowSeconds: 3600 } };
const CEILINGS = { MAX_MEMORY: "4Gi", MAX_MEM_MULTIPLIER: "3", MIN_COOLDOWN_SECONDS: "600", LEAK_GUARD_MAX_SCALES: "2", LEAK_GUARD_MIN_WINDOW_SECONDS: "3600" };

type Binding = k8s.V1ValidatingAdmissionPolicyBinding;

/** The binding as knative/admission/ ships it. */
function shippedBinding(): Binding {
  const docs = parseAllDocuments(readFileSync(path.join(repoRoot, "knative/admission/appmonitor-ceilings-policy.yaml"), "utf8")).map((d) => d.toJS() as { kind: string });
  const binding = docs.find((d) => d.kind === "ValidatingAdmissionPolicyBinding") as Binding | undefined;
  if (binding?.spec?.paramRef === undefined) throw new Error("no binding with a paramRef in the shipped policy");
  return binding;
}

/**
 * A binding of the shipped policy made from the shipped binding, selecting the namespaces labelled
 * `LABEL=<selects>` and naming ConfigMap `params/name`; removed after the test.
 */
async function bindCeilings(t: TestContext, selects: string, params: { namespace: string; name: string }): Promise<void> {
  const admission = (await adminKubeConfig()).makeApiClient(k8s.AdmissionregistrationV1Api);
  const shipped = shippedBinding();
  const name = `${CEILINGS_POLICY}-test-${selects}`;
  const spec = { ...shipped.spec, paramRef: { ...shipped.spec?.paramRef, ...params }, matchResources: { namespaceSelector: { matchLabels: { [LABEL]: selects } } } };
  await admission.createValidatingAdmissionPolicyBinding({ body: { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name }, spec } });
  t.after(() => admission.deleteValidatingAdmissionPolicyBinding({ name }).then(() => undefined, () => undefined));
}

/** A fresh namespace labelled for bindings of `selects`, where {@link TENANT} is the admin. */
async function tenantNamespace(t: TestContext, selects: string): Promise<string> {
  const kc = await adminKubeConfig();
  const ns = await freshNamespace(t);
  await kc.makeApiClient(k8s.CoreV1Api).patchNamespace({ name: ns, body: { metadata: { labels: { [LABEL]: selects } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: ns,
    body: { metadata: { name: `${TENANT}-admin` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: TENANT }] },
  });
  return ns;
}

/** A ConfigMap of ceilings in `namespace`. */
async function putCeilings(namespace: string, name: string, data: Record<string, string>): Promise<void> {
  const core = (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data } });
}

/** The AppMonitors API as {@link TENANT} (the admin's kubeconfig, impersonating). */
async function asTenant(): Promise<k8s.CustomObjectsApi> {
  const admin = await adminKubeConfig();
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({ clusters: admin.clusters, contexts: admin.contexts, currentContext: admin.currentContext, users: admin.users.map((u) => ({ ...u, impersonateUser: TENANT })) });
  return kc.makeApiClient(k8s.CustomObjectsApi);
}

const resource = (namespace: string) => ({ group: APPMONITOR_GROUP, version: APPMONITOR_VERSION, namespace, plural: APPMONITOR_PLURAL });
const appMonitor = (name: string, spec: Record<string, unknown>) => ({ apiVersion: `${APPMONITOR_GROUP}/${APPMONITOR_VERSION}`, kind: "AppMonitor", metadata: { name }, spec });

/** The refusal of `write`: 422 from the ceilings policy, its message (after the policy's preamble). */
async function refusal(write: Promise<unknown>): Promise<string | undefined> {
  const error = await write.then(() => undefined, (e: unknown) => e);
  if (error === undefined) return undefined;
  const status = apiStatus(error);
  assert.equal(status.code, 422, status.message);
  assert.match(status.message, new RegExp(`ValidatingAdmissionPolicy '${CEILINGS_POLICY}' with binding '${CEILINGS_POLICY}-test-`), status.message);
  return status.message.replace(/^.*denied request: /, "");
}

/** Asserts `write` is refused naming `what`; says the message. */
async function refused(t: TestContext, write: Promise<unknown>, what: RegExp): Promise<void> {
  const message = await refusal(write);
  assert.ok(message !== undefined, `admitted; expected a refusal matching ${what}`);
  assert.match(message, what);
  t.diagnostic(`refused: ${message}`);
}

/** Waits until a dry-run create of `spec` in `namespace` is refused (`true`) or admitted (`false`): a binding or a parameter takes a moment to reach admission. */
async function until(namespace: string, spec: Record<string, unknown>, refusedNow: boolean): Promise<void> {
  const api = await asTenant();
  await waitFor(`a dry run ${refusedNow ? "refused" : "admitted"} in ${namespace}`, async () => {
    const message = await refusal(api.createNamespacedCustomObject({ ...resource(namespace), body: appMonitor(`probe-${randomBytes(2).toString("hex")}`, spec), dryRun: "All" }));
    return (message !== undefined) === refusedNow;
  });
}

describe("the install's ceilings policy", { concurrency: 1 }, () => {
  before(async () => {
    // The policy with its shipped binding and the shipped ConfigMap, whose empty values bound nothing.
    await applyFiles("knative/namespace/namespace.yaml", "knative/crd/appmonitor.yaml", "knative/rbac/tenants.yaml", "knative/admission/appmonitor-ceilings.yaml", "knative/admission/appmonitor-ceilings-policy.yaml");
    const kc = await adminKubeConfig();
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    await waitFor("the AppMonitor CRD Established", async () => (await ext.readCustomResourceDefinition({ name: "appmonitors.kubedemo.com" })).status?.conditions?.some((c) => c.type === "Established" && c.status === "True"));
    const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    await waitFor("ClusterRole admin aggregates AppMonitors", async () => ((await rbac.readClusterRole({ name: "admin" })).rules ?? []).some((r) => r.apiGroups?.includes(APPMONITOR_GROUP) && r.resources?.includes(APPMONITOR_PLURAL)));
  });

  it("refuses an AppMonitor over each ceiling, naming the field and the ceiling, and admits one at every ceiling", async (t) => {
    const selects = `${RUN}-fields`;
    const ns = await tenantNamespace(t, selects);
    await putCeilings(ns, "ceilings", CEILINGS);
    await bindCeilings(t, selects, { namespace: ns, name: "ceilings" });
    await until(ns, { ...AT_CEILINGS, memMultiplier: 10 }, true);
    const api = await asTenant();
    const create = (name: string, over: Record<string, unknown>) => api.createNamespacedCustomObject({ ...resource(ns), body: appMonitor(name, { ...AT_CEILINGS, ...over }) });
    const from = `\\(ConfigMap ${ns}/ceilings\\)`;
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["spec.maxMemory above MAX_MEMORY", { maxMemory: "5Gi" }, new RegExp(`^spec\\.maxMemory 5Gi is above the install's ceiling MAX_MEMORY 4Gi ${from}$`)],
      ["spec.maxMemory one byte above, in another unit", { maxMemory: "4294967297" }, /^spec\.maxMemory 4294967297 is above the install's ceiling MAX_MEMORY 4Gi/],
      ["a container policy's maxMemory above MAX_MEMORY", { containerPolicies: [{ containerName: "app", maxMemory: "8Gi" }, { containerName: "*", maxMemory: "1Gi" }] }, new RegExp(`^spec\\.containerPolicies\\[app\\]\\.maxMemory 8Gi is above the install's ceiling MAX_MEMORY 4Gi ${from}$`)],
      ["spec.memMultiplier above MAX_MEM_MULTIPLIER", { memMultiplier: 3.5 }, new RegExp(`^spec\\.memMultiplier 3\\.5 is above the install's ceiling MAX_MEM_MULTIPLIER 3 ${from}$`)],
      ["spec.memMultiplier 10, a whole number", { memMultiplier: 10 }, /^spec\.memMultiplier 10(\.0)? is above the install's ceiling MAX_MEM_MULTIPLIER 3/],
      ["spec.cooldownSeconds below MIN_COOLDOWN_SECONDS", { cooldownSeconds: 0 }, new RegExp(`^spec\\.cooldownSeconds 0 is below the install's ceiling MIN_COOLDOWN_SECONDS 600 ${from}$`)],
      ["no spec.cooldownSeconds: the default the API server writes, 300, is below it", { cooldownSeconds: undefined }, /^spec\.cooldownSeconds 300 is below the install's ceiling MIN_COOLDOWN_SECONDS 600/],
      ["spec.leakGuard.maxScales above LEAK_GUARD_MAX_SCALES", { leakGuard: { maxScales: 10, windowSeconds: 3600 } }, new RegExp(`^spec\\.leakGuard\\.maxScales 10 is above the install's ceiling LEAK_GUARD_MAX_SCALES 2 ${from}$`)],
      ["spec.leakGuard.windowSeconds below LEAK_GUARD_MIN_WINDOW_SECONDS", { leakGuard: { windowSeconds: 60 } }, new RegExp(`^spec\\.leakGuard\\.windowSeconds 60 is below the install's ceiling LEAK_GUARD_MIN_WINDOW_SECONDS 3600 ${from}$`)],
    ];
    for (const [name, over, what] of cases) {
      await t.test(name, async (t) => {
        const spec = Object.fromEntries(Object.entries({ ...AT_CEILINGS, ...over }).filter(([, v]) => v !== undefined));
        await refused(t, api.createNamespacedCustomObject({ ...resource(ns), body: appMonitor("over", spec) }), what);
      });
    }
    await t.test("at every ceiling (4096Mi as 4Gi), and below them (500Mi, which sorts after 4Gi as text): admitted", async () => {
      await create("at", {});
      await create("below", { maxMemory: "500Mi", containerPolicies: [{ containerName: "app", maxMemory: "512Mi" }], memMultiplier: 1.5, cooldownSeconds: 3600, leakGuard: { maxScales: 1 } });
      const names = ((await api.listNamespacedCustomObject(resource(ns))) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name).sort();
      assert.deepEqual(names, ["at", "below"]);
    });
  });

  it("an update that leaves an over-ceiling field as it was passes (a ceiling lowered later); one that changes it is refused", async (t) => {
    const selects = `${RUN}-update`;
    const ns = await tenantNamespace(t, selects);
    const api = await asTenant();
    const over = { ...AT_CEILINGS, maxMemory: "16Gi", memMultiplier: 5, cooldownSeconds: 0 };
    // Written before the ceilings bind this namespace.
    await api.createNamespacedCustomObject({ ...resource(ns), body: appMonitor("legacy", over) });
    await putCeilings(ns, "ceilings", CEILINGS);
    await bindCeilings(t, selects, { namespace: ns, name: "ceilings" });
    await until(ns, over, true);
    const merge = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
    await api.patchNamespacedCustomObject({ ...resource(ns), name: "legacy", body: { spec: { memThresholdPercent: 85 }, metadata: { labels: { team: "a" }, finalizers: ["example.com/keep"] } } }, merge);
    await api.patchNamespacedCustomObject({ ...resource(ns), name: "legacy", body: { metadata: { finalizers: null } } }, merge);
    await refused(t, api.patchNamespacedCustomObject({ ...resource(ns), name: "legacy", body: { spec: { maxMemory: "8Gi" } } }, merge), /^spec\.maxMemory 8Gi is above the install's ceiling MAX_MEMORY 4Gi/);
    await refused(t, api.patchNamespacedCustomObject({ ...resource(ns), name: "legacy", body: { spec: { cooldownSeconds: 60 } } }, merge), /^spec\.cooldownSeconds 60 is below the install's ceiling MIN_COOLDOWN_SECONDS 600/);
    // Lowered to the ceiling: admitted.
    await api.patchNamespacedCustomObject({ ...resource(ns), name: "legacy", body: { spec: { maxMemory: "4Gi", memMultiplier: 3 } } }, merge);
  });

  it("a ceiling that is not what memory-scaler accepts refuses every AppMonitor write, naming it", async (t) => {
    const selects = `${RUN}-malformed`;
    const ns = await tenantNamespace(t, selects);
    await putCeilings(ns, "ceilings", { MAX_MEMORY: "lots", MAX_MEM_MULTIPLIER: "1", LEAK_GUARD_MAX_SCALES: "" });
    await bindCeilings(t, selects, { namespace: ns, name: "ceilings" });
    await until(ns, { memThresholdPercent: 80, memMultiplier: 2 }, true);
    await refused(t, (await asTenant()).createNamespacedCustomObject({ ...resource(ns), body: appMonitor("any", { memThresholdPercent: 80, memMultiplier: 2 }) }), new RegExp(`^the install's ceilings in ConfigMap ${ns}/ceilings are not what memory-scaler accepts: MAX_MEMORY lots, MAX_MEM_MULTIPLIER 1$`));
  });

  it("without the ConfigMap the binding names, every AppMonitor is admitted; with it, the same one is refused", async (t) => {
    const selects = `${RUN}-absent`;
    const ns = await tenantNamespace(t, selects);
    const over = { ...AT_CEILINGS, memMultiplier: 10 };
    await bindCeilings(t, selects, { namespace: ns, name: "ceilings" });
    // The binding in force: the ConfigMap made, the AppMonitor refused; then removed, admitted again.
    await putCeilings(ns, "ceilings", CEILINGS);
    await until(ns, over, true);
    await (await adminKubeConfig()).makeApiClient(k8s.CoreV1Api).deleteNamespacedConfigMap({ namespace: ns, name: "ceilings" });
    await until(ns, over, false);
    await (await asTenant()).createNamespacedCustomObject({ ...resource(ns), body: appMonitor("unbounded", over) });
    assert.equal(shippedBinding().spec?.paramRef?.parameterNotFoundAction, "Allow", "the shipped binding's, which these bindings copy");
  });

  it("the shipped ConfigMap, its values empty, bounds nothing under the shipped binding", async (t) => {
    const ns = await freshNamespace(t);
    const api = (await adminKubeConfig()).makeApiClient(k8s.CustomObjectsApi);
    await api.createNamespacedCustomObject({ ...resource(ns), body: appMonitor("anything", { memThresholdPercent: 80, memMultiplier: 10, cooldownSeconds: 0, maxMemory: "1Ti", leakGuard: { maxScales: 10, windowSeconds: 60 } }) });
  });
});
