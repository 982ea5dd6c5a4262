// The last gate before a scale is written (functions/memory-scaler/scale/decide/plan.ts `gateScale`): who else
// manages the workload, as a table.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { vpaView } from "../../../../functions/memory-scaler/coexist/autoscalers.ts";
import type { ContainerChange } from "../../../../functions/memory-scaler/model.ts";
import { gitOpsOwner } from "../../../../functions/memory-scaler/coexist/gitops.ts";
import { gateScale } from "../../../../functions/memory-scaler/coexist/gate.ts";
import { manifestValues } from "../../../../functions/memory-scaler/coexist/gitops.ts";
import type { BudgetUse, Revert } from "../../../../functions/memory-scaler/coexist/reverts.ts";

const workload = { kind: "Deployment", name: "web" };
const changes: ContainerChange[] = [{ container: "app", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } }];
const argo = gitOpsOwner({ annotations: { "argocd.argoproj.io/tracking-id": "shop:apps/Deployment:team-a/web" } });
const revert: Revert = {
  record: { time: "2025-06-01T11:50:00Z", appmonitor: "m", event: "e1", multiplier: 2, changes },
  containers: [{ container: "app", set: { limit: "768Mi", request: "512Mi" }, now: { limit: "384Mi", request: "256Mi" } }],
};
const budget = (used: number, of = 3): BudgetUse => ({ budget: of, scales: Array.from({ length: used }, (_, i) => ({ time: `2025-06-01T11:5${i}:00Z`, event: `e${i}` })), exhausted: used >= of });
const memoryHpa: k8s.V2HorizontalPodAutoscaler = {
  metadata: { name: "web" },
  spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 3, metrics: [{ type: "Resource", resource: { name: "memory", target: { type: "Utilization", averageUtilization: 70 } } }] },
};
const cpuHpa: k8s.V2HorizontalPodAutoscaler = { ...memoryHpa, spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 3 } };
const autoVpa = vpaView({ metadata: { name: "web" }, spec: { targetRef: { kind: "Deployment", name: "web" } } });

describe("gateScale", () => {
  const none = { hpas: [], vpas: [] };
  const cases: { name: string; input: Partial<Parameters<typeof gateScale>[0]>; want: string }[] = [
    { name: "nobody else", input: {}, want: "scale" },
    { name: "an HPA on memory", input: { autoscalers: { hpas: [memoryHpa], vpas: [] } }, want: "HPAOnMemory" },
    { name: "an HPA on CPU", input: { autoscalers: { hpas: [cpuHpa], vpas: [] } }, want: "scale" },
    { name: "a VPA in Auto", input: { autoscalers: { hpas: [], vpas: [autoVpa] } }, want: "VPAControlled" },
    { name: "an HPA on memory, even with gitOpsManaged Patch", input: { autoscalers: { hpas: [memoryHpa], vpas: [] }, gitOps: argo, gitOpsManaged: "Patch" }, want: "HPAOnMemory" },
    { name: "Argo CD, gitOpsManaged absent (Skip)", input: { gitOps: argo }, want: "GitOpsManaged held" },
    { name: "Argo CD, gitOpsManaged Skip", input: { gitOps: argo, gitOpsManaged: "Skip" }, want: "GitOpsManaged held" },
    { name: "Argo CD, gitOpsManaged Patch", input: { gitOps: argo, gitOpsManaged: "Patch" }, want: "scale gitOps" },
    { name: "reverted, budget left", input: { revert, budget: budget(2) }, want: "scale reverted" },
    { name: "reverted, budget used", input: { revert, budget: budget(3) }, want: "Reverted held" },
    { name: "budget used but not reverted: the cooldown alone bounds it", input: { budget: budget(5) }, want: "scale" },
    { name: "GitOps Patch and reverted with budget used", input: { gitOps: argo, gitOpsManaged: "Patch", revert, budget: budget(3) }, want: "Reverted held" },
    { name: "GitOps Patch and reverted with budget left", input: { gitOps: argo, gitOpsManaged: "Patch", revert, budget: budget(1) }, want: "scale gitOps reverted" },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.want}`, () => {
      const gate = gateScale({ workload, changes, gitOpsManaged: undefined, gitOps: undefined, revert: undefined, budget: budget(0), autoscalers: none, ...c.input });
      const got =
        gate.action === "skip"
          ? `${gate.reason}${gate.held === undefined ? "" : " held"}`
          : ["scale", ...(gate.gitOps === undefined ? [] : ["gitOps"]), ...(gate.reverted ? ["reverted"] : [])].join(" ");
      assert.equal(got, c.want);
    });
  }

  it("a GitOps skip names the manifest values to set; a held revert names the budget", () => {
    const gitOps = gateScale({ workload, changes, gitOpsManaged: undefined, gitOps: argo, revert: undefined, budget: budget(0), autoscalers: { hpas: [], vpas: [] } });
    assert.ok(gitOps.action === "skip");
    assert.match(gitOps.message, /managed by Argo CD \(Application shop, argocd\.argoproj\.io\/tracking-id=shop:apps\/Deployment:team-a\/web\).*set in its manifest: container app: resources\.limits\.memory 768Mi, resources\.requests\.memory 512Mi/);
    const held = gateScale({ workload, changes, gitOpsManaged: undefined, gitOps: undefined, revert, budget: budget(3), autoscalers: { hpas: [], vpas: [] } });
    assert.ok(held.action === "skip");
    assert.match(held.message, /lowered \(app: limit 768Mi → 384Mi, request 512Mi → 256Mi\) and the revert budget of 3 patches per hour is used/);
  });

  it("manifestValues without a request", () => {
    assert.equal(manifestValues([{ container: "c", from: { limit: "1Gi" }, to: { limit: "2Gi" } }]), "container c: resources.limits.memory 2Gi");
  });
});
