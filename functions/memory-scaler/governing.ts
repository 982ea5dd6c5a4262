/**
 * Which AppMonitor governs a workload, from the AppMonitors the API server lists in its
 * namespace, judged on the workload's Pod template. Pure: the list and the workload are read by
 * the caller.
 */
import {
  AppMonitorSpecError,
  chooseGoverning,
  validateAppMonitorSpec,
  type AppMonitorSpecWithDefaults,
  type ObjectMetaLike,
  type PodTemplateLike,
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

/** The AppMonitors of one namespace, as {@link validAppMonitors} splits them. */
export interface NamespaceAppMonitors {
  readonly namespace: string;
  readonly valid: readonly ValidAppMonitor[];
  readonly rejected: readonly RejectedAppMonitor[];
}

/** Why no AppMonitor governs: `NoAppMonitor` (none valid in the namespace) or `NotCovered`. */
export interface NoneGoverns {
  readonly result: "none";
  readonly reason: "NoAppMonitor" | "NotCovered";
  readonly message: string;
}

/** The result of {@link governingAppMonitor}. */
export type Governing = { readonly result: "governed"; readonly appMonitor: ValidAppMonitor } | NoneGoverns;

/** The workload whose Pod template is judged: its kind and name (for the message) and template. */
export interface TemplateOwner {
  readonly kind: string;
  readonly name: string;
  readonly template: PodTemplateLike;
}

/**
 * Splits `items` (the raw AppMonitor list of `namespace`) into those whose spec passes
 * `validateAppMonitorSpec` (defaults applied) and those it refuses. A refused one should never
 * have passed the API server's schema, so it is reported, never acted on. Items without a name
 * are dropped.
 */
export function validAppMonitors(namespace: string, items: readonly unknown[]): NamespaceAppMonitors {
  const valid: ValidAppMonitor[] = [];
  const rejected: RejectedAppMonitor[] = [];
  for (const item of items) {
    const { metadata, spec } = (item ?? {}) as { metadata?: ObjectMetaLike; spec?: unknown };
    const name = metadata?.name;
    if (metadata === undefined || name === undefined) continue;
    try {
      valid.push({ metadata: { ...metadata, name, namespace: metadata.namespace ?? namespace }, spec: validateAppMonitorSpec(spec), raw: item as Record<string, unknown> });
    } catch (error) {
      if (!(error instanceof AppMonitorSpecError)) throw error;
      rejected.push({ name, problem: error.message });
    }
  }
  return { namespace, valid, rejected };
}

/**
 * `NoAppMonitor` when the namespace has no valid AppMonitor, else `undefined`. Needs no workload,
 * so the caller can stop before reading one.
 */
export function noAppMonitor(monitors: NamespaceAppMonitors): NoneGoverns | undefined {
  if (monitors.valid.length > 0) return undefined;
  const invalid = monitors.rejected.length > 0 ? ` (${monitors.rejected.length} invalid)` : "";
  return { result: "none", reason: "NoAppMonitor", message: `no AppMonitor in namespace ${monitors.namespace}${invalid}` };
}

/**
 * Picks the AppMonitor that governs `workload` among `monitors`, by `chooseGoverning`
 * (lib/appmonitor.ts: the one named in the alert if it covers, else selector before
 * annotation, oldest, then by name), judged on the workload's Pod template metadata only —
 * its annotations and labels, in the workload's namespace. A live Pod's own annotations and
 * labels never grant coverage: anyone allowed to annotate one Pod could otherwise get its
 * workload scaled. Reasons when none governs:
 * - `NoAppMonitor`: the namespace has no valid AppMonitor;
 * - `NotCovered`: none covers the template (no opt-in annotation, no matching selector).
 * Nothing may be scaled in either case (DESIGN.md "Contracts kept from the original demo" and
 * "Decisions that matter for correctness").
 */
export function governingAppMonitor(workload: TemplateOwner, monitors: NamespaceAppMonitors, namedInAlert?: string): Governing {
  const none = noAppMonitor(monitors);
  if (none !== undefined) return none;
  const { labels, annotations } = workload.template.metadata ?? {};
  const template: PodTemplateLike = {
    metadata: { namespace: monitors.namespace, ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) },
  };
  const appMonitor = chooseGoverning(template, monitors.valid, namedInAlert);
  if (appMonitor === undefined) {
    return {
      result: "none",
      reason: "NotCovered",
      message: `no AppMonitor covers ${workload.kind} ${workload.name}: its Pod template lacks the annotation app-monitor.kubedemo.com/monitor: "true" and no selector matches the template's labels`,
    };
  }
  return { result: "governed", appMonitor };
}
