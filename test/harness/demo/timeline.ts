/**
 * The demo's timeline: the chain's hops in the order they happened, each with the clock its time
 * was read from. The chain records hops in the order it observes them, and an observation can
 * come long after the fact (Prometheus's `activeAt` is read once the alert is pending, seconds
 * after the sample that made it so), so the timeline sorts by the time each hop happened.
 */

/** Where a hop's time comes from: the clock that measured it. */
export interface HopClock {
  /** What wrote the time, e.g. "memhog's log (kubelet timestamp)" or "Prometheus sample timestamp". */
  readonly source: string;
  /**
   * How finely the source writes time, ms: 1 for a log line's epoch ms, 1000 for a Kubernetes
   * timestamp in whole seconds, or the poll interval for a time this process saw by polling (the
   * hop happened at most that long before).
   */
  readonly resolutionMs: number;
}

/** One hop as the timeline shows it. */
export interface TimelineHop extends HopClock {
  readonly name: string;
  /** ms since the epoch. */
  readonly at: number;
  readonly detail?: string;
}

/**
 * Lines of the timeline: the hops sorted by `at` (ties keep the chain's order), each as
 * `+12.3 s  name: detail  (source)`, its offset from the hop named `origin` (negative before it;
 * no offset when no hop has that name). A whole-second source's time is shown with `≈`.
 */
export function timelineLines(hops: readonly TimelineHop[], origin: string): string[] {
  const zero = hops.find((h) => h.name === origin)?.at;
  const sorted = hops.map((h, i) => ({ h, i })).sort((a, b) => a.h.at - b.h.at || a.i - b.i).map(({ h }) => h);
  return sorted.map((h) => {
    const offset = zero === undefined ? "" : `${h.at >= zero ? "+" : "-"}${(Math.abs(h.at - zero) / 1000).toFixed(1)} s`;
    const mark = h.resolutionMs >= 1000 ? "≈" : " ";
    return `${mark}${offset.padStart(9)}  ${h.name}${h.detail ? `: ${h.detail}` : ""}  (${h.source})`;
  });
}
