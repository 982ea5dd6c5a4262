/**
 * The adapters a firing alert's flows run on (`scale/flow.ts` for a workload, `scale/targets/pod-resize-target.ts`
 * for a bare Pod): the only I/O they do goes through these, so tests can substitute them. A module
 * of its own, so that neither flow imports the other for it.
 */
import type { NamespaceScope } from "../../lib/namespace-scope.ts";
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
  /** `PAUSE_SCALING`: every AppMonitor behaves as `spec.mode: DryRun` (its checks run, nothing is written). */
  readonly paused?: boolean;
  /** The namespaces served (`WATCH_NAMESPACES`); absent: all. */
  readonly scope?: NamespaceScope;
  /** The install's cap (`DEFAULT_MAX_MEMORY`, `caps.ts`); absent: its default. */
  readonly defaultMaxMemory?: string;
  /** Where the leak guard's alert goes (`ALERTMANAGER_URL`); absent: nowhere. */
  readonly leakAlerts?: LeakAlerter;
}
