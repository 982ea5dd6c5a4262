/**
 * The follow-up's down-steps (`spec.scaleDown`, docs/scale-down.md): on each tick, for every
 * AppMonitor that sets `spec.scaleDown`, the workloads its status shows raised and due
 * (`../status/scale-down.ts` `workloadsDue`: nothing is read for that). For each: GET the workload
 * (its last-scale record must be this AppMonitor's and its last scale's), LIST its Pods for one
 * running Pod, and hand it to the scale flow (`deps.scaleDown`, the flow's `handleScaleDown`,
 * wired in `../index.ts`: the tick decides who is due, the one scale flow decides the step, reads
 * the peak from Prometheus and writes). An AppMonitor without `spec.scaleDown` costs nothing.
 */
import type { Logger } from "pino";
import { LAST_SCALE_ANNOTATION, LAST_SCALE_RECORD_ANNOTATION, type AppMonitorScaleDown, type AppMonitorStatus } from "../../lib/appmonitor.ts";
import { toHttpFailure } from "../../lib/kube-api-errors.ts";
import { selectorString } from "../kube/views.ts";
import { parseScaleRecord, type WorkloadKind } from "../model.ts";
import { workloadsDue } from "../status/scale-down.ts";
import type { FollowDeps } from "./deps.ts";

/** The kinds a down-step lowers: those a scale patches. */
const KINDS: ReadonlySet<string> = new Set(["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Service"]);

/** Defaults of `spec.scaleDown` (the CRD's, which the API server writes; here for an object stored before it had them). */
const DEFAULTS: Required<AppMonitorScaleDown> = { quietPeriodSeconds: 86400, marginPercent: 10 };

/** What the down-steps of one tick came to. */
export interface ScaleDownSummary {
  /** Workloads found due and handed to the flow. */
  readonly asked: number;
  /** Of those, lowered (or, for a dry run, recorded). */
  readonly stepped: number;
}

/** One due workload of one AppMonitor. */
interface DueWorkload {
  readonly namespace: string;
  readonly appmonitor: string;
  readonly workload: { readonly kind: string; readonly name: string };
}

/**
 * The due workloads of the listed AppMonitors (module comment); pure. `minCooldownSeconds`: the
 * install's ceiling `MIN_COOLDOWN_SECONDS` (`../ceilings.ts`), the shortest cooldown that counts.
 */
export function dueWorkloads(items: readonly unknown[], now: Date, minCooldownSeconds = 0): DueWorkload[] {
  return items.flatMap((item) => {
    const am = item as { metadata?: { name?: string; namespace?: string }; spec?: { scaleDown?: AppMonitorScaleDown; cooldownSeconds?: number }; status?: AppMonitorStatus };
    const { name, namespace } = am.metadata ?? {};
    const scaleDown = am.spec?.scaleDown;
    if (name === undefined || namespace === undefined || scaleDown === undefined) return [];
    return workloadsDue(am.status, { ...DEFAULTS, ...scaleDown }, now, Math.max(am.spec?.cooldownSeconds ?? 0, minCooldownSeconds))
      .filter((w) => KINDS.has(w.kind))
      .map((workload) => ({ namespace, appmonitor: name, workload }));
  });
}

/**
 * Hands each due workload to the scale flow (module comment); a failure of one is thrown once every
 * other was tried (`toHttpFailure`: the Broker retries the tick).
 */
export async function stepDown(deps: FollowDeps, items: readonly unknown[], log: Logger): Promise<ScaleDownSummary> {
  const { scaleDown } = deps;
  if (scaleDown === undefined) return { asked: 0, stepped: 0 };
  const due = dueWorkloads(items, deps.now(), deps.ceilings?.minCooldownSeconds);
  let asked = 0;
  let stepped = 0;
  const failures: unknown[] = [];
  await Promise.all(
    due.map(async ({ namespace, appmonitor, workload }) => {
      const line = { appmonitor: `${namespace}/${appmonitor}`, workload: `${workload.kind}/${workload.name}` };
      try {
        const object = await deps.cluster.readWorkload(workload.kind as WorkloadKind, namespace, workload.name);
        const annotations = object?.metadata?.annotations;
        const lastScale = annotations?.[LAST_SCALE_ANNOTATION];
        const record = parseScaleRecord(annotations?.[LAST_SCALE_RECORD_ANNOTATION]);
        // Not this AppMonitor's last scale (gone, replaced, scaled by another): nothing to step back from.
        if (object === undefined || lastScale === undefined || record === undefined || record.appmonitor !== appmonitor || Date.parse(record.time) !== Date.parse(lastScale)) return;
        const selector = selectorString(object.spec?.selector);
        const pods = selector === undefined ? [] : await deps.cluster.listPods(namespace, selector);
        const pod = pods.find((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === "Running")?.metadata?.name;
        if (pod === undefined) {
          log.info(line, "due for a down-step, but no Pod of it runs: asked again at the next tick");
          return;
        }
        asked += 1;
        const outcome = await scaleDown({ namespace, pod, appmonitor, eventId: `scale-down/${workload.kind}/${workload.name}/${lastScale}` }, log);
        if (outcome.reason === "ScaledDown" || (outcome.outcome === "dry-run" && outcome.reason === "DryRun")) stepped += 1;
        log.info({ ...line, pod, outcome: outcome.outcome, reason: outcome.reason, changes: outcome.changes }, `down-step: ${outcome.message}`);
      } catch (error) {
        failures.push(error);
      }
    }),
  );
  if (failures.length > 0) throw toHttpFailure(failures[0], `step down ${failures.length} of ${due.length} workloads due`);
  return { asked, stepped };
}
