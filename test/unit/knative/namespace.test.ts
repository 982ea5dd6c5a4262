// Any namespace: knative/namespace/namespace.yaml names the install's namespace once, and both
// profiles, knative/alertmanager/ and knative/monitoring/ follow it everywhere, strings included: the dry-run-only Pod
// guard's username, the Triggers' PingSource source filters, the bindings' subjects and
// alert-receiver's address. Rendered by kustomize from a copy of knative/ whose namespace is
// renamed, as a user would rename it.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { cp, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { kustomize, type Manifest } from "../../support/knative.ts";
import { tempDir } from "../../support/temp-dir.ts";

const OTHER = "tools-monitoring";

/** Every string inside `value`, with its JSON Pointer. */
function strings(value: unknown, at = ""): [string, string][] {
  if (typeof value === "string") return [[at, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, `${at}/${i}`));
  if (value !== null && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => strings(v, `${at}/${k}`));
  return [];
}

/** Where a string names a namespace: as a whole namespace field, in a username, an API path or a Service's DNS name. */
const namesNamespace = (ns: string) => (pointer: string, value: string): boolean =>
  (pointer.endsWith("/namespace") && value === ns) || value.includes(`:${ns}:`) || value.includes(`/namespaces/${ns}/`) || value.includes(`.${ns}.svc`);

const rendered: Record<"serving" | "eventing-only" | "alertmanager" | "monitoring", Manifest[]> = { serving: [], "eventing-only": [], alertmanager: [], monitoring: [] };
let shipped: Manifest[] = [];

before(async () => {
  const scratch = await tempDir("appmonitor-namespace");
  const copy = path.join(scratch.path, "knative");
  await cp(path.join(repoRoot, "knative"), copy, { recursive: true });
  const rename = async (file: string, from: RegExp, to: string) => {
    const text = await readFile(path.join(copy, file), "utf8");
    assert.match(text, from, file);
    await writeFile(path.join(copy, file), text.replace(from, to));
  };
  await rename("namespace/namespace.yaml", /^ {2}name: appmonitor$/m, `  name: ${OTHER}`);
  await rename("alertmanager/alertmanagerconfig.yaml", /^ {2}namespace: appmonitor$/m, `  namespace: ${OTHER}`);
  [rendered.serving, rendered["eventing-only"], rendered.alertmanager, rendered.monitoring, shipped] = await Promise.all([
    kustomize(copy), kustomize(path.join(copy, "eventing-only")), kustomize(path.join(copy, "alertmanager")), kustomize(path.join(copy, "monitoring")), kustomize("knative"),
  ]);
  await scratch.remove();
});

test("the shipped install names its namespace in each of these places (so the check below can fail)", () => {
  const found = shipped.flatMap((o) => strings(o).filter(([p, v]) => namesNamespace("appmonitor")(p, v)).map(([p]) => `${o.kind} ${p}`));
  for (const where of ["ValidatingAdmissionPolicy /spec/matchConditions/0/expression", "Trigger /spec/filter/attributes/source", "ClusterRoleBinding /subjects/0/namespace", "ServiceAccount /metadata/namespace"]) {
    assert.ok(found.includes(where), `${where} among ${[...new Set(found)].join(", ")}`);
  }
});

for (const profile of ["serving", "eventing-only", "alertmanager", "monitoring"] as const) {
  test(`${profile}: renamed in namespace.yaml, no object or string names appmonitor as a namespace any more`, () => {
    const objects = rendered[profile];
    assert.ok(objects.length > 0);
    const left = objects.flatMap((o) => strings(o).filter(([p, v]) => namesNamespace("appmonitor")(p, v)).map(([p, v]) => `${o.kind}/${o.metadata.name} ${p}: ${v}`));
    assert.deepEqual(left, []);
    const clusterScoped = new Set(["Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]);
    for (const o of objects) assert.equal(o.metadata.namespace, clusterScoped.has(o.kind) ? undefined : OTHER, `${o.kind}/${o.metadata.name}`);
  });
}

test("the guard, the resync filters and alert-receiver's address name the new namespace", () => {
  const all = [...rendered.serving, ...rendered["eventing-only"], ...rendered.alertmanager];
  const values = all.flatMap((o) => strings(o).map(([, v]) => v));
  assert.ok(values.some((v) => v.includes(`"system:serviceaccount:${OTHER}:memory-scaler"`)), "the policy's username");
  assert.equal(values.filter((v) => v === `/apis/v1/namespaces/${OTHER}/pingsources/rule-sync-resync`).length, 4, "both resync Triggers, in both profiles");
  assert.ok(values.includes(`http://alert-receiver.${OTHER}.svc.cluster.local/`), "the AlertmanagerConfig's webhook URL");
  const [ns] = rendered.serving.filter((o) => o.kind === "Namespace");
  assert.equal(ns?.metadata.name, OTHER);
});

test("knative/monitoring/ renders no Namespace: `kubectl delete -k` of it (or -f of the release's monitoring.yaml) leaves the install", () => {
  assert.deepEqual(rendered.monitoring.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`).sort(), [`ConfigMap/${OTHER}/appmonitor-dashboard`, `PodMonitor/${OTHER}/appmonitor`]);
});
