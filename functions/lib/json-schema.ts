/**
 * The precompiled JSON Schema validators of `schemas/validators/` (generated from `schemas/` by
 * `scripts/schema-validators.ts`) as the functions see them, and the one way their errors are
 * described: as JSON Pointers in an answer's details ({@link describeSchemaErrors}), as field
 * paths in a message to a person ({@link schemaErrorField}).
 */
import type { ErrorObject } from "ajv";

/**
 * A generated validator, typed for what it checks: true (and `data` narrowed to `T`) when `data`
 * matches the schema; otherwise `errors` holds ajv's errors of that call (every one: the
 * validators collect all errors).
 */
export type SchemaValidator<T> = { (data: unknown): data is T; errors?: ErrorObject[] | null };

/** Maximum number of schema errors {@link describeSchemaErrors} returns by default. */
export const MAX_REPORTED_ERRORS = 20;

/** One schema error as a caller is told it. */
export interface SchemaErrorDescription {
  /** JSON Pointer (RFC 6901) of the offending value, under `root`; `/` for the whole document. */
  readonly path: string;
  /** ajv's message, e.g. `must have required property 'pod'`, else its keyword. */
  readonly message: string;
}

/**
 * ajv errors as `{ path, message }`, in ajv's order.
 *
 * @param errors a validator's `errors` after a failed call.
 * @param root prefix of every path, e.g. `/data` when the document validated is a CloudEvent's
 *   `data`; default none.
 * @param max how many to return at most; default {@link MAX_REPORTED_ERRORS}.
 * @returns the descriptions; empty when `errors` is.
 */
export function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined, root = "", max = MAX_REPORTED_ERRORS): SchemaErrorDescription[] {
  return (errors ?? []).slice(0, max).map((error) => ({
    path: `${root}${error.instancePath}` || "/",
    message: error.message ?? error.keyword,
  }));
}

/**
 * A field path one step deeper, as error messages write it: `spec` + `selector` →
 * `spec.selector`; `…matchExpressions` + `0` → `…matchExpressions[0]`; a key that is not an
 * identifier quoted, `…matchLabels["app.kubernetes.io/name"]`.
 *
 * @param parent the path so far; empty for the top.
 * @param segment a property name or array index.
 */
export function childField(parent: string, segment: string): string {
  const child = /^\d+$/.test(segment) ? `[${segment}]` : /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  return parent === "" ? child.replace(/^\./, "") : parent + child;
}

/**
 * The field an ajv error is about, as a path under `root` ({@link childField}): instance path
 * `/selector/matchExpressions/0/key` under `spec` → `spec.selector.matchExpressions[0].key`; a
 * `required` error names the missing property (`spec.memMultiplier`).
 *
 * @param error one ajv error.
 * @param root the path of the document validated, e.g. `spec`.
 */
export function schemaErrorField(error: ErrorObject, root: string): string {
  const segments = error.instancePath === "" ? [] : error.instancePath.slice(1).split("/");
  if (error.keyword === "required" && typeof error.params.missingProperty === "string") segments.push(error.params.missingProperty);
  // JSON Pointer escapes (RFC 6901).
  return segments.reduce((field, raw) => childField(field, raw.replace(/~1/g, "/").replace(/~0/g, "~")), root);
}
