/**
 * RFC 3339 timestamps (https://www.rfc-editor.org/rfc/rfc3339#section-5.6) in the form Kubernetes
 * writes its own: UTC, whole seconds, `Z` (metav1.Time's serialisation).
 */

/**
 * `time` as `YYYY-MM-DDTHH:MM:SSZ`, the milliseconds dropped (not rounded), e.g.
 * `2024-05-01T12:00:00Z` for 12:00:00.999.
 *
 * @param time any valid Date.
 * @returns the timestamp.
 * @throws {RangeError} for an invalid Date (as `Date.prototype.toISOString` does).
 */
export function formatTimestamp(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, "Z");
}
