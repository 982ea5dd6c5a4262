/**
 * The adapters a follow-up tick runs on (`flow.ts`): its only I/O goes through these, so tests can
 * substitute them. A module of its own, so that the tick's steps need not import the flow for it.
 */
import type { Cluster } from "../kube/cluster.ts";
import type { EventRecorder } from "../kube/event-recorder.ts";
import type { StatusWriter } from "../kube/status-writer.ts";

/** What the follow-up needs; adapters, so tests can substitute them. */
export interface FollowDeps {
  readonly cluster: Cluster;
  readonly events: EventRecorder;
  readonly status: StatusWriter;
  readonly now: () => Date;
  /** Called once per ended rollout (for a metric). */
  readonly onEnded?: (kind: string, result: "RolledOut" | "RolloutFailed", reason: string) => void;
}
