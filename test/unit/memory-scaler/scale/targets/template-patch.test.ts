// The compare-and-swap JSON Patch of a workload's Pod template, applied to real object shapes.
import { validateAppMonitorSpec } from "../../../../../functions/lib/appmonitor-spec.ts";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { applyJsonPatch as applyToCopy, type Json } from "../../../../support/memory-scaler-fakes.ts";
import type { JsonPatchOperation } from "../../../../../functions/memory-scaler/model.ts";

/** The tests' JSON Patch applier, failing with a plain Error whose message says what the `test` found. */
const applyJsonPatch = (doc: Json, ops: readonly JsonPatchOperation[]): Json => applyToCopy(doc, ops, (message) => new Error(message));
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION } from "../../../../../functions/lib/appmonitor.ts";
import type { ContainerMemory } from "../../../../../functions/memory-scaler/model.ts";
import { decideScale } from "../../../../../functions/memory-scaler/scale/decide/decide.ts";
import { formatTimestamp } from "../../../../../functions/lib/rfc3339.ts";
import { buildTemplatePatch, escapeJsonPointerToken } from "../../../../../functions/memory-scaler/scale/targets/template-patch.ts";

/** A Deployment whose template holds `containers`: those of kind `sidecar` and `init` as initContainers. */
function deployment(containers: ContainerMemory[], annotations?: Record<string, string>): Json {
  const metadata: Record<string, Json> = { name: "memhog", namespace: "default", resourceVersion: "42" };
  if (annotations !== undefined) metadata.annotations = annotations;
  const asJson = (c: ContainerMemory): Json => {
    const resources: Record<string, Json> = {};
    if (c.limit !== undefined) resources.limits = { memory: c.limit, cpu: "1" };
    if (c.request !== undefined) resources.requests = { memory: c.request, cpu: "100m" };
    return { name: c.name, image: "quay.io/metral/memhog:v0.0.1", resources, ...(c.kind === "sidecar" ? { restartPolicy: "Always" } : {}) };
  };
  const init = containers.filter((c) => c.kind === "sidecar" || c.kind === "init");
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata,
    spec: {
      template: {
        metadata: { annotations: { "app-monitor.kubedemo.com/monitor": "true" } },
        spec: {
          containers: containers.filter((c) => !init.includes(c)).map(asJson),
          ...(init.length > 0 ? { initContainers: init.map(asJson) } : {}),
        },
      },
    },
  };
}

const memhog: ContainerMemory = { name: "memhog", request: "256Mi", limit: "384Mi" };
const sidecar: ContainerMemory = { name: "sidecar", request: "32Mi", limit: "64Mi" };
const TIME = new Date("2025-06-01T12:00:00.789Z");
const KEY = "app-monitor.kubedemo.com~1last-scale";

function changesFor(containers: ContainerMemory[], alertContainer?: string) {
  const d = decideScale({
    podContainers: containers,
    templateContainers: containers,
    now: TIME,
    spec: validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2 }),
    ...(alertContainer === undefined ? {} : { alertContainer }),
  });
  assert.equal(d.action, "scale");
  return d.action === "scale" ? d.changes : [];
}

describe("escapeJsonPointerToken and formatTimestamp", () => {
  const cases: Array<[string, string]> = [
    ["app-monitor.kubedemo.com/last-scale", "app-monitor.kubedemo.com~1last-scale"],
    ["a~b/c", "a~0b~1c"],
    ["~1", "~01"],
    ["plain", "plain"],
  ];
  for (const [raw, escaped] of cases) it(`${raw} → ${escaped}`, () => assert.equal(escapeJsonPointerToken(raw), escaped));
  it("writes whole seconds in UTC", () => assert.equal(formatTimestamp(TIME), "2025-06-01T12:00:00Z"));
});

describe("buildTemplatePatch", () => {
  it("the original demo: tests, then replaces, and adds the annotations map when missing", () => {
    const ops = buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations: undefined, time: TIME, resourceVersion: "42" });
    assert.deepEqual(ops, [
      { op: "test", path: "/metadata/resourceVersion", value: "42" },
      { op: "test", path: "/spec/template/spec/containers/0/name", value: "memhog" },
      { op: "test", path: "/spec/template/spec/containers/0/resources/limits/memory", value: "384Mi" },
      { op: "test", path: "/spec/template/spec/containers/0/resources/requests/memory", value: "256Mi" },
      { op: "test", path: "/metadata/annotations", value: null },
      { op: "replace", path: "/spec/template/spec/containers/0/resources/limits/memory", value: "768Mi" },
      { op: "replace", path: "/spec/template/spec/containers/0/resources/requests/memory", value: "512Mi" },
      { op: "add", path: "/metadata/annotations", value: { [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z" } },
    ]);
    const after = applyJsonPatch(deployment([memhog]), ops) as { spec: { template: { spec: { containers: Array<{ resources: Json }> } } }; metadata: Json };
    assert.deepEqual(after.spec.template.spec.containers[0]?.resources, { limits: { memory: "768Mi", cpu: "1" }, requests: { memory: "512Mi", cpu: "100m" } });
    assert.deepEqual(after.metadata, { name: "memhog", namespace: "default", resourceVersion: "42", annotations: { [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z" } });
  });

  it("indexes the changed container and leaves the others alone", () => {
    const ops = buildTemplatePatch({ templateContainers: [memhog, sidecar], changes: changesFor([memhog, sidecar], "sidecar"), annotations: { team: "a" }, time: TIME });
    assert.ok(ops.every((op) => !op.path.includes("/containers/0/")));
    assert.ok(ops.some((op) => op.op === "replace" && op.path === "/spec/template/spec/containers/1/resources/limits/memory" && op.value === "128Mi"));
    assert.deepEqual(ops.at(-1), { op: "add", path: `/metadata/annotations/${KEY}`, value: "2025-06-01T12:00:00Z" });
    const after = applyJsonPatch(deployment([memhog, sidecar], { team: "a" }), ops) as { metadata: { annotations: Json } };
    assert.deepEqual(after.metadata.annotations, { team: "a", [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z" });
  });

  it("writes the last-scale record with the last-scale annotation: a new map, a new key, or over the previous one", () => {
    const record = '{"time":"2025-06-01T12:00:00Z"}';
    const bare = applyJsonPatch(deployment([memhog]), buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations: undefined, time: TIME, record })) as { metadata: { annotations: Json } };
    assert.deepEqual(bare.metadata.annotations, { [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z", [LAST_SCALE_RECORD_ANNOTATION]: record });
    const annotated = applyJsonPatch(deployment([memhog], { team: "a" }), buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations: { team: "a" }, time: TIME, record })) as { metadata: { annotations: Json } };
    assert.deepEqual(annotated.metadata.annotations, { team: "a", [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z", [LAST_SCALE_RECORD_ANNOTATION]: record });
    const previous = { [LAST_SCALE_ANNOTATION]: "2025-05-01T00:00:00Z", [LAST_SCALE_RECORD_ANNOTATION]: "old" };
    const ops = buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations: previous, time: TIME, record });
    assert.ok(ops.some((op) => op.op === "test" && op.path === `/metadata/annotations/${KEY}` && op.value === "2025-05-01T00:00:00Z"), "the last-scale test keeps it a compare-and-swap");
    const rescaled = applyJsonPatch(deployment([memhog], previous), ops) as { metadata: { annotations: Json } };
    assert.deepEqual(rescaled.metadata.annotations, { [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z", [LAST_SCALE_RECORD_ANNOTATION]: record });
  });

  it("tests the previous last-scale record too: a patch read before another scale of the same second fails once that one is written, even after a revert", () => {
    const first = { [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z", [LAST_SCALE_RECORD_ANNOTATION]: '{"event":"e0"}' };
    const ops = buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations: first, time: TIME, record: '{"event":"e2"}' });
    assert.ok(ops.some((op) => op.op === "test" && op.path === "/metadata/annotations/app-monitor.kubedemo.com~1last-scale-record" && op.value === '{"event":"e0"}'));
    applyJsonPatch(deployment([memhog], first), ops);
    // Meanwhile e1 scaled in the same second and a revert put 384Mi/256Mi back: only the record differs.
    const afterRevert = { [LAST_SCALE_ANNOTATION]: "2025-06-01T12:00:00Z", [LAST_SCALE_RECORD_ANNOTATION]: '{"event":"e1"}' };
    assert.throws(() => applyJsonPatch(deployment([memhog], afterRevert), ops), /test/);
  });

  it("patches a native sidecar at its index among the init containers", () => {
    const migrate: ContainerMemory = { name: "migrate", request: "128Mi", limit: "256Mi", kind: "init" };
    const proxy: ContainerMemory = { name: "proxy", request: "32Mi", limit: "64Mi", kind: "sidecar" };
    const template = [memhog, sidecar, migrate, proxy];
    const ops = buildTemplatePatch({ templateContainers: template, changes: changesFor(template, "proxy"), annotations: {}, time: TIME });
    assert.deepEqual(ops.slice(0, 5), [
      { op: "test", path: "/spec/template/spec/initContainers/1/name", value: "proxy" },
      { op: "test", path: "/spec/template/spec/initContainers/1/resources/limits/memory", value: "64Mi" },
      { op: "test", path: "/spec/template/spec/initContainers/1/resources/requests/memory", value: "32Mi" },
      { op: "replace", path: "/spec/template/spec/initContainers/1/resources/limits/memory", value: "128Mi" },
      { op: "replace", path: "/spec/template/spec/initContainers/1/resources/requests/memory", value: "64Mi" },
    ]);
    const after = applyJsonPatch(deployment(template, {}), ops) as { spec: { template: { spec: { containers: Array<{ resources: Json }>; initContainers: Array<{ name: string; resources: Json }> } } } };
    assert.deepEqual(after.spec.template.spec.initContainers.map((c) => [c.name, c.resources]), [
      ["migrate", { limits: { memory: "256Mi", cpu: "1" }, requests: { memory: "128Mi", cpu: "100m" } }],
      ["proxy", { limits: { memory: "128Mi", cpu: "1" }, requests: { memory: "64Mi", cpu: "100m" } }],
    ]);
    assert.deepEqual(after.spec.template.spec.containers[1]?.resources, { limits: { memory: "64Mi", cpu: "1" }, requests: { memory: "32Mi", cpu: "100m" } }, "the ordinary container named sidecar is untouched");
  });

  it("tests and replaces an existing last-scale annotation", () => {
    const annotations = { [LAST_SCALE_ANNOTATION]: "2025-01-01T00:00:00Z" };
    const ops = buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations, time: TIME });
    assert.ok(ops.some((op) => op.op === "test" && op.path === `/metadata/annotations/${KEY}` && op.value === "2025-01-01T00:00:00Z"));
    assert.deepEqual(ops.at(-1), { op: "replace", path: `/metadata/annotations/${KEY}`, value: "2025-06-01T12:00:00Z" });
    applyJsonPatch(deployment([memhog], annotations), ops);
  });

  it("all tests come before any write", () => {
    const ops = buildTemplatePatch({ templateContainers: [memhog, sidecar], changes: changesFor([memhog, sidecar]), annotations: {}, time: TIME, resourceVersion: "7" });
    const firstWrite = ops.findIndex((op) => op.op !== "test");
    assert.ok(firstWrite > 0);
    assert.ok(ops.slice(firstWrite).every((op) => op.op !== "test"));
  });

  it("omits request operations when the template sets no request", () => {
    const bare: ContainerMemory = { name: "memhog", limit: "384Mi" };
    const ops = buildTemplatePatch({ templateContainers: [bare], changes: changesFor([bare]), annotations: {}, time: TIME });
    assert.ok(ops.every((op) => !op.path.includes("requests")));
    applyJsonPatch(deployment([bare], {}), ops);
  });

  it("a patch built from stale values fails on the scaled object: no compounding to ×4", () => {
    const ops = buildTemplatePatch({ templateContainers: [memhog], changes: changesFor([memhog]), annotations: {}, time: TIME });
    const once = applyJsonPatch(deployment([memhog], {}), ops);
    assert.throws(() => applyJsonPatch(once, ops), /test failed: .*limits\/memory is "768Mi"/);
  });

  it("a patch fails when the container moved to another index", () => {
    const ops = buildTemplatePatch({ templateContainers: [memhog, sidecar], changes: changesFor([memhog, sidecar], "sidecar"), annotations: {}, time: TIME });
    assert.throws(() => applyJsonPatch(deployment([sidecar, memhog], {}), ops), /test failed: .*name/);
  });

  it("refuses changes that do not match the template", () => {
    const changes = changesFor([memhog]);
    assert.throws(() => buildTemplatePatch({ templateContainers: [sidecar], changes, annotations: {}, time: TIME }), /memhog is not in/);
    assert.throws(() => buildTemplatePatch({ templateContainers: [{ ...memhog, limit: "400Mi" }], changes, annotations: {}, time: TIME }), /other values/);
    assert.throws(
      () =>
        buildTemplatePatch({
          templateContainers: [{ name: "memhog", limit: "384Mi" }],
          changes: [{ container: "memhog", from: { limit: "384Mi" }, to: { limit: "768Mi", request: "512Mi" } }],
          annotations: {},
          time: TIME,
        }),
      /cannot add a memory request/,
    );
    const migrate: ContainerMemory = { name: "migrate", limit: "256Mi", kind: "init" };
    assert.throws(
      () => buildTemplatePatch({ templateContainers: [memhog, migrate], changes: [{ container: "migrate", from: { limit: "256Mi" }, to: { limit: "512Mi" } }], annotations: {}, time: TIME }),
      /migrate is an init container/,
    );
  });
});
