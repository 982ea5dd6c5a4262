// test/harness/eventing-overlay renders appmonitor's shipped Eventing objects for the stack's real node,
// where Knative Serving cannot run. Rendered with kustomize (the stack's kubectl) and compared
// with the shipped files it lists: the only differences are Serving references replaced by what
// stands in for them under the same name, so a change to a shipped file that the overlay would
// silently override fails here.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { EVENTING_OVERLAY_DIR } from "../../harness/stack/eventing-objects.ts";
import { repoRoot } from "../../harness/stack/paths.ts";
import path from "node:path";
import {
  isServingService, objectKey, objectsOf, overlayDifferences, overlaySources, renderedKey, servingReferences, servingServiceStandInDifferences,
  type OverlayDifference, type OverlaySources,
} from "../../support/eventing-overlay.ts";
import { kustomize, type Manifest } from "../../support/knative.ts";

let sources: OverlaySources;
let shipped: Manifest[];
let own: Manifest[];
let rendered: Map<string, Manifest>;

before(async () => {
  sources = await overlaySources(EVENTING_OVERLAY_DIR);
  [shipped, own] = await Promise.all([objectsOf(sources.shipped), objectsOf(sources.own)]);
  const objects = await kustomize(path.relative(repoRoot, EVENTING_OVERLAY_DIR), ["--load-restrictor=LoadRestrictionsNone"]);
  rendered = new Map(objects.map((o) => [objectKey(o), o]));
});

describe("overlayDifferences", () => {
  const trigger = {
    apiVersion: "eventing.knative.dev/v1", kind: "Trigger", metadata: { name: "t", namespace: "appmonitor" },
    spec: {
      broker: "default", filter: { attributes: { type: "x" } },
      subscriber: { ref: { apiVersion: "serving.knative.dev/v1", kind: "Service", name: "memory-scaler" } },
      delivery: { retry: 8, backoffDelay: "PT1S" },
    },
  };
  const withSpec = (spec: Record<string, unknown>) => ({ ...trigger, spec: { ...trigger.spec, ...spec } });
  const cases: { name: string; rendered: unknown; expected: OverlayDifference[] }[] = [
    { name: "unchanged", rendered: trigger, expected: [] },
    { name: "the subscriber's v1 Service of the same name", rendered: withSpec({ subscriber: { ref: { apiVersion: "v1", kind: "Service", name: "memory-scaler" } } }), expected: [] },
    { name: "its Deployment of the same name", rendered: withSpec({ subscriber: { ref: { apiVersion: "apps/v1", kind: "Deployment", name: "memory-scaler" } } }), expected: [] },
    {
      name: "a stand-in of another name",
      rendered: withSpec({ subscriber: { ref: { apiVersion: "v1", kind: "Service", name: "other" } } }),
      expected: [{ path: "/spec/subscriber/ref", shipped: trigger.spec.subscriber.ref, rendered: { apiVersion: "v1", kind: "Service", name: "other" } }],
    },
    {
      name: "a stand-in of a kind that is not one",
      rendered: withSpec({ subscriber: { ref: { apiVersion: "v1", kind: "ConfigMap", name: "memory-scaler" } } }),
      expected: [{ path: "/spec/subscriber/ref", shipped: trigger.spec.subscriber.ref, rendered: { apiVersion: "v1", kind: "ConfigMap", name: "memory-scaler" } }],
    },
    {
      name: "a stand-in with a namespace added",
      rendered: withSpec({ subscriber: { ref: { apiVersion: "v1", kind: "Service", name: "memory-scaler", namespace: "elsewhere" } } }),
      expected: [{ path: "/spec/subscriber/ref", shipped: trigger.spec.subscriber.ref, rendered: { apiVersion: "v1", kind: "Service", name: "memory-scaler", namespace: "elsewhere" } }],
    },
    { name: "a delivery field overridden", rendered: withSpec({ delivery: { retry: 3, backoffDelay: "PT1S" } }), expected: [{ path: "/spec/delivery/retry", shipped: 8, rendered: 3 }] },
    { name: "a field added", rendered: withSpec({ delivery: { ...trigger.spec.delivery, timeout: "PT5S" } }), expected: [{ path: "/spec/delivery/timeout", shipped: undefined, rendered: "PT5S" }] },
    { name: "a field removed", rendered: withSpec({ filter: {} }), expected: [{ path: "/spec/filter/attributes", shipped: { type: "x" }, rendered: undefined }] },
    { name: "a number become a string", rendered: withSpec({ delivery: { retry: "8", backoffDelay: "PT1S" } }), expected: [{ path: "/spec/delivery/retry", shipped: 8, rendered: "8" }] },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(overlayDifferences(trigger, c.rendered), c.expected));
  }

  test("a whole object that is a Knative Service is an object, not a reference: changing it is a difference", () => {
    const ksvc = { apiVersion: "serving.knative.dev/v1", kind: "Service", name: "x" };
    assert.deepEqual(overlayDifferences(ksvc, { ...ksvc, apiVersion: "v1" }), [{ path: "/apiVersion", shipped: "serving.knative.dev/v1", rendered: "v1" }]);
  });
});

describe("servingServiceStandInDifferences", () => {
  const ksvc = {
    apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name: "sink", namespace: "appmonitor" },
    spec: { template: {
      metadata: { labels: { "app.kubernetes.io/name": "sink" }, annotations: { "autoscaling.knative.dev/min-scale": "1" } },
      spec: { containers: [{ name: "c", image: "gcr.io/knative-releases/knative.dev/eventing/cmd/event_display" }] },
    } },
  };
  type Stand = typeof ksvc & { spec: { replicas?: number; selector?: { matchLabels: Record<string, string> }; template: { spec: { automountServiceAccountToken?: boolean } } } };
  const deployment = (change: (d: Stand) => void = () => {}) => {
    const d: Stand = structuredClone({ ...ksvc, apiVersion: "apps/v1", kind: "Deployment" });
    d.spec.replicas = 1;
    d.spec.selector = { matchLabels: { "app.kubernetes.io/name": "sink" } };
    d.spec.template.spec.containers = [{ name: "c", image: "localhost/appmonitor/knative-eventing/event_display:v0.50.0" }];
    change(d);
    return d;
  };
  test("its Deployment: same Pod template, replicas its min-scale, the same command built here", () => {
    assert.deepEqual(servingServiceStandInDifferences(ksvc, deployment()), []);
  });
  const image = (d: Stand, to: string) => { d.spec.template.spec.containers = [{ name: "c", image: to }]; };
  const cases: [string, (d: Stand) => void, string][] = [
    ["another command's image", (d) => image(d, "localhost/appmonitor/knative-eventing/controller:v0.50.0"), "/spec/template/spec/containers/0/image"],
    ["an image from elsewhere", (d) => image(d, "example.com/event_display:v0.50.0"), "/spec/template/spec/containers/0/image"],
    ["more replicas than min-scale", (d) => { d.spec.replicas = 2; }, "/spec/replicas"],
    ["a Pod template field changed", (d) => { d.spec.template.spec.automountServiceAccountToken = true; }, "/spec/template/spec/automountServiceAccountToken"],
    ["a selector beyond the template's name label", (d) => { d.spec.selector = { matchLabels: { "app.kubernetes.io/name": "sink", extra: "x" } }; }, "/spec/selector/matchLabels/extra"],
  ];
  for (const [name, change, where] of cases) {
    test(name, () => assert.deepEqual(servingServiceStandInDifferences(ksvc, deployment(change)).map((d) => d.path), [where]));
  }
});

describe("test/harness/eventing-overlay rendered", () => {
  test("renders shipped files from knative/ and adds only its own stand-ins", () => {
    assert.ok(sources.shipped.length > 0 && sources.shipped.every((f) => f.startsWith(path.join(repoRoot, "knative") + path.sep)), sources.shipped.join(", "));
    const expected = [...shipped.map(renderedKey), ...own.map(objectKey)].sort();
    assert.deepEqual([...rendered.keys()].sort(), expected);
  });

  test("differs from the shipped objects only by Serving references replaced by their stand-ins of the same name", () => {
    const differences = shipped.flatMap((o) => {
      const out = rendered.get(renderedKey(o));
      const found = isServingService(o) ? servingServiceStandInDifferences(o, out) : overlayDifferences(o, out);
      return found.map((d) => `${objectKey(o)} ${d.path}: ${JSON.stringify(d.shipped)} → ${JSON.stringify(d.rendered)}`);
    });
    assert.deepEqual(differences, []);
  });

  test("substitutes every Serving reference of the shipped files (nothing left that needs Knative Serving)", () => {
    const before = shipped.flatMap((o) => servingReferences(o).map((p) => `${objectKey(o)} ${p}`));
    assert.ok(before.length > 0, "the shipped files name Knative Services");
    const left = [...rendered.values()].flatMap((o) => servingReferences(o).map((p) => `${objectKey(o)} ${p}`));
    assert.deepEqual(left, []);
  });
});
