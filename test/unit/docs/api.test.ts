/**
 * docs/api.md, the one reference of the AppMonitor API, agrees with the CRD the API server
 * serves (knative/crd/appmonitor.yaml, generated from schemas/appmonitor.schema.json): its spec
 * table has one row per spec field, and for a field whose row gives its type as `object` one per
 * field of it (`spec.trend.horizonSeconds`; a Kubernetes type such as a LabelSelector is named
 * instead), and no other; a row's allowed values are the field's enum,
 * its bounds are the field's minimum and maximum, and its default is the CRD's default where the
 * CRD sets one; the status paragraph names every status field; the printer columns listed are
 * the CRD's, in its order.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../..");

interface FieldSchema {
  readonly type?: string;
  readonly properties?: Record<string, FieldSchema>;
  readonly default?: unknown;
  readonly enum?: readonly string[];
  readonly minimum?: number;
  readonly maximum?: number;
}
interface CrdVersion {
  readonly schema: { readonly openAPIV3Schema: { readonly properties: { readonly spec: { readonly properties: Record<string, FieldSchema> }; readonly status: { readonly properties: Record<string, unknown> } } } };
  readonly additionalPrinterColumns: readonly { readonly name: string }[];
}

const crd = parse(readFileSync(join(ROOT, "knative/crd/appmonitor.yaml"), "utf8")) as { spec: { versions: CrdVersion[] } };
const version = crd.spec.versions[0];
const api = readFileSync(join(ROOT, "docs/api.md"), "utf8");

/** The spec table's rows: field name (without `spec.`) → its type and default cells. */
function specRows(): Map<string, { type: string; default: string }> {
  const rows = new Map<string, { type: string; default: string }>();
  for (const match of api.matchAll(/^\| `spec\.([A-Za-z.]+)` \| ([^|]*) \| ([^|]*) \|/gm)) {
    rows.set(match[1] ?? "", { type: (match[2] ?? "").trim(), default: (match[3] ?? "").trim() });
  }
  return rows;
}

/**
 * Each spec field by its path below `spec.` (`trend`), followed by the fields of one whose row's
 * type is `object` (`trend.horizonSeconds`).
 */
function flatten(properties: Record<string, FieldSchema>, rows: ReadonlyMap<string, { type: string }>, prefix = ""): Record<string, FieldSchema> {
  return Object.fromEntries(
    Object.entries(properties).flatMap(([name, field]) => {
      const path = `${prefix}${name}`;
      const own = rows.get(path)?.type.startsWith("object") === true ? Object.entries(flatten(field.properties ?? {}, rows, `${path}.`)) : [];
      return [[path, field], ...own];
    }),
  );
}

describe("docs/api.md against the AppMonitor CRD", () => {
  assert.ok(version !== undefined, "the CRD has a version");
  const fields = flatten(version.schema.openAPIV3Schema.properties.spec.properties, specRows());

  it("has one spec row per CRD field, and no other", () => {
    assert.deepEqual([...specRows().keys()].sort(), Object.keys(fields).sort());
  });

  it("gives each field the CRD's allowed values, bounds and default", () => {
    const wrong: string[] = [];
    for (const [name, row] of specRows()) {
      const field = fields[name];
      if (field === undefined) continue;
      if (field.enum !== undefined) {
        const listed = [...row.type.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
        if (JSON.stringify(listed.sort()) !== JSON.stringify([...field.enum].sort())) wrong.push(`${name}: values ${listed.join(", ")} where the CRD allows ${field.enum.join(", ")}`);
      }
      for (const bound of [field.minimum, field.maximum]) {
        if (bound !== undefined && !new RegExp(`(?<![\\d.])${bound}(?![\\d.])`).test(row.type)) wrong.push(`${name}: the type cell "${row.type}" does not give the bound ${bound}`);
      }
      if (field.default !== undefined) {
        const given = row.default.replace(/`/g, "");
        if (given !== String(field.default)) wrong.push(`${name}: default "${row.default}" where the CRD's is ${String(field.default)}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("names every status field", () => {
    const status = api.slice(api.indexOf("Status:"));
    const missing = Object.keys(version.schema.openAPIV3Schema.properties.status.properties).filter((name) => !status.includes(`\`${name}\``));
    assert.deepEqual(missing, []);
  });

  it("lists the CRD's printer columns in order", () => {
    const sentence = /`kubectl get appmonitors`\s+shows ([^.]+)\./.exec(api)?.[1];
    assert.ok(sentence !== undefined, "docs/api.md says what `kubectl get appmonitors` shows");
    const named = sentence.replace(/\([^)]*\)/g, "").split(/,| and /).map((part) => part.trim()).filter((part) => part !== "");
    assert.deepEqual(named, version.additionalPrinterColumns.map((column) => column.name));
  });
});
