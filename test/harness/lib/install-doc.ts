/**
 * What docs/install.md tells a user to run, read from it, so the stack configures what a user
 * copies and nothing else: the kube-prometheus-stack values that route the alerts (the one YAML
 * block of the page that sets `alertmanager`).
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import type { Value } from "./helm-values.ts";

/** The page. */
export const INSTALL_DOC = path.join(repoRoot, "docs", "install.md");

/** Every fenced ```yaml block of a Markdown text, its indentation removed. */
export function yamlBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```yaml\s*$/.exec(lines[i] ?? "");
    if (!open) continue;
    const indent = open[1]?.length ?? 0;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ""); i++) body.push((lines[i] ?? "").slice(indent));
    blocks.push(`${body.join("\n")}\n`);
  }
  return blocks;
}

/** The kube-prometheus-stack values docs/install.md gives, as text and parsed. @throws Error unless exactly one block sets `alertmanager`. */
export async function documentedKubePrometheusStackValues(): Promise<{ text: string; values: { alertmanager: { config: Value; alertmanagerSpec?: { secrets?: string[] } } } }> {
  const found = yamlBlocks(await readFile(INSTALL_DOC, "utf8")).filter((text) => /^alertmanager:$/m.test(text));
  const [text, ...more] = found;
  if (text === undefined || more.length > 0) throw new Error(`${INSTALL_DOC}: ${found.length} YAML blocks set alertmanager, not one`);
  return { text, values: parse(text) as { alertmanager: { config: Value; alertmanagerSpec?: { secrets?: string[] } } } };
}
