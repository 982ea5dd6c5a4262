// Knative Eventing's rendered install against the stack's real API server: its CRDs and RBAC are
// applied (server-side, with kubectl, which sends the CRDs' schemas as written), the CRDs become
// Established, and appmonitor's own Eventing objects (knative/eventing/: Broker, Triggers,
// ApiServerSource, PingSource, SinkBinding) pass a server-side dry-run create against those CRDs'
// OpenAPI schemas, with strict field validation.
//
// Eventing's webhook does not run here (its Pods would need a real node), so its webhook
// configurations are not installed: with them the API server would call the absent webhook for
// every Eventing object, dry runs included, and refuse each one (failurePolicy Fail). What is
// proved is therefore the schemas' part of validation, not the webhook's defaulting and checks.
// Everything installed is deleted at the end.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { stringify } from "yaml";
import { EVENTING_NAMESPACE, type EventingObject } from "../../harness/stack/eventing-manifests.ts";
import { eventingInstall } from "../../harness/stack/eventing-source.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { applyFiles } from "../../support/install.ts";
import { kubectlBinary, manifestFile, type Manifest } from "../../support/knative.ts";
import { runCommand } from "../../support/run-command.ts";
import { adminKubeConfig, waitFor } from "../../support/stack.ts";
import { tempDir, type TempDir } from "../../support/temp-dir.ts";

/** The kinds installed: the namespace, the CRDs and the RBAC (what needs no running Pod). */
const INSTALLED_KINDS: ReadonlySet<string> = new Set(["Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]);

/** appmonitor's Eventing objects; dead-letter.yaml is a Knative Service (Serving, not installed here). */
const APPMONITOR_EVENTING_FILES = ["broker.yaml", "triggers.yaml", "apiserversource.yaml", "pingsource.yaml", "sinkbinding.yaml"].map((f) => `knative/eventing/${f}`);

let dir: TempDir;
let installFile: string;
let installed: EventingObject[];
let kc: k8s.KubeConfig;

before(async () => {
  const { objects } = await eventingInstall();
  installed = objects.filter((o) => INSTALLED_KINDS.has(o.kind));
  dir = await tempDir("eventing-install");
  installFile = path.join(dir.path, "eventing.yaml");
  await writeFile(installFile, installed.map((o) => stringify(o)).join("---\n"));
  kc = await adminKubeConfig();
  await applyFiles("knative/namespace/namespace.yaml");
});

after(async () => {
  // CRDs first, so that nothing is left of their kinds; then the RBAC and the namespace.
  if (installFile) {
    // Deleting two dozen CRDs at once waits on each one's instance clean-up, which a loaded API
    // server takes minutes over: ask for the deletion, then wait for the CRDs to go, bounded.
    const result = await runCommand(await kubectlBinary(), ["delete", "--ignore-not-found", "--wait=false", "-f", installFile], { timeoutMs: 150_000 });
    assert.equal(result.code, 0, result.stderr);
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const crds = new Set(installed.filter((o) => o.kind === "CustomResourceDefinition").map((o) => o.metadata.name));
    await waitFor("the Eventing CRDs deleted", async () =>
      (await ext.listCustomResourceDefinition()).items.every((crd) => !crds.has(crd.metadata?.name ?? "")) || undefined, 300_000, 1000);
  }
  await dir?.remove();
});

/** `kubectl create --dry-run=server --validate=strict` of `files` (repository paths). */
async function dryRunCreate(files: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCommand(await kubectlBinary(), ["create", "--dry-run=server", "--validate=strict", ...files.flatMap((f) => ["-f", path.isAbsolute(f) ? f : path.join(repoRoot, f)])]);
}

describe("Knative Eventing's CRDs and RBAC", () => {
  test("the API server accepts every one of them", async () => {
    const kinds = new Set(installed.map((o) => o.kind));
    assert.deepEqual([...kinds].sort(), [...INSTALLED_KINDS].sort());
    await applyFiles(installFile);
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    for (const o of installed) {
      const name = o.metadata.name;
      const namespace = o.metadata.namespace ?? "";
      const read: Record<string, () => Promise<unknown>> = {
        Namespace: () => core.readNamespace({ name }),
        CustomResourceDefinition: () => ext.readCustomResourceDefinition({ name }),
        ServiceAccount: () => core.readNamespacedServiceAccount({ name, namespace }),
        ClusterRole: () => rbac.readClusterRole({ name }),
        ClusterRoleBinding: () => rbac.readClusterRoleBinding({ name }),
        Role: () => rbac.readNamespacedRole({ name, namespace }),
        RoleBinding: () => rbac.readNamespacedRoleBinding({ name, namespace }),
      };
      await (read[o.kind] as () => Promise<unknown>)();
    }
  });

  test("every CRD becomes Established", async () => {
    await applyFiles(installFile);
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const crds = installed.filter((o) => o.kind === "CustomResourceDefinition").map((o) => o.metadata.name);
    assert.ok(crds.length >= 15, crds.join(", "));
    for (const name of crds) {
      await waitFor(`CRD ${name} Established`, async () => {
        const crd = await ext.readCustomResourceDefinition({ name });
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
      });
    }
  });

  test("the RBAC grants what Eventing's controller needs, as the API server evaluates it", async () => {
    await applyFiles(installFile);
    const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
    const allowed = async (group: string, resource: string, verb: string): Promise<boolean> => {
      const review = await authz.createSubjectAccessReview({
        body: { spec: { user: `system:serviceaccount:${EVENTING_NAMESPACE}:eventing-controller`, resourceAttributes: { namespace: "appmonitor", group, resource, verb } } },
      });
      return review.status?.allowed === true;
    };
    await waitFor("eventing-controller may update Brokers' status and create ApiServerSource adapters", async () =>
      (await allowed("eventing.knative.dev", "brokers/status", "update")) && (await allowed("apps", "deployments", "create")));
  });
});

describe("appmonitor's Eventing objects against the installed CRDs", () => {
  before(async () => {
    await applyFiles(installFile);
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    for (const name of ["brokers.eventing.knative.dev", "triggers.eventing.knative.dev", "apiserversources.sources.knative.dev", "pingsources.sources.knative.dev", "sinkbindings.sources.knative.dev"]) {
      await waitFor(`CRD ${name} Established`, async () => {
        const crd = await ext.readCustomResourceDefinition({ name });
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
      });
    }
  });

  test("each one passes a server-side dry-run create with strict field validation", async () => {
    const objects = (await Promise.all(APPMONITOR_EVENTING_FILES.map((f) => manifestFile(f)))).flat();
    assert.deepEqual([...new Set(objects.map((o) => o.kind))].sort(), ["ApiServerSource", "Broker", "PingSource", "SinkBinding", "Trigger"]);
    const result = await dryRunCreate(APPMONITOR_EVENTING_FILES);
    assert.equal(result.code, 0, result.stderr);
    const created = result.stdout.split("\n").filter((line) => line.endsWith("created (server dry run)"));
    assert.equal(created.length, objects.length, result.stdout);
  });

  test("the schemas are enforced: a field of the wrong type and an undeclared field are refused, saying where", async () => {
    // A Trigger's spec keeps unknown fields (Eventing's webhook checks them), a PingSource's does not.
    const [trigger] = (await manifestFile("knative/eventing/triggers.yaml")) as [Manifest & { spec: { delivery: Record<string, unknown> } }];
    const wrongType = structuredClone(trigger);
    wrongType.spec.delivery.retry = "eight";
    const [ping] = (await manifestFile("knative/eventing/pingsource.yaml")) as [Manifest & { spec: Record<string, unknown> }];
    const undeclared = structuredClone(ping);
    undeclared.spec.schedul = undeclared.spec.schedule;
    const cases = [
      [wrongType, /spec\.delivery\.retry: Invalid value: "string": spec\.delivery\.retry in body must be of type integer/],
      [undeclared, /unknown field "spec\.schedul"/],
    ] as const;
    for (const [object, why] of cases) {
      const file = path.join(dir.path, "invalid.yaml");
      await writeFile(file, stringify(object));
      const result = await dryRunCreate([file]);
      assert.notEqual(result.code, 0, result.stdout);
      assert.match(result.stderr, why);
    }
  });
});
