/** Reading one sample from a Prometheus text exposition (https://prometheus.io/docs/instrumenting/exposition_formats/). */

/**
 * Sum of the samples of `name` whose labels include every pair in `labels`; 0 when none.
 * Handles the simple `name{a="b",…} value` lines prom-client and Alertmanager write.
 */
export function sampleSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = new Map<string, string>();
    for (const pair of (match[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) present.set(pair[1] ?? "", pair[2] ?? "");
    if (Object.entries(labels).every(([key, value]) => present.get(key) === value)) sum += Number(match[4]);
  }
  return sum;
}

/** Fetches `url` and returns {@link sampleSum} of its text. */
export async function scrape(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const response = await fetch(url);
  return sampleSum(await response.text(), name, labels);
}
