/**
 * The adapters a follow-up tick runs on (`flow.ts`): its only I/O goes through these, so tests can
 * substitute them. A module of its own, so that the tick's steps need not import the flow for it.
 */
import type { Cluster } from "../kube/cluster.ts";
import type { EventRecorder } from "../kube/event-recorder.ts";
import type { StatusWriter } from "../kube/status-writer.ts";
import type { Logger } from "pino";

/** A workload whose in-place resize failed under `InPlaceOrRollout`: a Pod of it, its AppMonitor, why, and the key of its Events. */
export interface FallBackRequest {
  readonly namespace: string;
  readonly pod: string;
  readonly appmonitor: string;
  readonly reason: string;
  readonly eventId: string;
}

/** What the follow-up needs; adapters, so tests can substitute them. */
export interface FollowDeps {
  readonly cluster: Cluster;
  readonly events: EventRecorder;
  readonly status: StatusWriter;
  readonly now: () => Date;
  /** The install's cap (`DEFAULT_MAX_MEMORY`, `../caps.ts`); absent: its default. */
  readonly defaultMaxMemory?: string;
  /**
   * Writes the recorded memory of a workload whose in-place resize failed into its Pod template
   * (the scale flow's `handleFallback`, wired in `../index.ts`: the tick decides, the one scale flow
   * writes). Absent: the resize ends `RolloutFailed` and nothing falls back.
   */
  readonly fallBack?: (request: FallBackRequest, log: Logger) => Promise<{ readonly outcome: string; readonly reason: string; readonly message: string }>;
  /** Called once per ended rollout (for a metric). */
  readonly onEnded?: (kind: string, result: "RolledOut" | "RolloutFailed", reason: string) => void;
}
