/**
 * Facts the docs state whose home is in code, checked against that home both ways (what the docs
 * leave out, what they add), so a change of either fails here naming the sentence to update:
 *
 * | fact | the docs | its home |
 * | --- | --- | --- |
 * | memory-scaler's outcome reasons | functions/memory-scaler/README.md's reason tables and endpoint table; the examples in README.md and docs/operations.md | `OUTCOME_REASONS`, functions/memory-scaler/outcome.ts |
 * | the AppMonitor's printer columns | README.md's `kubectl get appmonitors` line | scripts/appmonitor-crd.ts |
 * | memory-scaler's modules | its README's "Layout" table | the files under functions/memory-scaler/ |
 * | cold build times | README.md, docs/development.md | test/harness/bins/cold-times.txt (build.sh and the demo read it too) |
 * | the images the stack's registry serves | docs/development.md's registry row | `servedImages`, test/harness/stack/registry.ts |
 * | the Knative versions run, and their release line | README.md, docs/install.md, docs/development.md, DESIGN.md | test/harness/bins/{eventing,serving}/go.mod |
 *
 * The function folders' func.yaml and README.md: test/unit/knative/func-yaml.test.ts.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { OUTCOME_REASONS } from "../../../functions/memory-scaler/outcome.ts";
import { appMonitorCrd } from "../../../scripts/appmonitor-crd.ts";
import { aboutMinutes, coldSecondsOf, coldTimes } from "../../harness/bins/cold-times.ts";
import { binarySetsFor } from "../../../scripts/lib/binaries.ts";
import { servedImages } from "../../harness/stack/registry.ts";
import { VPA_FLAGS } from "../../harness/stack/vpa-manifests.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";

const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");
/** Names in backticks. */
const ticked = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
/** `a` less `b`, sorted: what a comparison both ways reports. */
const less = (a: Iterable<string>, b: Iterable<string>): string[] => {
  const other = new Set(b);
  return [...new Set(a)].filter((x) => !other.has(x)).sort();
};
/** The text of the section headed `heading` (any level), to the next heading of its level or above. */
function section(text: string, heading: string): string {
  const start = text.search(new RegExp(`^(#+) ${heading.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
  assert.ok(start >= 0, `a heading "${heading}"`);
  const level = /^#+/.exec(text.slice(start))?.[0].length ?? 1;
  const body = text.indexOf("\n", start) + 1;
  const end = text.slice(body).search(new RegExp(`^#{1,${level}} `, "m"));
  return end < 0 ? text.slice(start) : text.slice(start, body + end);
}
/** The body rows of every Markdown table in `text` whose header's first cell is `first`, as cells. */
function tableRows(text: string, first: string): string[][] {
  const rows: string[][] = [];
  let inTable = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      inTable = false;
      continue;
    }
    const cells = line.slice(1, line.endsWith("|") ? -1 : undefined).split(/(?<!\\)\|/).map((c) => c.trim());
    if (!inTable && cells[0] === first) inTable = true;
    else if (inTable && !/^-+$/.test(cells[0] ?? "")) rows.push(cells);
  }
  return rows;
}

describe("memory-scaler's outcome reasons in its README", () => {
  const readme = read("functions/memory-scaler/README.md");
  const endpoint = section(readme, "Endpoint");
  const inTables = tableRows(endpoint, "reason").flatMap((row) => ticked(row[0] ?? ""));
  const answered = [...endpoint.matchAll(/`X-Appmonitor-Reason: (\w+)`/g)].map((m) => m[1] as string);

  it("names every reason in a table of its Endpoint section", () => {
    assert.deepEqual(less(OUTCOME_REASONS, [...inTables, ...answered]), [], "reasons of outcome.ts that no table names");
  });

  it("names no reason in those tables that outcome.ts does not define", () => {
    assert.deepEqual(less(inTables, OUTCOME_REASONS), []);
  });

  it("gives only real reasons as examples (README.md, docs/operations.md)", () => {
    const examples = [
      ...ticked(/log line name the reason\s+\(([^)]+)\)/.exec(read("README.md"))?.[1] ?? ""),
      ...ticked(/give the reason \(([\s\S]+?); the full table/.exec(read("docs/operations.md"))?.[1] ?? "").filter((name) => /^[A-Z]\w+$/.test(name) && name !== "Conflict"),
    ];
    assert.ok(examples.length >= 5, "the examples are found");
    assert.deepEqual(less(examples, OUTCOME_REASONS), []);
  });
});

describe("the printer columns in README.md", () => {
  it("are the CRD generator's, in its order", () => {
    const line = /kubectl get appmonitors -A\s+# (.+)$/m.exec(read("README.md"))?.[1];
    assert.ok(line !== undefined, "README.md's `kubectl get appmonitors -A` line lists the columns");
    const crd = appMonitorCrd() as { spec: { versions: { additionalPrinterColumns: { name: string }[] }[] } };
    assert.deepEqual(line.split(",").map((c) => c.trim()), crd.spec.versions[0]?.additionalPrinterColumns.map((c) => c.name));
  });
});

describe("memory-scaler's Layout table", () => {
  const dir = join(repoRoot, "functions/memory-scaler");
  /** Every module under the folder, by its path from it. */
  const modules = (function walk(at: string): string[] {
    return readdirSync(at, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(at, e.name)) : e.name.endsWith(".ts") ? [relative(dir, join(at, e.name))] : []));
  })(dir);
  /**
   * The modules the table names, by their path from the folder: a row of files names them in its
   * first cell; a row of a folder (`scale/`) names its files in the second, by their path from it
   * (`flow.ts`; after a split, `decide/decide.ts`). Paths out of the folder (`../`) are references.
   */
  const named = tableRows(section(read("functions/memory-scaler/README.md"), "Layout"), "where").flatMap(([where = "", what = ""]) => {
    const first = ticked(where);
    const folder = first.length === 1 && first[0]?.endsWith("/") === true ? first[0] : undefined;
    if (folder === undefined) return first;
    return ticked(what).filter((name) => name.endsWith(".ts") && !name.startsWith("../") && !name.includes("functions/")).map((name) => `${folder}${name}`);
  });

  it("names every module, by its path", () => {
    assert.deepEqual(less(modules, named), [], "modules the Layout table does not name (a folder's row names them by their path from it)");
  });

  it("names no module that is not there", () => {
    assert.deepEqual(less(named, modules), []);
  });
});

describe("cold build times (test/harness/bins/cold-times.txt)", () => {
  const times = coldTimes();
  const binaries = aboutMinutes(times.binaries.seconds);
  const images = aboutMinutes(times.images.seconds);
  /** What `npm run demo` builds: the real node and Eventing (test/harness/demo/demo.ts). */
  const demoSets = binarySetsFor({ realNode: true, eventing: true });
  const demo = aboutMinutes(coldSecondsOf(times, demoSets));

  it("README.md quotes them", () => {
    const quoted = /the cluster binaries it needs \(about ([\d½]+) minutes, once\) and the images \(about ([\d½]+) minutes cold\)/.exec(read("README.md").replace(/\s+/g, " "));
    assert.ok(quoted !== null, "README.md's sentence on the demo's cold build: \"the cluster binaries it needs (about N minutes, once) and the images (about M minutes cold)\"");
    assert.deepEqual({ binaries: quoted[1], images: quoted[2] }, { binaries: demo, images }, "README.md's cold build times");
  });

  it("docs/development.md quotes them, with the number of sets", () => {
    const words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"];
    const quoted = /\((\w+) of build\.sh's (\w+) sets, about ([\d½]+) minutes on two cores, once; [^)]*builds all \w+, about ([\d½]+) minutes\), then the base, function and memhog images and their archives \(about ([\d½]+) minutes cold/.exec(read("docs/development.md").replace(/\s+/g, " "));
    assert.ok(quoted !== null, "docs/development.md's sentence on the cold build: \"(N of build.sh's M sets, about N minutes on two cores, once; … builds all M, about N minutes), then … (about M minutes cold\"");
    assert.deepEqual(
      { demoSets: quoted[1], sets: quoted[2], demo: quoted[3], binaries: quoted[4], images: quoted[5] },
      { demoSets: words[demoSets.length], sets: words[times.sets.length], demo, binaries, images },
      "docs/development.md's cold build times",
    );
  });

  it("has one line per set, each a folder of test/harness/bins/ that build.sh builds", () => {
    const folders = readdirSync(join(repoRoot, "test/harness/bins"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    assert.deepEqual(times.sets.map((s) => s.name).sort(), folders.sort());
    const script = ["build.sh", "eventing.sh", "serving.sh"].map((f) => read(`test/harness/bins/${f}`)).join("\n");
    assert.deepEqual(less(times.sets.map((s) => s.name), [...script.matchAll(/build_set (\w+)|step_of (\w+)\)/g)].map((m) => (m[1] ?? m[2]) as string)), []);
  });
});

describe("the images the stack's registry serves (docs/development.md)", () => {
  const served = servedImages({ APPMONITOR_CACHE: "/cache" });
  const row = tableRows(read("docs/development.md"), "part").find((cells) => cells[0] === "registry")?.[1] ?? "";

  it("are named, each by its reference, the functions by their pattern and names", () => {
    const functions = served.filter((i) => i.reference.startsWith("ghcr.io/kubedemo/appmonitor-"));
    const others = served.filter((i) => !functions.includes(i));
    const listed = /`ghcr\.io\/kubedemo\/appmonitor-<function>:latest` \(([^)]+)\)/.exec(row)?.[1] ?? "";
    assert.deepEqual(less(others.map((i) => i.reference), ticked(row)), [], "memhog's reference");
    assert.deepEqual(ticked(listed).sort(), functions.map((i) => i.name).sort(), "the functions whose images it serves");
    assert.ok(functions.every((i) => i.reference === `ghcr.io/kubedemo/appmonitor-${i.name}:latest`));
  });

  it("are counted right", () => {
    const words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
    const functions = served.filter((i) => i.reference.startsWith("ghcr.io/kubedemo/appmonitor-")).length;
    assert.match(row, new RegExp(`and the ${words[functions]} \`ghcr\\.io/kubedemo/appmonitor-<function>:latest\``));
  });
});

describe("the Knative versions run (test/harness/bins/{eventing,serving}/go.mod)", () => {
  const pinned = (set: string, module: string): string => {
    const version = new RegExp(`^\\s*(?:require )?${module.replace(/\./g, "\\.")} (v\\d+\\.\\d+\\.\\d+)`, "m").exec(read(`test/harness/bins/${set}/go.mod`))?.[1];
    assert.ok(version !== undefined, `${module} pinned in test/harness/bins/${set}/go.mod`);
    return version;
  };
  const eventing = pinned("eventing", "knative.dev/eventing");
  const serving = pinned("serving", "knative.dev/serving");
  /**
   * The release line of a Knative module version: the modules of knative-v1.N are tagged
   * v0.(N+27) (knative-v1.0.0 is eventing and serving v0.27.0).
   */
  const line = (version: string): string => `knative-v1.${Number(version.split(".")[1]) - 27}`;
  const docs = ["README.md", "DESIGN.md", "docs/install.md", "docs/development.md"].map((file) => ({ file, text: read(file).replace(/\s+/g, " ") }));

  it("are the pinned ones wherever the docs name a version", () => {
    const wrong = docs.flatMap(({ file, text }) => [
      ...[...text.matchAll(/Eventing (v\d+\.\d+\.\d+)/g)].filter((m) => m[1] !== eventing).map((m) => `${file}: ${m[0]} where ${eventing} is pinned`),
      ...[...text.matchAll(/Serving (v\d+\.\d+\.\d+)/g)].filter((m) => m[1] !== serving).map((m) => `${file}: ${m[0]} where ${serving} is pinned`),
      ...[...text.matchAll(/knative-(eventing|serving)\/[^` ]*:(v\d+\.\d+\.\d+)/g)].filter((m) => m[2] !== (m[1] === "eventing" ? eventing : serving)).map((m) => `${file}: ${m[0]}`),
    ]);
    assert.deepEqual(wrong, []);
  });

  it("are of the release line the docs name", () => {
    assert.equal(line(eventing), line(serving), "Eventing and Serving of one line");
    const named = docs.flatMap(({ file, text }) => [...text.matchAll(/knative-v1\.\d+/g)].map((m) => ({ file, line: m[0] })));
    assert.ok(named.length >= 2, "README.md and docs/install.md name the line");
    assert.deepEqual(named.filter((n) => n.line !== line(eventing)).map((n) => `${n.file}: ${n.line} where ${eventing} is ${line(eventing)}`), []);
  });
});

describe("the VPA's flags (docs/development.md, \"The VPA on the real node\")", () => {
  it("are listed as vpa-manifests.ts sets them: each deployment, flag, value, default and why", () => {
    const rows = tableRows(section(read("docs/development.md"), "The VPA on the real node"), "deployment");
    assert.deepEqual(rows, VPA_FLAGS.map((f) => [`\`${f.deployment}\``, `\`${f.flag}\``, f.value, f.upstreamDefault, f.why]));
  });
});
