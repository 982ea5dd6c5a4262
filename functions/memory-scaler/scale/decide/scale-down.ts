/**
 * The down-step of `spec.scaleDown` (docs/scale-down.md), pure: which containers of a workload
 * memory-scaler raised get how much less memory, or why none do; whether the working set's peak
 * over the quiet period leaves room for it; and the fields a last-scale record carries for the next
 * step (the memory before the first scale, the flaps: `../targets/scale-record.ts`). The scale flow (`flow.ts`)
 * runs a down-step as any scale: this module is its plan and its evidence, the write targets write it.
 *
 * The step of a container the last scale changed ({@link planScaleDown}):
 * - after a raise: back to the raise's `from` (the memory before it); after a down-step: the
 *   memory ÷ the record's multiplier, rounded up (the raise before, when the multiplier did not
 *   change);
 * - never below its floor: the memory it had before memory-scaler's first scale (the record's
 *   `original`; a record of an older version has none, and its `from` is the best known) nor its
 *   `spec.containerPolicies` `minMemory`;
 * - the request keeps its ratio to the limit: new request = new limit × request / limit, rounded
 *   up to whole bytes, as a raise rounds it.
 * The evidence ({@link checkPeak}): the new limit must hold the peak at most
 * `memThresholdPercent − marginPercent` percent of it; a container for which it does not is not
 * stepped (`PeakNearThreshold`), nor one with no sample (`NotMeasured`).
 */
import type { AppMonitorSpecWithDefaults, AppMonitorStatus, MemoryResources } from "../../../lib/appmonitor.ts";
import { ceil, compare, divide, formatBytes, fromInteger, fromNumber, multiply, parseQuantity, sameQuantity } from "../../../lib/quantity.ts";
import { policyOf } from "../../caps.ts";
import type { ContainerChange, ContainerMemory, ScaleRecordAnnotation, SkippedContainer } from "../../model.ts";
import type { Scale, Skip } from "../../outcome.ts";
import { scaleDownDue } from "../../status/scale-down.ts";
import { cooldownLeft } from "./decide.ts";

/**
 * Whether two memories are the same quantities (`sameQuantity` of each limit and request): one absent on one side must be absent on the other.
 * @throws {QuantityError} when a value is not a valid quantity.
 */
export function sameMemory(a: MemoryResources, b: { readonly limit?: string | undefined; readonly request?: string | undefined }): boolean {
  return sameQuantity(a.limit, b.limit) && sameQuantity(a.request, b.request);
}

/** What {@link planScaleDown} decides from: plain data the flow read. */
export interface ScaleDownInput {
  readonly spec: AppMonitorSpecWithDefaults;
  /** The AppMonitor's name: the last-scale record must be its. */
  readonly appmonitor: string;
  /** The AppMonitor's status as read (its `recentScales`, `lastOutcome`, `rollouts`). */
  readonly status: AppMonitorStatus | undefined;
  readonly workload: { readonly kind: string; readonly name: string };
  /** The workload's last-scale record, parsed; undefined when it has none or it does not parse. */
  readonly record: ScaleRecordAnnotation | undefined;
  /** The workload's last-scale annotation, RFC 3339: the record must be of this scale. */
  readonly lastScaleTime: string | undefined;
  /** The workload's memory (the write target's `desired`). */
  readonly desired: readonly ContainerMemory[];
  /** What its Pod runs (the write target's `running`). */
  readonly running: readonly ContainerMemory[];
  readonly now: Date;
}

/** Whole bytes of a quantity, rounded up. */
const bytesOf = (text: string): bigint => ceil(parseQuantity(text));

/** The floor of `container`: the larger of its memory before the first scale and its `minMemory`; undefined when neither is known. */
function floorOf(spec: AppMonitorSpecWithDefaults, container: string, original: MemoryResources | undefined): bigint | undefined {
  const min = policyOf(spec, container)?.minMemory;
  const bounds = [original?.limit, min].filter((v): v is string => v !== undefined).map(bytesOf);
  return bounds.length === 0 ? undefined : bounds.reduce((a, b) => (a > b ? a : b));
}

/** One container's step, or why it has none. */
function stepOf(input: ScaleDownInput, record: ScaleRecordAnnotation, last: ContainerChange): (ContainerChange & { floored: boolean }) | SkippedContainer {
  const name = last.container;
  const skip = (reason: string, message: string): SkippedContainer => ({ container: name, reason, message });
  const policy = policyOf(input.spec, name);
  if (policy?.mode === "Off") return skip("PolicyOff", `container ${name} has mode Off in spec.containerPolicies: its memory is never changed`);
  const current = input.desired.find((c) => c.name === name);
  if (current?.limit === undefined) return skip("ContainerNotFound", `container ${name} has no memory limit in the workload's Pod template`);
  if (!sameMemory(last.to, current)) return skip("TemplateDiffers", `container ${name}'s memory (limit ${current.limit}) is not what the last scale set (limit ${last.to.limit}): another writer changed it`);
  const pod = input.running.find((c) => c.name === name);
  if (pod === undefined || !sameMemory(last.to, pod)) return skip("RolloutUnderWay", `the workload's Pod does not run container ${name} with the memory the last scale set (limit ${last.to.limit}) yet`);
  const limit = parseQuantity(current.limit);
  const down = record.direction === "down";
  // After a raise, its `from`; after a down-step, the raise before (÷ its multiplier).
  const step = down ? ceil(divide(limit, fromNumber(record.multiplier))) : bytesOf(last.from.limit);
  const original = record.original?.[name] ?? (down ? undefined : last.from);
  const floor = floorOf(input.spec, name, original);
  const newLimit = floor !== undefined && floor > step ? floor : step;
  if (compare(fromInteger(newLimit), limit) >= 0) {
    return skip("AtFloor", `container ${name}'s limit ${current.limit} is at its floor (${original === undefined ? "" : `${original.limit} before the first scale`}${policy?.minMemory === undefined ? "" : `, minMemory ${policy.minMemory}`})`);
  }
  const to: MemoryResources = { limit: formatBytes(newLimit) };
  if (current.request !== undefined) to.request = formatBytes(ceil(multiply(fromInteger(newLimit), divide(parseQuantity(current.request), limit))));
  const from: MemoryResources = current.request === undefined ? { limit: current.limit } : { limit: current.limit, request: current.request };
  return { container: name, from, to, floored: floor !== undefined && newLimit === floor };
}

/** The first reason of `skipped` in this order, the most telling first. */
const REASONS = ["RolloutUnderWay", "TemplateDiffers", "PolicyOff", "AtFloor", "ContainerNotFound"];

/**
 * The down-step of a workload (module comment), or why none: `ScaleDownOff` (no `spec.scaleDown`),
 * `NotRaised` (no last-scale record of this AppMonitor, or not the last scale's), `QuietPeriod`
 * (within `spec.cooldownSeconds` of the last scale too), `AtFloor` and `RolloutUnderWay` (`../status/scale-down.ts` `scaleDownDue`, with the
 * record's flaps), then per container as {@link stepOf} says. The scale's `dryRun` is
 * `spec.mode === "DryRun"`; `floored` when every container stepped reaches its floor.
 * @throws {QuantityError} when a memory value is not a valid quantity (the API server rules that out).
 */
export function planScaleDown(input: ScaleDownInput): Skip | Scale {
  const { spec, record, workload, now } = input;
  const name = `${workload.kind} ${workload.name}`;
  if (spec.scaleDown === undefined) return { action: "skip", reason: "ScaleDownOff", message: "the AppMonitor sets no spec.scaleDown" };
  if (record === undefined || record.appmonitor !== input.appmonitor || input.lastScaleTime === undefined || Date.parse(record.time) !== Date.parse(input.lastScaleTime)) {
    return { action: "skip", reason: "NotRaised", message: `${name} carries no last-scale record of AppMonitor ${input.appmonitor} for its last scale` };
  }
  const left = cooldownLeft(input.lastScaleTime, spec.cooldownSeconds, now);
  // Said as the quiet period (no Cooldown Events: no alert asked for this).
  if (left > 0) return { action: "skip", reason: "QuietPeriod", message: `last scaled at ${input.lastScaleTime}; cooldown of ${spec.cooldownSeconds}s has ${left}s left` };
  const due = scaleDownDue(input.status, workload, spec.scaleDown, record.flaps ?? 0, now);
  if (!due.due) return { action: "skip", reason: due.reason, message: due.message };
  const changes: ContainerChange[] = [];
  const skipped: SkippedContainer[] = [];
  let floored = true;
  for (const last of record.changes) {
    const step = stepOf(input, record, last);
    if ("reason" in step) skipped.push(step);
    else {
      changes.push({ container: step.container, from: step.from, to: step.to });
      floored &&= step.floored;
    }
  }
  if (changes.length === 0) {
    const first = REASONS.map((r) => skipped.find((s) => s.reason === r)).find((s) => s !== undefined) ?? skipped[0];
    return { action: "skip", reason: (first?.reason ?? "AtFloor") as Skip["reason"], message: skipped.map((s) => s.message).join("; "), skipped };
  }
  return { action: "scale", direction: "down", changes, skipped, dryRun: spec.mode === "DryRun", floored };
}

/**
 * The down-step's evidence: each change kept only when its new limit holds the container's peak
 * (bytes, `peaks`: Prometheus' `max_over_time` of its working set over the quiet period) at most
 * `thresholdPercent − marginPercent` percent of it. Others are left out as `PeakNearThreshold`
 * (with the percent) or `NotMeasured` (no sample); none left: the skip, `PeakNearThreshold` first.
 */
export function checkPeak(scale: Scale, peaks: ReadonlyMap<string, number>, thresholdPercent: number, marginPercent: number): Skip | Scale {
  const ceiling = thresholdPercent - marginPercent;
  const kept: ContainerChange[] = [];
  const skipped: SkippedContainer[] = [];
  for (const change of scale.changes) {
    const peak = peaks.get(change.container);
    if (peak === undefined) {
      skipped.push({ container: change.container, reason: "NotMeasured", message: `Prometheus has no working set of container ${change.container} over the quiet period` });
      continue;
    }
    const percent = (100 * peak) / Number(bytesOf(change.to.limit));
    if (percent > ceiling) {
      skipped.push({
        container: change.container,
        reason: "PeakNearThreshold",
        percent: Math.round(percent * 10) / 10,
        message: `container ${change.container}'s peak working set ${Math.round(peak)} bytes would be ${Math.round(percent * 10) / 10}% of the lower limit ${change.to.limit}, above ${ceiling}% (memThresholdPercent ${thresholdPercent} − scaleDown.marginPercent ${marginPercent}): not lowered`,
      });
      continue;
    }
    kept.push(change);
  }
  if (kept.length === 0) {
    const reason = skipped.some((s) => s.reason === "PeakNearThreshold") ? "PeakNearThreshold" : "NotMeasured";
    return { action: "skip", reason, message: skipped.map((s) => s.message).join("; "), skipped: [...scale.skipped, ...skipped] };
  }
  return { ...scale, changes: kept, skipped: [...scale.skipped, ...skipped], floored: scale.floored === true && kept.length === scale.changes.length };
}
