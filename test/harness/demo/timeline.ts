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
   * hop happened at or before it: an upper bound, since a poll may begin only once an earlier hop
   * was seen).
   */
  readonly resolutionMs: number;
}

/** Whether any hop's clock writes whole seconds, so that the timeline's legend need explain `≈`. */
export function hasWholeSecondClock(hops: readonly HopClock[]): boolean {
  return hops.some((h) => h.resolutionMs >= 1000);
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
    // The sign of the rounded figure: a hop 40 ms before the origin is "+0.0", never "-0.0".
    const tenths = zero === undefined ? 0 : Math.round((h.at - zero) / 100);
    const offset = zero === undefined ? "" : `${tenths >= 0 ? "+" : "-"}${(Math.abs(tenths) / 10).toFixed(1)} s`;
    const mark = h.resolutionMs >= 1000 ? "≈" : " ";
    return `${mark}${offset.padStart(9)}  ${h.name}${h.detail ? `: ${h.detail}` : ""}  (${h.source})`;
  });
}
