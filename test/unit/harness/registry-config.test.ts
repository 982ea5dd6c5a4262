// The stack's local registry and the real node's mirrors of it, read back: which registries get a
// mirror, that containerd has nothing to fall back to outside, where each image lives in the
// registry, and the overlay that places the original manifest on the real node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parse, parseAllDocuments } from "yaml";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { containerdConfig, REAL_NODE_PACKAGES, REAL_NODE_PLACEMENT, realNodePaths } from "../../harness/stack/real-node-config.ts";
import { realNodeKustomization } from "../../harness/stack/real-node-overlay.ts";
import { hostsDirName, hostsToml, mirroredHosts, mirroredReference, parseReference, REGISTRY_ENV, registryConfig } from "../../harness/stack/registry-config.ts";
import { servedImages } from "../../harness/stack/registry.ts";

const address = "127.0.0.1:40123";

/** The request path containerd 1.6 makes for a manifest (remotes/docker: `/` + the host's path + the repository + `manifests/<tag>`). */
function manifestPath(hostsTomlText: string, reference: string): string {
  const server = /^server = "([^"]+)"$/m.exec(hostsTomlText)?.[1] ?? "";
  const { path, tag } = parseReference(reference);
  return `${new URL(server).pathname}/${path}/manifests/${tag}`;
}

test("the served images: memhog under the original demo's name, the functions under the names knative/services/ uses", () => {
  const served = servedImages({ APPMONITOR_CACHE: "/cache" });
  assert.deepEqual(served.map((i) => [i.name, i.reference, i.archive]), [
    ["memhog", "quay.io/metral/memhog:v0.0.1", "/cache/images/memhog.oci.tar"],
    ["alert-receiver", "ghcr.io/kubedemo/appmonitor-alert-receiver:latest", "/cache/images/alert-receiver.oci.tar"],
    ["memory-scaler", "ghcr.io/kubedemo/appmonitor-memory-scaler:latest", "/cache/images/memory-scaler.oci.tar"],
    ["rule-sync", "ghcr.io/kubedemo/appmonitor-rule-sync:latest", "/cache/images/rule-sync.oci.tar"],
    ["dead-letter", "ghcr.io/kubedemo/appmonitor-dead-letter:latest", "/cache/images/dead-letter.oci.tar"],
  ]);
  assert.equal(servedImages({ APPMONITOR_CACHE: "/cache" }, "/tmp/m.oci.tar")[0]?.archive, "/tmp/m.oci.tar");
  for (const name of ["alert-receiver", "memory-scaler", "rule-sync"]) {
    const service = readFileSync(`${repoRoot}/knative/services/${name}.yaml`, "utf8");
    assert.ok(service.includes(`image: ghcr.io/kubedemo/appmonitor-${name}:latest`), `knative/services/${name}.yaml names the served image`);
  }
  assert.ok(readFileSync(`${repoRoot}/knative/eventing/dead-letter.yaml`, "utf8").includes("image: ghcr.io/kubedemo/appmonitor-dead-letter:latest"), "knative/eventing/dead-letter.yaml names the served image");
});

test("only the registries of served images get a mirror: ghcr.io and quay.io", () => {
  assert.deepEqual(mirroredHosts(servedImages().map((i) => i.reference)), ["ghcr.io", "quay.io"]);
});

test("an image keeps its whole name in the registry, registry host included", () => {
  assert.equal(mirroredReference(address, "quay.io/metral/memhog:v0.0.1"), "127.0.0.1:40123/quay.io/metral/memhog:v0.0.1");
  assert.equal(mirroredReference(address, "ghcr.io/kubedemo/appmonitor-rule-sync:latest"), "127.0.0.1:40123/ghcr.io/kubedemo/appmonitor-rule-sync:latest");
  assert.deepEqual(parseReference("localhost:5000/a/b_c.d:1.0-x"), { host: "localhost:5000", path: "a/b_c.d", tag: "1.0-x" });
});

test("references that are not fully qualified are refused, naming the reference", () => {
  for (const bad of ["busybox:latest", "library/busybox:1", "quay.io/metral/memhog", "quay.io/metral/memhog@sha256:00", "quay.io/Metral/memhog:v1", "quay.io/:v1"]) {
    assert.throws(() => parseReference(bad), new RegExp(`${JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is not a fully qualified`), bad);
  }
});

test("hosts.toml: the local registry is the only server, over plain HTTP, pull and resolve only", () => {
  const text = hostsToml("quay.io", address);
  const lines = text.split("\n").filter((l) => l && !l.startsWith("#"));
  assert.deepEqual(lines, [
    'server = "http://127.0.0.1:40123/v2/quay.io"',
    "override_path = true",
    'capabilities = ["pull", "resolve"]',
    "[host]",
  ]);
  // containerd 1.6 tries each [host."…"] first and then `server`, and fills an empty `server`
  // with https://<host>: an empty host table and a server of ours leave it nothing outside to
  // try. Without the table it refuses the whole file and pulls from https://<host>.
  assert.equal(lines.at(-1), "[host]", "the empty host table comes last (keys after it would belong to it)");
});

test("hosts.toml: containerd's manifest request lands on the repository the push wrote", () => {
  for (const reference of ["quay.io/metral/memhog:v0.0.1", "ghcr.io/kubedemo/appmonitor-memory-scaler:latest"]) {
    const { host } = parseReference(reference);
    const mirrored = mirroredReference(address, reference);
    const repository = mirrored.slice(address.length + 1, mirrored.lastIndexOf(":"));
    assert.equal(manifestPath(hostsToml(host, address), reference), `/v2/${repository}/manifests/${mirrored.slice(mirrored.lastIndexOf(":") + 1)}`);
  }
});

test("hosts.toml: a host that is not a registry host is refused", () => {
  assert.throws(() => hostsToml("quay", address), /"quay" is not a registry host/);
  assert.throws(() => hostsToml("quay.io/x", address), /is not a registry host/);
});

test("hosts directory names: a port becomes _port_, as containerd 1.6 looks for it", () => {
  assert.equal(hostsDirName("quay.io"), "quay.io");
  assert.equal(hostsDirName("localhost:5000"), "localhost_5000_");
});

test("containerd reads its registry hosts where the mirrors are written", () => {
  const paths = realNodePaths("/state");
  assert.equal(paths.containerdHostsDir, "/state/node/containerd/certs.d");
  assert.ok(containerdConfig(paths).includes(`config_path = "${paths.containerdHostsDir}"`));
});

test("the registry's configuration: 127.0.0.1 only, storage in the state directory, no deletes, access log on", () => {
  const config = parse(registryConfig({ address, rootDirectory: "/state/registry/data" })) as {
    version: number; http: { addr: string; debug?: unknown }; storage: { filesystem: { rootdirectory: string }; delete: { enabled: boolean } };
    log: { accesslog: { disabled: boolean } };
  };
  assert.equal(config.version, 0.1);
  assert.equal(config.http.addr, address);
  assert.equal(config.http.debug, undefined, "no debug server on another port");
  assert.equal(config.storage.filesystem.rootdirectory, "/state/registry/data");
  assert.equal(config.storage.delete.enabled, false);
  assert.equal(config.log.accesslog.disabled, false);
  assert.deepEqual(REGISTRY_ENV, { OTEL_TRACES_EXPORTER: "none" }, "no OTLP exporter dialling localhost:4318");
});

test("skopeo is among the real node's Debian packages, and scripts/install-debian.sh installs every one of them", () => {
  assert.ok(REAL_NODE_PACKAGES.includes("skopeo"));
  const script = readFileSync(`${repoRoot}/scripts/install-debian.sh`, "utf8");
  for (const pkg of REAL_NODE_PACKAGES) assert.ok(script.includes(`want ${pkg} `), `scripts/install-debian.sh installs ${pkg}`);
});

test("the real node's overlay: the manifest as a resource, the placement patched into every Deployment", () => {
  const kustomization = parse(realNodeKustomization("memhog.yaml", "demo")) as {
    kind: string; namespace: string; resources: string[]; patches: { target: Record<string, string>; patch: string }[];
  };
  assert.equal(kustomization.kind, "Kustomization");
  assert.equal(kustomization.namespace, "demo");
  assert.deepEqual(kustomization.resources, ["memhog.yaml"]);
  assert.deepEqual(kustomization.patches.map((p) => p.target), [{ group: "apps", version: "v1", kind: "Deployment" }]);
  const [patch] = parseAllDocuments(kustomization.patches[0]?.patch ?? "").map((d) => d.toJS() as { spec: { template: { spec: unknown } } });
  assert.deepEqual(patch?.spec.template.spec, REAL_NODE_PLACEMENT);
});
