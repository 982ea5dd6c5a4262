// What stops a scale from rolling out (functions/memory-scaler/scale/capacity.ts), from plain data:
// the memory a Pod requests as the scheduler adds it up, whether some Node can hold it, and a
// StatefulSet or DaemonSet whose updateStrategy OnDelete leaves its Pods on the old template.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { decideFit, podMemoryRequest } from "../../../../functions/memory-scaler/scale/capacity.ts";
import { onDeleteScaledNote, type RolloutStrategy, waitingForDelete, waitsForDelete } from "../../../../functions/memory-scaler/scale/on-delete.ts";

const Mi = 1024n * 1024n;
const Gi = 1024n * Mi;

function c(name: string, request?: string, limit?: string, restartPolicy?: "Always"): k8s.V1Container {
  const resources: k8s.V1ResourceRequirements = {};
  if (request !== undefined) resources.requests = { memory: request };
  if (limit !== undefined) resources.limits = { memory: limit };
  return { name, resources, ...(restartPolicy === undefined ? {} : { restartPolicy }) };
}

describe("podMemoryRequest", () => {
  const cases: { name: string; spec: k8s.V1PodSpec; bytes: bigint }[] = [
    { name: "one container", spec: { containers: [c("app", "256Mi", "384Mi")] }, bytes: 256n * Mi },
    { name: "containers add up", spec: { containers: [c("app", "256Mi"), c("log", "64Mi")] }, bytes: 320n * Mi },
    { name: "a limit without a request counts as the request (the API server copies it)", spec: { containers: [c("app", undefined, "384Mi")] }, bytes: 384n * Mi },
    { name: "neither request nor limit counts 0", spec: { containers: [c("app"), c("log", "64Mi")] }, bytes: 64n * Mi },
    { name: "an init container smaller than the containers does not count", spec: { containers: [c("app", "1Gi")], initContainers: [c("migrate", "512Mi")] }, bytes: Gi },
    { name: "an init container larger than the containers counts alone", spec: { containers: [c("app", "256Mi")], initContainers: [c("migrate", "2Gi"), c("seed", "1Gi")] }, bytes: 2n * Gi },
    { name: "a native sidecar adds to the containers", spec: { containers: [c("app", "1Gi")], initContainers: [c("proxy", "128Mi", undefined, "Always")] }, bytes: Gi + 128n * Mi },
    {
      name: "an init container after a sidecar runs beside it",
      spec: { containers: [c("app", "256Mi")], initContainers: [c("proxy", "512Mi", undefined, "Always"), c("migrate", "1Gi")] },
      bytes: Gi + 512n * Mi,
    },
    {
      name: "an init container before a sidecar runs alone",
      spec: { containers: [c("app", "256Mi")], initContainers: [c("migrate", "1Gi"), c("proxy", "512Mi", undefined, "Always")] },
      bytes: Gi,
    },
    { name: "spec.overhead is added", spec: { containers: [c("app", "1Gi")], overhead: { memory: "120Mi" } }, bytes: Gi + 120n * Mi },
    { name: "pod-level resources replace the containers' sum", spec: { containers: [c("app", "1Gi"), c("log", "1Gi")], resources: { requests: { memory: "1536Mi" } }, overhead: { memory: "1Mi" } }, bytes: 1537n * Mi },
    { name: "a fractional quantity rounds up to a whole byte", spec: { containers: [c("app", "1500m")] }, bytes: 2n },
  ];
  for (const t of cases) it(t.name, () => assert.equal(podMemoryRequest(t.spec), t.bytes));
});

describe("decideFit", () => {
  const cases: { name: string; request: bigint; nodes: (string | undefined)[]; result: "fits" | "unschedulable" | "unknown"; message?: RegExp }[] = [
    { name: "fits the only Node", request: 200n * Gi, nodes: ["256Gi"], result: "fits" },
    { name: "exactly the allocatable memory fits", request: 256n * Gi, nodes: ["256Gi"], result: "fits" },
    { name: "fits one Node of several (the largest counts, not the first)", request: 300n * Gi, nodes: ["64Gi", "512Gi", "128Gi"], result: "fits" },
    { name: "allocatable in decimal SI", request: 200n * Gi, nodes: ["300G"], result: "fits" },
    {
      name: "larger than every Node: names the request and the largest allocatable",
      request: 300n * Gi,
      nodes: ["256Gi", "128Gi"],
      result: "unschedulable",
      message: /request 300Gi of memory, more than any Node can allocate \(the largest allocatable is 256Gi\)/,
    },
    { name: "one byte over", request: 256n * Gi + 1n, nodes: ["256Gi"], result: "unschedulable" },
    { name: "no Node listed: unknown, never refused", request: 300n * Gi, nodes: [], result: "unknown", message: /no Node is listed/ },
    { name: "no Node reports memory: unknown", request: 300n * Gi, nodes: [undefined, undefined], result: "unknown", message: /none of the 2 Nodes/ },
    { name: "a Node without memory is ignored", request: 300n * Gi, nodes: [undefined, "256Gi"], result: "unschedulable" },
    { name: "an unreadable value is ignored", request: 1n * Gi, nodes: ["lots", "2Gi"], result: "fits" },
  ];
  for (const t of cases) {
    it(t.name, () => {
      const fit = decideFit(t.request, t.nodes);
      assert.equal(fit.result, t.result);
      if (t.message !== undefined) assert.match(fit.result === "fits" ? "" : fit.message, t.message);
    });
  }
});

describe("OnDelete", () => {
  const sts = (over: Partial<RolloutStrategy> = {}): RolloutStrategy => ({ kind: "StatefulSet", name: "db", updateStrategy: "OnDelete", updateRevision: "db-7c9a", replicas: 3, ...over });

  const strategies: { name: string; workload: RolloutStrategy; waits: boolean }[] = [
    { name: "a StatefulSet with OnDelete", workload: sts(), waits: true },
    { name: "a DaemonSet with OnDelete", workload: sts({ kind: "DaemonSet", name: "agent", updateRevision: undefined, replicas: undefined }), waits: true },
    { name: "a StatefulSet with RollingUpdate", workload: sts({ updateStrategy: "RollingUpdate" }), waits: false },
    { name: "a StatefulSet without updateStrategy (RollingUpdate by default)", workload: sts({ updateStrategy: undefined }), waits: false },
    { name: "a Deployment (no OnDelete strategy)", workload: sts({ kind: "Deployment", name: "web", updateStrategy: "Recreate" }), waits: false },
  ];
  for (const t of strategies) it(`waitsForDelete: ${t.name} → ${t.waits}`, () => assert.equal(waitsForDelete(t.workload), t.waits));

  it("the note after the patch names the alerting Pod, the others, and says to delete them", () => {
    assert.equal(
      onDeleteScaledNote(sts(), "db-1", "memhog: limit 384Mi → 768Mi"),
      "scaled StatefulSet db (memhog: limit 384Mi → 768Mi), but its updateStrategy is OnDelete: no Pod gets the new memory until it is deleted, and Pod db-1 (the alerting one) and the 2 other Pods of StatefulSet db still run the old template; delete the Pods to apply it",
    );
    assert.match(onDeleteScaledNote(sts({ replicas: 1 }), "db-0", "x"), /and Pod db-0 still run the old template; delete the Pods to apply it$/);
    assert.match(onDeleteScaledNote(sts({ kind: "DaemonSet", name: "agent", replicas: undefined }), "agent-x", "x"), /Pod agent-x \(the alerting one\) and the other Pods of DaemonSet agent/);
  });

  const waiting: { name: string; workload: RolloutStrategy; revision?: string; limits: { container: string; pod?: string; template?: string }[]; message: RegExp | undefined }[] = [
    {
      name: "a Pod on an old revision, below the template: names both revisions and says to delete it",
      workload: sts(),
      revision: "db-5d8f",
      limits: [{ container: "memhog", pod: "384Mi", template: "768Mi" }],
      message: /^StatefulSet db has updateStrategy OnDelete: Pod db-0 still runs the old template \(revision db-5d8f; the template's is db-7c9a\) \(memhog: limit 384Mi, the template's 768Mi\) .*delete Pod db-0/,
    },
    {
      name: "the controller has not recorded the new revision yet: no revision named, still waiting",
      workload: sts({ updateRevision: "db-5d8f" }),
      revision: "db-5d8f",
      limits: [{ container: "memhog", pod: "384Mi", template: "768Mi" }],
      message: /Pod db-0 still runs the old template \(memhog: limit 384Mi, the template's 768Mi\)/,
    },
    { name: "quantities compared by value, not text: 1Gi = 1024Mi", workload: sts(), revision: "db-5d8f", limits: [{ container: "memhog", pod: "1Gi", template: "1024Mi" }], message: undefined },
    { name: "the Pod runs the template's memory: not waiting (a Cooldown stays a Cooldown)", workload: sts(), revision: "db-7c9a", limits: [{ container: "memhog", pod: "768Mi", template: "768Mi" }], message: undefined },
    { name: "a RollingUpdate StatefulSet is in a rollout, not waiting", workload: sts({ updateStrategy: "RollingUpdate" }), revision: "db-5d8f", limits: [{ container: "memhog", pod: "384Mi", template: "768Mi" }], message: undefined },
    { name: "a container without a limit on one side is not judged", workload: sts(), limits: [{ container: "memhog", template: "768Mi" }], message: undefined },
    {
      name: "a DaemonSet (no updateRevision): waiting by memory alone",
      workload: sts({ kind: "DaemonSet", name: "agent", updateRevision: undefined, replicas: undefined }),
      revision: "6b7f",
      limits: [{ container: "memhog", pod: "384Mi", template: "768Mi" }, { container: "log", pod: "64Mi", template: "64Mi" }],
      message: /^DaemonSet agent has updateStrategy OnDelete: Pod db-0 still runs the old template \(memhog: limit 384Mi, the template's 768Mi\)/,
    },
  ];
  for (const t of waiting) {
    it(`waitingForDelete: ${t.name}`, () => {
      const message = waitingForDelete({ workload: t.workload, pod: { name: "db-0", revision: t.revision }, limits: t.limits.map((l) => ({ container: l.container, pod: l.pod, template: l.template })) });
      if (t.message === undefined) assert.equal(message, undefined);
      else assert.match(message ?? "", t.message);
    });
  }
});
