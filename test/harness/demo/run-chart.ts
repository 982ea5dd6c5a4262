/**
 * The picture of one demo run: memhog's working set and memory limit over time as Prometheus
 * scraped them, the AppMonitor's threshold (its percent of the limit), and a rule at each hop of
 * the chain (the crossing, the alert firing, the patch, the new Pod), seconds counted from the
 * crossing. Drawn by Vega-Lite and Vega's headless SVG renderer (`test/support/svg-chart.ts` does
 * the same for the benchmarks). {@link runChartSpec} is pure; {@link runChartSvg} renders it.
 */
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import type { ChainResult } from "./chain.ts";

/** One sample of a series: seconds from the crossing, MiB. */
export interface RunSample {
  readonly series: "working set" | "limit" | "threshold";
  /** The Pod it was scraped from (the old one, then the new one). */
  readonly pod: string;
  readonly t: number;
  readonly mib: number;
}

/** A hop drawn as a vertical rule: seconds from the crossing and its short label. */
export interface RunMark {
  readonly t: number;
  readonly label: string;
}

/** What the chart shows. */
export interface RunChartInput {
  readonly title: string;
  readonly samples: readonly RunSample[];
  readonly marks: readonly RunMark[];
}

/** The hops the chart marks, by the chain's hop name, with the label drawn. */
export const MARKED_HOPS: Readonly<Record<string, string>> = {
  "usage crossed the threshold": "crossed",
  "alert firing in Prometheus": "firing",
  "Deployment patched by memory-scaler": "patched",
  "new Pod Running, old Pod gone": "new Pod",
};

/** The plot's width, px. */
const WIDTH = 640;
/** A label's width per character and its line's height, px (Vega's default 11 px font, with room). */
const LABEL_CHAR_PX = 6.5;
const LABEL_LINE_PX = 13;
/** Its offset from its rule, and the room kept before the next label of its row, px. */
const LABEL_DX_PX = 3;
const LABEL_GAP_PX = 6;

/**
 * Each mark's row of labels, in `marks`' order, 0 the lowest: taken by time, a label goes on the
 * lowest row whose last label ends before it starts, so labels of hops at near-equal times stand
 * one above the other instead of over each other.
 * @param pxPerSecond the x scale's pixels per second.
 */
export function labelRows(marks: readonly RunMark[], pxPerSecond: number): number[] {
  const rows: number[] = new Array<number>(marks.length).fill(0);
  const rowEnds: number[] = [];
  const byTime = marks.map((m, i) => ({ m, i })).sort((a, b) => a.m.t - b.m.t || a.i - b.i);
  for (const { m, i } of byTime) {
    const start = m.t * pxPerSecond;
    const free = rowEnds.findIndex((end) => end <= start);
    const row = free === -1 ? rowEnds.length : free;
    rowEnds[row] = start + LABEL_DX_PX + m.label.length * LABEL_CHAR_PX + LABEL_GAP_PX;
    rows[i] = row;
  }
  return rows;
}

/**
 * The Vega-Lite spec: one line per series and Pod (colour by series, the Pods as separate lines so
 * the old and new Pod's samples are not joined), the threshold dashed, a rule and label per mark,
 * the labels above the plot in the rows {@link labelRows} gives them. The x scale spans the data
 * exactly, so a label's place in pixels is known.
 */
export function runChartSpec(input: RunChartInput): TopLevelSpec {
  const times = [...input.samples.map((s) => s.t), ...input.marks.map((m) => m.t)];
  const domain = times.length === 0 ? [0, 1] : [Math.min(...times), Math.max(...times)];
  const span = Math.max((domain[1] as number) - (domain[0] as number), 1);
  const rows = labelRows(input.marks.map((m) => ({ ...m, t: m.t - (domain[0] as number) })), WIDTH / span);
  const x = { field: "t", type: "quantitative" as const, title: "seconds from the crossing", scale: { domain, nice: false, zero: false } };
  return {
    title: input.title,
    width: WIDTH,
    height: 320,
    layer: [
      {
        data: { values: input.samples.map((s) => ({ ...s })) },
        mark: { type: "line", interpolate: "step-after" },
        encoding: {
          x,
          y: { field: "mib", type: "quantitative", title: "MiB" },
          color: { field: "series", type: "nominal", title: null, scale: { domain: ["working set", "limit", "threshold"], range: ["#1f77b4", "#d62728", "#ff7f0e"] }, legend: { orient: "bottom" } },
          strokeDash: { condition: { test: "datum.series === 'threshold'", value: [6, 4] }, value: [1, 0] },
          detail: { field: "pod" },
        },
      },
      {
        data: { values: input.marks.map((m, i) => ({ ...m, row: rows[i] })) },
        layer: [
          { mark: { type: "rule", color: "#888", strokeDash: [2, 2] }, encoding: { x } },
          {
            mark: { type: "text", align: "left", dx: LABEL_DX_PX, dy: { expr: `-4 - datum.row * ${LABEL_LINE_PX}` }, baseline: "bottom", angle: 0, color: "#444" },
            encoding: { x, y: { value: 0 }, text: { field: "label" } },
          },
        ],
      },
    ],
  };
}

/** The SVG text of {@link runChartSpec}. */
export async function runChartSvg(input: RunChartInput): Promise<string> {
  const view = new vega.View(vega.parse(compile(runChartSpec(input)).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * The chart's data from a chain's result: its memory samples in MiB and seconds from the hop
 * `origin` (the crossing), the threshold at the AppMonitor's percent of each limit sample, and the
 * {@link MARKED_HOPS}; undefined when the result has no memory samples or no such hop.
 */
export function runChartInput(result: Pick<ChainResult, "memory" | "before" | "after"> & { readonly hops: readonly { readonly name: string; readonly at: number }[] }, origin: string): RunChartInput | undefined {
  const at = result.hops.find((h) => h.name === origin)?.at;
  if (at === undefined || result.memory === undefined || result.memory.samples.length === 0) return undefined;
  const { samples, thresholdPercent } = result.memory;
  const t = (ms: number) => Math.round((ms - at) / 100) / 10;
  const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
  const drawn: RunSample[] = samples.flatMap((s) => {
    const sample: RunSample = { series: s.series, pod: s.pod, t: t(s.at), mib: mib(s.bytes) };
    return s.series === "limit" ? [sample, { ...sample, series: "threshold" as const, mib: mib((s.bytes * thresholdPercent) / 100) }] : [sample];
  });
  const marks = result.hops.filter((h) => MARKED_HOPS[h.name] !== undefined).map((h) => ({ t: t(h.at), label: MARKED_HOPS[h.name] as string }));
  return { title: `memhog: limit ${result.before.limit} → ${result.after.limit}, threshold ${thresholdPercent}%`, samples: drawn, marks };
}
