/**
 * The adapters the scale flow runs on (`scale/flow.ts`, one flow for every write target) and the
 * follow-up's ticks that hand it work: the only I/O they do goes through these, so tests can
 * substitute them. A module of its own, so that what needs their types does not import the flow.
 */
import type { NamespaceScope } from "../../lib/namespace-scope.ts";
import type { Ceilings } from "../ceilings.ts";
import type { LeakAlerter } from "../kube/alertmanager.ts";
import type { Cluster } from "../kube/cluster.ts";
import type { EventRecorder } from "../kube/event-recorder.ts";
import type { Verifier } from "../kube/prometheus.ts";
import type { StatusWriter } from "../kube/status-writer.ts";

/** What the flow needs; adapters, so tests can substitute them. */
export interface FlowDeps {
  readonly cluster: Cluster;
  readonly events: EventRecorder;
  readonly status: StatusWriter;
  /** Absent: no Prometheus check (`PROMETHEUS_URL` unset). */
  readonly verifier: Verifier | undefined;
  /** Rounds allowed when the compare-and-swap loses; ≥ 1. */
  readonly maxAttempts: number;
  readonly now: () => Date;
  /** Called once per lost compare-and-swap (for a metric). */
  readonly onConflict?: () => void;
  /** Waits `ms` before a round reads again (a trigger's `evidenceLagMs`); absent: `node:timers/promises` `setTimeout`. */
  readonly wait?: (ms: number) => Promise<void>;
  /** `PAUSE_SCALING`: every AppMonitor behaves as `spec.mode: DryRun` (its checks run, nothing is written). */
  readonly paused?: boolean;
  /** The namespaces served (`WATCH_NAMESPACES`); absent: all. */
  readonly scope?: NamespaceScope;
  /** The install's cap (`DEFAULT_MAX_MEMORY`, `caps.ts`); absent: its default. */
  readonly defaultMaxMemory?: string;
  /** The install's ceilings (`../ceilings.ts`), applied whatever an AppMonitor says; absent: none. */
  readonly ceilings?: Ceilings;
  /** Where the leak guard's alert goes (`ALERTMANAGER_URL`); absent: nowhere. */
  readonly leakAlerts?: LeakAlerter;
}
