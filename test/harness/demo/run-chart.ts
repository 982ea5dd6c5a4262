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

/**
 * The Vega-Lite spec: one line per series and Pod (colour by series, the Pods as separate lines so
 * the old and new Pod's samples are not joined), the threshold dashed, a rule and label per mark.
 */
export function runChartSpec(input: RunChartInput): TopLevelSpec {
  const x = { field: "t", type: "quantitative" as const, title: "seconds from the crossing" };
  return {
    title: input.title,
    width: 640,
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
        data: { values: input.marks.map((m) => ({ ...m })) },
        layer: [
          { mark: { type: "rule", color: "#888", strokeDash: [2, 2] }, encoding: { x } },
          { mark: { type: "text", align: "left", dx: 3, dy: -4, baseline: "bottom", angle: 0, color: "#444" }, encoding: { x, y: { value: 0 }, text: { field: "label" } } },
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
