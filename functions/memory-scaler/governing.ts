/**
 * Which AppMonitor governs a Pod, from the AppMonitors the API server lists in its namespace.
 * Pure: the list is read by the caller.
 */
import {
  AppMonitorSpecError,
  chooseGoverning,
  validateAppMonitorSpec,
  type AppMonitorSpecWithDefaults,
  type ObjectMetaLike,
  type PodLike,
} from "../lib/appmonitor.ts";

/** An AppMonitor whose spec passed validation, defaults applied. */
export interface ValidAppMonitor {
  readonly metadata: ObjectMetaLike & { name: string; namespace: string };
  readonly spec: AppMonitorSpecWithDefaults;
  /** The object as listed, unchanged (what a status write starts from). */
  readonly raw: Record<string, unknown>;
}

/** An AppMonitor left out because its spec is invalid, and why. */
export interface RejectedAppMonitor {
  readonly name: string;
  readonly problem: string;
}

/** The result of {@link governingAppMonitor}. */
export type Governing =
  | { readonly result: "governed"; readonly appMonitor: ValidAppMonitor; readonly rejected: readonly RejectedAppMonitor[] }
  | { readonly result: "none"; readonly reason: "NoAppMonitor" | "NotCovered"; readonly message: string; readonly rejected: readonly RejectedAppMonitor[] };

/**
 * Picks the AppMonitor that governs `pod` among `items` (the raw list of its namespace), by
 * `chooseGoverning` (lib/appmonitor.ts: the one named in the alert if it covers the Pod, else
 * selector before annotation, oldest, then by name). An item whose spec fails
 * `validateAppMonitorSpec` is left out — the API server's schema should have refused it, so it
 * is reported, never acted on. Reasons when none governs:
 * - `NoAppMonitor`: the namespace has no valid AppMonitor;
 * - `NotCovered`: none covers the Pod (no opt-in annotation, no matching selector).
 * Nothing may be scaled in either case (DESIGN.md "Decisions that matter for correctness").
 */
export function governingAppMonitor(pod: PodLike & { metadata?: { name?: string } }, items: readonly unknown[], namedInAlert?: string): Governing {
  const valid: ValidAppMonitor[] = [];
  const rejected: RejectedAppMonitor[] = [];
  for (const item of items) {
    const { metadata, spec } = (item ?? {}) as { metadata?: ObjectMetaLike; spec?: unknown };
    const name = metadata?.name;
    if (metadata === undefined || name === undefined) continue;
    try {
      valid.push({ metadata: { ...metadata, name, namespace: metadata.namespace ?? "" }, spec: validateAppMonitorSpec(spec), raw: item as Record<string, unknown> });
    } catch (error) {
      if (!(error instanceof AppMonitorSpecError)) throw error;
      rejected.push({ name, problem: error.message });
    }
  }
  const podName = pod.metadata?.name ?? "";
  if (valid.length === 0) {
    const message = `no AppMonitor in namespace ${pod.metadata?.namespace ?? ""}${rejected.length > 0 ? ` (${rejected.length} invalid)` : ""}`;
    return { result: "none", reason: "NoAppMonitor", message, rejected };
  }
  const appMonitor = chooseGoverning(pod, valid, namedInAlert);
  if (appMonitor === undefined) {
    return {
      result: "none",
      reason: "NotCovered",
      message: `no AppMonitor covers Pod ${podName}: it lacks the annotation app-monitor.kubedemo.com/monitor: "true" and no selector matches its labels`,
      rejected,
    };
  }
  return { result: "governed", appMonitor, rejected };
}
