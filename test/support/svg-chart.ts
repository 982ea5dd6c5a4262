/**
 * A line chart of measured costs against a size, as SVG text, drawn by Vega-Lite and Vega's
 * headless SVG string renderer (https://vega.github.io/vega/usage/#node): no browser and no
 * native canvas (without one Vega estimates text widths, which only moves labels a little).
 */
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";

/** One measured point: `value` (in the chart's unit) of the cost `series` at `size`. */
export interface ChartPoint {
  readonly series: string;
  readonly size: number;
  readonly value: number;
}

/**
 * Renders `points` as one line per series, both axes on a log scale (sizes that grow ×10 and
 * costs that span orders of magnitude). Points whose value is not positive are left out (a log
 * scale has no place for them).
 *
 * @param points the measurements.
 * @param labels the title and the axis titles, e.g. `{ title, x: "AppMonitors", y: "ms" }`.
 * @returns the SVG document's text.
 */
export async function lineChartSvg(points: readonly ChartPoint[], labels: { title: string; x: string; y: string }): Promise<string> {
  const spec: TopLevelSpec = {
    title: labels.title,
    width: 560,
    height: 360,
    data: { values: points.filter((p) => p.value > 0).map((p) => ({ ...p })) },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "size", type: "quantitative", title: labels.x, scale: { type: "log" }, axis: { values: [...new Set(points.map((p) => p.size))] } },
      y: { field: "value", type: "quantitative", title: labels.y, scale: { type: "log" } },
      color: { field: "series", type: "nominal", title: null, legend: { orient: "bottom", columns: 1, labelLimit: 0 } },
    },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** One point of a series over time: `value` of `series` (`line` of it: limit or working set) at `minute`, in panel `panel`. */
export interface TimePoint {
  readonly panel: string;
  readonly series: string;
  readonly line: string;
  readonly minute: number;
  readonly value: number;
}

/**
 * Renders `points` as one panel per `panel` value (in their first-seen order, two columns, each
 * with its own y axis), one colour per series and one dash per line, linear axes: memory and limit
 * over time.
 *
 * @param points the samples.
 * @param labels the title and the axis titles, e.g. `{ title, x: "minutes", y: "MiB" }`.
 * @returns the SVG document's text.
 */
export async function timeSeriesSvg(points: readonly TimePoint[], labels: { title: string; x: string; y: string }): Promise<string> {
  const panels = [...new Set(points.map((p) => p.panel))];
  const spec: TopLevelSpec = {
    title: labels.title,
    data: { values: points.map((p) => ({ ...p, order: panels.indexOf(p.panel) })) },
    facet: { field: "panel", type: "nominal", title: null, sort: { field: "order", op: "min" } },
    columns: 2,
    // Each panel its own memory axis: one pattern that grows without end would flatten the rest.
    resolve: { scale: { y: "independent" } },
    spec: {
      width: 320,
      height: 160,
      mark: { type: "line", interpolate: "step-after" },
      encoding: {
        x: { field: "minute", type: "quantitative", title: labels.x },
        y: { field: "value", type: "quantitative", title: labels.y },
        color: { field: "series", type: "nominal", title: null, legend: { orient: "bottom" } },
        strokeDash: { field: "line", type: "nominal", title: null, legend: { orient: "bottom" } },
        detail: { field: "series", type: "nominal" },
      },
    },
  };
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
