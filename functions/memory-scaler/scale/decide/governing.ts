/**
 * memory-scaler's governing policy: whether an alert is one of the AppMonitor rules' alerts,
 * whether an AppMonitor covers a Pod template, and whether the AppMonitor the alert names governs
 * the workload, from the AppMonitors the API server lists in its namespace, judged on the
 * workload's Pod template. Pure: the event, the list and the workload are read by the caller.
 *
 * DESIGN.md "Decisions that matter for correctness": nothing is scaled that no AppMonitor
 * covers, and labels inside an alert are input, never authority. The `appmonitor` label (set by
 * every generated rule, `rule-sync/rule.ts`) says which AppMonitor's threshold was crossed; it
 * is required, and checked: that AppMonitor must exist and cover the workload itself.
 */
import { ALERT_TRIGGERS, TRIGGER_ALERT_NAMES, triggerOf, type AlertEventData, type AlertTrigger } from "../../../lib/alert-event.ts";
import { APPMONITOR_ALERT_LABEL, MONITOR_ANNOTATION, type AppMonitorSpec, type AppMonitorSpecWithDefaults, type ObjectMetaLike } from "../../../lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../../../lib/appmonitor-spec.ts";
import { type LabelSelector, LabelSelectorError, matchesLabelSelector } from "../../../lib/label-selector.ts";
import type { Ceilings, HeldCeiling } from "../../ceilings.ts";
import type { NoneGoverns } from "../../outcome.ts";
import { boundSpec } from "./bound-spec.ts";

/** What {@link covers} needs of an AppMonitor. */
export interface AppMonitorLike {
  metadata?: ObjectMetaLike;
  spec: Pick<AppMonitorSpec, "selector" | "selectorMode" | "targetRef">;
}

/**
 * What {@link coverage} judges: the metadata of a workload's Pod template (`spec.template` of a
 * Deployment, StatefulSet, …; V1PodTemplateSpec from @kubernetes/client-node fits). A template
 * carries no namespace of its own: set `metadata.namespace` to the workload's. Judging the
 * template, not a live Pod, matters: the template is what the user declares and what every Pod of
 * the workload is made from, while a single Pod can be annotated or labelled by hand.
 */
export interface PodTemplateLike {
  metadata?: Pick<ObjectMetaLike, "namespace" | "labels" | "annotations">;
}

/** The workload a template belongs to, for `spec.targetRef`: its kind (`Pod` for a bare Pod) and name. */
export interface WorkloadIdentity {
  readonly kind: string;
  readonly name: string;
}

/**
 * How an AppMonitor covers a Pod template, most specific first: its `spec.targetRef` names the
 * workload; its `spec.selector` with `selectorMode: Narrow` matches the annotated template; its
 * selector (`Widen`) matches the template; only the opt-in annotation.
 */
export type Coverage = "targetRef" | "narrowSelector" | "selector" | "annotation";

/**
 * The precedence of {@link Coverage}s when several AppMonitors cover one workload, first wins
 * (DESIGN.md "Which AppMonitor acts"): naming the workload is the most deliberate choice, a
 * selector that narrows the annotated templates more than one that widens them, the namespace's
 * annotation least.
 */
export const COVERAGE_PRECEDENCE: readonly Coverage[] = ["targetRef", "narrowSelector", "selector", "annotation"];

/**
 * How `appMonitor` covers the Pod template `template` of `workload`, if at all:
 * - with `spec.targetRef`: `"targetRef"` when it names `workload` (kind and name), whatever the
 *   template's annotations and labels; nothing else;
 * - with `spec.selectorMode: Narrow`: `"narrowSelector"` when the template carries
 *   `app-monitor.kubedemo.com/monitor: "true"` and `spec.selector` matches its labels;
 * - else (`Widen`, or no mode: the default) `"selector"` when `spec.selector` matches the
 *   template's labels, else `"annotation"` when the template carries the annotation;
 * `undefined` otherwise. An AppMonitor never covers a template in another namespace (when both
 * namespaces are known). An invalid selector selects nothing, as the API server would not have
 * admitted it.
 * Source: DESIGN.md "The API" (`spec.targetRef`, `spec.selector`, `spec.selectorMode`) and
 * "Contracts kept from the original demo" (the annotation is on the Pod template).
 */
export function coverage(template: PodTemplateLike, appMonitor: AppMonitorLike, workload?: WorkloadIdentity): Coverage | undefined {
  const templateNs = template.metadata?.namespace;
  const amNs = appMonitor.metadata?.namespace;
  if (templateNs !== undefined && amNs !== undefined && templateNs !== amNs) return undefined;
  const { targetRef, selector, selectorMode } = appMonitor.spec;
  if (targetRef !== undefined) return workload !== undefined && workload.kind === targetRef.kind && workload.name === targetRef.name ? "targetRef" : undefined;
  const annotated = template.metadata?.annotations?.[MONITOR_ANNOTATION] === "true";
  const selected = selector !== undefined && selects(selector, template.metadata?.labels);
  if (selectorMode === "Narrow") return annotated && selected ? "narrowSelector" : undefined;
  if (selected) return "selector";
  return annotated ? "annotation" : undefined;
}

/** Whether `selector` matches `labels`; an invalid selector matches nothing. */
function selects(selector: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  try {
    return matchesLabelSelector(selector, labels);
  } catch (err) {
    if (!(err instanceof LabelSelectorError)) throw err;
    return false;
  }
}

/**
 * Whether `appMonitor` covers the Pod template `template` (of `workload`, for `spec.targetRef`).
 * See {@link coverage}.
 */
export function covers(template: PodTemplateLike, appMonitor: AppMonitorLike, workload?: WorkloadIdentity): boolean {
  return coverage(template, appMonitor, workload) !== undefined;
}

/** An AppMonitor that covers a workload, and how. */
export interface Contender<A extends AppMonitorLike = AppMonitorLike> {
  readonly appMonitor: A;
  readonly coverage: Coverage;
}

/** Milliseconds since the epoch of a creationTimestamp; a missing or unreadable one sorts last. */
function createdAt(meta: ObjectMetaLike | undefined): number {
  const t = meta?.creationTimestamp;
  const ms = t instanceof Date ? t.getTime() : t === undefined ? NaN : Date.parse(t);
  return Number.isNaN(ms) ? Infinity : ms;
}

/**
 * `contenders` in the order in which they act on a workload, the one that acts first: by
 * {@link COVERAGE_PRECEDENCE}, then the oldest `metadata.creationTimestamp`, then the name
 * (so every replica, every time, picks the same one). Does not modify its input.
 */
export function byPrecedence<A extends AppMonitorLike>(contenders: readonly Contender<A>[]): Contender<A>[] {
  return [...contenders].sort(
    (a, b) =>
      COVERAGE_PRECEDENCE.indexOf(a.coverage) - COVERAGE_PRECEDENCE.indexOf(b.coverage) ||
      createdAt(a.appMonitor.metadata) - createdAt(b.appMonitor.metadata) ||
      (a.appMonitor.metadata?.name ?? "").localeCompare(b.appMonitor.metadata?.name ?? ""),
  );
}

/** An AppMonitor whose spec passed validation, defaults applied and bounded by the install's ceilings (`bound-spec.ts`). */
export interface ValidAppMonitor {
  readonly metadata: ObjectMetaLike & { name: string; namespace: string };
  readonly spec: AppMonitorSpecWithDefaults;
  /** The install's ceilings that hold over what the spec asks (absent or empty: none). */
  readonly held?: readonly HeldCeiling[];
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

/**
 * The result of {@link alertOrigin}: the name of the AppMonitor whose rule raised the alert and
 * which of its alerts it is, or why it has none.
 */
export type AlertOrigin = { readonly result: "appmonitor"; readonly name: string; readonly trigger: AlertTrigger } | NoneGoverns;

/** The `alertname`s of the generated rules' alerts, one per trigger: the threshold alert, the OOM-kill alert, the trend alert, the heap-error alert, the heap-threshold alert. */
const APPMONITOR_ALERT_NAMES: readonly string[] = ALERT_TRIGGERS.map((trigger) => TRIGGER_ALERT_NAMES[trigger]);

/** The result of {@link namedAppMonitor}. */
export type NamedAppMonitor = { readonly result: "found"; readonly appMonitor: ValidAppMonitor } | NoneGoverns;

/**
 * Several AppMonitors covering one workload: the workload, and every one that covers it in the
 * order of {@link byPrecedence} (the first acts, the others answer `AppMonitorConflict`).
 */
export interface CoverageConflict {
  readonly workload: WorkloadIdentity;
  readonly contenders: readonly Contender<ValidAppMonitor>[];
}

/**
 * The result of {@link governingAppMonitor}; `conflict` is set whenever more than one AppMonitor
 * covers the workload, whoever governs.
 */
export type Governing =
  | { readonly result: "governed"; readonly appMonitor: ValidAppMonitor; readonly conflict?: CoverageConflict }
  | (NoneGoverns & { readonly conflict?: CoverageConflict });

/** The workload whose Pod template is judged: its kind and name (for the message) and template. */
export interface TemplateOwner {
  readonly kind: string;
  readonly name: string;
  readonly template: PodTemplateLike;
}

/**
 * Labels Prometheus adds when a scraped series' own `namespace`/`pod` labels clash with the
 * target's and `honor_labels` is false: the series' values move here, and `namespace`/`pod` then
 * name the exporter (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#scrape_config).
 */
const EXPORTED_LABELS = ["exported_namespace", "exported_pod"] as const;

/**
 * Whether the alert is an AppMonitor rule's: an `alertname` of {@link TRIGGER_ALERT_NAMES}
 * (`AppMonitorMemoryHigh`, trigger `threshold`; `AppMonitorOOMKilled`, `oomKilled`;
 * `AppMonitorMemoryTrend`, `trend`; `AppMonitorHeapError`, `heapError`; `AppMonitorHeapThreshold`,
 * `heapThreshold`), a `trigger` that is
 * absent or agrees with the alertname (`triggerOf`; absent is an older alert-receiver's event), a
 * non-empty {@link APPMONITOR_ALERT_LABEL} label, and none of `exported_namespace` /
 * `exported_pod` (a generated rule aggregates `by (namespace, pod, container)`, so its alerts
 * never carry them; an alert that does names the exporter kube-state-metrics in `namespace`/`pod`,
 * scraped without `honor_labels: true`, not the Pod it measured). Anything else →
 * `NotAppMonitorAlert`, whatever its `namespace` and `pod` labels say, with every problem in the
 * message.
 */
export function alertOrigin(data: Pick<AlertEventData, "alertname" | "appmonitor" | "labels" | "namespace" | "pod" | "trigger">): AlertOrigin {
  const problems: string[] = [];
  const trigger = triggerOf(data.alertname);
  if (!APPMONITOR_ALERT_NAMES.includes(data.alertname)) {
    problems.push(`its alertname is ${JSON.stringify(data.alertname)}, not ${APPMONITOR_ALERT_NAMES.join(" or ")}`);
  } else if (data.trigger !== undefined && data.trigger !== trigger) {
    // Both come from the sender; one that contradicts the other is not an event alert-receiver made.
    problems.push(`its trigger ${data.trigger} contradicts its alertname ${data.alertname} (trigger ${trigger})`);
  }
  if (data.appmonitor === undefined || data.appmonitor === "") problems.push(`it has no ${APPMONITOR_ALERT_LABEL} label`);
  const exported = EXPORTED_LABELS.filter((label) => Object.hasOwn(data.labels, label)).map((label) => `${label}=${data.labels[label] ?? ""}`);
  if (exported.length > 0) {
    problems.push(
      `its namespace and pod labels (${data.namespace}/${data.pod}) name the exporter Prometheus scraped, not the Pod it measured (${exported.join(", ")}): scrape kube-state-metrics with honor_labels: true`,
    );
  }
  if (problems.length === 0 && data.appmonitor !== undefined) return { result: "appmonitor", name: data.appmonitor, trigger };
  return { result: "none", reason: "NotAppMonitorAlert", message: `not an alert of an AppMonitor's rule: ${problems.join("; ")}` };
}

/**
 * Splits `items` (the raw AppMonitor list of `namespace`) into those whose spec passes
 * `validateAppMonitorSpec` (defaults applied, then bounded by `ceilings`: `bound-spec.ts`) and
 * those it refuses. A refused one should never have passed the API server's schema, so it is
 * reported, never acted on. Items without a name are dropped.
 */
export function validAppMonitors(namespace: string, items: readonly unknown[], ceilings?: Ceilings): NamespaceAppMonitors {
  const valid: ValidAppMonitor[] = [];
  const rejected: RejectedAppMonitor[] = [];
  for (const item of items) {
    const { metadata, spec } = (item ?? {}) as { metadata?: ObjectMetaLike; spec?: unknown };
    const name = metadata?.name;
    if (metadata === undefined || name === undefined) continue;
    try {
      const bounded = boundSpec(validateAppMonitorSpec(spec), ceilings);
      const held = bounded.held.length === 0 ? {} : { held: bounded.held };
      valid.push({ metadata: { ...metadata, name, namespace: metadata.namespace ?? namespace }, spec: bounded.spec, ...held, raw: item as Record<string, unknown> });
    } catch (error) {
      if (!(error instanceof AppMonitorSpecError)) throw error;
      rejected.push({ name, problem: error.message });
    }
  }
  return { namespace, valid, rejected };
}

/**
 * The AppMonitor named `name` (the alert's) among the valid ones, or `NoAppMonitor`: none valid
 * in the namespace, or not that one (deleted since its rule fired, or its spec is invalid).
 * Needs no workload, so the caller can stop before reading one.
 */
export function namedAppMonitor(monitors: NamespaceAppMonitors, name: string): NamedAppMonitor {
  const found = monitors.valid.find((am) => am.metadata.name === name);
  if (found !== undefined) return { result: "found", appMonitor: found };
  const { namespace } = monitors;
  if (monitors.valid.length === 0) {
    const invalid = monitors.rejected.length > 0 ? ` (${monitors.rejected.length} invalid)` : "";
    return { result: "none", reason: "NoAppMonitor", message: `no AppMonitor in namespace ${namespace}${invalid}` };
  }
  const why = monitors.rejected.some((r) => r.name === name) ? "has an invalid spec" : "does not exist";
  return { result: "none", reason: "NoAppMonitor", message: `AppMonitor ${name}, whose rule raised the alert, ${why} in namespace ${namespace}` };
}

/**
 * Whether `named` (the alert's AppMonitor, from {@link namedAppMonitor}) governs `workload`: it
 * covers the workload's Pod template — by `spec.targetRef`, or the template's annotations and
 * labels, in the workload's namespace ({@link coverage}) — and no other AppMonitor of the
 * namespace that covers it comes before it in {@link byPrecedence}. A live Pod's own annotations
 * and labels never grant coverage: anyone allowed to annotate one Pod could otherwise get its
 * workload scaled. Exactly one AppMonitor governs a covered workload, so two never scale it.
 * Reasons when `named` does not govern:
 * - `NotCovered`: no AppMonitor of the namespace covers the template (no opt-in annotation, no
 *   matching selector, no targetRef naming it);
 * - `AppMonitorNotGoverning`: `named` does not cover it, others do (a cAdvisor rule fires for every
 *   Pod with a limit in its namespace, so another AppMonitor's rule raises alerts for the Pods of this one);
 * - `AppMonitorConflict`: `named` covers it, and another that covers it takes precedence.
 * Nothing may be scaled in any of these cases (DESIGN.md "Contracts kept from the original demo",
 * "Decisions that matter for correctness" and "Which AppMonitor acts").
 */
export function governingAppMonitor(workload: TemplateOwner, monitors: NamespaceAppMonitors, named: ValidAppMonitor): Governing {
  const { labels, annotations } = workload.template.metadata ?? {};
  const template: PodTemplateLike = {
    metadata: { namespace: monitors.namespace, ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) },
  };
  const identity: WorkloadIdentity = { kind: workload.kind, name: workload.name };
  const found: Contender<ValidAppMonitor>[] = [];
  for (const am of monitors.valid.includes(named) ? monitors.valid : [named, ...monitors.valid]) {
    const how = coverage(template, am, identity);
    if (how !== undefined) found.push({ appMonitor: am, coverage: how });
  }
  const contenders = byPrecedence(found);
  const conflict = contenders.length > 1 ? { conflict: { workload: identity, contenders } } : {};
  const subject = `${workload.kind} ${workload.name}`;
  const winner = contenders[0];
  if (winner === undefined) {
    return {
      result: "none",
      reason: "NotCovered",
      message: `no AppMonitor covers ${subject}: its Pod template lacks the annotation app-monitor.kubedemo.com/monitor: "true", no selector matches the template's labels and no targetRef names it`,
    };
  }
  if (winner.appMonitor === named) return { result: "governed", appMonitor: named, ...conflict };
  const mine = contenders.find((c) => c.appMonitor === named);
  if (mine !== undefined) {
    return {
      result: "none",
      reason: "AppMonitorConflict",
      message: `AppMonitor ${named.metadata.name}, whose rule raised the alert, covers ${subject} (${mine.coverage}), and so does AppMonitor ${winner.appMonitor.metadata.name} (${winner.coverage}), which takes precedence (${precedenceRule}): only its alerts scale ${subject}`,
      ...conflict,
    };
  }
  const others = contenders.map((c) => `AppMonitor ${c.appMonitor.metadata.name}`);
  return {
    result: "none",
    reason: "AppMonitorNotGoverning",
    message: `AppMonitor ${named.metadata.name}, whose rule raised the alert, does not cover ${subject} (${named.spec.targetRef === undefined ? "its selector does not match the Pod template's labels and the template lacks the annotation app-monitor.kubedemo.com/monitor: \"true\"" : `its targetRef names ${named.spec.targetRef.kind} ${named.spec.targetRef.name}`}); ${subject} is governed by ${others[0] ?? ""}, whose own alerts scale it`,
    ...conflict,
  };
}

/** The precedence rule in words, for messages. */
export const precedenceRule = "targetRef, then a Narrow selector, then a selector, then the annotation; then the oldest; then the first name";
