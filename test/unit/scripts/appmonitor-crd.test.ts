// The committed CRD is what scripts/appmonitor-crd.ts makes from schemas/appmonitor.schema.json.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { appMonitorCrdYaml, crdPath, toOpenApiV3 } from "../../../scripts/appmonitor-crd.ts";

test("knative/crd/appmonitor.yaml is up to date (node scripts/appmonitor-crd.ts)", () => {
  assert.equal(readFileSync(crdPath, "utf8"), appMonitorCrdYaml());
});

test("JSON Schema exclusiveMinimum becomes OpenAPI v3.0 minimum + exclusiveMinimum: true", () => {
  const cases: [Record<string, unknown>, Record<string, unknown>][] = [
    [{ type: "number", exclusiveMinimum: 0, maximum: 100 }, { type: "number", minimum: 0, exclusiveMinimum: true, maximum: 100 }],
    [{ $schema: "x", $id: "y", title: "t", type: "object", properties: { a: { type: "number", exclusiveMinimum: 1 } } },
      { type: "object", properties: { a: { type: "number", minimum: 1, exclusiveMinimum: true } } }],
    [{ type: "array", items: { type: "integer", exclusiveMinimum: 2 } }, { type: "array", items: { type: "integer", minimum: 2, exclusiveMinimum: true } }],
  ];
  for (const [input, expected] of cases) assert.deepEqual(toOpenApiV3(input), expected);
});
