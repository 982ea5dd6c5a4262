// Knative Serving's install (all but the ingress) rendered from the pinned module's config/core/
// tree (in the Go module cache; `go mod download` fetches it when missing): every ko:// reference
// becomes the name of an image serving.sh makes, the files the module zip drops (links into
// knative.dev/networking and knative.dev/caching) are back, and the stack's own steps change only
// the ConfigMap entries and Pod placement they name.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { EventingObject } from "../../harness/stack/eventing-manifests.ts";
import { REAL_NODE_PLACEMENT } from "../../harness/stack/real-node-config.ts";
import { servingObjectsForStack } from "../../harness/stack/serving-install.ts";
import { NO_INGRESS_CLASS, renderServing, SERVING_NAMESPACE, servingImage, SKIP_TAG_RESOLVING } from "../../harness/stack/serving-manifests.ts";
import { servingFiles, servingImageArchive, servingModule } from "../../harness/stack/serving-source.ts";
import type { EventingModule } from "../../harness/stack/eventing-source.ts";

let module: EventingModule;
let objects: EventingObject[];

before(async () => {
  module = await servingModule();
  objects = renderServing(await servingFiles(module.dir), module.version, module.commands);
});

/** Every string anywhere in `value`. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

const configMap = (list: readonly EventingObject[], name: string) =>
  list.find((o) => o.kind === "ConfigMap" && o.metadata.name === name && o.metadata.namespace === SERVING_NAMESPACE) as (EventingObject & { data: Record<string, string> }) | undefined;

describe("the pinned module", () => {
  test("is Serving v0.50.0, and its tool block names the four components and queue-proxy", () => {
    assert.equal(module.version, "v0.50.0");
    assert.deepEqual([...module.commands].sort(), ["activator", "autoscaler", "controller", "queue", "webhook"]);
    assert.equal(servingImageArchive("/c/bin", "queue"), "/c/bin/knative-serving/queue.oci.tar");
  });
});

describe("the rendered install", () => {
  test("names no ko:// image; each Deployment runs the image built of its command, and queue-proxy is ours", () => {
    assert.deepEqual(strings(objects).filter((s) => s.startsWith("ko://")), []);
    const images = objects.filter((o) => o.kind === "Deployment").map((o) => [o.metadata.name, strings(o).filter((s) => s.startsWith("localhost/appmonitor/"))]);
    assert.deepEqual(images.sort(), ["activator", "autoscaler", "controller", "webhook"].map((c) => [c, [servingImage(c, "v0.50.0")]]));
    assert.equal(configMap(objects, "config-deployment")?.data["queue-sidecar-image"], servingImage("queue", "v0.50.0"));
  });

  test("holds the kinds and config-network the module zip drops, from the networking and caching modules", () => {
    const crds = objects.filter((o) => o.kind === "CustomResourceDefinition").map((o) => o.metadata.name);
    for (const crd of ["serverlessservices.networking.internal.knative.dev", "ingresses.networking.internal.knative.dev", "certificates.networking.internal.knative.dev", "images.caching.internal.knative.dev", "clusterdomainclaims.networking.internal.knative.dev"]) {
      assert.ok(crds.includes(crd), crd);
    }
    assert.ok(configMap(objects, "config-network"));
  });

  test("refuses a ko:// reference to a command not built", () => {
    const file = { path: "core/x.yaml", text: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{image: ko://knative.dev/serving/cmd/default-domain}]}\n" };
    assert.throws(() => renderServing([file], "v0.50.0", module.commands), /core\/x\.yaml: Pod x names ko:\/\/knative\.dev\/serving\/cmd\/default-domain/);
  });
});

describe("the stack's steps", () => {
  test("change only config-network's ingress class, the registries skipping tag resolution, the given autoscaler windows and the Pods' placement", () => {
    const windows = { stableWindow: "6s", scaleToZeroGracePeriod: "6s" };
    const stack = servingObjectsForStack(objects, windows);
    assert.equal(configMap(stack, "config-network")?.data["ingress-class"], NO_INGRESS_CLASS);
    assert.equal(configMap(stack, "config-deployment")?.data["registries-skipping-tag-resolving"], SKIP_TAG_RESOLVING.join(","));
    assert.equal(configMap(stack, "config-autoscaler")?.data["stable-window"], "6s");
    assert.equal(configMap(stack, "config-autoscaler")?.data["scale-to-zero-grace-period"], "6s");
    // Undo exactly those changes: what is left must be Serving's own objects.
    const undone = stack.map((o, i) => {
      const copy = structuredClone(o) as EventingObject & { data?: Record<string, string>; spec?: { template?: { spec?: Record<string, unknown> } } };
      const original = objects[i] as typeof copy;
      if (copy.kind === "ConfigMap") copy.data = original.data;
      const podSpec = copy.spec?.template?.spec;
      if (podSpec && copy.kind === "Deployment") {
        assert.deepEqual(podSpec.nodeSelector, { ...(original.spec?.template?.spec?.nodeSelector as object | undefined), ...REAL_NODE_PLACEMENT.nodeSelector });
        podSpec.nodeSelector = original.spec?.template?.spec?.nodeSelector;
        podSpec.tolerations = original.spec?.template?.spec?.tolerations;
        if (podSpec.nodeSelector === undefined) delete podSpec.nodeSelector;
        if (podSpec.tolerations === undefined) delete podSpec.tolerations;
      }
      return copy;
    });
    assert.deepEqual(undone, objects);
    const changed = stack.filter((o, i) => o.kind === "ConfigMap" && JSON.stringify(o) !== JSON.stringify(objects[i])).map((o) => o.metadata.name);
    assert.deepEqual(changed.sort(), ["config-autoscaler", "config-deployment", "config-network"]);
    assert.equal(configMap(servingObjectsForStack(objects), "config-autoscaler")?.data["stable-window"], undefined, "Serving's windows unless a test gives its own");
  });
});
