// Every reference of the form `"<heading>", step N` (in the docs, the chart's NOTES, knative/ and
// the code) names a heading of one documentation page whose section has a step N, so a renumbered
// or removed step cannot leave a reference behind; and no reference names a step without its
// section (install.md's step numbers alone).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "../../../scripts/lib/paths.ts";

const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: repoRoot, encoding: "utf8" })
  .split("\0").filter((f) => /\.(md|ts|ya?ml|txt|tpl)$/.test(f) && !f.startsWith("node_modules"));
const pages = files.filter((f) => f.endsWith(".md"));

/** The numbered steps (`1.`, `5a.`, at the line's start) of the section under `heading` in `page`, or undefined without that heading. */
function stepsUnder(page: string, heading: string): number[] | undefined {
  const lines = readFileSync(path.join(repoRoot, page), "utf8").split("\n");
  const start = lines.findIndex((l) => new RegExp(`^#+ ${heading.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`).test(l));
  if (start < 0) return undefined;
  const level = /^#+/.exec(lines[start] ?? "")?.[0].length ?? 0;
  const steps: number[] = [];
  for (const line of lines.slice(start + 1)) {
    const h = /^(#+) /.exec(line);
    if (h && (h[1]?.length ?? 0) <= level) break;
    const n = /^(\d+)[a-z]?\. /.exec(line);
    if (n) steps.push(Number(n[1]));
  }
  return steps;
}

test("each \"<heading>\", step N names a heading of one page with that step", () => {
  const problems: string[] = [];
  for (const file of files) {
    const text = readFileSync(path.join(repoRoot, file), "utf8");
    for (const m of text.matchAll(/"([A-Z][^"\n]{2,60})", steps? (\d+)(?:[a-z])?(?:[–-](\d+))?/g)) {
      const [, heading = "", first = "", last] = m;
      let found = pages.map((page) => [page, stepsUnder(page, heading)] as const).filter(([, steps]) => steps !== undefined);
      // Several pages have it ("What it does"): the README nearest the file is the one meant.
      const own = found.filter(([page]) => file.startsWith(path.dirname(page) + "/")).sort(([a], [b]) => b.length - a.length);
      if (found.length > 1 && own.length > 0) found = own.slice(0, 1);
      if (found.length !== 1) {
        problems.push(`${file}: "${heading}" is a heading of ${found.length} pages`);
        continue;
      }
      const [page, steps] = found[0] as readonly [string, number[]];
      for (const n of [Number(first), ...(last === undefined ? [] : [Number(last)])]) if (!steps.includes(n)) problems.push(`${file}: ${page} "${heading}" has no step ${n}`);
    }
  }
  assert.deepEqual(problems, []);
});

test("no step is named without its section", () => {
  const bare = files.filter((f) => f !== "test/unit/docs/step-references.test.ts").flatMap((file) => [...readFileSync(path.join(repoRoot, file), "utf8").matchAll(/install(?:\.md)?,? step \d+/g)].map((m) => `${file}: ${m[0]}`));
  assert.deepEqual(bare, []);
});
