/**
 * What a user's Helm values make of a chart's: Helm's coalescing (helm.sh/helm/v3
 * pkg/chartutil/coalesce.go, https://helm.sh/docs/chart_template_guide/values_files/), where maps
 * merge key by key, anything else (a list included) replaces the chart's, and a null removes the
 * chart's key. So the stack applies a documented values file as `helm upgrade -f` would, lists
 * and all, instead of merging them in code.
 */

/** A YAML value. */
export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

const isMap = (v: unknown): v is { [key: string]: Value } => v !== null && typeof v === "object" && !Array.isArray(v);

/** `user`'s values over `chart`'s, as Helm coalesces them. Pure: neither argument changes. */
export function coalesceValues(chart: Value, user: Value): Value {
  if (!isMap(chart) || !isMap(user)) return structuredClone(user);
  const out: { [key: string]: Value } = structuredClone(chart);
  for (const [key, value] of Object.entries(user)) {
    if (value === null) delete out[key];
    else out[key] = key in chart ? coalesceValues(chart[key] as Value, value) : structuredClone(value);
  }
  return out;
}
