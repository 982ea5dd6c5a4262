// AppMonitors out of Kubernetes manifest text (multi-document YAML, as `kubectl apply -f`
// reads it), validated and with spec defaults applied, each with the place it came from.

import { parseAllDocuments } from "yaml";
import specSchema from "../../schemas/appmonitor.schema.json" with { type: "json" };
import { APPMONITOR_API_VERSION, APPMONITOR_KIND, type AppMonitorSpecWithDefaults, type ObjectMetaLike } from "../lib/appmonitor.ts";
import { AppMonitorSpecError, validateAppMonitorSpec } from "../lib/appmonitor-spec.ts";
import { isRecord } from "../lib/is-record.ts";
import { childField, schemaErrorField } from "../lib/json-schema.ts";
import { isDnsLabel, isDnsSubdomain } from "../lib/kube-names.ts";

/** An AppMonitor read from a manifest: spec validated and defaulted, namespace always set. */
export interface ManifestAppMonitor {
  readonly apiVersion: typeof APPMONITOR_API_VERSION;
  readonly kind: typeof APPMONITOR_KIND;
  readonly metadata: ObjectMetaLike & { readonly name: string; readonly namespace: string };
  readonly spec: AppMonitorSpecWithDefaults;
}

/** Where a manifest object came from. */
export interface ManifestLocation {
  /** The file name as given by the caller. */
  readonly file: string;
  /** 1-based index of the YAML document in the file. */
  readonly document: number;
}

/** An AppMonitor and where it came from. */
export interface LocatedAppMonitor extends ManifestLocation {
  readonly appMonitor: ManifestAppMonitor;
  /**
   * Fields the API server would drop from this object (pruning), e.g. `spec.foo` or
   * `spec.selector.matchExpressions[0].bar`; see {@link unknownFields}. Empty when there are none.
   */
  readonly unknownFields: readonly string[];
}

/**
 * A manifest that cannot be read, or an AppMonitor in it that is invalid. The message names the
 * file, the document, the AppMonitor when known, and each offending field, e.g.
 * `m.yaml: document 2 (AppMonitor default/x): spec.memThresholdPercent: must be <= 100`.
 */
export class ManifestError extends Error {
  readonly file: string;
  /** 1-based document index; absent for errors about the whole file. */
  readonly document: number | undefined;
  /** Offending fields, e.g. `["spec.memThresholdPercent"]`; empty for syntax errors. */
  readonly fields: readonly string[];

  /**
   * @param where file, and document when known, plus the AppMonitor's namespace/name when known.
   * @param problems one entry per problem: the field (empty for none) and what is wrong.
   */
  constructor(where: { file: string; document?: number; object?: string }, problems: readonly { field: string; message: string }[]) {
    const document = where.document === undefined ? "" : `: document ${where.document}`;
    const object = where.object === undefined ? "" : ` (${where.object})`;
    const list = problems.map((p) => (p.field === "" ? p.message : `${p.field}: ${p.message}`)).join("; ");
    super(`${where.file}${document}${object}: ${list}`);
    this.name = "ManifestError";
    this.file = where.file;
    this.document = where.document;
    this.fields = problems.map((p) => p.field).filter((f) => f !== "");
  }
}

/** The fields of an AppMonitor outside `spec` that the API server keeps: TypeMeta, ObjectMeta, status. */
const KNOWN_TOP_LEVEL: ReadonlySet<string> = new Set(["apiVersion", "kind", "metadata", "spec", "status"]);
/** ObjectMeta's fields (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/). */
const KNOWN_METADATA: ReadonlySet<string> = new Set([
  "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
  "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers", "managedFields",
]);

/** A node of the spec's JSON Schema, as far as pruning reads it. */
interface SchemaNode {
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly additionalProperties?: SchemaNode | boolean;
  readonly items?: SchemaNode;
}

/** Paths under `field` of `value` that `schema` does not declare: what a structural schema prunes. */
function undeclared(value: unknown, schema: SchemaNode, field: string): string[] {
  if (Array.isArray(value)) {
    const items = schema.items;
    return items === undefined ? [] : value.flatMap((item, i) => undeclared(item, items, childField(field, String(i))));
  }
  if (!isRecord(value)) return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const declared = schema.properties !== undefined && Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    const additional = typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined;
    const node = declared ?? additional;
    if (node !== undefined) return undeclared(child, node, childField(field, key));
    // No properties declared: the value is not the object the schema wants, which validation reports.
    return schema.properties === undefined ? [] : [childField(field, key)];
  });
}

/**
 * The fields of an AppMonitor object that the API server would silently drop, as kubectl's
 * field validation reports them (`unknown field "spec.foo"`): top-level fields other than
 * apiVersion, kind, metadata, spec and status; metadata fields that are not ObjectMeta's; and
 * spec fields `schemas/appmonitor.schema.json` does not declare, at any depth (the CRD's
 * structural schema prunes them). Paths are written as in error messages, e.g.
 * `spec.selector.matchExpressions[0].bar`. status is not looked into.
 *
 * @param object a parsed manifest object (an AppMonitor).
 * @returns the paths, in document order; empty when every field is known.
 */
export function unknownFields(object: Readonly<Record<string, unknown>>): string[] {
  const top = Object.keys(object).filter((key) => !KNOWN_TOP_LEVEL.has(key)).map((key) => childField("", key));
  const metadata = isRecord(object.metadata) ? Object.keys(object.metadata).filter((key) => !KNOWN_METADATA.has(key)).map((key) => childField("metadata", key)) : [];
  return [...top, ...metadata, ...undeclared(object.spec, specSchema as SchemaNode, "spec")];
}

/** The AppMonitor in one object and its unknown fields, or undefined when the object is something else. */
function appMonitorOf(object: unknown, where: { file: string; document: number }, defaultNamespace: string): Omit<LocatedAppMonitor, keyof ManifestLocation> | undefined {
  if (!isRecord(object) || object.apiVersion !== APPMONITOR_API_VERSION || object.kind !== APPMONITOR_KIND) return undefined;
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const name = metadata.name;
  const namespace = metadata.namespace ?? defaultNamespace;
  if (typeof name !== "string" || !isDnsSubdomain(name)) {
    throw new ManifestError({ ...where, object: "AppMonitor" }, [{ field: "metadata.name", message: `must be a DNS subdomain (RFC 1123), got ${JSON.stringify(name)}` }]);
  }
  if (typeof namespace !== "string" || !isDnsLabel(namespace)) {
    throw new ManifestError({ ...where, object: `AppMonitor ${name}` }, [{ field: "metadata.namespace", message: `must be a DNS label (RFC 1123), got ${JSON.stringify(namespace)}` }]);
  }
  const object_ = `AppMonitor ${namespace}/${name}`;
  let spec: AppMonitorSpecWithDefaults;
  try {
    spec = validateAppMonitorSpec(object.spec);
  } catch (error) {
    if (!(error instanceof AppMonitorSpecError)) throw error;
    throw new ManifestError(
      { ...where, object: object_ },
      error.errors.map((e) => ({ field: schemaErrorField(e, "spec"), message: e.keyword === "required" ? "is required" : (e.message ?? e.keyword) })),
    );
  }
  return {
    appMonitor: { apiVersion: APPMONITOR_API_VERSION, kind: APPMONITOR_KIND, metadata: { ...(metadata as ObjectMetaLike), name, namespace }, spec },
    unknownFields: unknownFields(object),
  };
}

/**
 * Every AppMonitor (kubedemo.com/v1) in a multi-document YAML text, in document order. Other
 * kinds are skipped, empty documents too; the items of a `kind: List` (as `kubectl get -o yaml`
 * writes) are read as objects of that document. An AppMonitor without metadata.namespace gets
 * `defaultNamespace`, as kubectl gives it the context's namespace. Specs are validated against
 * `schemas/appmonitor.schema.json` and defaulted by `validateAppMonitorSpec`
 * (functions/lib/appmonitor-spec.ts); fields the API server would drop are listed, not refused
 * ({@link unknownFields}). YAML 1.2 (https://yaml.org/spec/1.2.2/), duplicate keys refused.
 *
 * @param text the file's content.
 * @param file the file name, only for messages and locations.
 * @param defaultNamespace namespace for AppMonitors that name none; a DNS label.
 * @returns the AppMonitors with their locations; possibly empty.
 * @throws {ManifestError} on a YAML syntax error, an AppMonitor without a valid metadata.name or
 *   namespace, or an invalid spec (every spec problem listed).
 */
export function readAppMonitors(text: string, file: string, defaultNamespace: string): LocatedAppMonitor[] {
  const found: LocatedAppMonitor[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    const where = { file, document: i + 1 };
    const syntax = doc.errors[0];
    if (syntax !== undefined) {
      const pos = syntax.linePos?.[0];
      const at = pos === undefined ? "" : ` at line ${pos.line}, column ${pos.col}`;
      const message = (syntax.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
      throw new ManifestError(where, [{ field: "", message: `invalid YAML${at}: ${message}` }]);
    }
    const value: unknown = doc.toJS();
    const objects = isRecord(value) && value.kind === "List" && Array.isArray(value.items) ? (value.items as unknown[]) : [value];
    for (const object of objects) {
      const appMonitor = appMonitorOf(object, where, defaultNamespace);
      if (appMonitor !== undefined) found.push({ ...where, ...appMonitor });
    }
  });
  return found;
}
