/**
 * The workloads an AppMonitor can raise no further (CRD fields, DESIGN.md "The API", Status):
 * `status.capped` lists each workload whose alert was skipped `AtCap` (its memory limit already at
 * its cap, `caps.ts`: a container policy's `maxMemory`, `spec.maxMemory`, the install's
 * `DEFAULT_MAX_MEMORY`, or the install's ceiling `MAX_MEMORY`), with that cap and where it comes from, and the condition `AtMaxMemory` says whether any is listed, so
 * `kubectl get appmonitors` and `kubectl describe` show it without reading Events. A workload
 * leaves the list when it is scaled again, and every workload listed at another cap leaves it on
 * the next follow-up tick once its cap is changed (`follow-up/flow.ts`). Pure: the status
 * writer applies these to the object it read, and writes nothing when they return it unchanged,
 * so a workload that keeps alerting at the cap costs no status write after the first.
 */
import { withCondition, type AppMonitorCondition, type AppMonitorStatus } from "../../lib/appmonitor.ts";

/** `type` of the AppMonitor condition about workloads at `spec.maxMemory`. */
export const CAPPED_CONDITION = "AtMaxMemory";

/** Workloads kept in `status.capped`; the oldest is forgotten beyond this (the CRD's `maxItems`). */
export const MAX_CAPPED = 50;

/** One workload at `spec.maxMemory`, as listed in `status.capped`. */
export interface CappedWorkload {
  readonly workload: { readonly kind: string; readonly name: string };
  /** The containers whose memory limit is at the cap, sorted. */
  readonly containers: readonly string[];
  /** The cap it was seen at (a quantity, e.g. `1Gi`). */
  readonly maxMemory: string;
  /** Where the cap comes from (`caps.ts`); absent in entries of older versions. */
  readonly source?: "containerPolicy" | "spec" | "default" | "ceiling";
  /** RFC 3339: the first `AtCap` skip at this cap. */
  readonly since: string;
}

type WithCapped = AppMonitorStatus & { capped?: CappedWorkload[] };

/** How the condition's message names a cap's source. */
const SOURCE_NAMES = { containerPolicy: "spec.containerPolicies", spec: "spec.maxMemory", default: "the install's DEFAULT_MAX_MEMORY", ceiling: "the install's ceiling MAX_MEMORY" } as const;

const sameWorkload = (a: CappedWorkload["workload"], b: CappedWorkload["workload"]): boolean => a.kind === b.kind && a.name === b.name;

/** The workloads listed in `status.capped` (none when absent or not a list). */
export function cappedWorkloads(status: unknown): CappedWorkload[] {
  const capped = (status as WithCapped | undefined)?.capped;
  return Array.isArray(capped) ? capped : [];
}

function conditionOf(capped: readonly CappedWorkload[]): Omit<AppMonitorCondition, "lastTransitionTime"> {
  if (capped.length === 0) return { type: CAPPED_CONDITION, status: "False", reason: "BelowMaxMemory", message: "no workload is at its memory cap" };
  const named = capped.map((c) => `${c.workload.kind} ${c.workload.name} (${c.containers.join(", ")} at ${c.maxMemory}${c.source === undefined ? "" : `, ${SOURCE_NAMES[c.source]}`})`).join("; ");
  return { type: CAPPED_CONDITION, status: "True", reason: "AtCap", message: `at the memory cap, not scaled further: ${named}` };
}

function withList(status: WithCapped, capped: CappedWorkload[], now: string): WithCapped {
  const rest = withCondition(status, conditionOf(capped), now);
  if (capped.length > 0) return { ...rest, capped };
  delete rest.capped;
  return rest;
}

/**
 * `status` with `entry` listed and the condition `True`/`AtCap`. Returns `status` itself when the
 * workload is already listed with the same containers and cap (its `since` is kept), so nothing
 * is written.
 */
export function withCapped(status: AppMonitorStatus | undefined, entry: CappedWorkload, now: string): AppMonitorStatus | undefined {
  const current: WithCapped = status ?? {};
  const listed = cappedWorkloads(current);
  const old = listed.find((c) => sameWorkload(c.workload, entry.workload));
  if (old !== undefined && old.maxMemory === entry.maxMemory && old.containers.join("\n") === entry.containers.join("\n")) return status;
  const capped = [...listed.filter((c) => !sameWorkload(c.workload, entry.workload)), entry].slice(-MAX_CAPPED);
  return withList(current, capped, now);
}

/**
 * `status` without `workload` in `status.capped` (it was scaled, so it is below the cap), the
 * condition `False`/`BelowMaxMemory` once none is left. Returns `status` itself when the workload
 * was not listed.
 */
export function withoutCapped(status: AppMonitorStatus | undefined, workload: CappedWorkload["workload"], now: string): AppMonitorStatus | undefined {
  const listed = cappedWorkloads(status);
  if (status === undefined || !listed.some((c) => sameWorkload(c.workload, workload))) return status;
  return withList(status, listed.filter((c) => !sameWorkload(c.workload, workload)), now);
}

/**
 * `status` without the workloads listed at a cap other than their containers' caps now
 * (`capOf`: the cap of a container, `caps.ts`): the spec changed since, so they may be
 * raised again, and an alert at the new cap lists them anew. Returns `status` itself when none is
 * dropped.
 */
export function withCapsOf(status: AppMonitorStatus | undefined, capOf: (container: string) => string, now: string): AppMonitorStatus | undefined {
  const listed = cappedWorkloads(status);
  const kept = listed.filter((c) => c.containers.every((container) => capOf(container) === c.maxMemory));
  if (status === undefined || kept.length === listed.length) return status;
  return withList(status, kept, now);
}
