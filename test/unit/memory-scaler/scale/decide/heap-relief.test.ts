// How a raise reaches a heap sized at start: an in-place mode rolls it out, never a resize that counts as relief.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { AlertTrigger } from "../../../../../functions/lib/alert-event.ts";
import { heapFallbackNote, writeWay } from "../../../../../functions/memory-scaler/scale/decide/heap-relief.ts";

const none = { containerPolicies: [] };
const declared = (runtime: "Node.js" | "JVM", containerName = "app") => ({ containerPolicies: [{ containerName, runtime }] });
const TRIGGERS: readonly AlertTrigger[] = ["threshold", "oomKilled", "trend", "heapError"];

describe("writeWay", () => {
  it("Rollout: always the template, never said as a fallback", () => {
    for (const trigger of TRIGGERS) assert.deepEqual(writeWay("Rollout", trigger, ["app"], declared("Node.js")), { way: "rollout", heap: false });
  });

  it("InPlace and InPlaceOrRollout: a heap-error alert rolls out, whatever is declared", () => {
    for (const mode of ["InPlace", "InPlaceOrRollout"] as const) assert.deepEqual(writeWay(mode, "heapError", ["app"], none), { way: "rollout", heap: true });
  });

  it("InPlace and InPlaceOrRollout: a declared runtime rolls out on every trigger (Node.js OOM-killed at 256Mi, a JVM crossing its threshold)", () => {
    for (const mode of ["InPlace", "InPlaceOrRollout"] as const) {
      for (const trigger of TRIGGERS) {
        assert.deepEqual(writeWay(mode, trigger, ["app"], declared("Node.js")), { way: "rollout", heap: true }, `${mode} ${trigger}`);
        assert.deepEqual(writeWay(mode, trigger, ["app"], declared("JVM")), { way: "rollout", heap: true }, `${mode} ${trigger}`);
      }
    }
  });

  it("a runtime declared for every container (`*`) or for another container of the Pod counts", () => {
    assert.equal(writeWay("InPlace", "threshold", ["app", "side"], declared("JVM", "*")).way, "rollout");
    assert.equal(writeWay("InPlace", "threshold", ["app", "side"], declared("JVM", "side")).way, "rollout");
  });

  it("nothing known of a heap: resized in place, in the AppMonitor's mode", () => {
    for (const mode of ["InPlace", "InPlaceOrRollout"] as const) {
      for (const trigger of ["threshold", "oomKilled", "trend"] as const) assert.deepEqual(writeWay(mode, trigger, ["app"], none), { way: "inPlace", mode });
      // A runtime declared for a container the Pod does not run says nothing of it.
      assert.deepEqual(writeWay(mode, "threshold", ["app"], declared("Node.js", "other")), { way: "inPlace", mode });
    }
  });
});

describe("heapFallbackNote", () => {
  it("names each raised container's runtime and why", () => {
    assert.equal(heapFallbackNote([{ container: "app", runtime: "Node.js" }], undefined), "resizing in place cannot reach Node.js's heap, sized when it starts (container app)");
    assert.equal(
      heapFallbackNote([{ container: "app", runtime: "JVM" }, { container: "side", runtime: ".NET" }], undefined),
      "resizing in place cannot reach JVM's heap, sized when it starts (container app); resizing in place cannot reach .NET's heap, sized when it starts (container side)",
    );
  });

  it("no raised container's runtime known: the Pod's declared one", () => {
    assert.equal(heapFallbackNote([], "container side (JVM)"), "resizing in place cannot reach the heap of container side (JVM), sized when it starts");
  });
});
