// The scaling decision: each rule of the memory-scaler, as a table, plus properties.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { AppMonitorSpecWithDefaults } from "../../functions/lib/appmonitor.ts";
import { compare, formatBytes, parseQuantity, rational } from "../../functions/lib/quantity.ts";
import { decideScale, type ContainerChange, type ContainerMemory, type DecideInput, type Decision, type SkipReason } from "../../functions/memory-scaler/decide.ts";

const NOW = new Date("2025-06-01T12:00:00Z");
const secondsAgo = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString();

function spec(over: Partial<AppMonitorSpecWithDefaults> = {}): AppMonitorSpecWithDefaults {
  return { memThresholdPercent: 75, memMultiplier: 2, forSeconds: 60, cooldownSeconds: 300, mode: "Scale", ...over };
}

const memhog: ContainerMemory = { name: "memhog", request: "256Mi", limit: "384Mi" };
const sidecar: ContainerMemory = { name: "sidecar", request: "32Mi", limit: "64Mi" };
const unlimited: ContainerMemory = { name: "unlimited", request: "64Mi" };

/** Same containers in Pod and template: the usual steady state. */
function input(containers: ContainerMemory[], over: Partial<DecideInput> = {}): DecideInput {
  return { podContainers: containers, templateContainers: containers, now: NOW, spec: spec(), ...over };
}

interface ScaleCase {
  name: string;
  input: DecideInput;
  dryRun?: boolean;
  changes: ContainerChange[];
  skipped?: SkipReason[];
}

const scaleCases: ScaleCase[] = [
  {
    name: "the original demo: 384Mi/256Mi × 2 → 768Mi/512Mi",
    input: input([memhog]),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "× 1.5 → 576Mi/384Mi",
    input: input([memhog], { spec: spec({ memMultiplier: 1.5 }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "384Mi", limit: "576Mi" } }],
  },
  {
    name: "only the alert's container changes in a two-container Pod",
    input: input([memhog, sidecar], { alertContainer: "sidecar" }),
    changes: [{ container: "sidecar", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } }],
  },
  {
    name: "without an alert container, every container with a limit, in template order",
    input: input([sidecar, unlimited, memhog]),
    changes: [
      { container: "sidecar", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } },
      { container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } },
    ],
    skipped: ["NoMemoryLimit"],
  },
  {
    name: "spec.containers restricts the targets",
    input: input([memhog, sidecar], { spec: spec({ containers: ["sidecar"] }) }),
    changes: [{ container: "sidecar", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } }],
  },
  {
    name: "a name listed twice in spec.containers is changed once",
    input: input([memhog], { spec: spec({ containers: ["memhog", "memhog"] }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "the alert's container when spec.containers lists it",
    input: input([memhog, sidecar], { spec: spec({ containers: ["memhog", "sidecar"] }), alertContainer: "memhog" }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "maxMemory clamps the limit, the request stays below it",
    input: input([memhog], { spec: spec({ maxMemory: "600Mi" }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "600Mi" } }],
  },
  {
    name: "maxMemory clamps the request to the clamped limit",
    input: input([{ name: "memhog", request: "384Mi", limit: "384Mi" }], { spec: spec({ maxMemory: "500Mi" }) }),
    changes: [{ container: "memhog", from: { request: "384Mi", limit: "384Mi" }, to: { request: "500Mi", limit: "500Mi" } }],
  },
  {
    name: "a decimal maxMemory is rounded down to whole bytes and written in binary SI",
    input: input([memhog], { spec: spec({ maxMemory: "0.5Gi" }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "512Mi" } }],
  },
  {
    name: "a maxMemory above the new limit changes nothing",
    input: input([memhog], { spec: spec({ maxMemory: "1Gi" }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "DryRun reports the same changes",
    input: input([memhog], { spec: spec({ mode: "DryRun" }) }),
    dryRun: true,
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "cooldown over: last scale 301 s ago",
    input: input([memhog], { lastScaleTime: secondsAgo(301) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "cooldown over exactly at cooldownSeconds",
    input: input([memhog], { lastScaleTime: secondsAgo(300) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "cooldownSeconds 0 never blocks",
    input: input([memhog], { lastScaleTime: secondsAgo(0), spec: spec({ cooldownSeconds: 0 }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "an unparseable last-scale annotation is ignored",
    input: input([memhog], { lastScaleTime: "yesterday" }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
  {
    name: "no request in the template: none is added (the Pod's request keeps defaulting to its limit)",
    input: input([{ name: "memhog", limit: "384Mi" }]),
    changes: [{ container: "memhog", from: { limit: "384Mi" }, to: { limit: "768Mi" } }],
  },
  {
    name: "decimal, exponent and milli forms are read exactly and written in binary SI",
    input: input([{ name: "memhog", request: "1e8", limit: "128974848000m" }], { spec: spec({ memMultiplier: 1.5 }) }),
    changes: [{ container: "memhog", from: { request: "1e8", limit: "128974848000m" }, to: { request: "150000000", limit: "188928Ki" } }],
  },
  {
    name: "0.5Gi × 2 → 1Gi",
    input: input([{ name: "memhog", request: "0.25Gi", limit: "0.5Gi" }]),
    changes: [{ container: "memhog", from: { request: "0.25Gi", limit: "0.5Gi" }, to: { request: "512Mi", limit: "1Gi" } }],
  },
  {
    name: "an inexact product rounds up to the next byte: 384Mi × 1.1",
    input: input([memhog], { spec: spec({ memMultiplier: 1.1 }) }),
    // 402653184 × 1.1 = 442918502.4 → 442918503; 268435456 × 1.1 = 295279001.6 → 295279002
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "295279002", limit: "442918503" } }],
  },
  {
    name: "the Pod and template may spell the same limit differently",
    input: { ...input([memhog]), podContainers: [{ name: "memhog", request: "268435456", limit: "0.375Gi" }] },
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } }],
  },
];

describe("decideScale: scale", () => {
  for (const c of scaleCases) {
    it(c.name, () => {
      const d = decideScale(c.input);
      assert.equal(d.action, "scale", JSON.stringify(d));
      if (d.action !== "scale") return;
      assert.equal(d.dryRun, c.dryRun ?? false);
      assert.deepEqual(d.changes, c.changes);
      assert.deepEqual(d.skipped.map((s) => s.reason), c.skipped ?? []);
    });
  }
});

interface SkipCase {
  name: string;
  input: DecideInput;
  reason: SkipReason;
  message: RegExp;
}

const skipCases: SkipCase[] = [
  { name: "within the cooldown", input: input([memhog], { lastScaleTime: secondsAgo(100) }), reason: "Cooldown", message: /200s left/ },
  { name: "a last scale in the future counts as recent", input: input([memhog], { lastScaleTime: secondsAgo(-30) }), reason: "Cooldown", message: /cooldown/ },
  { name: "the alert's container is not in spec.containers", input: input([memhog, sidecar], { alertContainer: "memhog", spec: spec({ containers: ["sidecar"] }) }), reason: "ContainerNotSelected", message: /memhog is not in spec.containers/ },
  { name: "the alert's container has no memory limit", input: input([memhog, unlimited], { alertContainer: "unlimited" }), reason: "NoMemoryLimit", message: /unlimited has no memory limit/ },
  { name: "no container has a memory limit", input: input([unlimited]), reason: "NoMemoryLimit", message: /no memory limit/ },
  { name: "already at the cap", input: input([memhog], { spec: spec({ maxMemory: "384Mi" }) }), reason: "AtCap", message: /already at spec.maxMemory 384Mi/ },
  { name: "above the cap", input: input([memhog], { spec: spec({ maxMemory: "300Mi" }) }), reason: "AtCap", message: /maxMemory/ },
  { name: "a cap within one byte of the limit", input: input([{ name: "memhog", limit: "1000" }], { spec: spec({ maxMemory: "1000500m" }) }), reason: "AtCap", message: /maxMemory/ },
  {
    name: "the template already gives the container more memory: rollout under way",
    input: { ...input([memhog]), templateContainers: [{ name: "memhog", request: "512Mi", limit: "768Mi" }] },
    reason: "RolloutUnderWay",
    message: /768Mi, above the alerting Pod's 384Mi/,
  },
  {
    name: "the template gives the container less memory than the Pod has",
    input: { ...input([memhog]), templateContainers: [{ name: "memhog", request: "128Mi", limit: "256Mi" }] },
    reason: "TemplateDiffers",
    message: /below the alerting Pod's/,
  },
  {
    name: "the Pod lacks the container",
    input: { ...input([memhog]), podContainers: [sidecar] },
    reason: "TemplateDiffers",
    message: /no container memhog/,
  },
  {
    name: "the Pod's container has no limit but the template's has",
    input: { ...input([memhog]), podContainers: [{ name: "memhog", request: "256Mi" }] },
    reason: "TemplateDiffers",
    message: /has no memory limit but the template sets 384Mi/,
  },
  { name: "the alert's container is not in the template", input: input([memhog], { alertContainer: "ghost" }), reason: "ContainerNotFound", message: /ghost is not in the workload's Pod template/ },
  { name: "spec.containers names no container of the template", input: input([memhog], { spec: spec({ containers: ["ghost"] }) }), reason: "ContainerNotFound", message: /ghost/ },
  { name: "a template without containers", input: input([]), reason: "NoTargetContainer", message: /no containers/ },
  { name: "a request above the limit", input: input([{ name: "memhog", request: "1Gi", limit: "384Mi" }]), reason: "InvalidResources", message: /above its limit/ },
  { name: "a zero limit", input: input([{ name: "memhog", limit: "0" }]), reason: "InvalidResources", message: /non-positive/ },
  {
    name: "at the cap wins over rollout under way when both occur",
    input: {
      podContainers: [memhog, sidecar],
      templateContainers: [{ name: "memhog", request: "512Mi", limit: "768Mi" }, sidecar],
      now: NOW,
      spec: spec({ maxMemory: "64Mi" }),
    },
    reason: "AtCap",
    message: /sidecar .*maxMemory/,
  },
];

describe("decideScale: skip", () => {
  for (const c of skipCases) {
    it(c.name, () => {
      const d: Decision = decideScale(c.input);
      assert.equal(d.action, "skip", JSON.stringify(d));
      if (d.action !== "skip") return;
      assert.equal(d.reason, c.reason);
      assert.match(d.message, c.message);
    });
  }

  it("a re-sent alert after the scale finds the rollout under way, even without a cooldown", () => {
    const first = decideScale(input([memhog], { spec: spec({ cooldownSeconds: 0 }) }));
    assert.equal(first.action, "scale");
    if (first.action !== "scale") return;
    const change = first.changes[0];
    assert.ok(change);
    const again = decideScale({ ...input([memhog], { spec: spec({ cooldownSeconds: 0 }) }), templateContainers: [{ name: "memhog", ...change.to }] });
    assert.equal(again.action, "skip");
    assert.equal(again.action === "skip" && again.reason, "RolloutUnderWay");
  });

  it("a malformed quantity is reported by name", () => {
    assert.throws(() => decideScale(input([{ name: "memhog", limit: "lots" }])), /"lots"/);
  });
});

describe("decideScale: properties", () => {
  /** A byte count written in one of several equivalent Kubernetes spellings. */
  const spelled = (bytes: bigint, style: number): string => {
    switch (style) {
      case 0:
        return formatBytes(bytes);
      case 1:
        return `${bytes * 1000n}m`;
      case 2:
        return bytes % 1000n === 0n ? `${bytes / 1000n}e3` : bytes.toString();
      default:
        return bytes.toString();
    }
  };
  const world = fc.record({
    limit: fc.bigInt({ min: 1n, max: 1n << 50n }),
    requestPermille: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
    multiplierPermille: fc.integer({ min: 1001, max: 10000 }),
    cap: fc.option(fc.bigInt({ min: 0n, max: 1n << 54n }), { nil: undefined }),
    capStyle: fc.nat({ max: 3 }),
    limitStyle: fc.nat({ max: 3 }),
    requestStyle: fc.nat({ max: 3 }),
  });

  it("request ≤ limit, nothing shrinks, the cap holds, output parses back to the exact intended bytes", () => {
    fc.assert(
      fc.property(world, (w) => {
        const request = w.requestPermille === undefined ? undefined : (w.limit * BigInt(w.requestPermille)) / 1000n;
        const container: ContainerMemory = { name: "c", limit: spelled(w.limit, w.limitStyle) };
        if (request !== undefined) container.request = spelled(request, w.requestStyle);
        const s = spec({ memMultiplier: w.multiplierPermille / 1000 });
        if (w.cap !== undefined) s.maxMemory = spelled(w.cap, w.capStyle);
        const d = decideScale(input([container], { spec: s }));

        const ceilMul = (n: bigint): bigint => (n * BigInt(w.multiplierPermille) + 999n) / 1000n;
        const atCap = w.cap !== undefined && w.cap <= w.limit;
        if (atCap) {
          assert.equal(d.action, "skip");
          assert.equal(d.action === "skip" && d.reason, "AtCap");
          return;
        }
        assert.equal(d.action, "scale");
        if (d.action !== "scale") return;
        const change = d.changes[0];
        assert.ok(change);
        assert.equal(d.changes.length, 1);
        const newLimit = parseQuantity(change.to.limit);
        const wantLimit = w.cap === undefined || ceilMul(w.limit) < w.cap ? ceilMul(w.limit) : w.cap;
        assert.deepEqual(newLimit, rational(wantLimit));
        assert.equal(compare(newLimit, rational(w.limit)), 1, "the limit grows");
        if (w.cap !== undefined) assert.ok(compare(newLimit, rational(w.cap)) <= 0, "the cap holds");
        assert.doesNotMatch(change.to.limit, /m$|\./);
        if (request === undefined) {
          assert.equal(change.to.request, undefined);
        } else {
          assert.ok(change.to.request !== undefined);
          assert.doesNotMatch(change.to.request, /m$|\./);
          const newRequest = parseQuantity(change.to.request);
          const wantRequest = ceilMul(request) < wantLimit ? ceilMul(request) : wantLimit;
          assert.deepEqual(newRequest, rational(wantRequest));
          assert.ok(compare(newRequest, newLimit) <= 0, "request ≤ limit");
          assert.ok(compare(newRequest, rational(request)) >= 0, "the request never shrinks");
        }
        assert.deepEqual(parseQuantity(change.from.limit), rational(w.limit));
      }),
      { numRuns: 500 },
    );
  });

  it("a second decision on the scaled template never scales again (no compounding)", () => {
    fc.assert(
      fc.property(world, (w) => {
        const container: ContainerMemory = { name: "c", limit: spelled(w.limit, w.limitStyle) };
        const s = spec({ memMultiplier: w.multiplierPermille / 1000, cooldownSeconds: 0 });
        if (w.cap !== undefined) s.maxMemory = formatBytes(w.cap);
        const first = decideScale(input([container], { spec: s }));
        fc.pre(first.action === "scale");
        if (first.action !== "scale") return;
        const to = first.changes[0]?.to;
        assert.ok(to);
        const again = decideScale({ ...input([container], { spec: s }), templateContainers: [{ name: "c", ...to }] });
        assert.equal(again.action, "skip");
      }),
      { numRuns: 200 },
    );
  });
});
