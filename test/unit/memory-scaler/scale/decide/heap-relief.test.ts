// How a raise reaches a heap sized at start: an in-place mode rolls it out, never a resize that counts as relief.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { heapFallbackNote, writeWay } from "../../../../../functions/memory-scaler/scale/decide/heap-relief.ts";

const none = { containerPolicies: [] };
const declared = (runtime: "Node.js" | "JVM", containerName = "app") => ({ containerPolicies: [{ containerName, runtime }] });
/** A trigger answered by a new start (a heap error, the heap's threshold) or not (threshold, OOM kill, trend). */
const NEW_START = [true, false];

describe("writeWay", () => {
  it("Rollout: always the template, never said as a fallback", () => {
    for (const needsNewStart of NEW_START) assert.deepEqual(writeWay("Rollout", needsNewStart, ["app"], declared("Node.js")), { way: "rollout", heap: false });
  });

  it("InPlace and InPlaceOrRollout: a trigger that needs a new start (a heap error, the heap's threshold) rolls out, whatever is declared", () => {
    for (const mode of ["InPlace", "InPlaceOrRollout"] as const) assert.deepEqual(writeWay(mode, true, ["app"], none), { way: "rollout", heap: true });
  });

  it("InPlace and InPlaceOrRollout: a declared runtime rolls out on every trigger (Node.js OOM-killed at 256Mi, a JVM crossing its threshold)", () => {
    for (const mode of ["InPlace", "InPlaceOrRollout"] as const) {
      for (const needsNewStart of NEW_START) {
        assert.deepEqual(writeWay(mode, needsNewStart, ["app"], declared("Node.js")), { way: "rollout", heap: true }, `${mode} ${needsNewStart}`);
        assert.deepEqual(writeWay(mode, needsNewStart, ["app"], declared("JVM")), { way: "rollout", heap: true }, `${mode} ${needsNewStart}`);
      }
    }
  });

  it("a runtime declared for every container (`*`) or for another container of the Pod counts", () => {
    assert.equal(writeWay("InPlace", false, ["app", "side"], declared("JVM", "*")).way, "rollout");
    assert.equal(writeWay("InPlace", false, ["app", "side"], declared("JVM", "side")).way, "rollout");
  });

  it("nothing known of a heap: resized in place, in the AppMonitor's mode", () => {
    for (const mode of ["InPlace", "InPlaceOrRollout"] as const) {
      assert.deepEqual(writeWay(mode, false, ["app"], none), { way: "inPlace", mode });
      // A runtime declared for a container the Pod does not run says nothing of it.
      assert.deepEqual(writeWay(mode, false, ["app"], declared("Node.js", "other")), { way: "inPlace", mode });
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
