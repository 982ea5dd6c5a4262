// The committed validators under schemas/validators/ are what scripts/schema-validators.ts makes from schemas/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { validatorFiles, validatorsDir, VALIDATORS } from "../../../scripts/schema-validators.ts";

test("schemas/validators/ is up to date (node scripts/schema-validators.ts)", () => {
  const files = validatorFiles();
  for (const file of files) assert.equal(readFileSync(file.path, "utf8"), file.text, `${path.basename(file.path)} differs`);
  assert.deepEqual(readdirSync(validatorsDir).sort(), files.map((file) => path.basename(file.path)).sort(), "no other file in schemas/validators/");
});

test("every schema in schemas/ has a validator", () => {
  const schemas = readdirSync(path.dirname(validatorsDir)).filter((name) => name.endsWith(".schema.json"));
  assert.deepEqual(VALIDATORS.map((spec) => spec.schema).sort(), schemas.sort());
});

test("a generated validator needs no require(): its runtime helpers are static imports", () => {
  for (const file of validatorFiles()) assert.doesNotMatch(file.text, /\brequire\(/, path.basename(file.path));
});
