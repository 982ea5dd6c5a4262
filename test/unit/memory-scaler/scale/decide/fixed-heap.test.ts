// A raise a fixed heap makes useless: held with the flag named by default, kept (the flag raised with it) under spec.heapFlags: Scale.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ContainerChange } from "../../../../../functions/memory-scaler/model.ts";
import type { Scale } from "../../../../../functions/memory-scaler/outcome.ts";
import { describeHeapChanges, type FixedHeapInput, heapFailureNote, heapFailures, heapFlagChanges, holdFixedHeaps } from "../../../../../functions/memory-scaler/scale/decide/fixed-heap.ts";
import { type ContainerSpecLike, podHeaps } from "../../../../../functions/memory-scaler/scale/decide/heap-flags.ts";
import { buildHeapFlagPatch } from "../../../../../functions/memory-scaler/scale/targets/template-patch.ts";

const app: ContainerChange = { container: "app", from: { request: "512Mi", limit: "768Mi" }, to: { request: "1Gi", limit: "1536Mi" } };
const side: ContainerChange = { container: "side", from: { limit: "64Mi" }, to: { limit: "128Mi" } };
const scale = (...changes: ContainerChange[]): Scale => ({ action: "scale", changes, skipped: [], dryRun: false });
const input = (app: Omit<ContainerSpecLike, "name">, over: Partial<FixedHeapInput> = {}): FixedHeapInput => ({
  heaps: podHeaps({ containers: [{ name: "app", ...app }, { name: "side" }] }),
  policy: "Hold",
  rewritable: true,
  failed: [],
  ...over,
});

/** Each runtime's flag in each of its places, at or below the 768Mi limit the raise starts from. */
const fixed: [string, Omit<ContainerSpecLike, "name">, string][] = [
  ["-Xmx in JAVA_TOOL_OPTIONS", { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Xmx512m" }] }, "-Xmx512m in env JAVA_TOOL_OPTIONS (512m)"],
  ["-Xmx in JDK_JAVA_OPTIONS", { env: [{ name: "JDK_JAVA_OPTIONS", value: "-Xmx768m" }] }, "-Xmx768m in env JDK_JAVA_OPTIONS (768m)"],
  ["-Xmx in _JAVA_OPTIONS", { env: [{ name: "_JAVA_OPTIONS", value: "-Xmx512m" }] }, "-Xmx512m in env _JAVA_OPTIONS (512m)"],
  ["-Xmx in the args", { args: ["-Xmx512m", "-jar", "app.jar"] }, "-Xmx512m in args[0] (512m)"],
  ["-Xmx in the command", { command: ["java", "-Xmx512m"] }, "-Xmx512m in command[1] (512m)"],
  ["-XX:MaxRAM", { args: ["-XX:MaxRAM=600m"] }, "-XX:MaxRAM=600m in args[0] (600m)"],
  ["Node in NODE_OPTIONS", { env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=512" }] }, "--max-old-space-size=512 in env NODE_OPTIONS (512)"],
  ["Node in the args", { args: ["--max-old-space-size=512", "server.js"] }, "--max-old-space-size=512 in args[0] (512)"],
  ["Go GOMEMLIMIT", { env: [{ name: "GOMEMLIMIT", value: "700MiB" }] }, "GOMEMLIMIT=700MiB (700MiB)"],
];

describe("holdFixedHeaps under Hold (the default)", () => {
  for (const [name, container, named] of fixed) {
    it(`holds ${name}, naming the flag and its value`, () => {
      const decision = holdFixedHeaps(scale(app), input(container));
      assert.equal(decision.action, "skip");
      assert.equal(decision.reason, "FixedHeap");
      assert.match(decision.message, new RegExp(`heap is fixed by ${named.replace(/[[\]()]/g, "\\$&")}, within its memory limit 768Mi`));
      assert.deepEqual(decision.skipped?.map((s) => [s.container, s.reason]), [["app", "FixedHeap"]]);
    });
  }
  it("does not hold a percentage flag: it follows the limit", () => {
    assert.deepEqual(holdFixedHeaps(scale(app), input({ env: [{ name: "JAVA_TOOL_OPTIONS", value: "-XX:MaxRAMPercentage=75" }] })), scale(app));
  });
  it("does not hold a flag above the limit: the raise gives the heap room", () => {
    assert.deepEqual(holdFixedHeaps(scale(app), input({ args: ["-Xmx1g"] })), scale(app));
  });
  it("does not hold what it cannot read: an env var from a ConfigMap", () => {
    assert.deepEqual(holdFixedHeaps(scale(app), input({ env: [{ name: "JAVA_TOOL_OPTIONS", valueFrom: { configMapKeyRef: { name: "c", key: "k" } } }] })), scale(app));
  });
  it("holds one container and scales the other", () => {
    const decision = holdFixedHeaps(scale(app, side), input({ args: ["-Xmx512m"] }));
    assert.equal(decision.action, "scale");
    assert.deepEqual(decision.action === "scale" ? decision.changes : [], [side]);
    assert.deepEqual(decision.skipped?.map((s) => s.container), ["app"]);
  });
  it("passes a skip unchanged", () => {
    const skip = { action: "skip", reason: "Cooldown", message: "m", skipped: [] } as const;
    assert.equal(holdFixedHeaps(skip, input({ args: ["-Xmx512m"] })), skip);
  });
  it("says when the container's last run was an in-process heap failure", () => {
    const decision = holdFixedHeaps(scale(app), input({ args: ["-Xmx512m"] }, { failed: ["app"] }));
    assert.equal(decision.action, "skip");
    assert.match(decision.message, /exit code 134 \(Error\), an in-process heap failure, not an OOM kill/);
  });
});

describe("holdFixedHeaps: a heap failure with no flag read", () => {
  it("scales, and lists the container in heapFailed for a HeapFailure Warning", () => {
    assert.deepEqual(holdFixedHeaps(scale(app, side), input({}, { failed: ["app"] })), { ...scale(app, side), heapFailed: ["app"] });
  });
  it("a flag from a ConfigMap is not read: the same", () => {
    const decision = holdFixedHeaps(scale(app), input({ env: [{ name: "NODE_OPTIONS", valueFrom: { configMapKeyRef: { name: "c", key: "k" } } }] }, { failed: ["app"] }));
    assert.deepEqual(decision, { ...scale(app), heapFailed: ["app"] });
  });
  it("not under Scale when the flag is raised with the limit", () => {
    assert.deepEqual(holdFixedHeaps(scale(app), input({ args: ["-Xmx512m"] }, { policy: "Scale", failed: ["app"] })), scale(app));
  });
  it("the note names the containers and where else a flag may be set", () => {
    assert.match(heapFailureNote(["app"]), /^container app's last run ended in exit code 134 \(Error\), an in-process heap failure, not an OOM kill: .*ConfigMap, a Secret, a file or the image/);
    assert.match(heapFailureNote(["a", "b"]), /^containers a, b' last run/);
  });
});

describe("holdFixedHeaps under Scale", () => {
  it("keeps the change where the target can write the flag", () => {
    assert.deepEqual(holdFixedHeaps(scale(app), input({ args: ["-Xmx512m"] }, { policy: "Scale" })), scale(app));
  });
  it("holds where it cannot (a resize in place), and says why", () => {
    const decision = holdFixedHeaps(scale(app), input({ args: ["-Xmx512m"] }, { policy: "Scale", rewritable: false }));
    assert.equal(decision.action, "skip");
    assert.equal(decision.reason, "FixedHeap");
    assert.match(decision.message, /cannot be changed in place/);
  });
});

describe("heapFlagChanges and buildHeapFlagPatch", () => {
  const spec = (container: Omit<ContainerSpecLike, "name">) => ({ containers: [{ name: "side" }, { name: "app", ...container }] });
  const table: [string, Omit<ContainerSpecLike, "name">, object[]][] = [
    [
      "JAVA_TOOL_OPTIONS: the env value tested and replaced, the other options kept",
      { env: [{ name: "TZ", value: "UTC" }, { name: "JAVA_TOOL_OPTIONS", value: "-XX:+UseG1GC -Xmx512m" }] },
      [
        { op: "test", path: "/spec/template/spec/containers/1/name", value: "app" },
        { op: "test", path: "/spec/template/spec/containers/1/env/1/name", value: "JAVA_TOOL_OPTIONS" },
        { op: "test", path: "/spec/template/spec/containers/1/env/1/value", value: "-XX:+UseG1GC -Xmx512m" },
        { op: "replace", path: "/spec/template/spec/containers/1/env/1/value", value: "-XX:+UseG1GC -Xmx1g" },
      ],
    ],
    [
      "Node in the args: the element tested and replaced",
      { args: ["--max-old-space-size=512", "server.js"] },
      [
        { op: "test", path: "/spec/template/spec/containers/1/name", value: "app" },
        { op: "test", path: "/spec/template/spec/containers/1/args/0", value: "--max-old-space-size=512" },
        { op: "replace", path: "/spec/template/spec/containers/1/args/0", value: "--max-old-space-size=1024" },
      ],
    ],
    [
      "GOMEMLIMIT",
      { env: [{ name: "GOMEMLIMIT", value: "512MiB" }] },
      [
        { op: "test", path: "/spec/template/spec/containers/1/name", value: "app" },
        { op: "test", path: "/spec/template/spec/containers/1/env/0/name", value: "GOMEMLIMIT" },
        { op: "test", path: "/spec/template/spec/containers/1/env/0/value", value: "512MiB" },
        { op: "replace", path: "/spec/template/spec/containers/1/env/0/value", value: "1GiB" },
      ],
    ],
  ];
  for (const [name, container, ops] of table) {
    it(name, () => {
      const changes = heapFlagChanges([app], podHeaps(spec(container)), "Scale");
      assert.deepEqual(buildHeapFlagPatch(spec(container), changes), ops);
    });
  }
  it("nothing under Hold, nothing for a percentage", () => {
    assert.deepEqual(heapFlagChanges([app], podHeaps(spec({ args: ["-Xmx512m"] })), "Hold"), []);
    assert.deepEqual(heapFlagChanges([app], podHeaps(spec({ args: ["-XX:MaxRAMPercentage=75"] })), "Scale"), []);
  });
  it("by the capped factor: 768Mi → 1Gi raises -Xmx512m to -Xmx682m", () => {
    const capped = { ...app, to: { limit: "1Gi" } };
    assert.equal(describeHeapChanges(heapFlagChanges([capped], podHeaps(spec({ command: ["java", "-Xmx512m"] })), "Scale")), "container app: -Xmx512m → -Xmx682m in command[1]");
  });
});

describe("heapFailures", () => {
  it("names the containers whose last run ended in exit 134 (Error), not an OOM kill", () => {
    const statuses = [
      { name: "jvm", lastState: { terminated: { exitCode: 134, reason: "Error" } } },
      { name: "down", state: { terminated: { exitCode: 134, reason: "Error" } } },
      { name: "oom", lastState: { terminated: { exitCode: 137, reason: "OOMKilled" } } },
      { name: "other", lastState: { terminated: { exitCode: 1, reason: "Error" } } },
      { name: "fine" },
    ];
    assert.deepEqual(heapFailures(statuses), ["jvm", "down"]);
  });
});
