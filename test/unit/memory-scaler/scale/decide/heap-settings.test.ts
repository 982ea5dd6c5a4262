// The heap set with the limit after a heap error, by rollout: appended to the env as read, owned once written.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ContainerChange } from "../../../../../functions/memory-scaler/model.ts";
import type { Scale } from "../../../../../functions/memory-scaler/outcome.ts";
import { heapFlagChanges, holdFixedHeaps } from "../../../../../functions/memory-scaler/scale/decide/fixed-heap.ts";
import type { HeapError } from "../../../../../functions/memory-scaler/model.ts";
import { type ContainerSpecLike, podHeaps } from "../../../../../functions/memory-scaler/scale/decide/heap-flags.ts";
import {
  describeHeapSettings,
  HEAP_SETTINGS_ANNOTATION,
  heapSettings,
  heapSizedAtStart,
  knownRuntimes,
  markOwned,
  parseHeapSettings,
} from "../../../../../functions/memory-scaler/scale/decide/heap-settings.ts";
import { buildHeapSettingPatch } from "../../../../../functions/memory-scaler/scale/targets/template-patch.ts";

const change: ContainerChange = { container: "app", from: { limit: "256Mi" }, to: { limit: "512Mi" } };
const error = (runtime: HeapError["runtime"]): HeapError => ({ container: "app", runtime, line: "…", exitCode: 139 });
const heapsOf = (app: Omit<ContainerSpecLike, "name">) => podHeaps({ containers: [{ name: "app", ...app }] });

describe("heapSettings", () => {
  it("Node.js: --max-old-space-size at 75 % of the new limit, in MiB", () => {
    const { settings } = heapSettings([change], [error("Node.js")], heapsOf({}));
    assert.deepEqual(settings, [{ container: "app", runtime: "Node.js", env: "NODE_OPTIONS", token: "--max-old-space-size=384", recorded: true }]);
    assert.equal(describeHeapSettings(settings), "container app: NODE_OPTIONS += --max-old-space-size=384");
    const big = heapSettings([{ ...change, to: { limit: "2Gi" } }], [error("Node.js")], heapsOf({})).settings;
    assert.equal(big[0]?.token, "--max-old-space-size=1536");
  });

  it("JVM: -XX:MaxRAMPercentage=75 in JAVA_TOOL_OPTIONS, a share that follows later limits", () => {
    const { settings } = heapSettings([change], [error("JVM")], heapsOf({}));
    assert.deepEqual(settings, [{ container: "app", runtime: "JVM", env: "JAVA_TOOL_OPTIONS", token: "-XX:MaxRAMPercentage=75", recorded: false }]);
  });

  it("Go and .NET: nothing to set (a rollout reaches them)", () => {
    for (const runtime of ["Go", ".NET"] as const) assert.deepEqual(heapSettings([change], [error(runtime)], heapsOf({})).settings, []);
  });

  it("a flag the user set stays theirs", () => {
    const cases: [HeapError["runtime"], Omit<ContainerSpecLike, "name">][] = [
      ["Node.js", { env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=200" }] }],
      ["Node.js", { args: ["--max-old-space-size=200", "app.js"] }],
      ["JVM", { env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Xmx200m" }] }],
      ["JVM", { args: ["-XX:MaxRAMPercentage=50", "-jar", "app.jar"] }],
    ];
    for (const [runtime, spec] of cases) assert.deepEqual(heapSettings([change], [error(runtime)], heapsOf(spec)).settings, [], JSON.stringify(spec));
  });

  it("an env var from valueFrom is not written, and said", () => {
    const { settings, notes } = heapSettings([change], [error("Node.js")], heapsOf({ env: [{ name: "NODE_OPTIONS", valueFrom: { configMapKeyRef: { name: "c", key: "k" } } }] }));
    assert.deepEqual(settings, []);
    assert.match(notes[0] ?? "", /NODE_OPTIONS is set from valueFrom/);
  });

  it("only for containers with a heap error", () => {
    assert.deepEqual(heapSettings([change], [{ ...error("Node.js"), container: "other" }], heapsOf({})).settings, []);
  });
});

describe("knownRuntimes and heapSizedAtStart: a runtime from the heap error, else declared in spec.containerPolicies", () => {
  const spec = { containerPolicies: [{ containerName: "app", runtime: "JVM" as const }, { containerName: "*", runtime: "Node.js" as const }, { containerName: "proxy" }] };
  it("the heap error's runtime first, then the container's own entry, then *, and none for an entry without one", () => {
    assert.deepEqual(knownRuntimes(["app", "web", "proxy"], [], spec), [{ container: "app", runtime: "JVM" }, { container: "web", runtime: "Node.js" }]);
    assert.deepEqual(knownRuntimes(["app"], [{ ...error("Node.js") }], spec), [{ container: "app", runtime: "Node.js" }]);
    assert.deepEqual(knownRuntimes(["app"], [], {}), []);
  });
  it("a declared runtime gets its heap setting with every raise, as after a heap error", () => {
    const { settings } = heapSettings([change], knownRuntimes(["app"], [], { containerPolicies: [{ containerName: "app", runtime: "Node.js" }] }), heapsOf({}));
    assert.equal(describeHeapSettings(settings), "container app: NODE_OPTIONS += --max-old-space-size=384");
  });
  it("names the first container whose declared runtime sizes its heap at start", () => {
    assert.equal(heapSizedAtStart(["proxy", "app"], spec), "container app (JVM)");
    assert.equal(heapSizedAtStart(["proxy"], spec), undefined);
    assert.equal(heapSizedAtStart(["app"], {}), undefined);
  });
});

describe("buildHeapSettingPatch: appended to the env as read, in the scale's compare-and-swap", () => {
  const node = heapSettings([change], [error("Node.js")], heapsOf({})).settings;
  const base = "/spec/template/spec/containers/0";
  const annotation = `/metadata/annotations/${HEAP_SETTINGS_ANNOTATION.replace("/", "~1")}`;

  it("appended to an existing value, tested as read", () => {
    const spec = { containers: [{ name: "app", env: [{ name: "A", value: "1" }, { name: "NODE_OPTIONS", value: "--enable-source-maps" }] }] };
    assert.deepEqual(buildHeapSettingPatch(spec, node, {}, { app: "--max-old-space-size=384" }), [
      { op: "test", path: `${base}/name`, value: "app" },
      { op: "test", path: `${base}/env/1/name`, value: "NODE_OPTIONS" },
      { op: "test", path: `${base}/env/1/value`, value: "--enable-source-maps" },
      { op: "replace", path: `${base}/env/1/value`, value: "--enable-source-maps --max-old-space-size=384" },
      { op: "add", path: annotation, value: '{"app":"--max-old-space-size=384"}' },
    ]);
  });

  it("added to an env list without it, or as the env list", () => {
    const withEnv = buildHeapSettingPatch({ containers: [{ name: "app", env: [{ name: "A", value: "1" }] }] }, node, undefined, undefined);
    assert.deepEqual(withEnv[1], { op: "add", path: `${base}/env/-`, value: { name: "NODE_OPTIONS", value: "--max-old-space-size=384" } });
    const without = buildHeapSettingPatch({ containers: [{ name: "side" }, { name: "app" }] }, node, undefined, undefined);
    assert.deepEqual(without[1], { op: "add", path: "/spec/template/spec/containers/1/env", value: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=384" }] });
  });

  it("the JVM's JAVA_TOOL_OPTIONS appended with a space", () => {
    const jvm = heapSettings([change], [error("JVM")], heapsOf({})).settings;
    const ops = buildHeapSettingPatch({ containers: [{ name: "app", env: [{ name: "JAVA_TOOL_OPTIONS", value: "-Dfile.encoding=UTF-8" }] }] }, jvm, undefined, undefined);
    assert.deepEqual(ops.at(-1), { op: "replace", path: `${base}/env/0/value`, value: "-Dfile.encoding=UTF-8 -XX:MaxRAMPercentage=75" });
  });

  it("the owned annotation tested as read, removed when nothing is owned", () => {
    const previous = { [HEAP_SETTINGS_ANNOTATION]: '{"app":"--max-old-space-size=384"}' };
    assert.deepEqual(buildHeapSettingPatch({ containers: [] }, [], previous, { app: "--max-old-space-size=384" }), []);
    assert.deepEqual(buildHeapSettingPatch({ containers: [] }, [], previous, undefined), [
      { op: "test", path: annotation, value: previous[HEAP_SETTINGS_ANNOTATION] },
      { op: "remove", path: annotation },
    ]);
  });
});

describe("a setting memory-scaler wrote is its own: raised with the limit, never held", () => {
  const written = { env: [{ name: "NODE_OPTIONS", value: "--enable-source-maps --max-old-space-size=384" }] };
  const next: ContainerChange = { container: "app", from: { limit: "512Mi" }, to: { limit: "1Gi" } };
  const scale: Scale = { action: "scale", changes: [next], skipped: [], dryRun: false };

  it("recorded: kept under Hold, raised by the limit's factor", () => {
    const heaps = markOwned(heapsOf(written), parseHeapSettings('{"app":"--max-old-space-size=384"}'));
    assert.equal(holdFixedHeaps(scale, { heaps, policy: "Hold", rewritable: true, failed: [] }), scale);
    assert.deepEqual(heapFlagChanges([next], heaps, "Hold").map((c) => c.to), ["--max-old-space-size=768"]);
  });

  it("in place it cannot be raised: held as any fixed heap", () => {
    const heaps = markOwned(heapsOf(written), { app: "--max-old-space-size=384" });
    assert.equal(holdFixedHeaps(scale, { heaps, policy: "Hold", rewritable: false, failed: [] }).action, "skip");
  });

  it("a token the user changed since is theirs again", () => {
    const heaps = markOwned(heapsOf({ env: [{ name: "NODE_OPTIONS", value: "--max-old-space-size=300" }] }), { app: "--max-old-space-size=384" });
    const held = holdFixedHeaps(scale, { heaps, policy: "Hold", rewritable: true, failed: [] });
    assert.equal(held.action === "skip" ? held.reason : held.action, "FixedHeap");
  });

  it("an annotation that is not such JSON owns nothing", () => {
    for (const text of [undefined, "", "[]", "nope", '{"app":3}']) assert.deepEqual(parseHeapSettings(text), {});
  });
});
