// Safe construction of PromQL literals: every value that enters a generated expression goes
// through one of these, so no input can close a string or add an operator.

/**
 * Quotes a string as a PromQL double-quoted string literal.
 *
 * PromQL follows Go's escaping rules inside quotes
 * (https://prometheus.io/docs/prometheus/latest/querying/basics/#string-literals):
 * backslash and double quote are escaped, line breaks and tabs become `\n`, `\r`, `\t`, and
 * every other control character (C0, DEL, C1) becomes a `\xhh` / `\u00hh` escape, so the
 * literal stays on one line and ends exactly at its closing quote.
 *
 * @param value any text, e.g. a label value or a regular expression.
 * @returns the literal including its quotes, e.g. `"a\"b"` for `a"b`.
 * @throws {TypeError} when `value` holds a lone UTF-16 surrogate, which has no UTF-8 form.
 */
export function promqlString(value: string): string {
  if (!value.isWellFormed()) {
    throw new TypeError("a PromQL string cannot hold a lone UTF-16 surrogate");
  }
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === "\\") out += "\\\\";
    else if (ch === '"') out += '\\"';
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    // \xhh in Go strings is a raw byte, so C1 controls need the code point form to stay UTF-8.
    else if (code >= 0x80 && code <= 0x9f) out += `\\u00${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * Escapes every RE2 metacharacter so the text matches itself literally inside a `=~` / `!~`
 * matcher, as Go's `regexp.QuoteMeta` does (https://pkg.go.dev/regexp#QuoteMeta). The result
 * still has to be quoted with {@link promqlString}.
 *
 * @param value literal text, e.g. `a.b`.
 * @returns a regular expression, e.g. `a\.b`.
 */
export function regexQuote(value: string): string {
  return value.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
}

/**
 * Formats a finite number as a PromQL float literal
 * (https://prometheus.io/docs/prometheus/latest/querying/basics/#float-literals-and-time-durations).
 * JavaScript's shortest round-trip form (`75`, `0.5`, `1e-7`) is valid PromQL.
 *
 * @param value a finite number.
 * @returns the literal, e.g. `75`.
 * @throws {RangeError} for NaN or ±Infinity, which would not mean a threshold.
 */
export function promqlNumber(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  return String(value);
}

/**
 * Formats a whole number of seconds as a Prometheus duration, e.g. `60s`
 * (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#duration).
 *
 * @param seconds a non-negative safe integer, in seconds.
 * @returns the duration string.
 * @throws {RangeError} for a negative, fractional or unsafe value.
 */
export function promDuration(seconds: number): string {
  if (!Number.isSafeInteger(seconds) || seconds < 0) {
    throw new RangeError(`not a whole, non-negative number of seconds: ${seconds}`);
  }
  return `${seconds}s`;
}
