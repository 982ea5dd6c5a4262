// Tenants on the stack's real API server (RBAC, and kube-controller-manager's ClusterRole
// aggregation): knative/rbac/tenants.yaml gives Kubernetes' own `view`, `edit` and `admin`
// their share of AppMonitors. A namespace's editor creates, changes and deletes AppMonitors there
// and nowhere else; its viewer reads them and their status and writes nothing; neither writes the
// status, which is the functions' own. Asked with `kubectl auth can-i --as`, then done for real
// under impersonation.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { before, test } from "node:test";
import * as k8s from "@kubernetes/client-node";
import { applyFiles } from "../support/install.ts";
import { kubectlBinary } from "../support/knative.ts";
import { runCommand } from "../support/run-command.ts";
import { adminKubeConfig, freshNamespace, stack, waitFor } from "../support/stack.ts";
import { tempDir } from "../support/temp-dir.ts";

const RESOURCE = "appmonitors.kubedemo.com";

let kubectl: string;
let kubeconfig: string;

before(async () => {
  kubeconfig = (await stack()).kubeconfig;
  kubectl = await kubectlBinary();
  await applyFiles("knative/crd/appmonitor.yaml", "knative/rbac/tenants.yaml");
  // Aggregation is kube-controller-manager's: wait until `view` and `edit` carry our rules.
  const rbac = (await adminKubeConfig()).makeApiClient(k8s.RbacAuthorizationV1Api);
  for (const role of ["view", "edit", "admin"]) {
    await waitFor(`ClusterRole ${role} aggregates AppMonitors`, async () => {
      const rules = (await rbac.readClusterRole({ name: role })).rules ?? [];
      return rules.some((r) => r.apiGroups?.includes("kubedemo.com") && r.resources?.includes("appmonitors"));
    });
  }
});

/** `kubectl auth can-i VERB RESOURCE -n NAMESPACE --as USER`: true for "yes", false for "no". */
async function can(user: string, verb: string, namespace: string, subresource?: string): Promise<boolean> {
  const args = ["auth", "can-i", verb, RESOURCE, "-n", namespace, "--as", user, `--kubeconfig=${kubeconfig}`, ...(subresource === undefined ? [] : [`--subresource=${subresource}`])];
  const result = await runCommand(kubectl, args);
  const answer = result.stdout.trim();
  assert.ok(answer === "yes" || answer === "no", `kubectl ${args.join(" ")}: ${result.stdout}${result.stderr}`);
  return answer === "yes";
}

/** Binds Kubernetes' ClusterRole `role` to `user` in `namespace`. */
async function bind(namespace: string, role: string, user: string): Promise<void> {
  const rbac = (await adminKubeConfig()).makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: { metadata: { name: `${user}-${role}` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }] },
  });
}

/** `kubectl` as `user` with `args`. */
function kubectlAs(user: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCommand(kubectl, [...args, "--as", user, `--kubeconfig=${kubeconfig}`]);
}

test("a namespace's editor and admin create, change and delete its AppMonitors; its viewer reads them and their status; none writes the status; nobody gets another namespace's", async (t) => {
  const shop = await freshNamespace(t);
  const other = await freshNamespace(t);
  await bind(shop, "edit", "alice");
  await bind(shop, "view", "bob");
  await bind(shop, "admin", "carol");

  for (const verb of ["create", "update", "patch", "delete", "get", "list", "watch"]) {
    assert.equal(await can("alice", verb, shop), true, `edit may ${verb}`);
    assert.equal(await can("carol", verb, shop), true, `admin may ${verb}`);
    assert.equal(await can("alice", verb, other), false, `edit in ${shop} may not ${verb} in ${other}`);
  }
  for (const verb of ["get", "list", "watch"]) assert.equal(await can("bob", verb, shop), true, `view may ${verb}`);
  for (const verb of ["create", "update", "patch", "delete"]) assert.equal(await can("bob", verb, shop), false, `view may not ${verb}`);
  assert.equal(await can("bob", "get", shop, "status"), true, "view reads the status");
  for (const user of ["alice", "bob", "carol"]) {
    assert.equal(await can(user, "patch", shop, "status"), false, `${user} may not patch the status`);
    assert.equal(await can(user, "update", shop, "status"), false, `${user} may not update the status`);
  }

  // And for real, through the API server's own checks.
  const monitor = `apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata:\n  name: mymonitor\n  namespace: ${shop}\nspec:\n  memThresholdPercent: 75\n  memMultiplier: 2\n`;
  const dir = await tempDir("tenants");
  t.after(() => dir.remove());
  const file = path.join(dir.path, "appmonitor.yaml");
  await writeFile(file, monitor);
  const created = await kubectlAs("alice", ["create", "-f", file]);
  assert.equal(created.code, 0, created.stderr);
  const read = await kubectlAs("bob", ["get", RESOURCE, "mymonitor", "-n", shop, "-o", "jsonpath={.spec.memMultiplier}"]);
  assert.equal(read.stdout, "2", read.stderr);
  const refused = await kubectlAs("bob", ["delete", RESOURCE, "mymonitor", "-n", shop]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /forbidden/);
  const deleted = await kubectlAs("carol", ["delete", RESOURCE, "mymonitor", "-n", shop]);
  assert.equal(deleted.code, 0, deleted.stderr);
});
