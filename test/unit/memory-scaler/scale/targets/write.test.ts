// The Pod a scaled template makes, for the dry run of its admission (functions/memory-scaler/scale/targets/write.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { podForAdmission } from "../../../../../functions/memory-scaler/scale/targets/write.ts";
import type { Workload } from "../../../../../functions/memory-scaler/model.ts";

describe("podForAdmission", () => {
  it("is the template as a Pod with the new memory of its containers and native sidecars, nothing else changed", () => {
    const workload: Workload = {
      kind: "Deployment",
      name: "web",
      namespace: "ns",
      object: {
        metadata: { name: "web" },
        spec: {
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              containers: [
                { name: "app", image: "i", resources: { requests: { memory: "256Mi", cpu: "100m" }, limits: { memory: "384Mi" } } },
                { name: "side", image: "j", resources: { limits: { memory: "64Mi" } } },
              ],
              initContainers: [
                { name: "migrate", image: "m", resources: { limits: { memory: "1Gi" } } },
                { name: "proxy", image: "p", restartPolicy: "Always", resources: { requests: { memory: "32Mi" }, limits: { memory: "64Mi" } } },
              ],
            },
          },
        },
      },
    };
    const pod = podForAdmission(workload, [
      { container: "app", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } },
      { container: "proxy", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } },
    ]);
    assert.equal(pod.metadata?.generateName, "web-");
    assert.deepEqual(pod.metadata?.labels, { app: "web" });
    assert.deepEqual(pod.spec?.containers[0]?.resources, { requests: { memory: "512Mi", cpu: "100m" }, limits: { memory: "768Mi" } });
    assert.deepEqual(pod.spec?.containers[1]?.resources, { limits: { memory: "64Mi" } });
    assert.deepEqual(pod.spec?.initContainers?.map((c) => [c.name, c.resources]), [
      ["migrate", { limits: { memory: "1Gi" } }],
      ["proxy", { requests: { memory: "64Mi" }, limits: { memory: "128Mi" } }],
    ], "a native sidecar gets its change, an init container keeps its memory");
    assert.equal(workload.object.spec.template.spec?.containers[0]?.resources?.limits?.memory, "384Mi", "the template is not modified");
  });
});
