import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { effectiveMemory, foldedChanges, formatInPlaceRecord, type InPlaceEntry, parseInPlaceRecord, podChanges, recordedChanges, withInPlaceChanges } from "../../../functions/memory-scaler/in-place.ts";
import type { ContainerMemory } from "../../../functions/memory-scaler/model.ts";

const memhog: ContainerMemory = { name: "memhog", kind: "container", limit: "384Mi", request: "256Mi" };
const sidecar: ContainerMemory = { name: "proxy", kind: "sidecar", limit: "64Mi" };
const init: ContainerMemory = { name: "setup", kind: "init", limit: "32Mi" };
const raised: InPlaceEntry = { container: "memhog", template: { limit: "384Mi", request: "256Mi" }, raised: { limit: "768Mi", request: "512Mi" } };

describe("the in-place record's annotation", () => {
  it("formats each container as <name>=<limit>><raised>[/<request>><raised>], joined by ;", () => {
    const proxy: InPlaceEntry = { container: "proxy", template: { limit: "64Mi" }, raised: { limit: "128Mi" } };
    assert.equal(formatInPlaceRecord([raised, proxy]), "memhog=384Mi>768Mi/256Mi>512Mi;proxy=64Mi>128Mi");
    assert.deepEqual(parseInPlaceRecord("memhog=384Mi>768Mi/256Mi>512Mi;proxy=64Mi>128Mi"), [raised, proxy]);
  });

  for (const [value, why] of [
    [undefined, "absent"],
    ["", "empty"],
    ["memhog", "no ="],
    ["memhog=384Mi", "no >"],
    ["memhog=384Mi>768Mi/256Mi", "a request pair without its >"],
    ["memhog=384Mi>lots", "a value that is no quantity"],
    ["Mem_hog=384Mi>768Mi", "a name that is no DNS label"],
    ["memhog=384Mi>768Mi/1>2/3>4", "three pairs"],
  ] as const) {
    it(`reads as no record when ${why}`, () => assert.equal(parseInPlaceRecord(value), undefined));
  }
});

describe("the workload's memory", () => {
  it("is the template's, raised where an entry applies to the template's values", () => {
    assert.deepEqual(effectiveMemory([memhog, sidecar], [raised]), [{ ...memhog, limit: "768Mi", request: "512Mi" }, sidecar]);
  });
  it("compares quantities, not strings", () => {
    assert.deepEqual(effectiveMemory([{ ...memhog, limit: "402653184" }], [raised])[0]?.limit, "768Mi");
  });
  it("is the template's own once the template changed since the raise (a new declaration)", () => {
    assert.deepEqual(effectiveMemory([{ ...memhog, limit: "512Mi" }], [raised]), [{ ...memhog, limit: "512Mi" }]);
    assert.deepEqual(effectiveMemory([{ ...memhog, request: "128Mi" }], [raised]), [{ ...memhog, request: "128Mi" }]);
  });
  it("is the template's without a record", () => assert.deepEqual(effectiveMemory([memhog], undefined), [memhog]));
});

describe("a scale in place", () => {
  it("records each change raised from the template's values, however many scales came before", () => {
    const second = { container: "memhog", from: { limit: "768Mi", request: "512Mi" }, to: { limit: "1536Mi", request: "1Gi" } };
    assert.deepEqual(withInPlaceChanges([memhog], [raised], [second]), [{ container: "memhog", template: { limit: "384Mi", request: "256Mi" }, raised: { limit: "1536Mi", request: "1Gi" } }]);
  });
  it("keeps the entries of other containers that still apply, drops those that do not", () => {
    const proxy: InPlaceEntry = { container: "proxy", template: { limit: "64Mi" }, raised: { limit: "128Mi" } };
    const stale: InPlaceEntry = { container: "gone", template: { limit: "1Gi" }, raised: { limit: "2Gi" } };
    const change = { container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } };
    assert.deepEqual(withInPlaceChanges([memhog, sidecar], [proxy, stale], [change]), [proxy, raised]);
  });
  it("refuses a change of a container without a limit in the template", () => {
    assert.throws(() => withInPlaceChanges([{ name: "memhog" }], undefined, [{ container: "memhog", from: { limit: "1Gi" }, to: { limit: "2Gi" } }]), RangeError);
  });
});

describe("a template patch", () => {
  it("writes the whole raise: each change from the template's own values", () => {
    const change = { container: "memhog", from: { limit: "768Mi", request: "512Mi" }, to: { limit: "1536Mi", request: "1Gi" } };
    assert.deepEqual(foldedChanges([memhog], [change]), [{ ...change, from: { limit: "384Mi", request: "256Mi" } }]);
  });
  it("of a fallback writes the record's raise into the template", () => {
    assert.deepEqual(recordedChanges([memhog, sidecar], [raised]), [{ container: "memhog", from: raised.template, to: raised.raised }]);
    assert.deepEqual(recordedChanges([{ ...memhog, limit: "1Gi" }], [raised]), [], "not once the template changed");
    assert.deepEqual(recordedChanges([memhog], undefined), []);
  });
});

describe("a Pod brought up to the workload's memory", () => {
  it("changes each container and sidecar whose limit is below the target's, from the Pod's values", () => {
    const target = effectiveMemory([memhog, { ...sidecar, limit: "128Mi" }, init], [raised]);
    assert.deepEqual(podChanges([memhog, sidecar, init], target), [
      { container: "memhog", from: { limit: "384Mi", request: "256Mi" }, to: { limit: "768Mi", request: "512Mi" } },
      { container: "proxy", from: { limit: "64Mi" }, to: { limit: "128Mi" } },
    ]);
  });
  it("raises a request the template does not set (defaulted to the limit) with the limit, keeping the Pod's QoS class", () => {
    assert.deepEqual(podChanges([{ ...sidecar, request: "64Mi" }], [{ ...sidecar, limit: "128Mi" }]), [{ container: "proxy", from: { limit: "64Mi", request: "64Mi" }, to: { limit: "128Mi", request: "128Mi" } }]);
  });
  it("leaves a Pod at or above the target, and init containers, alone", () => {
    assert.deepEqual(podChanges([{ ...memhog, limit: "768Mi" }, { ...init, limit: "1Mi" }], [{ ...memhog, limit: "768Mi" }, { ...init, limit: "1Gi" }]), []);
  });
});
