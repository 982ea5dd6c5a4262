// StatefulSets and DaemonSets with updateStrategy OnDelete (functions/memory-scaler/scale/decide/on-delete.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { onDeleteScaledNote, type RolloutStrategy, waitingForDelete, waitsForDelete } from "../../../../../functions/memory-scaler/scale/decide/on-delete.ts";

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
