// The two install profiles, rendered by kustomize (the stack's kubectl) and compared field by field:
// the Eventing-only profile (knative/eventing-only/) is the Serving profile (knative/) with each
// Knative Service a Deployment of the very same Pod template and a `v1` Service of the same name,
// and each Serving reference naming that stand-in. So the Pod templates cannot drift: a change
// to a Knative Service reaches both, and a change the Eventing-only profile would make on its own
// fails here.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  deploymentDifferences, expectedDeployment, isServingService, objectKey, overlayDifferences, renderedKey, servingReferences, type OverlayDifference,
} from "../../support/profiles.ts";
import { kustomize, type Manifest } from "../../support/knative.ts";

let serving: Manifest[];
let eventingOnly: Map<string, Manifest>;

before(async () => {
  serving = await kustomize("knative");
  eventingOnly = new Map((await kustomize("knative/eventing-only")).map((o) => [objectKey(o), o]));
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

describe("expectedDeployment", () => {
  const ksvc = {
    apiVersion: "serving.knative.dev/v1", kind: "Service",
    metadata: { name: "f", namespace: "appmonitor", labels: { "app.kubernetes.io/name": "f", "networking.knative.dev/visibility": "cluster-local" } },
    spec: { template: {
      metadata: { labels: { "app.kubernetes.io/name": "f" }, annotations: { "autoscaling.knative.dev/min-scale": "0", "autoscaling.knative.dev/max-scale": "3" } },
      spec: { timeoutSeconds: 60, serviceAccountName: "f", containers: [{ name: "f", image: "example.com/f:1" }] },
    } },
  };
  test("one replica (a Deployment does not scale to zero), selected by the name label; Serving's own fields gone; the rest kept", () => {
    assert.deepEqual(expectedDeployment(ksvc), {
      apiVersion: "apps/v1", kind: "Deployment",
      metadata: { name: "f", namespace: "appmonitor", labels: { "app.kubernetes.io/name": "f" } },
      spec: {
        replicas: 1, selector: { matchLabels: { "app.kubernetes.io/name": "f" } },
        template: { metadata: { labels: { "app.kubernetes.io/name": "f" } }, spec: { serviceAccountName: "f", containers: [{ name: "f", image: "example.com/f:1" }] } },
      },
    });
  });
  test("another template annotation is kept, so a profile that dropped it differs", () => {
    const annotated = structuredClone(ksvc);
    (annotated.spec.template.metadata.annotations as Record<string, string>)["prometheus.io/scrape"] = "true";
    const deployment = expectedDeployment(annotated) as unknown as { spec: { template: { metadata: Record<string, unknown> } } };
    assert.deepEqual(deployment.spec.template.metadata.annotations, { "prometheus.io/scrape": "true" });
    const dropped = structuredClone(deployment);
    delete dropped.spec.template.metadata.annotations;
    assert.deepEqual(deploymentDifferences(annotated, dropped).map((d) => d.path), ["/spec/template/metadata/annotations"]);
  });
  test("a container field changed is a difference", () => {
    const changed = structuredClone(expectedDeployment(ksvc)) as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } };
    (changed.spec.template.spec.containers[0] as { image: string }).image = "example.com/f:2";
    assert.deepEqual(deploymentDifferences(ksvc, changed).map((d) => d.path), ["/spec/template/spec/containers/0/image"]);
  });
});

describe("the Eventing-only profile (kubectl kustomize knative/eventing-only/)", () => {
  const own = () => [...eventingOnly.values()].filter((o) => !serving.some((s) => renderedKey(s) === objectKey(o)));

  test("has every object of the Serving profile, each Knative Service as a Deployment, and adds only a v1 Service per Deployment", () => {
    const deployments = serving.filter(isServingService).map((o) => o.metadata.name).sort();
    assert.deepEqual(deployments, ["alert-receiver", "appmonitor-dead-letter", "memory-scaler", "rule-sync"]);
    for (const o of serving) assert.ok(eventingOnly.has(renderedKey(o)), `missing ${renderedKey(o)}`);
    assert.deepEqual(own().map(objectKey).sort(), deployments.map((name) => `v1 Service appmonitor/${name}`));
  });

  test("differs from the Serving profile only as expectedDeployment and the stand-ins say: the Pod templates are the same", () => {
    const differences = serving.flatMap((o) => {
      const out = eventingOnly.get(renderedKey(o));
      const found = isServingService(o) ? deploymentDifferences(o, out) : overlayDifferences(o, out);
      return found.map((d) => `${objectKey(o)} ${d.path}: ${JSON.stringify(d.shipped)} → ${JSON.stringify(d.rendered)}`);
    });
    assert.deepEqual(differences, []);
  });

  test("each v1 Service answers on port 80 for its Deployment's Pods, on their container port", () => {
    for (const service of own()) {
      const deployment = eventingOnly.get(`apps/v1 Deployment appmonitor/${service.metadata.name}`) as unknown as {
        spec: { selector: { matchLabels: Record<string, string> }; template: { spec: { containers: { ports?: { containerPort: number }[] }[] } } };
      };
      const spec = service.spec as { selector: Record<string, string>; ports: { port: number; targetPort: number }[] };
      assert.deepEqual(spec.selector, deployment.spec.selector.matchLabels, service.metadata.name);
      assert.deepEqual(spec.ports.map((p) => [p.port, p.targetPort]), [[80, deployment.spec.template.spec.containers[0]?.ports?.[0]?.containerPort ?? 8080]], service.metadata.name);
    }
  });

  test("names no Knative Serving object anywhere (nothing in it needs Serving)", () => {
    const before = serving.flatMap((o) => servingReferences(o).map((p) => `${objectKey(o)} ${p}`));
    assert.ok(before.length > 0, "the Serving profile names Knative Services");
    const left = [...eventingOnly.values()].flatMap((o) => [...servingReferences(o).map((p) => `${objectKey(o)} ${p}`), ...(isServingService(o) ? [objectKey(o)] : [])]);
    assert.deepEqual(left, []);
  });
});
