/**
 * The precompiled JSON Schema validators of `schemas/validators/` (generated from `schemas/` by
 * `scripts/schema-validators.ts`) as the functions see them, and the one way their errors are
 * described to a caller.
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
