/**
 * The comparison's figures from what it sampled: per arm and pattern, OOM kills, container
 * restarts, Pod replacements, the time from the first sign of pressure to relief, memory slack,
 * the peak limit and the scales made; and the Markdown table of them. Pure: samples in, figures out.
 */

/** One Pod of one workload as one sampling saw it. */
export interface PodSample {
  /** Seconds since the run's start. */
  readonly t: number;
  readonly arm: string;
  readonly pattern: string;
  readonly uid: string;
  /** Its container runs (the Pod Running, the container's state running). */
  readonly running: boolean;
  /** The memory limit the container runs with (its status's resources, else its spec's), bytes. */
  readonly limitBytes: number;
  /** Its working set (cAdvisor's, through Prometheus), bytes; absent when not scraped yet. */
  readonly workingSetBytes?: number;
  readonly restartCount: number;
  /** Why its container last ended (`OOMKilled`, `Error`, …), when it has. */
  readonly lastTerminatedReason?: string;
  /** cAdvisor's container_oom_events_total for its current container: the kernel's OOM kills in it. */
  readonly oomEvents?: number;
}

/** What the figures are read against. */
export interface FigureBasis {
  /** The limit every workload starts at, bytes. */
  readonly startLimitBytes: number;
  /** The working set's share of the start limit that counts as pressure, percent (the threshold). */
  readonly pressurePercent: number;
  /** Seconds between samplings: each sample stands for that long. */
  readonly sampleSeconds: number;
}

/** The figures of one pattern in one arm. */
export interface Figures {
  readonly arm: string;
  readonly pattern: string;
  /** Main processes OOM-killed (a container restarted with reason OOMKilled) plus other processes the kernel killed in a container that lived on. */
  readonly oomKills: number;
  readonly restarts: number;
  /** Pods beyond the first. */
  readonly replacements: number;
  /** Seconds since the start of the first sign of pressure: the working set at the pressure share of the start limit, a restart or an OOM kill. */
  readonly pressureAt?: number;
  /** Seconds since the start at which a running container first had a limit above the start limit. */
  readonly reliefAt?: number;
  /** Σ (limit − working set) over running containers and time, GiB·min. */
  readonly slackGiBMinutes: number;
  readonly peakLimitBytes: number;
  /** How many times the highest limit seen rose. */
  readonly scales: number;
}

const GiB = 2 ** 30;

/**
 * The figures of every arm and pattern in `samples`, in the order the pairs first appear.
 * OOM kills count each restart whose container ended OOMKilled once, and a container's OOM
 * events beyond the one that ended it (a child killed while the container lived on).
 */
export function figures(samples: readonly PodSample[], basis: FigureBasis): Figures[] {
  const groups = new Map<string, PodSample[]>();
  for (const s of samples) {
    const key = `${s.arm}\0${s.pattern}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  return [...groups.values()].map((group) => figuresOf(group, basis));
}

function figuresOf(group: readonly PodSample[], basis: FigureBasis): Figures {
  const sorted = [...group].sort((a, b) => a.t - b.t);
  const first = sorted[0] as PodSample;
  const byPod = new Map<string, PodSample[]>();
  for (const s of sorted) byPod.set(s.uid, [...(byPod.get(s.uid) ?? []), s]);

  let oomKills = 0;
  let restarts = 0;
  for (const pod of byPod.values()) {
    restarts += Math.max(...pod.map((s) => s.restartCount));
    const endedByOom = new Set<number>();
    for (let i = 1; i < pod.length; i++) {
      const [before, after] = [pod[i - 1] as PodSample, pod[i] as PodSample];
      if (after.restartCount > before.restartCount && after.lastTerminatedReason === "OOMKilled") {
        oomKills += after.restartCount - before.restartCount;
        for (let rc = before.restartCount; rc < after.restartCount; rc++) endedByOom.add(rc);
      }
    }
    const eventsByContainer = new Map<number, number>();
    for (const s of pod) eventsByContainer.set(s.restartCount, Math.max(eventsByContainer.get(s.restartCount) ?? 0, s.oomEvents ?? 0));
    for (const [rc, events] of eventsByContainer) oomKills += Math.max(0, events - (endedByOom.has(rc) ? 1 : 0));
  }

  const pressure = (s: PodSample) => s.restartCount > 0 || (s.oomEvents ?? 0) > 0 ||
    (s.running && (s.workingSetBytes ?? 0) >= (basis.pressurePercent / 100) * basis.startLimitBytes);
  const pressureAt = sorted.find(pressure)?.t;
  const reliefAt = sorted.find((s) => s.running && s.limitBytes > basis.startLimitBytes)?.t;

  let slackBytesSeconds = 0;
  let scales = 0;
  let highest = basis.startLimitBytes;
  for (const s of sorted) {
    if (s.running && s.workingSetBytes !== undefined) slackBytesSeconds += Math.max(0, s.limitBytes - s.workingSetBytes) * basis.sampleSeconds;
    if (s.limitBytes > highest) {
      scales++;
      highest = s.limitBytes;
    }
  }
  return {
    arm: first.arm,
    pattern: first.pattern,
    oomKills,
    restarts,
    replacements: Math.max(0, byPod.size - 1),
    ...(pressureAt !== undefined ? { pressureAt } : {}),
    ...(reliefAt !== undefined ? { reliefAt } : {}),
    slackGiBMinutes: slackBytesSeconds / GiB / 60,
    peakLimitBytes: Math.max(...sorted.map((s) => s.limitBytes)),
    scales,
  };
}

/**
 * Pressure to relief as the table says it: seconds; `≤ N s` when both fell in one sampling of
 * `sampleSeconds`; `ahead` (relief first); `none` (no relief); or `no pressure`.
 */
export function reliefText(f: Pick<Figures, "pressureAt" | "reliefAt">, sampleSeconds = 5): string {
  if (f.reliefAt === undefined) return f.pressureAt === undefined ? "no pressure" : "none";
  if (f.pressureAt === undefined || f.reliefAt < f.pressureAt) return "ahead";
  if (f.reliefAt === f.pressureAt) return `≤ ${sampleSeconds} s`;
  return `${Math.round(f.reliefAt - f.pressureAt)} s`;
}

/** The Markdown table of `rows`: one line per pattern and arm, in their order; samplings `sampleSeconds` apart. */
export function figuresTable(rows: readonly Figures[], sampleSeconds = 5): string {
  const lines = [
    "| pattern | arm | OOM kills | restarts | Pod replacements | pressure → relief | slack (GiB·min) | peak limit | scales |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((f) => `| ${f.pattern} | ${f.arm} | ${f.oomKills} | ${f.restarts} | ${f.replacements} | ${reliefText(f, sampleSeconds)} | ${f.slackGiBMinutes.toFixed(2)} | ${Math.round(f.peakLimitBytes / 2 ** 20)}Mi | ${f.scales} |`),
  ];
  return lines.join("\n");
}
