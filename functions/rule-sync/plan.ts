/**
 * The reconcile decision for one AppMonitor name, and the orphans of a resync. Pure
 * (controller-runtime style): the AppMonitor and the PrometheusRule as read from the API server
 * in, what to write out; `sync.ts` does the reads and writes.
 *
 * Rule ownership: a PrometheusRule is rule-sync's when it carries the label
 * {@link MANAGED_BY_LABEL}`=`{@link MANAGED_BY_VALUE}; rule-sync never writes or deletes any other.
 * Its AppMonitor is the controller ownerReference (`kubedemo.com/v1` `AppMonitor`, matched by
 * uid, https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/).
 */
import type { IPrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, type AppMonitorCondition } from "../lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../lib/appmonitor-spec.ts";
import { REASONS, RULE_READY, type DesiredCondition } from "./conditions.ts";
import { buildPrometheusRule } from "./rule.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type RuleConfig } from "./rule-config.ts";
import { checkRuleInput, RuleInputError, type RuleInput } from "./rule-input.ts";

/** The metadata fields of an object as read from the API server that this module uses. */
export interface ObservedMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  /** Set once deletion began (finalizers or foreground deletion still pending). */
  readonly deletionTimestamp?: string | Date;
  readonly labels?: Readonly<Record<string, string>>;
  readonly ownerReferences?: readonly { readonly apiVersion?: string; readonly kind?: string; readonly name?: string; readonly uid?: string; readonly controller?: boolean }[];
}

/** An AppMonitor as read from the API server; `spec` is unchecked. */
export interface ObservedAppMonitor {
  readonly metadata: ObservedMeta;
  readonly spec?: unknown;
  readonly status?: {
    readonly observedGeneration?: number;
    readonly conditions?: readonly Partial<AppMonitorCondition>[];
  };
}

/** A PrometheusRule as read from the API server (only its metadata matters here). */
export interface ObservedRule {
  readonly metadata: ObservedMeta;
}

/** Identity of an existing rule, used as delete preconditions (uid and resourceVersion). */
export interface RuleRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string | undefined;
}

/** What to do with the PrometheusRule. */
export type RuleAction =
  /**
   * Server-side apply `rule`, built from `input`; with `replace`, delete that stale rule (another
   * AppMonitor's, by uid) first.
   */
  | { readonly kind: "apply"; readonly rule: IPrometheusRule; readonly input: RuleInput; readonly replace: RuleRef | undefined }
  /** Delete the rule: its AppMonitor is gone (`owner-gone`) or is another object now (`owner-mismatch`). */
  | { readonly kind: "delete"; readonly target: RuleRef; readonly why: "owner-gone" | "owner-mismatch" }
  /** Leave it alone (none exists, it is not ours, or it is the last good one of an invalid AppMonitor). */
  | { readonly kind: "keep" };

/** The decision for one AppMonitor name. */
export interface Plan {
  readonly rule: RuleAction;
  /**
   * RuleReady when the plan alone decides it (the rule cannot or may not be written:
   * `InvalidSpec`, `RuleConflict`), to set once `rule` succeeded; absent for an apply (what
   * Prometheus says decides it, after the write: `rule-loaded.ts`) and when no AppMonitor is live.
   */
  readonly condition: DesiredCondition | undefined;
}

/** Whether `rule` is rule-sync's (label {@link MANAGED_BY_LABEL}). */
export function isManaged(rule: ObservedRule): boolean {
  return rule.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}

/** uid of the rule's controller ownerReference when that is an AppMonitor; undefined otherwise. */
export function controllerAppMonitorUid(rule: ObservedRule): string | undefined {
  const owner = rule.metadata.ownerReferences?.find((ref) => ref.controller === true);
  if (owner === undefined || owner.apiVersion !== APPMONITOR_API_VERSION || owner.kind !== APPMONITOR_KIND) return undefined;
  return owner.uid;
}

/** Whether the rule names a controller that is not `monitorUid`: another object, or not an AppMonitor. */
function ownedByAnother(rule: ObservedRule, monitorUid: string | undefined): boolean {
  const controller = rule.metadata.ownerReferences?.find((ref) => ref.controller === true);
  if (controller === undefined) return false;
  return controllerAppMonitorUid(rule) !== monitorUid;
}

/** A rule's identity for a delete. */
export function ruleRef(rule: ObservedRule): RuleRef | undefined {
  const { namespace, name, uid, resourceVersion } = rule.metadata;
  if (namespace === undefined || name === undefined || uid === undefined) return undefined;
  return { namespace, name, uid, resourceVersion };
}

/** The rule's namespace/name. */
function ruleName(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? "?"}/${name ?? "?"}`;
}

/** An AppMonitor that counts as present: read, and its deletion not begun. */
function live(monitor: ObservedAppMonitor | undefined): monitor is ObservedAppMonitor {
  return monitor !== undefined && monitor.metadata.deletionTimestamp === undefined;
}

/**
 * Decides what to do for one AppMonitor name.
 *
 * | AppMonitor | PrometheusRule of that name | rule action | condition |
 * | --- | --- | --- | --- |
 * | absent or being deleted | ours | delete (`owner-gone`) | — |
 * | absent or being deleted | none, or not ours | keep | — |
 * | valid | none, or ours | apply (replacing an ours whose controller is another object) | — (Prometheus decides) |
 * | valid | not ours | keep | False `RuleConflict` |
 * | invalid | ours, controller is another object | delete (`owner-mismatch`) | False `InvalidSpec` |
 * | invalid | anything else | keep: a rule of an earlier valid generation stays, as a workload controller keeps its last good state | False `InvalidSpec` |
 *
 * Valid means: `spec` passes `validateAppMonitorSpec` (functions/lib/appmonitor-spec.ts), the
 * AppMonitor passes `checkRuleInput` (rule-input.ts) and `buildPrometheusRule` (rule.ts) accepts
 * it (it has a uid). `config` was validated when it was read.
 *
 * @param monitor the AppMonitor, undefined when the API server answered 404.
 * @param rule the PrometheusRule of the same namespace and name, undefined when 404.
 * @param config how rules are built.
 * @returns the plan.
 */
export function planSync(monitor: ObservedAppMonitor | undefined, rule: ObservedRule | undefined, config: RuleConfig): Plan {
  const ref = rule === undefined ? undefined : ruleRef(rule);
  const ours = rule !== undefined && isManaged(rule);
  if (!live(monitor)) {
    return { rule: ours && ref !== undefined ? { kind: "delete", target: ref, why: "owner-gone" } : { kind: "keep" }, condition: undefined };
  }
  const { namespace, name, uid } = monitor.metadata;
  const target = ruleName(namespace, name);
  let desired: IPrometheusRule;
  let input: RuleInput;
  try {
    const spec = validateAppMonitorSpec(monitor.spec);
    input = checkRuleInput({ metadata: monitor.metadata, spec });
    desired = buildPrometheusRule(input, config);
  } catch (error) {
    if (!(error instanceof AppMonitorSpecError) && !(error instanceof RuleInputError)) throw error;
    const condition: DesiredCondition = { type: RULE_READY, status: "False", reason: REASONS.invalid, message: `cannot build PrometheusRule ${target}: ${error.message}` };
    const stale = ours && ref !== undefined && ownedByAnother(rule, uid);
    return { rule: stale ? { kind: "delete", target: ref, why: "owner-mismatch" } : { kind: "keep" }, condition };
  }
  if (rule !== undefined && !ours) {
    return {
      rule: { kind: "keep" },
      condition: {
        type: RULE_READY,
        status: "False",
        reason: REASONS.conflict,
        message: `PrometheusRule ${target} exists and is not managed by rule-sync (no label ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}); rename or delete it`,
      },
    };
  }
  const replace = ours && ref !== undefined && ownedByAnother(rule, uid) ? ref : undefined;
  return { rule: { kind: "apply", rule: desired, input, replace }, condition: undefined };
}

/**
 * The rules of a resync whose AppMonitor is gone: each of `rules` that is ours and has no
 * AppMonitor of the same namespace and name in `monitors` (or only one being deleted).
 *
 * `rules` must have been listed before `monitors`: an AppMonitor created between the two lists
 * is then in `monitors`, so its fresh rule is never taken for an orphan. Rules whose AppMonitor
 * exists but is another object (uid mismatch) are left to {@link planSync} for that AppMonitor.
 *
 * @param rules PrometheusRules in scope, listed first.
 * @param monitors AppMonitors in scope, listed after the rules.
 * @returns the rules to delete, in the order of `rules`.
 */
export function findOrphans(rules: readonly ObservedRule[], monitors: readonly ObservedAppMonitor[]): RuleRef[] {
  const present = new Set(monitors.filter(live).map((m) => `${m.metadata.namespace ?? ""}/${m.metadata.name ?? ""}`));
  const orphans: RuleRef[] = [];
  for (const rule of rules) {
    const ref = ruleRef(rule);
    if (ref !== undefined && isManaged(rule) && !present.has(`${ref.namespace}/${ref.name}`)) orphans.push(ref);
  }
  return orphans;
}
