// The VPA's and metrics-server's own Deployments (the pinned modules' deploy/ and manifests/base/,
// in the Go module cache; `go mod download` fetches them when missing) changed only by the named
// steps: the images built here, and each flag of VPA_FLAGS, which docs/development.md lists.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import type { EventingObject } from "../../harness/stack/eventing-manifests.ts";
import { downloadModule } from "../../harness/stack/eventing-source.ts";
import { metricsServerImage, VPA_FLAGS, vpaImage, withFlags, withImages } from "../../harness/stack/vpa-manifests.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";

const bins = path.join(repoRoot, "test", "harness", "bins");
let objects: EventingObject[];
let vpaVersion: string;
let metricsServerVersion: string;

before(async () => {
  const vpa = await downloadModule(path.join(bins, "vpa"), "k8s.io/autoscaler/vertical-pod-autoscaler");
  const ms = await downloadModule(path.join(bins, "metrics"), "sigs.k8s.io/metrics-server");
  vpaVersion = vpa.version.replace(/^v/, "");
  metricsServerVersion = ms.version;
  const files = [
    ...["recommender", "updater", "admission-controller"].map((c) => path.join(vpa.dir, "deploy", `${c}-deployment.yaml`)),
    path.join(ms.dir, "manifests", "base", "deployment.yaml"),
  ];
  objects = (await Promise.all(files.map(async (f) => parseAllDocuments(await readFile(f, "utf8")).map((d) => d.toJS() as EventingObject)))).flat().filter((o) => o?.kind);
});

type Container = { image: string; args?: string[] };
const containerOf = (list: readonly EventingObject[], name: string): Container =>
  (list.find((o) => o.kind === "Deployment" && o.metadata.name === name)?.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0] as Container;

describe("the pinned modules", () => {
  test("are the VPA 1.8.1 and metrics-server v0.8.0, with the four Deployments", () => {
    assert.equal(vpaVersion, "1.8.1");
    assert.equal(metricsServerVersion, "v0.8.0");
    assert.deepEqual(objects.map((o) => o.metadata.name).sort(), ["metrics-server", "vpa-admission-controller", "vpa-recommender", "vpa-updater"]);
  });
});

describe("withImages", () => {
  test("names the images build.sh makes, in every Deployment, and leaves its input as it was", () => {
    const before = structuredClone(objects);
    const out = withImages(objects, vpaVersion, metricsServerVersion);
    assert.equal(containerOf(out, "vpa-recommender").image, vpaImage("recommender", "1.8.1"));
    assert.equal(containerOf(out, "vpa-admission-controller").image, "localhost/appmonitor/vpa-admission-controller:1.8.1");
    assert.equal(containerOf(out, "metrics-server").image, metricsServerImage("v0.8.0"));
    assert.deepEqual(objects, before);
  });

  test("refuses a Deployment that runs another image than the upstream one, naming it", () => {
    const changed = withImages(objects, vpaVersion, metricsServerVersion);
    assert.throws(() => withImages(changed, vpaVersion, metricsServerVersion), /Deployment vpa-recommender runs localhost\/appmonitor\/vpa-recommender:1\.8\.1, not the upstream image/);
    assert.throws(() => withImages(objects.filter((o) => o.metadata.name !== "vpa-updater"), vpaVersion, metricsServerVersion), /no Deployment vpa-updater/);
  });
});

describe("withFlags", () => {
  test("sets each flag once, over the manifest's own value, and keeps the other arguments", () => {
    const out = withFlags(objects);
    const ms = containerOf(out, "metrics-server").args ?? [];
    assert.deepEqual(ms.filter((a) => a.startsWith("--metric-resolution")), ["--metric-resolution=10s"]);
    assert.ok(ms.includes("--kubelet-insecure-tls") && ms.includes("--kubelet-request-timeout=5s"));
    assert.ok(ms.includes("--kubelet-use-node-status-port"), "the manifest's own arguments stay");
    assert.deepEqual(containerOf(out, "vpa-admission-controller").args, containerOf(objects, "vpa-admission-controller").args, "no flag of the admission controller's");
    for (const f of VPA_FLAGS) {
      const args = containerOf(out, f.deployment).args ?? [];
      assert.equal(args.filter((a) => a === f.flag || a.startsWith(`${f.flag}=`)).length, 1, `${f.deployment} ${f.flag}`);
    }
  });

  test("metrics-server's resolution stays above its kubelet request timeout, which it refuses otherwise", () => {
    const value = (flag: string) => VPA_FLAGS.find((f) => f.flag === flag)?.value ?? "";
    assert.ok(Number.parseInt(value("--metric-resolution"), 10) > Number.parseInt(value("--kubelet-request-timeout"), 10));
  });
});
