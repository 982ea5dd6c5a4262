// The one description of schema errors (functions/lib/json-schema.ts), as tables.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ErrorObject } from "ajv";
import { childField, describeSchemaErrors, MAX_REPORTED_ERRORS, schemaErrorField } from "../../../functions/lib/json-schema.ts";

const error = (instancePath: string, message?: string): ErrorObject => ({ instancePath, schemaPath: "#", keyword: "type", params: {}, ...(message === undefined ? {} : { message }) });

test("describeSchemaErrors: path under the root, `/` for the whole document, the keyword without a message", () => {
  const cases: [Parameters<typeof describeSchemaErrors>, { path: string; message: string }[]][] = [
    [[null], []],
    [[undefined, "/data"], []],
    [[[error("", "must be object")]], [{ path: "/", message: "must be object" }]],
    [[[error("/alerts/0/startsAt", "must match format \"date-time\"")]], [{ path: "/alerts/0/startsAt", message: "must match format \"date-time\"" }]],
    [[[error("", "must be object")], "/data"], [{ path: "/data", message: "must be object" }]],
    [[[error("/pod")], "/data"], [{ path: "/data/pod", message: "type" }]],
    [[[error("/memMultiplier", "must be <= 10")], "spec"], [{ path: "spec/memMultiplier", message: "must be <= 10" }]],
  ];
  for (const [args, expected] of cases) assert.deepEqual(describeSchemaErrors(...args), expected);
});

test("describeSchemaErrors: at most MAX_REPORTED_ERRORS unless told otherwise", () => {
  const many = Array.from({ length: MAX_REPORTED_ERRORS + 5 }, (_, i) => error(`/${i}`, "x"));
  assert.equal(describeSchemaErrors(many).length, MAX_REPORTED_ERRORS);
  assert.equal(describeSchemaErrors(many, "", Infinity).length, many.length);
});

test("schemaErrorField: the field under the root, array indexes bracketed, odd keys quoted, a missing property named", () => {
  const cases: [ErrorObject, string][] = [
    [error("/memThresholdPercent", "must be > 0"), "spec.memThresholdPercent"],
    [error("/selector/matchExpressions/0/key"), "spec.selector.matchExpressions[0].key"],
    [error("/selector/matchLabels/app.kubernetes.io~1name"), 'spec.selector.matchLabels["app.kubernetes.io/name"]'],
    [error("/a~0b"), 'spec["a~b"]'],
    [{ ...error(""), keyword: "required", params: { missingProperty: "memMultiplier" } }, "spec.memMultiplier"],
    [error(""), "spec"],
  ];
  for (const [input, expected] of cases) assert.equal(schemaErrorField(input, "spec"), expected);
  assert.equal(childField("", "foo"), "foo");
  assert.equal(childField("", "0"), "[0]");
});
