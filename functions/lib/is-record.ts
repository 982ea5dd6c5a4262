/** Narrowing parsed JSON or YAML before reading its fields. */

/**
 * Whether `value` is a plain JSON object: not null, not an array.
 *
 * @param value anything, e.g. the result of `JSON.parse`.
 * @returns true when its fields can be read as a record.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
