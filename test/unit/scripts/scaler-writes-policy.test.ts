// The committed write policy of memory-scaler is what scripts/scaler-writes-policy.ts makes, it
// names memory-scaler's own ServiceAccount, both profiles ship it, and the heap flag tokens it
// lets change are those memory-scaler reads and writes. What it refuses and lets through on a real
// API server: test/integration/memory-scaler-writes-policy.test.ts.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { HEAP_ENV_VARS, readHeapFlags, scaledFlag } from "../../../functions/memory-scaler/scale/decide/heap-flags.ts";
import {
  GO_MEMLIMIT_TOKEN, HEAP_FLAG_TOKEN, SCALER_USERNAME, SCALER_WRITES_POLICY, scalerWritesPolicy, scalerWritesPolicyPath, scalerWritesPolicyYaml,
} from "../../../scripts/scaler-writes-policy.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { kustomize } from "../../support/knative.ts";

type Doc = { kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, unknown> };

test("knative/admission/memory-scaler-writes.yaml is up to date (node scripts/scaler-writes-policy.ts)", () => {
  assert.equal(readFileSync(scalerWritesPolicyPath, "utf8"), scalerWritesPolicyYaml());
});

test("a policy that fails closed, bound with Deny, matching memory-scaler's ServiceAccount as knative/rbac/memory-scaler.yaml names it", () => {
  const [policy, binding] = scalerWritesPolicy() as Doc[];
  assert.equal(policy?.kind, "ValidatingAdmissionPolicy");
  assert.equal(policy.spec.failurePolicy, "Fail");
  assert.deepEqual(binding?.spec, { policyName: SCALER_WRITES_POLICY, validationActions: ["Deny"] });
  const rbac = parseAllDocuments(readFileSync(`${repoRoot}/knative/rbac/memory-scaler.yaml`, "utf8")).map((d) => d.toJSON() as Doc);
  const account = rbac.find((d) => d.kind === "ServiceAccount");
  assert.equal(SCALER_USERNAME, `system:serviceaccount:${account?.metadata.namespace}:${account?.metadata.name}`);
  assert.deepEqual(policy.spec.matchConditions, [{ name: "is-memory-scaler", expression: `request.userInfo.username == "${SCALER_USERNAME}"` }]);
});

test("both profiles ship the policy and its binding", async () => {
  for (const profile of ["knative", "knative/eventing-only"]) {
    const names = (await kustomize(profile)).filter((o) => o.metadata.name === SCALER_WRITES_POLICY).map((o) => o.kind);
    assert.deepEqual(names.sort(), ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"], profile);
  }
});

describe("the heap flag tokens the policy lets change are memory-scaler's, before and after a scale", () => {
  const prefix = (token: string) => /^[^0-9]*/.exec(token)?.[0];
  const cases: { name: string; env?: { name: string; value: string }[]; args?: string[] }[] = [
    { name: "-Xmx in args", args: ["-Xmx512m"] },
    { name: "-Xmx in JAVA_TOOL_OPTIONS, upper-case unit", env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Xss1m -Xmx1G" }] },
    { name: "-XX:MaxRAM in JDK_JAVA_OPTIONS", env: [{ name: "JDK_JAVA_OPTIONS", value: "-XX:MaxRAM=768m" }] },
    { name: "-Xmx in _JAVA_OPTIONS", env: [{ name: "_JAVA_OPTIONS", value: "-Xmx300000k" }] },
    { name: "--max-old-space-size in NODE_OPTIONS", env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=384" }] },
    { name: "--max_old_space_size in args", args: ["node", "--max_old_space_size=384", "app.js"] },
    { name: "GOMEMLIMIT", env: [{ name: "GOMEMLIMIT", value: "300MiB" }] },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const flag = readHeapFlags({ name: "app", env: c.env, args: c.args }).binding;
      assert.ok(flag !== undefined && "bytes" in flag.cap);
      const scaled = scaledFlag(flag, 384n << 20n, 1000n << 20n);
      const pattern = new RegExp(flag.flag === "GOMEMLIMIT" ? GO_MEMLIMIT_TOKEN : HEAP_FLAG_TOKEN);
      assert.match(flag.token, pattern);
      assert.match(scaled.token, pattern);
      assert.equal(prefix(scaled.token), prefix(flag.token));
      if ("env" in flag.place) assert.ok(HEAP_ENV_VARS.includes(flag.place.env));
    });
  }
});
