// `npm run rules` as a process: output, exit codes and messages for bad input.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { runCommand, type CommandResult } from "../support/run-command.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const cli = path.join(repoRoot, "functions/rule-sync/rules-cli.ts");
const example = path.join(repoRoot, "knative/examples/appmonitor.yaml");
const memhog = path.join(repoRoot, "knative/examples/memhog.yaml");

/** The script `npm run rules` runs, with the same Node. */
const rules = (...args: string[]): Promise<CommandResult> => runCommand(process.execPath, [cli, ...args], { cwd: repoRoot });

let dir: TempDir;
before(async () => {
  dir = await tempDir("rules-cli");
});
after(async () => {
  await dir.remove();
});

async function file(name: string, text: string): Promise<string> {
  const p = path.join(dir.path, name);
  await writeFile(p, text);
  return p;
}

interface RulesFile {
  groups: { name: string; rules: { alert: string; expr: string; for: string; labels: Record<string, string> }[] }[];
}

describe("npm run rules", () => {
  test("several files, other kinds ignored, one group per AppMonitor in order", async () => {
    const extra = await file(
      "two.yaml",
      [
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}",
        "apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata: {name: shop-monitor, namespace: shop}\nspec: {memThresholdPercent: 90, memMultiplier: 1.5, forSeconds: 30}",
      ].join("\n---\n"),
    );
    const result = await rules(memhog, example, extra);
    assert.equal(result.code, 0, result.stderr);
    const parsed = parse(result.stdout) as RulesFile;
    assert.deepEqual(
      parsed.groups.map((g) => [g.name, g.rules[0]?.for, g.rules[0]?.labels.appmonitor]),
      [
        ["appmonitor/default/mymonitor", "60s", "mymonitor"],
        ["appmonitor/shop/shop-monitor", "30s", "shop-monitor"],
      ],
    );
  });

  const options: [string, string[], (r: RulesFile) => void][] = [
    ["--source kube-state-metrics", ["--source", "kube-state-metrics"], (r) => assert.match(r.groups[0]?.rules[0]?.expr ?? "", /kube_pod_container_resource_limits\{namespace="default", resource="memory"/)],
    ["--severity critical", ["--severity", "critical"], (r) => assert.equal(r.groups[0]?.rules[0]?.labels.severity, "critical")],
    ["--namespace apps", ["--namespace", "apps"], (r) => assert.equal(r.groups[0]?.name, "appmonitor/apps/mymonitor")],
  ];
  for (const [name, args, check] of options) {
    test(name, async () => {
      const result = await rules(...args, example);
      assert.equal(result.code, 0, result.stderr);
      check(parse(result.stdout) as RulesFile);
    });
  }

  test("an unknown spec field is named on stderr, as kubectl warns, and the rules are still printed", async () => {
    const typo = await file(
      "typo.yaml",
      "apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata: {name: m, namespace: ns}\nspec: {memThresholdPercent: 75, memMultiplier: 2, forSecond: 30, selector: {matchExpressions: [{key: k, operator: Exists, value: [x]}]}}\n",
    );
    const result = await rules(typo);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stderr,
      [
        `rules: warning: ${typo}: document 1 (AppMonitor ns/m): unknown field "spec.forSecond"`,
        `rules: warning: ${typo}: document 1 (AppMonitor ns/m): unknown field "spec.selector.matchExpressions[0].value"`,
        "",
      ].join("\n"),
    );
    assert.equal((parse(result.stdout) as RulesFile).groups[0]?.rules[0]?.for, "60s", "the misspelt field has no effect");
  });

  test("a known AppMonitor prints no warning", async () => {
    const result = await rules(example);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
  });

  const failures: [string, () => Promise<string[]>, number, RegExp][] = [
    [
      "an invalid AppMonitor names file, document and field",
      async () => [await file("bad.yaml", "kind: ConfigMap\n---\napiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata: {name: m, namespace: ns}\nspec: {memThresholdPercent: 150, memMultiplier: 2}\n")],
      1,
      /^rules: .*bad\.yaml: document 2 \(AppMonitor ns\/m\): spec\.memThresholdPercent: must be <= 100\n$/,
    ],
    [
      "a hostile selector value is refused with its field",
      async () => [
        "--source",
        "kube-state-metrics",
        await file("hostile.yaml", 'apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata: {name: m}\nspec: {memThresholdPercent: 75, memMultiplier: 2, selector: {matchLabels: {app: "x\\"} or vector(1) #"}}}\n'),
      ],
      1,
      /hostile\.yaml: document 1 \(AppMonitor default\/m\): spec\.selector\.matchLabels\["app"\]: not a valid Kubernetes label value/,
    ],
    ["YAML syntax error", async () => [await file("syntax.yaml", "a: [\n")], 1, /syntax\.yaml: document 1: invalid YAML at line/],
    ["the same AppMonitor twice", async () => [example, example], 1, /the same AppMonitor is already in .*appmonitor\.yaml document 1/],
    ["no AppMonitor at all", async () => [memhog], 1, /no AppMonitor \(kubedemo\.com\/v1\) in .*memhog\.yaml/],
    ["a missing file", async () => [path.join(dir.path, "absent.yaml")], 1, /absent\.yaml: cannot read: ENOENT/],
    ["no file", async () => [], 2, /no FILE given\nusage: npm run rules --/],
    ["unknown source", async () => ["--source", "statsd", example], 2, /--source: must be one of cadvisor, kube-state-metrics, got "statsd"/],
    ["unknown option", async () => ["--frobnicate", example], 2, /usage: npm run rules --/],
    ["invalid --namespace", async () => ["--namespace", "A_B", example], 2, /--namespace must be a DNS label/],
  ];
  for (const [name, args, code, message] of failures) {
    test(`fails: ${name}`, async () => {
      const result = await rules(...(await args()));
      assert.equal(result.code, code, result.stderr);
      assert.equal(result.stdout, "");
      assert.match(result.stderr, message);
    });
  }
});
