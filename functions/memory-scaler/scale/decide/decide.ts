// The scaling decision, from plain data: which containers get how much memory, or why none do.
import type { AppMonitorSpecWithDefaults, MemoryResources } from "../../../lib/appmonitor.ts";
import { ceil, compare, divide, formatBytes, fromInteger, fromNumber, multiply, parseQuantity, type Quantity } from "../../../lib/quantity.ts";
import { type ContainerChange, type ContainerMemory, kindOf, type SkippedContainer } from "../../model.ts";
import type { ScaleBound, SkipReason } from "../../outcome.ts";
import { capOf, describeCap, policyOf } from "../../caps.ts";
import { describeHeld, heldClause, type HeldCeiling } from "../../ceilings.ts";

/** Everything {@link decideScale} looks at; read by the caller from the API server and the event. */
export interface DecideInput {
  /** The alerting Pod's `spec.containers` and `spec.initContainers` (what the alert measured against). */
  podContainers: readonly ContainerMemory[];
  /**
   * The workload's current `spec.template.spec.containers`, then its `initContainers`, each in
   * template order, with their {@link ContainerKind}.
   */
  templateContainers: readonly ContainerMemory[];
  /** The workload's `app-monitor.kubedemo.com/last-scale` annotation (RFC 3339), if any. */
  lastScaleTime?: string;
  /** The current time. */
  now: Date;
  /**
   * When the alert began (its `startsAt`, RFC 3339), given only for a trigger whose alert is a
   * crossing of the Pod's limit that Prometheus confirms now (`../triggers/trigger.ts`
   * `crossesLimit`). One that began after `lastScaleTime` is a new crossing, of the limit the last
   * scale raised: the cooldown does not hold it (rule 1).
   */
  crossingStartedAt?: string;
  /** The governing AppMonitor's spec, defaults applied. */
  spec: AppMonitorSpecWithDefaults;
  /** The alert's `container` label, if the alert names one. */
  alertContainer?: string;
  /** The install's cap, a quantity (`DEFAULT_MAX_MEMORY`, `caps.ts`); absent: `../caps.ts` `DEFAULT_MAX_MEMORY`. */
  defaultMaxMemory?: string;
  /** The install's ceiling `MAX_MEMORY`, a quantity (`../../ceilings.ts`); absent: none. */
  maxMemoryCeiling?: string;
  /** The install's ceilings that held over `spec` (`bound-spec.ts`: `spec` is already bounded), for the messages. */
  held?: readonly HeldCeiling[];
}

/** Nothing to patch. `skipped` lists the per-container reasons (empty for `Cooldown`). */
export interface SkipDecision {
  action: "skip";
  reason: SkipReason;
  message: string;
  skipped: SkippedContainer<SkipReason>[];
}

/** Patch these containers (or, when `dryRun`, only report them). `skipped` lists any others considered; `bounds` the caps and ceilings that held. */
export interface ScaleDecision {
  action: "scale";
  dryRun: boolean;
  changes: ContainerChange[];
  skipped: SkippedContainer<SkipReason>[];
  bounds?: ScaleBound[];
  /** Why the cooldown did not hold this raise (rule 1: a new crossing of the raised limit); absent: no cooldown ran. */
  newCrossing?: string;
}

/** The result of {@link decideScale}. */
export type Decision = SkipDecision | ScaleDecision;

/** When every container is skipped, the decision reports the first of these found (the most actionable). */
const REASON_PRIORITY: readonly SkipReason[] = [
  "AtCap",
  "PolicyOff",
  "LimitNotInTemplate",
  "RolloutUnderWay",
  "TemplateDiffers",
  "NoMemoryLimit",
  "InvalidResources",
  "InitContainer",
  "ContainerNotFound",
  "ContainerNotSelected",
  "NoTargetContainer",
];

/**
 * Names of the containers to consider: the alert's, else `spec.containers`, else all the
 * template's containers and native sidecars (init containers that run to completion are left out).
 */
function targetNames(input: DecideInput): string[] | SkippedContainer<SkipReason> {
  const { alertContainer, spec, templateContainers } = input;
  if (alertContainer !== undefined) {
    if (spec.containers !== undefined && !spec.containers.includes(alertContainer)) {
      return { container: alertContainer, reason: "ContainerNotSelected", message: `container ${alertContainer} is not in spec.containers [${spec.containers.join(", ")}]` };
    }
    return [alertContainer];
  }
  // Deduplicated: a name listed twice must not yield two patches of one container.
  return [...new Set(spec.containers ?? templateContainers.filter((c) => kindOf(c) !== "init").map((c) => c.name))];
}

/** Decides one container; `multiplier` comes from the spec, its cap from `caps.ts`; `bound`: the cap held its raise. */
function decideContainer(input: DecideInput, name: string, multiplier: Quantity): { change: ContainerChange; bound?: ScaleBound } | SkippedContainer<SkipReason> {
  const skip = (reason: SkipReason, message: string): SkippedContainer<SkipReason> => ({ container: name, reason, message });
  if (policyOf(input.spec, name)?.mode === "Off") return skip("PolicyOff", `container ${name} has mode Off in spec.containerPolicies: its memory is never changed`);
  const tmpl = input.templateContainers.find((c) => c.name === name);
  if (tmpl === undefined) return skip("ContainerNotFound", `container ${name} is not in the workload's Pod template`);
  const kind = kindOf(tmpl);
  if (kind === "init") {
    return skip(
      "InitContainer",
      `container ${name} is an init container, not a native sidecar: init containers run to completion before the app's containers start, so only containers and native sidecars (init containers with restartPolicy: Always) are scaled`,
    );
  }
  const pod = input.podContainers.find((c) => c.name === name);
  if (tmpl.limit === undefined) {
    if (pod?.limit !== undefined) {
      return skip(
        "LimitNotInTemplate",
        `container ${name}'s memory limit ${pod.limit} is not in the workload's Pod template (a LimitRange default or an admission webhook set it on the Pod); set the limit in the Pod template to let appmonitor scale it`,
      );
    }
    return skip("NoMemoryLimit", `container ${name} has no memory limit`);
  }
  if (pod === undefined) return skip("TemplateDiffers", `the alerting Pod has no container ${name}; it does not run the current template`);
  if (kindOf(pod) !== kind) return skip("TemplateDiffers", `the alerting Pod runs ${name} as a ${kindOf(pod)}, the template as a ${kind}; it does not run the current template`);
  if (pod.limit === undefined) return skip("TemplateDiffers", `the alerting Pod's container ${name} has no memory limit but the template sets ${tmpl.limit}`);

  const limit = parseQuantity(tmpl.limit);
  const podLimit = parseQuantity(pod.limit);
  const order = compare(limit, podLimit);
  if (order > 0) return skip("RolloutUnderWay", `the template already gives container ${name} a memory limit of ${tmpl.limit}, above the alerting Pod's ${pod.limit}`);
  if (order < 0) return skip("TemplateDiffers", `the template's memory limit ${tmpl.limit} for container ${name} is below the alerting Pod's ${pod.limit}`);
  if (limit.numerator <= 0n) return skip("InvalidResources", `container ${name} has a non-positive memory limit ${tmpl.limit}`);
  const request = tmpl.request === undefined ? undefined : parseQuantity(tmpl.request);
  if (request !== undefined && compare(request, limit) > 0) {
    return skip("InvalidResources", `container ${name} requests ${tmpl.request} memory, above its limit ${tmpl.limit}`);
  }

  // Whole bytes: the raised limit rounds up so it never falls short of limit × multiplier, the
  // cap rounds down so the limit never passes maxMemory.
  let newLimit = ceil(multiply(limit, multiplier));
  const cap = capOf(input.spec, name, input.defaultMaxMemory, input.maxMemoryCeiling);
  if (compare(limit, fromInteger(cap.bytes)) >= 0) {
    return { ...skip("AtCap", `container ${name} memory limit ${tmpl.limit} is already at ${describeCap(cap)}`), cap: { maxMemory: cap.maxMemory, source: cap.source } };
  }
  const capped = newLimit > cap.bytes;
  if (capped) newLimit = cap.bytes;
  const to: MemoryResources = { limit: formatBytes(newLimit) };
  if (request !== undefined) {
    // The template's request/limit ratio, applied to the limit as rounded and capped, rounded
    // up: limit/request never grows (a LimitRange maxLimitRequestRatio the template meets still
    // holds), the request never passes the limit, and at the cap it is not raised to the whole
    // limit but by the same factor as the limit.
    to.request = formatBytes(ceil(multiply(fromInteger(newLimit), divide(request, limit))));
  }
  const from: MemoryResources = { limit: tmpl.limit };
  if (tmpl.request !== undefined) from.request = tmpl.request;
  const change = { container: name, from, to };
  return capped ? { change, bound: { container: name, message: `${name} capped by ${describeCap(cap)}` } } : { change };
}

/**
 * Whole seconds (rounded up) of `cooldownSeconds` left at `now` since `lastScaleTime` (RFC 3339),
 * 0 when none: no last scale, an unparseable timestamp, a cooldown of 0, or the time passed. A
 * future timestamp counts as recent (rule 1 of {@link decideScale}).
 */
export function cooldownLeft(lastScaleTime: string | undefined, cooldownSeconds: number, now: Date): number {
  if (lastScaleTime === undefined || cooldownSeconds <= 0) return 0;
  const last = Date.parse(lastScaleTime);
  const elapsedMs = now.getTime() - last;
  if (Number.isNaN(last) || elapsedMs >= cooldownSeconds * 1000) return 0;
  return Math.ceil((cooldownSeconds * 1000 - elapsedMs) / 1000);
}

/** Whether the RFC 3339 time `startsAt` is after `lastScaleTime`; false when either is absent or unparseable. */
function startedAfter(startsAt: string | undefined, lastScaleTime: string | undefined): boolean {
  const started = Date.parse(startsAt ?? "");
  const last = Date.parse(lastScaleTime ?? "");
  return !Number.isNaN(started) && !Number.isNaN(last) && started > last;
}

/**
 * Decides whether and how to raise a workload's memory after a memory-threshold alert. Pure: no
 * I/O, no clock (pass `now`). `spec` comes bounded by the install's ceilings (`bound-spec.ts`),
 * `held` says which held, and `MAX_MEMORY` enters each cap. Rules (DESIGN.md "Decisions that
 * matter for correctness" and the AppMonitor fields in "The API"), in order:
 *
 * 1. within `spec.cooldownSeconds` of `lastScaleTime` → skip `Cooldown` (an unparseable
 *    timestamp is ignored; a future one counts as recent when the cooldown is above 0), unless
 *    `crossingStartedAt` is after `lastScaleTime`: that alert's crossing began at the raised
 *    limit, so it is a new one, not the one the last scale answered (rule 3 still holds an old
 *    Pod a rollout has not reached, and the trigger's check confirms the crossing against the
 *    Pod's limit now; the leak guard bounds how often it can happen);
 * 2. containers considered: the alert's container (`ContainerNotSelected` if `spec.containers`
 *    excludes it), else those in `spec.containers`, else every container and native sidecar
 *    of the template;
 * 3. per container, from the template's values: an init container that is not a native sidecar
 *    → `InitContainer`; no memory limit in the template → `LimitNotInTemplate` when the Pod has
 *    one, else `NoMemoryLimit`; template limit above the Pod's → `RolloutUnderWay` (this makes
 *    re-sent alerts harmless); below it, or the Pod lacks the container, its limit, or runs it
 *    as another kind → `TemplateDiffers`; `mode: Off` in its `spec.containerPolicies` entry →
 *    `PolicyOff`; limit at or above its cap (`caps.ts` `capOf`: its policy's `maxMemory`, else
 *    `spec.maxMemory`, else the install's `DEFAULT_MAX_MEMORY`; the ceiling `MAX_MEMORY` when
 *    lower) → `AtCap`;
 * 4. new limit = limit × memMultiplier rounded up to whole bytes, clamped to the cap rounded down
 *    (`bounds` names the cap, and a multiplier a ceiling held); new request = new limit × (request / limit) rounded up to whole bytes: the
 *    template's ratio is kept (at the cap too, e.g. 256Mi/384Mi × 2 capped at 400Mi →
 *    279620267 bytes ≈ 266.7Mi / 400Mi), the rounding can only lower limit/request (so a
 *    LimitRange `maxLimitRequestRatio` the template meets holds), and request ≤ limit. Both are
 *    exact and formatted in binary SI (`576Mi`) when a unit divides them, else in bytes; never
 *    with `m`. Nothing shrinks.
 *
 * With at least one change the result is `{action: "scale", dryRun: spec.mode === "DryRun"}`;
 * otherwise `{action: "skip"}` with the most actionable per-container reason (`AtCap`, then
 * `LimitNotInTemplate`, first).
 * Quantities: https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
 * @throws {QuantityError} when a memory value or a cap is not a valid quantity (the API server,
 *   spec validation and the configuration rule that out).
 */
export function decideScale(input: DecideInput): Decision {
  const { spec, now } = input;
  const remaining = cooldownLeft(input.lastScaleTime, spec.cooldownSeconds, now);
  const held = heldClause(input.held, "spec.cooldownSeconds");
  const crossed = remaining > 0 && startedAfter(input.crossingStartedAt, input.lastScaleTime);
  if (remaining > 0 && !crossed) {
    return { action: "skip", reason: "Cooldown", message: `last scaled at ${input.lastScaleTime ?? ""}; cooldown of ${spec.cooldownSeconds}s${held} has ${remaining}s left`, skipped: [] };
  }
  const newCrossing = crossed ? { newCrossing: `a new crossing: its alert began at ${input.crossingStartedAt ?? ""}, after the last scale at ${input.lastScaleTime ?? ""}, so the cooldown of ${spec.cooldownSeconds}s${held} (${remaining}s left) does not hold it` } : {};

  const names = targetNames(input);
  if (!Array.isArray(names)) return { action: "skip", reason: names.reason, message: names.message, skipped: [names] };
  if (names.length === 0) return { action: "skip", reason: "NoTargetContainer", message: "the workload's Pod template has no containers", skipped: [] };

  const multiplier = fromNumber(spec.memMultiplier);
  const changes: ContainerChange[] = [];
  const skipped: SkippedContainer<SkipReason>[] = [];
  const multiplierHeld = input.held?.find((h) => h.field === "spec.memMultiplier");
  const bounds: ScaleBound[] = multiplierHeld === undefined ? [] : [{ message: `the multiplier is ${describeHeld(multiplierHeld)}` }];
  for (const name of names) {
    const result = decideContainer(input, name, multiplier);
    if ("reason" in result) skipped.push(result);
    else {
      changes.push(result.change);
      if (result.bound !== undefined) bounds.push(result.bound);
    }
  }
  if (changes.length > 0) return { action: "scale", dryRun: spec.mode === "DryRun", changes, skipped, ...(bounds.length === 0 ? {} : { bounds }), ...newCrossing };

  const first = REASON_PRIORITY.map((r) => skipped.find((s) => s.reason === r)).find((s) => s !== undefined);
  const reason = first?.reason ?? "NoTargetContainer";
  const message = skipped.length === 1 && first !== undefined ? first.message : skipped.map((s) => s.message).join("; ");
  return { action: "skip", reason, message, skipped };
}
