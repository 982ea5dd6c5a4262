// Whether a scale replaces the workload's Pods and what that loses (functions/memory-scaler/replacement.ts):
// the decision as a table over kind, replicas, update strategy and volumes, and the notes it makes.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { podReplacement, podsReplacedNote, replacementClause, type ReplacementInput, type StateAtRisk } from "../../../functions/memory-scaler/replacement.ts";

const cache = { name: "cache", emptyDir: {} };
const shm = { name: "shm", emptyDir: { medium: "Memory" } };
const config = { name: "config" };

describe("podReplacement: how the Pods get the new template, and why that loses state", () => {
  const cases: { name: string; input: ReplacementInput; how: string; atRisk: StateAtRisk[]; emptyDirs?: string[] }[] = [
    { name: "a single-replica Deployment", input: { kind: "Deployment", replicas: 1, updateStrategy: undefined, volumes: [] }, how: "rollout", atRisk: ["SingleReplica"] },
    { name: "a Deployment without spec.replicas (1)", input: { kind: "Deployment", replicas: undefined, updateStrategy: undefined, volumes: [] }, how: "rollout", atRisk: ["SingleReplica"] },
    { name: "a 3-replica Deployment without emptyDir", input: { kind: "Deployment", replicas: 3, updateStrategy: undefined, volumes: [config] }, how: "rollout", atRisk: [] },
    { name: "a 0-replica Deployment", input: { kind: "Deployment", replicas: 0, updateStrategy: undefined, volumes: [] }, how: "rollout", atRisk: [] },
    { name: "a 3-replica Deployment with an emptyDir", input: { kind: "Deployment", replicas: 3, updateStrategy: undefined, volumes: [config, cache] }, how: "rollout", atRisk: ["EmptyDir"], emptyDirs: ["cache"] },
    { name: "a single-replica Deployment with emptyDirs", input: { kind: "Deployment", replicas: 1, updateStrategy: undefined, volumes: [cache, shm] }, how: "rollout", atRisk: ["SingleReplica", "EmptyDir"], emptyDirs: ["cache", "shm (medium Memory)"] },
    { name: "a 5-replica StatefulSet", input: { kind: "StatefulSet", replicas: 5, updateStrategy: "RollingUpdate", volumes: [] }, how: "rollout", atRisk: ["StatefulSet"] },
    { name: "a StatefulSet without updateStrategy (RollingUpdate)", input: { kind: "StatefulSet", replicas: 1, updateStrategy: undefined, volumes: [shm] }, how: "rollout", atRisk: ["StatefulSet", "EmptyDir"], emptyDirs: ["shm (medium Memory)"] },
    { name: "a StatefulSet with OnDelete", input: { kind: "StatefulSet", replicas: 2, updateStrategy: "OnDelete", volumes: [] }, how: "onDelete", atRisk: ["StatefulSet"] },
    { name: "a DaemonSet without emptyDir", input: { kind: "DaemonSet", replicas: undefined, updateStrategy: "RollingUpdate", volumes: [config] }, how: "rollout", atRisk: [] },
    { name: "a DaemonSet with an emptyDir", input: { kind: "DaemonSet", replicas: undefined, updateStrategy: undefined, volumes: [cache] }, how: "rollout", atRisk: ["EmptyDir"], emptyDirs: ["cache"] },
    { name: "a DaemonSet with OnDelete and an emptyDir", input: { kind: "DaemonSet", replicas: undefined, updateStrategy: "OnDelete", volumes: [cache] }, how: "onDelete", atRisk: ["EmptyDir"], emptyDirs: ["cache"] },
    { name: "a ReplicaSet without a Deployment (never replaces a Pod)", input: { kind: "ReplicaSet", replicas: 1, updateStrategy: undefined, volumes: [cache] }, how: "none", atRisk: [], emptyDirs: ["cache"] },
  ];
  for (const c of cases) {
    test(`${c.name}: ${c.how}, ${c.atRisk.length === 0 ? "nothing at risk" : c.atRisk.join(", ")}`, () => {
      assert.deepEqual(podReplacement(c.input), { how: c.how, atRisk: c.atRisk, emptyDirs: c.emptyDirs ?? [] });
    });
  }
});

describe("the notes", () => {
  const web = { kind: "Deployment", name: "web" };

  test("the Scaled note's clause: replaced by the rollout, on delete, or nothing for a bare ReplicaSet", () => {
    assert.equal(replacementClause({ how: "rollout", atRisk: [], emptyDirs: [] }), "; the rollout replaces (restarts) its Pods");
    assert.equal(replacementClause({ how: "onDelete", atRisk: ["StatefulSet"], emptyDirs: [] }), "; each Pod is replaced (restarted) when deleted");
    assert.equal(replacementClause({ how: "none", atRisk: [], emptyDirs: [] }), "");
  });

  test("PodsReplaced names each reason and what is lost; none when nothing is at risk or nothing is replaced", () => {
    const note = podsReplacedNote(web, podReplacement({ kind: "Deployment", replicas: 1, updateStrategy: undefined, volumes: [cache] }));
    assert.equal(
      note,
      "the rollout of this scale replaces (restarts) its Pods, and what they hold in memory and in emptyDir volumes is lost: " +
        "Deployment web has a single replica, so no other Pod holds what its Pod holds; its Pod template has emptyDir volume cache. " +
        "spec.updateMode: InPlace (or InPlaceOrRollout) on the AppMonitor resizes the running Pods instead, without replacing them",
    );
    assert.match(podsReplacedNote({ kind: "StatefulSet", name: "db" }, podReplacement({ kind: "StatefulSet", replicas: 3, updateStrategy: "OnDelete", volumes: [] })) ?? "", /^its Pods get the new memory only when each is deleted and replaced \(restarted, updateStrategy OnDelete\), and what they hold .*db is a StatefulSet, whose Pods keep state/);
    assert.match(podsReplacedNote(web, podReplacement({ kind: "Deployment", replicas: 2, updateStrategy: undefined, volumes: [cache, shm] })) ?? "", /emptyDir volumes cache, shm \(medium Memory\)\./);
    assert.equal(podsReplacedNote(web, podReplacement({ kind: "Deployment", replicas: 3, updateStrategy: undefined, volumes: [] })), undefined);
    assert.equal(podsReplacedNote({ kind: "ReplicaSet", name: "rs" }, podReplacement({ kind: "ReplicaSet", replicas: 1, updateStrategy: undefined, volumes: [cache] })), undefined);
  });
});
