// What stops a scale from rolling out (functions/memory-scaler/scale/decide/capacity.ts), from plain data:
// the memory a Pod requests as the scheduler adds it up, and whether some Node can hold it. The
// quota side is tested through the flow (follow-up/rollout.test.ts); OnDelete in on-delete.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { decideFit, summarizeAllocatable, podMemoryRequest, decideQuota, resolveMaxSurge, rolloutPeak, type RolloutShape, podMemoryLimit } from "../../../../../functions/memory-scaler/scale/decide/capacity.ts";
import type { QuotaView } from "../../../../../functions/memory-scaler/kube/views.ts";

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
      const fit = decideFit(t.request, summarizeAllocatable(t.nodes));
      assert.equal(fit.result, t.result);
      if (t.message !== undefined) assert.match(fit.result === "fits" ? "" : fit.message, t.message);
    });
  }
});

describe("a rollout's surge against the ResourceQuotas", () => {
  const from = { request: 256n * Mi, limit: 384n * Mi };
  const to = { request: 512n * Mi, limit: 768n * Mi };
  const shape = (over: Partial<RolloutShape> = {}): RolloutShape => ({ kind: "Deployment", name: "web", replicas: 3, strategy: undefined, maxSurge: undefined, ...over });
  const quota = (hard: Record<string, string>, used: Record<string, string>, scoped = false): QuotaView => ({ name: "q", scoped, hard, used });

  it("maxSurge: a percent of replicas rounded up, a count, 25% when unset", () => {
    assert.deepEqual([resolveMaxSurge(undefined, 3), resolveMaxSurge("25%", 10), resolveMaxSurge(2, 3), resolveMaxSurge("0%", 3), resolveMaxSurge("3", 3)], [1, 3, 2, 0, 3]);
  });
  const peaks: { name: string; shape: RolloutShape; request: bigint | undefined }[] = [
    { name: "Deployment RollingUpdate: all new Pods beside maxSurge old ones", shape: shape(), request: 3n * 512n * Mi + 256n * Mi },
    { name: "maxSurge above replicas: every old Pod", shape: shape({ replicas: 1, maxSurge: 5 }), request: 512n * Mi + 256n * Mi },
    { name: "Recreate: the new Pods alone", shape: shape({ strategy: "Recreate" }), request: 3n * 512n * Mi },
    { name: "StatefulSet: a Pod is deleted before its replacement", shape: shape({ kind: "StatefulSet" }), request: 3n * 512n * Mi },
    { name: "DaemonSet: not judged", shape: shape({ kind: "DaemonSet" }), request: undefined },
  ];
  for (const p of peaks) it(`peak, ${p.name}`, () => assert.equal(rolloutPeak(p.shape, from, to)?.request, p.request));

  const fits: { name: string; quotas: QuotaView[]; shape?: RolloutShape; want: "fits" | "refused"; message?: RegExp }[] = [
    { name: "no quota", quotas: [], want: "fits" },
    { name: "room for the peak", quotas: [quota({ "requests.memory": "2Gi" }, { "requests.memory": "768Mi" })], want: "fits" },
    {
      name: "room for one more Pod but not the peak (requests.memory)",
      quotas: [quota({ "requests.memory": "1536Mi" }, { "requests.memory": "768Mi" })],
      want: "refused",
      message: /needs 1Gi more requests\.memory at its peak \(3 new Pods at 512Mi beside 1 old Pod still running \(maxSurge\)\), but ResourceQuota q has 768Mi of 1536Mi used/,
    },
    { name: "`memory` is requests.memory", quotas: [quota({ memory: "1536Mi" }, { memory: "768Mi" })], want: "refused", message: /more memory at its peak/ },
    { name: "limits.memory", quotas: [quota({ "limits.memory": "2Gi" }, { "limits.memory": "1152Mi" })], want: "refused", message: /needs 1536Mi more limits\.memory .* at 768Mi/ },
    { name: "a scoped quota is not judged", quotas: [quota({ "requests.memory": "1Gi" }, { "requests.memory": "768Mi" }, true)], want: "fits" },
    { name: "a quota without used yet is not judged", quotas: [quota({ "requests.memory": "1Gi" }, {})], want: "fits" },
    { name: "a StatefulSet needs only the new Pods", quotas: [quota({ "requests.memory": "1536Mi" }, { "requests.memory": "768Mi" })], shape: shape({ kind: "StatefulSet" }), want: "fits" },
  ];
  for (const f of fits) {
    it(`quota: ${f.name}`, () => {
      const got = decideQuota(f.shape ?? shape(), from, to, f.quotas);
      assert.equal(got.result, f.want);
      if (f.message !== undefined) assert.match((got as { message: string }).message, f.message);
    });
  }
  it("a Pod's limit as the quota counts it: containers and sidecars, or the largest init container", () => {
    const c = (name: string, limit: string, restartPolicy?: "Always"): k8s.V1Container => ({ name, resources: { limits: { memory: limit } }, ...(restartPolicy ? { restartPolicy } : {}) });
    assert.equal(podMemoryLimit({ containers: [c("app", "384Mi")], initContainers: [c("proxy", "64Mi", "Always"), c("seed", "1Gi")] }), 1024n * Mi + 64n * Mi);
  });
});
