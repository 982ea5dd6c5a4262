/**
 * The adapters a follow-up tick runs on (`flow.ts`): its only I/O goes through these, so tests can
 * substitute them. A module of its own, so that the tick's steps need not import the flow for it.
 */
import type { Ceilings } from "../ceilings.ts";
import type { Cluster } from "../kube/cluster.ts";
import type { EventRecorder } from "../kube/event-recorder.ts";
import type { StatusWriter } from "../kube/status-writer.ts";
import type { FallbackRequest, ScaleDownRequest } from "../model.ts";
import type { Logger } from "pino";

/** What the follow-up needs; adapters, so tests can substitute them. */
export interface FollowDeps {
  readonly cluster: Cluster;
  readonly events: EventRecorder;
  readonly status: StatusWriter;
  readonly now: () => Date;
  /** The install's cap (`DEFAULT_MAX_MEMORY`, `../caps.ts`); absent: its default. */
  readonly defaultMaxMemory?: string;
  /** The install's ceilings (`../ceilings.ts`): `MAX_MEMORY` in the caps, `MIN_COOLDOWN_SECONDS` in the quiet period; absent: none. */
  readonly ceilings?: Ceilings;
  /**
   * Writes the recorded memory of a workload whose in-place resize failed into its Pod template
   * (the scale flow's `handleFallback`, wired in `../index.ts`: the tick decides, the one scale flow
   * writes). Absent: the resize ends `RolloutFailed` and nothing falls back.
   */
  readonly fallBack?: (request: FallbackRequest, log: Logger) => Promise<{ readonly outcome: string; readonly reason: string; readonly message: string }>;
  /**
   * Lowers a workload due for a down-step of `spec.scaleDown` one step (the scale flow's
   * `handleScaleDown`, wired in `../index.ts`: the tick finds who is due, the one scale flow writes).
   * Absent: no down-step.
   */
  readonly scaleDown?: (request: ScaleDownRequest, log: Logger) => Promise<{ readonly outcome: string; readonly reason: string; readonly message: string; readonly changes?: readonly unknown[] | undefined }>;
  /** Called once per ended rollout (for a metric). */
  readonly onEnded?: (kind: string, result: "RolledOut" | "RolloutFailed", reason: string) => void;
}
