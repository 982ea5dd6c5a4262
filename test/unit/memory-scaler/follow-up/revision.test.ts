// A Knative Service's rollout followed to its new Revision (functions/memory-scaler/follow-up/revision.ts,
// through rollout.ts decideFollowUp): Ready → RolledOut (saying when pinned traffic keeps it from
// serving), not Ready → RolloutFailed with Serving's reason, else progressing.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { revisionView, workloadView } from "../../../../functions/memory-scaler/kube/views.ts";
import type { KnativeTrafficTarget } from "../../../../functions/memory-scaler/model.ts";
import { decideFollowUp } from "../../../../functions/memory-scaler/follow-up/rollout.ts";

const rollout = { workload: { kind: "Service", name: "web" }, generation: 2, startedAt: "2025-06-01T12:00:00Z", event: "e1" };
const now = new Date("2025-06-01T12:01:00Z");

function follow(over: { observedGeneration?: number; latest?: string; ready?: { status: string; reason?: string; message?: string }; revisionName?: string; traffic?: KnativeTrafficTarget[] } = {}) {
  const service = workloadView("Service", {
    metadata: { name: "web", uid: "ks1", generation: 2 },
    spec: { ...(over.traffic === undefined ? {} : { traffic: over.traffic }) },
    status: { observedGeneration: over.observedGeneration ?? 2, ...(over.latest === undefined ? {} : { latestCreatedRevisionName: over.latest }) },
  });
  const revision = over.ready === undefined && over.revisionName === undefined ? undefined : revisionView({ metadata: { name: over.revisionName ?? over.latest ?? "" }, status: { conditions: over.ready === undefined ? [] : [{ type: "Ready", ...over.ready }] } });
  return decideFollowUp({ rollout, uid: "ks1", workload: service, pods: [], revision, stuckRollout: undefined, now });
}

describe("a Knative Service's rollout", () => {
  it("Serving has not observed the patched generation: progressing", () => {
    assert.equal(follow({ observedGeneration: 1, latest: "web-00001" }).result, "progressing");
  });

  it("no Revision named yet, or the one read is another: progressing", () => {
    assert.match(follow().message, /has not created the Revision/);
    assert.match(follow({ latest: "web-00002", revisionName: "web-00001", ready: { status: "True" } }).message, /Revision web-00002 is not there yet/);
  });

  it("the new Revision Ready: rolled out", () => {
    const result = follow({ latest: "web-00002", ready: { status: "True" } });
    assert.deepEqual(result, { result: "rolledOut", message: "Service web: Revision web-00002 is Ready with the new memory" });
  });

  it("Ready, and traffic pinned to an older Revision: rolled out, saying the new memory does not serve traffic", () => {
    const result = follow({ latest: "web-00002", ready: { status: "True" }, traffic: [{ revisionName: "web-00001", percent: 100 }] });
    assert.equal(result.result, "rolledOut");
    assert.match(result.message, /Ready with the new memory; the new memory does not serve traffic: .*Revision web-00001/);
  });

  it("not Ready: RolloutFailed with Serving's own reason and message", () => {
    const result = follow({ latest: "web-00002", ready: { status: "False", reason: "ExitCode137", message: "Container failed with: OOMKilled" } });
    assert.deepEqual(result, { result: "failed", reason: "ExitCode137", message: "Service web: Revision web-00002 is not Ready (ExitCode137): Container failed with: OOMKilled" });
  });

  it("Ready Unknown: progressing, with Serving's reason", () => {
    const result = follow({ latest: "web-00002", ready: { status: "Unknown", reason: "Deploying" } });
    assert.deepEqual([result.result, result.message], ["progressing", "Service web: Revision web-00002 is coming up (Deploying)"]);
  });

  it("a Service deleted and created again (another uid): gone", () => {
    const service = workloadView("Service", { metadata: { name: "web", uid: "other", generation: 3 }, status: { observedGeneration: 3 } });
    assert.equal(decideFollowUp({ rollout, uid: "ks1", workload: service, pods: [], stuckRollout: undefined, now }).result, "gone");
  });
});
