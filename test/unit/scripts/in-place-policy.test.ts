// The committed admission policies are what scripts/in-place-policy.ts makes: one policy and one
// binding per workload kind, each binding selecting only the labelled workloads as parameters.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { IN_PLACE_LABEL } from "../../../functions/lib/appmonitor.ts";
import { inPlacePolicies, inPlacePoliciesYaml, policyPath } from "../../../scripts/in-place-policy.ts";

test("knative/admission/in-place-memory.yaml is up to date (node scripts/in-place-policy.ts)", () => {
  assert.equal(readFileSync(policyPath, "utf8"), inPlacePoliciesYaml());
});

test("a policy per workload kind, never failing a Pod's creation, each bound to the labelled workloads of the Pod's namespace", () => {
  const manifests = inPlacePolicies() as { kind: string; metadata: { name: string }; spec: Record<string, unknown> }[];
  const policies = manifests.filter((m) => m.kind === "MutatingAdmissionPolicy");
  assert.deepEqual(policies.map((p) => (p.spec.paramKind as { kind: string }).kind), ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Service"]);
  for (const p of policies) assert.equal(p.spec.failurePolicy, "Ignore", p.metadata.name);
  const bindings = manifests.filter((m) => m.kind === "MutatingAdmissionPolicyBinding");
  assert.deepEqual(bindings.map((b) => b.spec.policyName), policies.map((p) => p.metadata.name));
  for (const b of bindings) {
    assert.deepEqual(b.spec.paramRef, { selector: { matchLabels: { [IN_PLACE_LABEL]: "true" } }, parameterNotFoundAction: "Allow" }, "no namespace: the Pod's own");
  }
});
