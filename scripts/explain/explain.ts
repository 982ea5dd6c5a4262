/**
 * `explain`'s core (pure): from what the shell read — the workload, its namespace's AppMonitors,
 * the governing AppMonitor's PrometheusRule and rule group, Prometheus's answers — the lines that
 * say where one workload stands in the chain AppMonitor → rule → series → alert → memory-scaler.
 * Each line is `<what>: <finding>  (<source>)`, the source naming the object or query read.
 * The decisions are memory-scaler's and rule-sync's own: coverage and precedence
 * (`scale/decide/governing.ts`), the threshold query (`rule-sync/rule.ts`), the cooldown
 * (`scale/decide/decide.ts`), the caps (`caps.ts`), the last-scale record (`model.ts`), the owner
 * walk (`scale/decide/owner-chain.ts`).
 */
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, MONITOR_ANNOTATION, type AppMonitorCondition, type ScaleRecord } from "../../functions/lib/appmonitor.ts";
import { capOf, describeCap, policyOf } from "../../functions/memory-scaler/caps.ts";
import { type Ceilings, heldClause } from "../../functions/memory-scaler/ceilings.ts";
import { apiVersionOf, describeChanges, parseScaleRecord } from "../../functions/memory-scaler/model.ts";
import { cooldownLeft } from "../../functions/memory-scaler/scale/decide/decide.ts";
import { type ControllerRef, describeController, knownController, notPatchedNote } from "../../functions/memory-scaler/scale/decide/owner-chain.ts";
import { byPrecedence, coverage, precedenceRule, validAppMonitors, type Contender, type PodTemplateLike, type ValidAppMonitor } from "../../functions/memory-scaler/scale/decide/governing.ts";
import { cappedWorkloads } from "../../functions/memory-scaler/status/capped.ts";
import type { LastOutcome } from "../../functions/memory-scaler/status/last-outcome.ts";
import { leakOf } from "../../functions/memory-scaler/status/leaks.ts";
import type { LoadedGroup } from "../../functions/rule-sync/rule-loaded.ts";

/** The workload explained, as read: its kind (`Deployment`, …), name, namespace, controller, metadata annotations and Pod template. */
export interface ExplainedWorkload {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  /** Its controller owner reference (`controller: true`); absent: none. */
  readonly controller?: ControllerRef;
  readonly annotations: Readonly<Record<string, string>>;
  readonly template: PodTemplateLike & { spec?: { containers?: readonly { name: string; resources?: { limits?: Record<string, string> } }[] } };
  /** A Knative Revision's Deployment: the Service its label `serving.knative.dev/service` names. */
  readonly knativeService?: string;
}

/** The result of {@link governing}: the AppMonitor that acts on the workload, the others that cover it, and the invalid ones left out. */
export interface GoverningResult {
  /** Undefined: no AppMonitor covers the workload. */
  readonly governing: Contender<ValidAppMonitor> | undefined;
  /** Every AppMonitor that covers it, in precedence order (the first is `governing`). */
  readonly contenders: readonly Contender<ValidAppMonitor>[];
  readonly rejected: readonly { readonly name: string; readonly problem: string }[];
}

/**
 * Which AppMonitor of `items` (the raw list of the workload's namespace) governs `workload`, as
 * memory-scaler judges it (`governingAppMonitor`): coverage of the Pod template, then precedence;
 * each spec bounded by the install's `ceilings`, as memory-scaler bounds it.
 */
export function governing(workload: ExplainedWorkload, items: readonly unknown[], ceilings?: Ceilings): GoverningResult {
  const monitors = validAppMonitors(workload.namespace, items, ceilings);
  const { labels, annotations } = workload.template.metadata ?? {};
  const template: PodTemplateLike = { metadata: { namespace: workload.namespace, ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) } };
  const found: Contender<ValidAppMonitor>[] = [];
  for (const am of monitors.valid) {
    const how = coverage(template, am, { kind: workload.kind, name: workload.name });
    if (how !== undefined) found.push({ appMonitor: am, coverage: how });
  }
  const contenders = byPrecedence(found);
  return { governing: contenders[0], contenders, rejected: monitors.rejected };
}

/** One Prometheus sample, as `rule-sync/prometheus.ts` parses it. */
export interface SampleLike {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A read's result: its value, or the error met (the line then says the read failed). */
export type Read<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/** What {@link explainLines} needs once an AppMonitor governs: the shell's reads of the chain after it. */
export interface ChainFacts {
  /** `PrometheusRule <ns>/<name>`'s `metadata.annotations` generation, or undefined when it is absent. */
  readonly prometheusRule: Read<{ readonly generation: string | undefined } | undefined>;
  /** The rule group's name, and the group Prometheus lists (undefined: not loaded); a failed read when no Prometheus answered or none was given. */
  readonly ruleGroup: { readonly name: string; readonly loaded: Read<LoadedGroup | undefined> };
  /** The percent-of-limit query and its samples for the workload's Pods. */
  readonly usage: { readonly query: string; readonly samples: Read<readonly SampleLike[]> };
  /** The `ALERTS` query and its samples for the workload's Pods. */
  readonly alerts: { readonly query: string; readonly samples: Read<readonly SampleLike[]> };
  /** The names of the workload's Pods (the samples are kept to these). */
  readonly pods: readonly string[];
}

/** The install-wide settings that enter the decisions: `DEFAULT_MAX_MEMORY` and the ceilings (`MAX_MEMORY` for the caps). */
export interface ExplainSettings {
  readonly defaultMaxMemory: string;
  readonly ceilings?: Ceilings;
}

/** `<what>: <finding>  (<source>)`. */
function line(what: string, finding: string, source: string): string {
  return `${what}: ${finding}  (${source})`;
}

/** A PromQL query on one line, for a source. */
function oneLine(query: string): string {
  return query.replace(/\s*\n\s*/g, " ");
}

/** `Deployment shop/web`. */
export function workloadName(w: Pick<ExplainedWorkload, "kind" | "name" | "namespace">): string {
  return `${w.kind} ${w.namespace}/${w.name}`;
}

/**
 * The lines for `workload`: its controller, when it has one; coverage; when no AppMonitor covers
 * it, those alone (and the invalid AppMonitors left out); else the governing AppMonitor's conditions, its PrometheusRule and
 * rule group, the series and each container's percent of its limit against the threshold, the
 * alerts pending or firing, the last outcome and last scale, the cooldown left, the caps and
 * the gates (mode, container policies `Off`, a probable leak, `status.capped`).
 * @param now the time the cooldown is measured at.
 */
export function explainLines(workload: ExplainedWorkload, found: GoverningResult, chain: ChainFacts | undefined, settings: ExplainSettings, now: Date): string[] {
  const subject = workloadName(workload);
  const listSource = `AppMonitor list ${workload.namespace}; ${subject} spec.template.metadata`;
  const lines: string[] = [];
  const controller = controllerLine(workload);
  if (controller !== undefined) lines.push(controller);
  for (const r of found.rejected) lines.push(line("invalid AppMonitor", `${r.name} is left out: ${r.problem}`, `AppMonitor ${workload.namespace}/${r.name}`));
  const winner = found.governing;
  if (winner === undefined) {
    lines.push(
      line(
        "coverage",
        `not covered: no AppMonitor in namespace ${workload.namespace} covers ${subject} (its Pod template ${workload.template.metadata?.annotations?.[MONITOR_ANNOTATION] === "true" ? "carries" : "lacks"} the annotation ${MONITOR_ANNOTATION}: "true"; no selector matches its labels; no targetRef names it)`,
        listSource,
      ),
    );
    return lines;
  }
  const am = winner.appMonitor;
  const amName = `AppMonitor ${am.metadata.namespace}/${am.metadata.name}`;
  const others = found.contenders.slice(1).map((c) => `${c.appMonitor.metadata.name} (${c.coverage})`);
  lines.push(
    line(
      "coverage",
      `covered by AppMonitor ${am.metadata.name} (${winner.coverage})${others.length === 0 ? "" : `; also covered by ${others.join(", ")}, which answer AppMonitorConflict (${precedenceRule})`}`,
      listSource,
    ),
  );
  const status = (am.raw.status ?? {}) as Record<string, unknown>;
  lines.push(line("conditions", conditionsText(status.conditions), `${amName} status.conditions`));
  if (chain !== undefined) lines.push(...chainLines(workload, am, chain));
  lines.push(...statusLines(workload, am, status, now));
  lines.push(...capLines(workload, am, status, settings));
  return lines;
}

/**
 * What the owner walk (`scale/decide/owner-chain.ts`) makes of the workload's controller: the
 * workload it scales instead (a ReplicaSet's Deployment), or the controller it does not know, for
 * which its Pods' alerts are skipped `UnknownController`. Undefined: no controller.
 */
function controllerLine(workload: ExplainedWorkload): string | undefined {
  const { controller } = workload;
  if (controller === undefined) return undefined;
  const source = `${workloadName(workload)} metadata.ownerReferences`;
  const known = knownController(apiVersionOf(workload.kind), workload.kind, controller);
  if (known === "Revision") {
    const service = workload.knativeService === undefined ? "the Knative Service its Configuration belongs to" : `Knative Service ${workload.knativeService} (explain ksvc/${workload.knativeService})`;
    return line("controller", `${controller.kind} ${controller.name}: memory-scaler scales ${service}, whose spec.template makes this Revision, not this ${workload.kind}`, source);
  }
  if (known !== undefined) return line("controller", `${controller.kind} ${controller.name}: memory-scaler scales ${known} ${controller.name} (explain that one), not this ${workload.kind}`, source);
  return line("controller", `${describeController(controller)}: ${notPatchedNote(workload, controller)}; its Pods' alerts are skipped UnknownController`, source);
}

/** `RuleReady=True (RuleLoaded), …`, or that there are none. */
function conditionsText(value: unknown): string {
  const conditions = Array.isArray(value) ? (value as Partial<AppMonitorCondition>[]) : [];
  if (conditions.length === 0) return "none set yet (rule-sync has not reconciled it)";
  return conditions.map((c) => `${c.type ?? "?"}=${c.status ?? "?"} (${c.reason ?? ""}${c.status === "True" || c.message === undefined ? "" : `: ${c.message}`})`).join("; ");
}

/** The lines from the PrometheusRule to the alerts. */
function chainLines(workload: ExplainedWorkload, am: ValidAppMonitor, chain: ChainFacts): string[] {
  const ruleSource = `PrometheusRule ${am.metadata.namespace}/${am.metadata.name}`;
  const lines: string[] = [];
  const rule = chain.prometheusRule;
  lines.push(
    line(
      "rule object",
      !rule.ok ? `read failed: ${rule.error}` : rule.value === undefined ? "absent: rule-sync has not written it (see the RuleReady condition)" : `present${rule.value.generation === undefined ? "" : ` at generation ${rule.value.generation}`} (AppMonitor at generation ${am.metadata.generation ?? "?"})`,
      ruleSource,
    ),
  );
  const group = chain.ruleGroup;
  const loaded = group.loaded;
  lines.push(
    line(
      "rule loaded",
      !loaded.ok
        ? `unknown: ${loaded.error}`
        : loaded.value === undefined
          ? `not loaded: Prometheus lists no rule group ${group.name}, so no alert can fire`
          : `loaded: group ${group.name} with ${loaded.value.rules.map((r) => `${r.name} (${r.health}${r.lastError === undefined ? "" : `: ${r.lastError}`})`).join(", ")}`,
      `Prometheus /api/v1/rules rule_group[]=${group.name}`,
    ),
  );
  const pods = new Set(chain.pods);
  const threshold = am.spec.memThresholdPercent;
  const usage = chain.usage.samples;
  const usageSource = oneLine(chain.usage.query);
  if (!usage.ok) {
    lines.push(line("series", `read failed: ${usage.error}`, usageSource));
  } else {
    const mine = usage.value.filter((s) => pods.has(s.metric.pod ?? ""));
    if (mine.length === 0) {
      lines.push(line("series", `none for the ${chain.pods.length} Pod(s) of ${workloadName(workload)}: no working set or no memory limit scraped for them`, usageSource));
    } else {
      lines.push(line("series", `${mine.length} container series`, usageSource));
      for (const s of [...mine].sort((a, b) => `${a.metric.pod}/${a.metric.container}`.localeCompare(`${b.metric.pod}/${b.metric.container}`))) {
        const pct = Math.round(s.value * 10) / 10;
        const where = s.value >= threshold ? "at or above" : "below";
        lines.push(line(`usage ${s.metric.pod ?? "?"}/${s.metric.container ?? "?"}`, `${pct}% of its memory limit, ${where} the threshold ${threshold}%`, usageSource));
      }
    }
  }
  const alerts = chain.alerts.samples;
  const alertSource = oneLine(chain.alerts.query);
  if (!alerts.ok) {
    lines.push(line("alert", `read failed: ${alerts.error}`, alertSource));
  } else {
    const mine = alerts.value.filter((s) => pods.has(s.metric.pod ?? ""));
    lines.push(
      line(
        "alert",
        mine.length === 0 ? "none pending or firing for its Pods" : mine.map((s) => `${s.metric.alertname ?? "?"} ${s.metric.alertstate ?? "?"} for ${s.metric.pod ?? "?"}/${s.metric.container ?? "?"}`).join("; "),
        alertSource,
      ),
    );
  }
  return lines;
}

/** The lines from the AppMonitor's status and the workload's last-scale annotations: last outcome, recent scales, last scale, cooldown. */
function statusLines(workload: ExplainedWorkload, am: ValidAppMonitor, status: Record<string, unknown>, now: Date): string[] {
  const amName = `AppMonitor ${am.metadata.namespace}/${am.metadata.name}`;
  const same = (w: { kind?: string; name?: string } | undefined): boolean => w?.kind === workload.kind && w.name === workload.name;
  const lines: string[] = [];
  const last = status.lastOutcome as Partial<LastOutcome> | undefined;
  lines.push(
    line(
      "last outcome",
      last === undefined || !same(last.workload) ? `none recorded for ${workload.kind} ${workload.name}` : `${last.outcome ?? "?"} at ${last.time ?? "?"} for Pod ${last.pod ?? "?"}: ${last.reason ?? "?"}: ${last.message ?? ""}`,
      `${amName} status.lastOutcome`,
    ),
  );
  const recent = (Array.isArray(status.recentScales) ? (status.recentScales as Partial<ScaleRecord & { dryRun: boolean }>[]) : []).filter((r) => same(r.workload));
  const newest = recent[0];
  lines.push(
    line(
      "recent scales",
      newest === undefined
        ? "none of this workload"
        : `${recent.length}, newest at ${newest.time ?? "?"}: ${newest.container ?? "?"} limit ${newest.from?.limit ?? "?"} → ${newest.to?.limit ?? "?"}${newest.dryRun === true ? " (dry run)" : ""}${newest.held === undefined ? "" : ` (held: ${newest.held})`}`,
      `${amName} status.recentScales`,
    ),
  );
  const objectSource = `${workloadName(workload)} metadata.annotations`;
  const record = parseScaleRecord(workload.annotations[LAST_SCALE_RECORD_ANNOTATION]);
  const lastScale = workload.annotations[LAST_SCALE_ANNOTATION];
  lines.push(
    line(
      "last scale",
      record !== undefined
        ? `at ${record.time} by AppMonitor ${record.appmonitor}${record.trigger === undefined ? "" : ` (${record.trigger})`}: ${describeChanges(record.changes)}`
        : lastScale !== undefined
          ? `at ${lastScale} (no readable record)`
          : "never scaled by memory-scaler",
      `${objectSource} ${LAST_SCALE_RECORD_ANNOTATION}`,
    ),
  );
  const cooldown = am.spec.cooldownSeconds;
  const left = cooldownLeft(lastScale, cooldown, now);
  lines.push(
    line(
      "cooldown",
      `${lastScale === undefined ? `none running (spec.cooldownSeconds ${cooldown})` : left > 0 ? `${left}s left of ${cooldown}s since ${lastScale}: an alert that began before it is skipped (Cooldown); a threshold or trend alert that begins after it is a new crossing, answered` : `over (${cooldown}s since ${lastScale} have passed)`}${heldClause(am.held, "spec.cooldownSeconds")}`,
      `${objectSource} ${LAST_SCALE_ANNOTATION}; ${amName} spec.cooldownSeconds`,
    ),
  );
  return lines;
}

/** The caps of each container of the template, and the gates that hold a scale back. */
function capLines(workload: ExplainedWorkload, am: ValidAppMonitor, status: Record<string, unknown>, settings: ExplainSettings): string[] {
  const amName = `AppMonitor ${am.metadata.namespace}/${am.metadata.name}`;
  const lines: string[] = [];
  const containers = workload.template.spec?.containers ?? [];
  const chosen = am.spec.containers;
  const caps = containers.map((c) => {
    if (chosen !== undefined && !chosen.includes(c.name)) return `${c.name}: not in spec.containers`;
    if (policyOf(am.spec, c.name)?.mode === "Off") return `${c.name}: containerPolicies mode Off, never scaled`;
    const limit = c.resources?.limits?.memory;
    return `${c.name}: limit ${limit ?? "none (not scaled)"}, cap ${describeCap(capOf(am.spec, c.name, settings.defaultMaxMemory, settings.ceilings?.maxMemory))}`;
  });
  lines.push(line("caps", caps.length === 0 ? "no containers in the Pod template" : caps.join("; "), `${workloadName(workload)} spec.template; ${amName} spec`));
  const capped = cappedWorkloads(status).find((c) => c.workload.kind === workload.kind && c.workload.name === workload.name);
  const leak = leakOf(status, { kind: workload.kind, name: workload.name });
  const gates = [
    `mode ${am.spec.mode}${am.spec.mode === "DryRun" ? " (nothing is patched)" : ""}`,
    `updateMode ${am.spec.updateMode}`,
    capped === undefined ? "not at its cap" : `at its cap since ${capped.since}: ${capped.containers.join(", ")} at ${capped.maxMemory}`,
    leak === undefined || leak.cleared !== undefined ? "no probable leak" : `probable leak since ${leak.since}, scaling held until ${leak.until}`,
  ];
  lines.push(line("gates", gates.join("; "), `${amName} spec, status.capped, status.probableLeaks`));
  return lines;
}
