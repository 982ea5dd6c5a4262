// Other autoscalers acting on a workload's memory (functions/memory-scaler/coexist/autoscalers.ts): HPAs
// and VPAs classified as a table.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { classifyAutoscalers, type VerticalPodAutoscalerView, vpaView } from "../../../../functions/memory-scaler/coexist/autoscalers.ts";

const web = { kind: "Deployment", name: "web" };
const hpa = (metrics: k8s.V2MetricSpec[] | undefined, target: Partial<k8s.V2CrossVersionObjectReference> = {}): k8s.V2HorizontalPodAutoscaler => ({
  metadata: { name: "web-hpa" },
  spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web", ...target }, maxReplicas: 5, ...(metrics === undefined ? {} : { metrics }) },
});
const resource = (name: string): k8s.V2MetricSpec => ({ type: "Resource", resource: { name, target: { type: "Utilization", averageUtilization: 80 } } });
const containerResource = (name: string, container: string): k8s.V2MetricSpec => ({ type: "ContainerResource", containerResource: { name, container, target: { type: "Utilization", averageUtilization: 80 } } });
const vpa = (updateMode: string | undefined, target: Record<string, string> = {}, containerPolicies?: unknown[]): VerticalPodAutoscalerView =>
  vpaView({
    metadata: { name: "web-vpa" },
    spec: {
      targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web", ...target },
      ...(updateMode === undefined ? {} : { updatePolicy: { updateMode } }),
      ...(containerPolicies === undefined ? {} : { resourcePolicy: { containerPolicies } }),
    },
  });

describe("classifyAutoscalers", () => {
  const cases: { name: string; hpas?: k8s.V2HorizontalPodAutoscaler[]; vpas?: VerticalPodAutoscalerView[]; want: string }[] = [
    { name: "none", want: "none" },
    { name: "an HPA on memory", hpas: [hpa([resource("memory")])], want: "HPAOnMemory" },
    { name: "an HPA on CPU and memory", hpas: [hpa([resource("cpu"), resource("memory")])], want: "HPAOnMemory" },
    { name: "an HPA on CPU only", hpas: [hpa([resource("cpu")])], want: "none" },
    { name: "an HPA without metrics (CPU 80% by default)", hpas: [hpa(undefined)], want: "none" },
    { name: "an HPA on an external metric", hpas: [hpa([{ type: "External", external: { metric: { name: "queue" }, target: { type: "Value", value: "10" } } }])], want: "none" },
    { name: "an HPA on the memory of the scaled container", hpas: [hpa([containerResource("memory", "app")])], want: "HPAOnMemory" },
    { name: "an HPA on the memory of another container", hpas: [hpa([containerResource("memory", "sidecar")])], want: "none" },
    { name: "an HPA on memory of another Deployment", hpas: [hpa([resource("memory")], { name: "api" })], want: "none" },
    { name: "an HPA on memory of a StatefulSet of the same name", hpas: [hpa([resource("memory")], { kind: "StatefulSet" })], want: "none" },
    { name: "an HPA on memory of an Argo Rollout named web", hpas: [hpa([resource("memory")], { apiVersion: "argoproj.io/v1alpha1" })], want: "none" },
    { name: "a VPA in Auto", vpas: [vpa("Auto")], want: "VPAControlled" },
    { name: "a VPA without updatePolicy (Auto)", vpas: [vpa(undefined)], want: "VPAControlled" },
    { name: "a VPA in Initial", vpas: [vpa("Initial")], want: "VPAControlled" },
    { name: "a VPA in Recreate", vpas: [vpa("Recreate")], want: "VPAControlled" },
    { name: "a VPA in InPlaceOrRecreate", vpas: [vpa("InPlaceOrRecreate")], want: "VPAControlled" },
    { name: "a VPA Off (recommendations only)", vpas: [vpa("Off")], want: "none" },
    { name: "a VPA of another workload", vpas: [vpa("Auto", { name: "api" })], want: "none" },
    { name: "a VPA whose policy for the container is mode Off", vpas: [vpa("Auto", {}, [{ containerName: "app", mode: "Off" }])], want: "none" },
    { name: "a VPA whose * policy controls cpu only", vpas: [vpa("Auto", {}, [{ containerName: "*", controlledResources: ["cpu"] }])], want: "none" },
    { name: "a VPA whose * policy is Off but the container's own controls memory", vpas: [vpa("Auto", {}, [{ containerName: "*", mode: "Off" }, { containerName: "app", controlledResources: ["memory"] }])], want: "VPAControlled" },
    { name: "a VPA whose policy leaves only another container alone", vpas: [vpa("Auto", {}, [{ containerName: "sidecar", mode: "Off" }])], want: "VPAControlled" },
    { name: "an HPA on memory before a VPA", hpas: [hpa([resource("memory")])], vpas: [vpa("Auto")], want: "HPAOnMemory" },
    { name: "an HPA on CPU beside a VPA Off", hpas: [hpa([resource("cpu")])], vpas: [vpa("Off")], want: "none" },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.want}`, () => {
      const verdict = classifyAutoscalers(web, ["app"], c.hpas ?? [], c.vpas ?? []);
      assert.equal(verdict.result === "none" ? "none" : verdict.reason, c.want);
    });
  }

  it("says which object and why", () => {
    const verdict = classifyAutoscalers(web, ["app"], [], [vpa("Recreate")]);
    assert.ok(verdict.result === "conflict");
    assert.match(verdict.message, /VerticalPodAutoscaler web-vpa \(updateMode Recreate\) sets the resources of Deployment web's Pods.*updateMode to Off/);
    const hpaVerdict = classifyAutoscalers(web, ["app"], [hpa([resource("memory")])], []);
    assert.ok(hpaVerdict.result === "conflict");
    assert.match(hpaVerdict.message, /HorizontalPodAutoscaler web-hpa scales Deployment web on Resource memory/);
  });

  it("reads a malformed VPA object as targeting nothing", () => {
    for (const raw of [null, 42, {}, { spec: { targetRef: "web" } }, { spec: { targetRef: { kind: 1 }, updatePolicy: { updateMode: 3 } } }]) {
      assert.deepEqual(classifyAutoscalers(web, ["app"], [], [vpaView(raw)]), { result: "none" });
    }
  });
});
