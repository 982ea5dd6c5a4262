// The scaling decision: each rule of the memory-scaler, as a table, plus properties.
import { validateAppMonitorSpec } from "../../../../../functions/lib/appmonitor-spec.ts";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { AppMonitorSpecWithDefaults } from "../../../../../functions/lib/appmonitor.ts";
import { compare, formatBytes, parseQuantity, rational } from "../../../../../functions/lib/quantity.ts";
import type { ContainerChange, ContainerMemory } from "../../../../../functions/memory-scaler/model.ts";
import type { SkipReason } from "../../../../../functions/memory-scaler/outcome.ts";
import { cooldownLeft, type DecideInput, decideScale, type Decision } from "../../../../../functions/memory-scaler/scale/decide/decide.ts";

const NOW = new Date("2025-06-01T12:00:00Z");
const secondsAgo = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString();

function spec(over: Partial<AppMonitorSpecWithDefaults> = {}): AppMonitorSpecWithDefaults {
  return { ...validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2 }), ...over };
}

const memhog: ContainerMemory = { name: "memhog", request: "256Mi", limit: "384Mi" };
const sidecar: ContainerMemory = { name: "sidecar", request: "32Mi", limit: "64Mi" };
const unlimited: ContainerMemory = { name: "unlimited", request: "64Mi" };
/** A native sidecar: an init container with `restartPolicy: Always`. */
const proxy: ContainerMemory = { name: "proxy", request: "32Mi", limit: "64Mi", kind: "sidecar" };
/** An init container that runs to completion before the app's containers start. */
const migrate: ContainerMemory = { name: "migrate", request: "128Mi", limit: "256Mi", kind: "init" };

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
    name: "maxMemory clamps the limit and the request keeps its ratio to it: 256Mi/384Mi × 2 capped at 400Mi → 279620267 (≈ 266.7Mi) / 400Mi",
    input: input([memhog], { spec: spec({ maxMemory: "400Mi" }) }),
    // 400Mi × 256/384 = 279620266.67 bytes, rounded up to whole bytes.
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "279620267", limit: "400Mi" } }],
  },
  {
    name: "at a cap the ratio gives whole units for, the request is written in them: 256Mi/384Mi capped at 600Mi → 400Mi/600Mi",
    input: input([memhog], { spec: spec({ maxMemory: "600Mi" }) }),
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "400Mi", limit: "600Mi" } }],
  },
  {
    name: "a request equal to its limit stays equal to the capped limit",
    input: input([{ name: "memhog", request: "384Mi", limit: "384Mi" }], { spec: spec({ maxMemory: "500Mi" }) }),
    changes: [{ container: "memhog", from: { request: "384Mi", limit: "384Mi" }, to: { request: "500Mi", limit: "500Mi" } }],
  },
  {
    name: "a decimal maxMemory is rounded down to whole bytes and written in binary SI",
    input: input([memhog], { spec: spec({ maxMemory: "0.5Gi" }) }),
    // 512Mi × 2/3 = 357913941.33 → 357913942
    changes: [{ container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "357913942", limit: "512Mi" } }],
  },
  {
    name: "a container exactly at a LimitRange maxLimitRequestRatio of 1.5 stays within it",
    input: input([{ name: "memhog", request: "200000002", limit: "300000003" }], { spec: spec({ memMultiplier: 1.5 }) }),
    // limit 450000004.5 → 450000005; request from it: 450000005 × 2/3 = 300000003.33 → 300000004
    // (rounding the request on its own, 300000003, would make the ratio 1.5000000017).
    changes: [{ container: "memhog", from: { request: "200000002", limit: "300000003" }, to: { request: "300000004", limit: "450000005" } }],
  },
  {
    name: "a native sidecar the alert names is scaled like a container",
    input: input([memhog, proxy], { alertContainer: "proxy" }),
    changes: [{ container: "proxy", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } }],
  },
  {
    name: "without an alert container, containers and native sidecars, not init containers",
    input: input([memhog, migrate, proxy]),
    changes: [
      { container: "memhog", from: { request: "256Mi", limit: "384Mi" }, to: { request: "512Mi", limit: "768Mi" } },
      { container: "proxy", from: { request: "32Mi", limit: "64Mi" }, to: { request: "64Mi", limit: "128Mi" } },
    ],
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
  { name: "within the cooldown, a crossing that began before the last scale (the one it answered)", input: input([memhog], { lastScaleTime: secondsAgo(100), crossingStartedAt: secondsAgo(130) }), reason: "Cooldown", message: /200s left/ },
  { name: "within the cooldown, a crossing that began with the last scale", input: input([memhog], { lastScaleTime: secondsAgo(100), crossingStartedAt: secondsAgo(100) }), reason: "Cooldown", message: /200s left/ },
  { name: "within the cooldown, a crossing whose start does not parse", input: input([memhog], { lastScaleTime: secondsAgo(100), crossingStartedAt: "soon" }), reason: "Cooldown", message: /200s left/ },
  {
    name: "a new crossing within the cooldown on an old Pod the rollout has not reached",
    input: { ...input([memhog], { lastScaleTime: secondsAgo(100), crossingStartedAt: secondsAgo(20) }), templateContainers: [{ name: "memhog", request: "512Mi", limit: "768Mi" }] },
    reason: "RolloutUnderWay",
    message: /768Mi, above the alerting Pod's 384Mi/,
  },
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
  {
    name: "the alert names an init container",
    input: input([memhog, migrate], { alertContainer: "migrate" }),
    reason: "InitContainer",
    message: /container migrate is an init container, not a native sidecar: init containers run to completion before the app's containers start/,
  },
  { name: "spec.containers names an init container", input: input([memhog, migrate], { spec: spec({ containers: ["migrate"] }) }), reason: "InitContainer", message: /only containers and native sidecars/ },
  {
    name: "a limit only a LimitRange default gave the Pod",
    input: { ...input([{ name: "memhog" }]), podContainers: [{ name: "memhog", request: "384Mi", limit: "384Mi" }] },
    reason: "LimitNotInTemplate",
    message: /container memhog's memory limit 384Mi is not in the workload's Pod template \(a LimitRange default .*\); set the limit in the Pod template to let appmonitor scale it/,
  },
  {
    name: "a limit not in the template outranks rollout under way",
    input: {
      podContainers: [memhog, { name: "defaulted", limit: "128Mi", request: "64Mi" }],
      templateContainers: [{ name: "memhog", request: "512Mi", limit: "768Mi" }, { name: "defaulted" }],
      now: NOW,
      spec: spec(),
    },
    reason: "LimitNotInTemplate",
    message: /defaulted's memory limit 128Mi/,
  },
  {
    name: "the Pod runs the container as another kind than the template",
    input: { ...input([proxy]), podContainers: [{ ...proxy, kind: "container" }] },
    reason: "TemplateDiffers",
    message: /runs proxy as a container, the template as a sidecar/,
  },
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

  it("a crossing that began after the last scale is a new one: the cooldown does not hold it, and the decision says why", () => {
    const raised: ContainerMemory = { name: "memhog", request: "512Mi", limit: "768Mi" };
    const d = decideScale(input([raised], { lastScaleTime: secondsAgo(100), crossingStartedAt: secondsAgo(10) }));
    assert.equal(d.action, "scale", JSON.stringify(d));
    if (d.action !== "scale") return;
    assert.deepEqual(d.changes, [{ container: "memhog", from: { request: "512Mi", limit: "768Mi" }, to: { request: "1Gi", limit: "1536Mi" } }]);
    assert.equal(d.newCrossing, `a new crossing: its alert began at ${secondsAgo(10)}, after the last scale at ${secondsAgo(100)}, so the cooldown of 300s (200s left) does not hold it`);
  });

  it("outside the cooldown a scale carries no new-crossing note", () => {
    const d = decideScale(input([memhog], { lastScaleTime: secondsAgo(400), crossingStartedAt: secondsAgo(10) }));
    assert.equal(d.action === "scale" && d.newCrossing, undefined);
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

  it("request ≤ limit, the ratio does not grow, nothing shrinks, the cap holds, output parses back to the exact intended bytes", () => {
    fc.assert(
      fc.property(world, (w) => {
        const request = w.requestPermille === undefined ? undefined : (w.limit * BigInt(w.requestPermille)) / 1000n;
        const container: ContainerMemory = { name: "c", limit: spelled(w.limit, w.limitStyle) };
        if (request !== undefined) container.request = spelled(request, w.requestStyle);
        const s = spec({ memMultiplier: w.multiplierPermille / 1000 });
        if (w.cap !== undefined) s.maxMemory = spelled(w.cap, w.capStyle);
        const d = decideScale(input([container], { spec: s }));

        const ceilMul = (n: bigint): bigint => (n * BigInt(w.multiplierPermille) + 999n) / 1000n;
        // No maxMemory: the install's default caps (caps.ts DEFAULT_MAX_MEMORY, 8Gi).
        const cap = w.cap ?? 8n * 1024n ** 3n;
        const atCap = cap <= w.limit;
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
        const wantLimit = ceilMul(w.limit) < cap ? ceilMul(w.limit) : cap;
        // ⌈n / d⌉ for positive d.
        const ceilDiv = (n: bigint, d: bigint): bigint => (n + d - 1n) / d;
        assert.deepEqual(newLimit, rational(wantLimit));
        assert.equal(compare(newLimit, rational(w.limit)), 1, "the limit grows");
        assert.ok(compare(newLimit, rational(cap)) <= 0, "the cap holds");
        assert.doesNotMatch(change.to.limit, /m$|\./);
        if (request === undefined) {
          assert.equal(change.to.request, undefined);
        } else {
          assert.ok(change.to.request !== undefined);
          assert.doesNotMatch(change.to.request, /m$|\./);
          const newRequest = parseQuantity(change.to.request);
          const wantRequest = ceilDiv(wantLimit * request, w.limit);
          assert.deepEqual(newRequest, rational(wantRequest));
          assert.ok(compare(newRequest, newLimit) <= 0, "request ≤ limit");
          assert.ok(compare(newRequest, rational(request)) >= 0, "the request never shrinks");
          // limit/request never above the template's, so a LimitRange maxLimitRequestRatio it met still holds.
          assert.ok(wantLimit * request <= w.limit * wantRequest, "the limit/request ratio does not grow");
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

describe("cooldownLeft", () => {
  const now = new Date("2026-12-02T06:00:00Z");
  const cases: [string | undefined, number, number][] = [
    [undefined, 300, 0],
    ["2026-12-02T05:58:00Z", 300, 180],
    ["2026-12-02T05:58:00.500Z", 300, 181],
    ["2026-12-02T05:55:00Z", 300, 0],
    ["2026-12-02T05:59:00Z", 0, 0],
    ["not a time", 300, 0],
    ["2026-12-02T06:01:00Z", 300, 360],
  ];
  for (const [last, cooldown, left] of cases) {
    it(`${String(last)} with ${cooldown}s → ${left}s`, () => assert.equal(cooldownLeft(last, cooldown, now), left));
  }
});
