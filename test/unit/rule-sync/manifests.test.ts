// Reading AppMonitors out of manifest YAML for `npm run rules`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { validateAppMonitorSpec } from "../../../functions/lib/appmonitor-spec.ts";
import { ManifestError, readAppMonitors, unknownFields } from "../../../functions/rule-sync/manifests.ts";

const example = readFileSync(new URL("../../../knative/examples/appmonitor.yaml", import.meta.url), "utf8");
const memhog = readFileSync(new URL("../../../knative/examples/memhog.yaml", import.meta.url), "utf8");

const am = (name: string, spec: string, namespace?: string): string =>
  `apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata:\n  name: ${name}\n${namespace === undefined ? "" : `  namespace: ${namespace}\n`}spec: ${spec}\n`;

describe("unknownFields (what kubectl's field validation would warn about)", () => {
  const cases: [string, string, string[]][] = [
    ["the original demo", example, []],
    ["every spec field, selector and status", "apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata: {name: a, namespace: n, labels: {x: y}, annotations: {k: v}, uid: u, resourceVersion: '1'}\nspec: {memThresholdPercent: 75, memMultiplier: 2, selector: {matchLabels: {app: x}, matchExpressions: [{key: k, operator: In, values: [v]}]}, containers: [app], maxMemory: 1Gi, forSeconds: 1, cooldownSeconds: 2, mode: DryRun}\nstatus: {anything: goes}\n", []],
    ["a misspelt spec field", "kind: AppMonitor\nspec: {memThresholdPercent: 75, foo: 1}\n", ["spec.foo"]],
    ["nested in the selector and in an expression", "kind: AppMonitor\nspec: {selector: {matchLabel: {a: b}, matchExpressions: [{key: k, operator: Exists}, {key: k, operator: Exists, value: [x]}]}}\n", ["spec.selector.matchLabel", "spec.selector.matchExpressions[1].value"]],
    ["any key under matchLabels is a label, not a field", "kind: AppMonitor\nspec: {selector: {matchLabels: {foo: bar, app.kubernetes.io/name: x}}}\n", []],
    ["a key that needs quoting", "kind: AppMonitor\nspec: {'mem threshold': 1}\n", ['spec["mem threshold"]']],
    ["top level and metadata", "apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetdata: {}\nmetadata: {name: a, label: {}}\nspec: {}\n", ["metdata", "metadata.label"]],
    ["a spec that is not an object has no fields to judge", "kind: AppMonitor\nspec: [1]\n", []],
  ];
  for (const [name, text, expected] of cases) {
    test(`${name} → ${expected.length === 0 ? "none" : expected.join(", ")}`, () => {
      assert.deepEqual(unknownFields(parse(text) as Record<string, unknown>), expected);
    });
  }
});

describe("readAppMonitors", () => {
  test("the original demo's AppMonitor: default namespace, spec defaults applied", () => {
    const found = readAppMonitors(example, "appmonitor.yaml", "default");
    assert.equal(found.length, 1);
    assert.deepEqual(found[0], {
      file: "appmonitor.yaml",
      document: 1,
      appMonitor: {
        apiVersion: "kubedemo.com/v1",
        kind: "AppMonitor",
        metadata: { name: "mymonitor", namespace: "default" },
        // The defaults, as validateAppMonitorSpec writes them (its own tests list them).
        spec: validateAppMonitorSpec({ memThresholdPercent: 75, memMultiplier: 2 }),
      },
      unknownFields: [],
    });
  });

  test("fields the API server would drop are listed with the AppMonitor, not refused", () => {
    const [found] = readAppMonitors(am("a", "{memThresholdPercent: 75, memMultiplier: 2, forSecond: 30}"), "typo.yaml", "default");
    assert.deepEqual(found?.unknownFields, ["spec.forSecond"]);
    assert.equal(found?.appMonitor.spec.forSeconds, 60, "the misspelt field does not count");
  });

  test("other kinds and empty documents are ignored; document numbers count every document", () => {
    const text = [memhog, "", am("a", "{memThresholdPercent: 80, memMultiplier: 1.5}", "ns1"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", am("b", "{memThresholdPercent: 90, memMultiplier: 2, forSeconds: 5}")].join("\n---\n");
    const found = readAppMonitors(text, "all.yaml", "fallback");
    assert.deepEqual(
      found.map((f) => [f.document, f.appMonitor.metadata.namespace, f.appMonitor.metadata.name, f.appMonitor.spec.forSeconds]),
      [
        [3, "ns1", "a", 60],
        [5, "fallback", "b", 5],
      ],
    );
  });

  test("items of a kind: List are read", () => {
    const text = `apiVersion: v1\nkind: List\nitems:\n  - apiVersion: kubedemo.com/v1\n    kind: AppMonitor\n    metadata: {name: x, namespace: n}\n    spec: {memThresholdPercent: 50, memMultiplier: 3}\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: p}\n`;
    assert.deepEqual(
      readAppMonitors(text, "list.yaml", "default").map((f) => f.appMonitor.metadata.name),
      ["x"],
    );
  });

  test("an AppMonitor of another group/version is not ours", () => {
    assert.deepEqual(readAppMonitors(am("a", "{}").replace("kubedemo.com/v1", "example.com/v1"), "f.yaml", "default"), []);
  });

  const invalid: [string, string, RegExp, string[]][] = [
    ["threshold above 100 and multiplier missing", am("a", "{memThresholdPercent: 175}", "ns"), /^bad\.yaml: document 1 \(AppMonitor ns\/a\): /, ["spec.memMultiplier", "spec.memThresholdPercent"]],
    ["negative forSeconds", am("a", "{memThresholdPercent: 75, memMultiplier: 2, forSeconds: -1}"), /spec\.forSeconds: must be >= 0/, ["spec.forSeconds"]],
    [
      "selector operator unknown",
      am("a", "{memThresholdPercent: 75, memMultiplier: 2, selector: {matchExpressions: [{key: k, operator: Gt}]}}"),
      /spec\.selector\.matchExpressions\[0\]\.operator: /,
      ["spec.selector.matchExpressions[0].operator"],
    ],
    ["In without values", am("a", "{memThresholdPercent: 75, memMultiplier: 2, selector: {matchExpressions: [{key: k, operator: In}]}}"), /matchExpressions\[0\]/, ["spec.selector.matchExpressions[0]"]],
    ["spec missing", "apiVersion: kubedemo.com/v1\nkind: AppMonitor\nmetadata: {name: a}\n", /spec: /, ["spec"]],
    ["hostile name", am('"x\\"} or vector(1)"', "{memThresholdPercent: 75, memMultiplier: 2}"), /metadata\.name: must be a DNS subdomain/, ["metadata.name"]],
    ["namespace with a dot", am("a", "{memThresholdPercent: 75, memMultiplier: 2}", "a.b"), /metadata\.namespace: must be a DNS label/, ["metadata.namespace"]],
    ["YAML syntax error", "kind: X\n---\nfoo: [\n", /^bad\.yaml: document 2: invalid YAML at line \d+, column \d+: /, []],
  ];
  for (const [name, text, message, fields] of invalid) {
    test(`refused: ${name}`, () => {
      assert.throws(
        () => readAppMonitors(text, "bad.yaml", "default"),
        (e: unknown) => e instanceof ManifestError && message.test(e.message) && JSON.stringify([...e.fields].sort()) === JSON.stringify(fields) && e.file === "bad.yaml",
      );
    });
  }
});
