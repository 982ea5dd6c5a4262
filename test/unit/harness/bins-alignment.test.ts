// The binary sets' go.mod files, read back: the sets on one version of k8s.io/client-go (but the
// kube, node and proxy sets, which keep k8s.io/kubernetes's own versions) require one version of
// every module they share, so that a cold build compiles the Kubernetes libraries once per
// version and not once per set (docs/development.md, "cold run").
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { goModEntries } from "../../harness/bins/go-mod.ts";

const BINS = path.join(repoRoot, "test", "harness", "bins");

/** A go.mod's requirements, module path → version, direct and indirect. */
function requirements(goMod: string): Map<string, string> {
  return new Map(goModEntries(goMod, "require").map((entry) => entry.split(/\s+/) as [string, string]));
}

/**
 * The sets grouped by the k8s.io/client-go version their go.mod requires, leaving out those that
 * require k8s.io/kubernetes and those without client-go; a group of one is left out too.
 */
function clientGoFamilies(sets: ReadonlyMap<string, Map<string, string>>): Map<string, string[]> {
  const families = new Map<string, string[]>();
  for (const [name, required] of sets) {
    const clientGo = required.get("k8s.io/client-go");
    if (clientGo === undefined || required.has("k8s.io/kubernetes")) continue;
    families.set(clientGo, [...(families.get(clientGo) ?? []), name]);
  }
  return new Map([...families].filter(([, members]) => members.length > 1));
}

/** Each module two sets of a family require at different versions: "module: set@version, …". */
function misaligned(sets: ReadonlyMap<string, Map<string, string>>, family: readonly string[]): string[] {
  const versions = new Map<string, Map<string, string>>();
  for (const name of family) {
    for (const [module, version] of sets.get(name) ?? []) versions.set(module, (versions.get(module) ?? new Map()).set(name, version));
  }
  return [...versions]
    .filter(([, bySet]) => new Set(bySet.values()).size > 1)
    .map(([module, bySet]) => `${module}: ${[...bySet].map(([name, version]) => `${name}@${version}`).join(", ")}`);
}

/**
 * The modules a set keeps at a lower version than its family, "set module" → why: the higher one
 * does not build with it.
 */
const KEPT_LOWER = new Map([
  ["vpa github.com/prometheus/client_golang", "the VPA v1.8.1's recommender takes three results from the Prometheus API's Query and QueryRange, which v1.25 changed to four"],
]);

function readSets(): Map<string, Map<string, string>> {
  const sets = new Map<string, Map<string, string>>();
  for (const name of readdirSync(BINS).sort()) {
    const file = path.join(BINS, name, "go.mod");
    if (existsSync(file)) sets.set(name, requirements(readFileSync(file, "utf8")));
  }
  return sets;
}

test("the sets on one k8s.io/client-go version, the kube sets apart, require one version of every module they share", () => {
  const sets = readSets();
  const families = clientGoFamilies(sets);
  // The families docs/development.md names.
  assert.deepEqual([...families.values()], [["dns", "helm", "prom", "vpa"], ["eventing", "ksm", "serving"], ["kwok", "promop"]]);
  for (const [set, module] of [...KEPT_LOWER.keys()].map((k) => k.split(" ") as [string, string])) {
    const family = [...families.values()].find((f) => f.includes(set)) ?? [];
    const others = family.filter((f) => f !== set).map((f) => sets.get(f)?.get(module)).filter((v) => v !== undefined);
    assert.ok(others.some((v) => v !== sets.get(set)?.get(module)), `${set} still keeps ${module} apart from its family (else drop it from KEPT_LOWER)`);
    sets.get(set)?.delete(module);
  }
  for (const [clientGo, family] of families) assert.deepEqual(misaligned(sets, family), [], `client-go ${clientGo}: ${family.join(", ")}`);
});

test("a module two sets of a family require at different versions is named with each set's version", () => {
  const sets = new Map([
    ["a", requirements("module a\n\nrequire k8s.io/client-go v0.37.2\n\nrequire (\n\tk8s.io/utils v0.0.0-1 // indirect\n\tgithub.com/x/y v1.0.0\n)\n")],
    ["b", requirements("module b\n\nrequire (\n\tk8s.io/client-go v0.37.2\n\tk8s.io/utils v0.0.0-2 // indirect\n\tgithub.com/x/y v1.0.0\n)\n")],
    ["k", requirements("module k\n\nrequire k8s.io/kubernetes v1.36.3\n\nrequire k8s.io/client-go v0.37.2\n")],
    ["c", requirements("module c\n\nrequire k8s.io/client-go v0.33.2\n")],
  ]);
  assert.deepEqual([...clientGoFamilies(sets)], [["v0.37.2", ["a", "b"]]]);
  assert.deepEqual(misaligned(sets, ["a", "b"]), ["k8s.io/utils: a@v0.0.0-1, b@v0.0.0-2"]);
});
