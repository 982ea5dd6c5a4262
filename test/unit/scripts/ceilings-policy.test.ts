// The committed ceilings policy is what scripts/ceilings-policy.ts makes; both profiles ship it,
// its binding's parameter is the ConfigMap they ship, whose keys are memory-scaler's ceilings, and
// memory-scaler reads each key as the variable of the same name. What the policy refuses and
// admits on a real API server: test/integration/ceilings-policy.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { CEILINGS, CEILINGS_CONFIGMAP } from "../../../functions/memory-scaler/ceilings.ts";
import { CEILINGS_POLICY, ceilingsPolicy, ceilingsPolicyPath, ceilingsPolicyYaml, INSTALL_NAMESPACE } from "../../../scripts/ceilings-policy.ts";
import { containerOf, kustomize } from "../../support/knative.ts";

type Doc = { kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, unknown>; data?: Record<string, string> };

test("knative/admission/appmonitor-ceilings-policy.yaml is up to date (node scripts/ceilings-policy.ts)", () => {
  assert.equal(readFileSync(ceilingsPolicyPath, "utf8"), ceilingsPolicyYaml());
});

test("a policy that fails closed on AppMonitor creates and updates (not their status), bound with Deny to the ceilings' ConfigMap, admitting all without it", () => {
  const [policy, binding] = ceilingsPolicy() as Doc[];
  assert.equal(policy?.kind, "ValidatingAdmissionPolicy");
  assert.equal(policy.spec.failurePolicy, "Fail");
  assert.deepEqual(policy.spec.paramKind, { apiVersion: "v1", kind: "ConfigMap" });
  assert.deepEqual(policy.spec.matchConstraints, { resourceRules: [{ apiGroups: ["kubedemo.com"], apiVersions: ["*"], operations: ["CREATE", "UPDATE"], resources: ["appmonitors"] }] });
  assert.deepEqual(binding?.spec, { policyName: CEILINGS_POLICY, validationActions: ["Deny"], paramRef: { name: CEILINGS_CONFIGMAP, namespace: INSTALL_NAMESPACE, parameterNotFoundAction: "Allow" } });
});

test("each ceiling has its validation, naming its field and its variable", () => {
  const [policy] = ceilingsPolicy() as Doc[];
  const messages = (policy?.spec.validations as { messageExpression: string }[]).map((v) => v.messageExpression);
  for (const c of CEILINGS) assert.ok(messages.some((m) => m.includes(`'${c.field} '`) && m.includes(`ceiling ${c.variable} `)), c.variable);
  assert.ok(messages.some((m) => m.includes("spec.containerPolicies[") && m.includes("ceiling MAX_MEMORY ")), "the container policies' maxMemory");
});

test("both profiles ship the policy, its binding and the ConfigMap; its keys are the ceilings, empty, and memory-scaler reads each", async () => {
  for (const profile of ["knative", "knative/eventing-only"]) {
    const objects = (await kustomize(profile)) as unknown as Doc[];
    const named = objects.filter((o) => o.metadata.name === CEILINGS_POLICY).map((o) => o.kind).sort();
    assert.deepEqual(named, ["ConfigMap", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"], profile);
    const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === CEILINGS_CONFIGMAP);
    assert.equal(configMap?.metadata.namespace, INSTALL_NAMESPACE);
    assert.deepEqual(configMap?.data, Object.fromEntries(CEILINGS.map((c) => [c.variable, ""])), "no bound by default");
    // The Knative Service, or the Deployment with the same Pod template (eventing-only).
    const scaler = objects.find((o) => ((o as { apiVersion?: string }).apiVersion === "serving.knative.dev/v1" || o.kind === "Deployment") && o.metadata.name === "memory-scaler") as unknown as Parameters<typeof containerOf>[0];
    const refs = (containerOf(scaler).env ?? []).flatMap((e) => (e.valueFrom?.configMapKeyRef === undefined ? [] : [[e.name, e.valueFrom.configMapKeyRef]]));
    assert.deepEqual(refs, CEILINGS.map((c) => [c.variable, { name: CEILINGS_CONFIGMAP, key: c.variable, optional: true }]), profile);
  }
});
