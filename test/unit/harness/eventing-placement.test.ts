// The placement step on Eventing's rendered install: every workload's Pods go to the real node
// (its label as nodeSelector, its NoSchedule taint tolerated), nothing else changes, and the
// step can be repeated.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import type { EventingObject } from "../../harness/stack/eventing-manifests.ts";
import { DEFAULT_TOLERATIONS_ANNOTATION, NODE_SELECTOR_ANNOTATION, placementAnnotations, placePods } from "../../harness/stack/eventing-placement.ts";
import { eventingInstall } from "../../harness/stack/eventing-source.ts";
import { REAL_NODE, REAL_NODE_PLACEMENT } from "../../harness/stack/real-node-config.ts";

let objects: EventingObject[];

before(async () => {
  ({ objects } = await eventingInstall());
});

type PodSpec = { nodeSelector?: Record<string, string>; tolerations?: { key?: string; operator?: string; effect?: string }[] };
const podSpec = (o: EventingObject): PodSpec => (o.spec as { template: { spec: PodSpec } }).template.spec;

test("every Deployment of the install is placed on the real node, keeping what its template had", () => {
  const before = structuredClone(objects);
  const placed = placePods(objects, REAL_NODE_PLACEMENT);
  assert.deepStrictEqual(objects, before, "the input is not changed");
  const deployments = placed.filter((o) => o.kind === "Deployment");
  assert.equal(deployments.length, 8);
  for (const d of deployments) {
    const spec = podSpec(d);
    const original = podSpec(objects.find((o) => o.kind === "Deployment" && o.metadata.name === d.metadata.name) as EventingObject);
    assert.deepEqual(spec.nodeSelector, { ...original.nodeSelector, [REAL_NODE.label.key]: REAL_NODE.label.value }, d.metadata.name);
    assert.deepEqual(spec.tolerations, [...(original.tolerations ?? []), ...REAL_NODE_PLACEMENT.tolerations], d.metadata.name);
    const { nodeSelector: _n, tolerations: _t, ...rest } = spec;
    const { nodeSelector: _on, tolerations: _ot, ...originalRest } = original;
    assert.deepStrictEqual(rest, originalRest, `${d.metadata.name}: nothing else in the Pod spec changes`);
  }
  const others = (list: EventingObject[]): EventingObject[] => list.filter((o) => o.kind !== "Deployment");
  assert.deepStrictEqual(others(placed), others(objects));
});

test("placing twice is placing once, and a selector of the same key is overridden", () => {
  const deployment: EventingObject = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "d" },
    spec: { template: { spec: { nodeSelector: { [REAL_NODE.label.key]: "other", zone: "a" }, tolerations: [{ key: "x", operator: "Exists" }], containers: [] } } },
  };
  const once = placePods([deployment], REAL_NODE_PLACEMENT);
  assert.deepStrictEqual(placePods(once, REAL_NODE_PLACEMENT), once);
  assert.deepEqual(podSpec(once[0] as EventingObject), {
    nodeSelector: { [REAL_NODE.label.key]: REAL_NODE.label.value, zone: "a" },
    tolerations: [{ key: "x", operator: "Exists" }, ...REAL_NODE_PLACEMENT.tolerations],
    containers: [],
  });
});

test("a workload without a Pod template is refused, naming it", () => {
  assert.throws(() => placePods([{ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "broken" }, spec: {} }], REAL_NODE_PLACEMENT), /Deployment broken has no spec\.template\.spec/);
});

test("the namespace annotations carry the same placement, in the admission plugins' formats", () => {
  const annotations = placementAnnotations(REAL_NODE_PLACEMENT);
  assert.deepEqual(annotations, {
    [NODE_SELECTOR_ANNOTATION]: `${REAL_NODE.label.key}=${REAL_NODE.label.value}`,
    [DEFAULT_TOLERATIONS_ANNOTATION]: JSON.stringify([{ key: REAL_NODE.taint.key, operator: "Exists", effect: REAL_NODE.taint.effect }]),
  });
});
