// Which GitOps tool manages a workload (functions/memory-scaler/coexist/gitops.ts), from its own labels
// and annotations: a table of the signals accepted and refused.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { gitOpsOwner } from "../../../../functions/memory-scaler/coexist/gitops.ts";

describe("gitOpsOwner", () => {
  const cases: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; want: { tool: string; owner: string } | undefined }[] = [
    { name: "no labels or annotations", want: undefined },
    { name: "Argo CD tracking annotation", annotations: { "argocd.argoproj.io/tracking-id": "shop:apps/Deployment:team-a/web" }, want: { tool: "Argo CD", owner: "Application shop" } },
    { name: "Argo CD tracking annotation wins over its label", labels: { "argocd.argoproj.io/instance": "other" }, annotations: { "argocd.argoproj.io/tracking-id": "shop:apps/Deployment:team-a/web" }, want: { tool: "Argo CD", owner: "Application shop" } },
    { name: "Argo CD instance label (instanceLabelKey)", labels: { "argocd.argoproj.io/instance": "shop" }, want: { tool: "Argo CD", owner: "Application shop" } },
    { name: "app.kubernetes.io/instance alone: Helm sets it too", labels: { "app.kubernetes.io/instance": "shop" }, want: undefined },
    { name: "an empty tracking annotation", annotations: { "argocd.argoproj.io/tracking-id": "" }, want: undefined },
    { name: "Flux Kustomization labels", labels: { "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" }, want: { tool: "Flux", owner: "Kustomization flux-system/apps" } },
    { name: "Flux HelmRelease labels", labels: { "helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "team-a" }, want: { tool: "Flux", owner: "HelmRelease team-a/web" } },
    { name: "a Flux name without its namespace", labels: { "kustomize.toolkit.fluxcd.io/name": "apps" }, want: undefined },
    { name: "Flux labels in annotations do not count", annotations: { "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" }, want: undefined },
    { name: "Argo CD before Flux", labels: { "argocd.argoproj.io/instance": "shop", "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" }, want: { tool: "Argo CD", owner: "Application shop" } },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.want === undefined ? "none" : c.want.tool}`, () => {
      const found = gitOpsOwner({ labels: c.labels, annotations: c.annotations });
      assert.deepEqual(found === undefined ? undefined : { tool: found.tool, owner: found.owner }, c.want);
    });
  }

  it("names the signal it found", () => {
    assert.equal(gitOpsOwner({ labels: { "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" } })?.signal, "kustomize.toolkit.fluxcd.io/name=apps,kustomize.toolkit.fluxcd.io/namespace=flux-system");
    assert.equal(gitOpsOwner(undefined), undefined);
  });
});
