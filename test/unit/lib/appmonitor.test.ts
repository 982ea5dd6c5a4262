// AppMonitor spec validation, label selectors and coverage (which AppMonitor governs: memory-scaler/parts.test.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_REVERT_BUDGET_PER_HOUR, MONITOR_ANNOTATION } from "../../../functions/lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../../../functions/lib/appmonitor-spec.ts";
import { LabelSelectorError, matchesLabelSelector, type LabelSelector } from "../../../functions/lib/label-selector.ts";
import { type AppMonitorLike, coverage, covers, type PodTemplateLike } from "../../../functions/memory-scaler/scale/decide/governing.ts";

describe("validateAppMonitorSpec: valid", () => {
  it("the original demo's spec applies unchanged and gets the defaults", () => {
    assert.deepEqual(validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2 }), {
      memThresholdPercent: 75,
      memMultiplier: 2,
      forSeconds: 60,
      cooldownSeconds: 300,
      mode: "Scale",
      updateMode: "Rollout",
      selectorMode: "Widen",
      stuckRollout: "Report",
      gitOpsManaged: "Skip",
      heapFlags: "Hold",
      revertBudgetPerHour: 3,
    });
  });

  it("the code's revert budget is the schema's default", () => {
    assert.equal(validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2 }).revertBudgetPerHour, DEFAULT_REVERT_BUDGET_PER_HOUR);
  });

  it("keeps given values and does not modify its input", () => {
    const spec = {
      memThresholdPercent: 100,
      memMultiplier: 10,
      selector: { matchLabels: { app: "x" }, matchExpressions: [{ key: "tier", operator: "In", values: ["a"] }, { key: "canary", operator: "DoesNotExist" }] },
      containers: ["app", "side-car1"],
      maxMemory: "1.5Gi",
      forSeconds: 0,
      cooldownSeconds: 0,
      mode: "DryRun",
      updateMode: "InPlaceOrRollout",
      heapFlags: "Scale",
      selectorMode: "Narrow",
      stuckRollout: "DeletePod",
      gitOpsManaged: "Patch",
      revertBudgetPerHour: 0,
    };
    const before = structuredClone(spec);
    assert.deepEqual(validateAppMonitorSpec(spec), before);
    assert.deepEqual(spec, before);
    const bare = { memThresholdPercent: 1, memMultiplier: 1.5 };
    validateAppMonitorSpec(bare);
    assert.deepEqual(bare, { memThresholdPercent: 1, memMultiplier: 1.5 });
  });

  it("spec.trend gets its window and floor defaults; given values are kept", () => {
    assert.deepEqual(validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2, trend: { horizonSeconds: 900 } }).trend, { horizonSeconds: 900, windowSeconds: 600, floorPercent: 50 });
    const trend = { horizonSeconds: 604_800, windowSeconds: 1, floorPercent: 0 };
    assert.deepEqual(validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2, trend }).trend, trend);
  });

  const quantities = ["2Gi", "1e9", "500M", "128974848000m", "0.5Gi", ".5Gi", "1Ei", "1048576", "+1Gi", "1E3"];
  for (const maxMemory of quantities) {
    it(`accepts maxMemory ${maxMemory}`, () => {
      assert.equal(validateAppMonitorSpec({ memThresholdPercent: 50, memMultiplier: 2, maxMemory }).maxMemory, maxMemory);
    });
  }
});

describe("validateAppMonitorSpec: invalid", () => {
  const base = { memThresholdPercent: 75, memMultiplier: 2 };
  const cases: Array<[string, unknown, string, string]> = [
    ["missing threshold", { memMultiplier: 2 }, "", "required"],
    ["missing multiplier", { memThresholdPercent: 75 }, "", "required"],
    ["threshold 0", { ...base, memThresholdPercent: 0 }, "/memThresholdPercent", "exclusiveMinimum"],
    ["threshold above 100", { ...base, memThresholdPercent: 100.5 }, "/memThresholdPercent", "maximum"],
    ["threshold as a string", { ...base, memThresholdPercent: "75" }, "/memThresholdPercent", "type"],
    ["multiplier 1", { ...base, memMultiplier: 1 }, "/memMultiplier", "exclusiveMinimum"],
    ["multiplier above 10", { ...base, memMultiplier: 10.01 }, "/memMultiplier", "maximum"],
    ["fractional forSeconds", { ...base, forSeconds: 1.5 }, "/forSeconds", "type"],
    ["negative cooldown", { ...base, cooldownSeconds: -1 }, "/cooldownSeconds", "minimum"],
    ["unknown mode", { ...base, mode: "scale" }, "/mode", "enum"],
    ["unknown heapFlags", { ...base, heapFlags: "Raise" }, "/heapFlags", "enum"],
    ["maxMemory with a space", { ...base, maxMemory: "1 Gi" }, "/maxMemory", "pattern"],
    ["maxMemory in bytes units", { ...base, maxMemory: "1GB" }, "/maxMemory", "pattern"],
    ["negative maxMemory", { ...base, maxMemory: "-1Gi" }, "/maxMemory", "pattern"],
    ["maxMemory as a number", { ...base, maxMemory: 1073741824 }, "/maxMemory", "type"],
    ["maxMemory exponent out of range", { ...base, maxMemory: "1e5000" }, "/maxMemory", "quantity"],
    ["empty containers", { ...base, containers: [] }, "/containers", "minItems"],
    ["container name not a DNS label", { ...base, containers: ["App_1"] }, "/containers/0", "pattern"],
    ["unknown selector operator", { ...base, selector: { matchExpressions: [{ key: "a", operator: "Gt", values: ["1"] }] } }, "/selector/matchExpressions/0/operator", "enum"],
    ["selector label value not a string", { ...base, selector: { matchLabels: { a: 1 } } }, "/selector/matchLabels/a", "type"],
    ["In without values", { ...base, selector: { matchExpressions: [{ key: "a", operator: "In" }] } }, "/selector/matchExpressions/0", "labelSelector"],
    ["Exists with values", { ...base, selector: { matchExpressions: [{ key: "a", operator: "Exists" }, { key: "b", operator: "Exists", values: ["x"] }] } }, "/selector/matchExpressions/1", "labelSelector"],
    ["trend without a horizon", { ...base, trend: { windowSeconds: 600 } }, "/trend", "required"],
    ["trend horizon 0", { ...base, trend: { horizonSeconds: 0 } }, "/trend/horizonSeconds", "minimum"],
    ["trend horizon over a week", { ...base, trend: { horizonSeconds: 604_801 } }, "/trend/horizonSeconds", "maximum"],
    ["fractional trend window", { ...base, trend: { horizonSeconds: 600, windowSeconds: 1.5 } }, "/trend/windowSeconds", "type"],
    ["trend window over a day", { ...base, trend: { horizonSeconds: 600, windowSeconds: 86_401 } }, "/trend/windowSeconds", "maximum"],
    ["trend floor above 100", { ...base, trend: { horizonSeconds: 600, floorPercent: 101 } }, "/trend/floorPercent", "maximum"],
    ["a container named twice", { ...base, containers: ["app", "app"] }, "/containers", "uniqueItems"],
    ["a targetRef and a selector", { ...base, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" }, selector: {} }, "", "x-kubernetes-validations"],
    ["selectorMode Narrow without a selector", { ...base, selectorMode: "Narrow" }, "/selectorMode", "x-kubernetes-validations"],
    ["a targetRef of an unsupported kind", { ...base, targetRef: { apiVersion: "apps/v1", kind: "CronJob", name: "web" } }, "/targetRef/kind", "enum"],
    ["a targetRef of another API version", { ...base, targetRef: { apiVersion: "v1", kind: "Deployment", name: "web" } }, "/targetRef/apiVersion", "enum"],
    ["a targetRef name that is no DNS subdomain", { ...base, targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "Web_1" } }, "/targetRef/name", "pattern"],
    ["an unknown selectorMode", { ...base, selector: {}, selectorMode: "Only" }, "/selectorMode", "enum"],
    ["not an object", "memThresholdPercent: 75", "", "type"],
  ];
  for (const [name, spec, path, keyword] of cases) {
    it(`${name} → ${keyword} at spec${path}`, () => {
      assert.throws(
        () => validateAppMonitorSpec(spec),
        (err: unknown) => {
          assert.ok(err instanceof AppMonitorSpecError);
          assert.ok(
            err.errors.some((e) => e.instancePath === path && e.keyword === keyword),
            JSON.stringify(err.errors),
          );
          assert.match(err.message, /^invalid AppMonitor spec: /);
          return true;
        },
      );
    });
  }

  it("reports every problem at once", () => {
    assert.throws(
      () => validateAppMonitorSpec({ memThresholdPercent: 0, memMultiplier: 11, mode: "Now" }),
      (err: unknown) => err instanceof AppMonitorSpecError && err.errors.length === 3,
    );
  });
});

describe("matchesLabelSelector", () => {
  const labels = { app: "memhog", tier: "web", env: "" };
  const cases: Array<[string, LabelSelector, Record<string, string> | undefined, boolean]> = [
    ["empty selector matches everything", {}, labels, true],
    ["empty selector matches no labels", {}, undefined, true],
    ["matchLabels hit", { matchLabels: { app: "memhog" } }, labels, true],
    ["matchLabels wrong value", { matchLabels: { app: "other" } }, labels, false],
    ["matchLabels missing key", { matchLabels: { team: "a" } }, labels, false],
    ["matchLabels empty value", { matchLabels: { env: "" } }, labels, true],
    ["matchLabels all must hold", { matchLabels: { app: "memhog", tier: "db" } }, labels, false],
    ["In hit", { matchExpressions: [{ key: "tier", operator: "In", values: ["db", "web"] }] }, labels, true],
    ["In miss", { matchExpressions: [{ key: "tier", operator: "In", values: ["db"] }] }, labels, false],
    ["In on a missing key", { matchExpressions: [{ key: "team", operator: "In", values: ["a"] }] }, labels, false],
    ["NotIn hit", { matchExpressions: [{ key: "tier", operator: "NotIn", values: ["web"] }] }, labels, false],
    ["NotIn miss", { matchExpressions: [{ key: "tier", operator: "NotIn", values: ["db"] }] }, labels, true],
    ["NotIn on a missing key", { matchExpressions: [{ key: "team", operator: "NotIn", values: ["a"] }] }, labels, true],
    ["Exists", { matchExpressions: [{ key: "env", operator: "Exists" }] }, labels, true],
    ["Exists on a missing key", { matchExpressions: [{ key: "team", operator: "Exists" }] }, labels, false],
    ["DoesNotExist", { matchExpressions: [{ key: "team", operator: "DoesNotExist" }] }, labels, true],
    ["DoesNotExist on a present key", { matchExpressions: [{ key: "app", operator: "DoesNotExist" }] }, labels, false],
    ["DoesNotExist without labels", { matchExpressions: [{ key: "app", operator: "DoesNotExist" }] }, undefined, true],
    ["matchLabels and matchExpressions are ANDed", { matchLabels: { app: "memhog" }, matchExpressions: [{ key: "tier", operator: "In", values: ["db"] }] }, labels, false],
    ["a label named like an Object prototype key", { matchExpressions: [{ key: "constructor", operator: "Exists" }] }, labels, false],
  ];
  for (const [name, selector, podLabels, want] of cases) {
    it(name, () => assert.equal(matchesLabelSelector(selector, podLabels), want));
  }
  it("refuses In without values", () => {
    assert.throws(() => matchesLabelSelector({ matchExpressions: [{ key: "a", operator: "In", values: [] }] }, labels), LabelSelectorError);
  });
});

function am(name: string, created: string | undefined, selector?: LabelSelector, namespace = "default"): AppMonitorLike {
  const metadata: AppMonitorLike["metadata"] = { name, namespace };
  if (created !== undefined && metadata !== undefined) metadata.creationTimestamp = created;
  return { metadata, spec: selector === undefined ? {} : { selector } };
}

// Pod template metadata, with the workload's namespace as the caller sets it.
const annotated: PodTemplateLike = { metadata: { namespace: "default", labels: { name: "memhog" }, annotations: { [MONITOR_ANNOTATION]: "true" } } };
const labelled: PodTemplateLike = { metadata: { namespace: "default", labels: { name: "memhog" } } };
const plain: PodTemplateLike = { metadata: { namespace: "default", labels: { name: "other" }, annotations: { [MONITOR_ANNOTATION]: "yes" } } };

describe("covers", () => {
  const bySelector = am("sel", "2025-01-01T00:00:00Z", { matchLabels: { name: "memhog" } });
  const noSelector = am("plain", "2025-01-01T00:00:00Z");
  const cases: Array<[string, PodTemplateLike, AppMonitorLike, "selector" | "annotation" | undefined]> = [
    ["annotation only", annotated, noSelector, "annotation"],
    ["selector match on an annotated Pod", annotated, bySelector, "selector"],
    ["selector match without the annotation", labelled, bySelector, "selector"],
    ["neither (annotation must be exactly \"true\")", plain, noSelector, undefined],
    ["selector miss and no annotation", plain, bySelector, undefined],
    ["an AppMonitor in another namespace", annotated, am("far", undefined, { matchLabels: { name: "memhog" } }, "other"), undefined],
    ["an invalid selector selects nothing, the annotation still counts", annotated, am("bad", undefined, { matchExpressions: [{ key: "a", operator: "In" }] }), "annotation"],
    ["a template without metadata", {}, bySelector, undefined],
    ["a template whose namespace is unknown is judged on its labels alone", { metadata: { labels: { name: "memhog" } } }, am("far", undefined, { matchLabels: { name: "memhog" } }, "other"), "selector"],
  ];
  for (const [name, pod, monitor, want] of cases) {
    it(name, () => {
      assert.equal(coverage(pod, monitor), want);
      assert.equal(covers(pod, monitor), want !== undefined);
    });
  }
});
