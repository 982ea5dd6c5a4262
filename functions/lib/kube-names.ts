// Kubernetes name and label syntax, as k8s.io/apimachinery/pkg/util/validation defines it
// (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/ and
// https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
// Used wherever a name or label arrives from outside the API server: an alert's labels, a
// manifest, configuration, and the label selectors inside an AppMonitor's spec (which the API
// server does not check) before they reach a PromQL expression.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * Whether `value` is an RFC 1123 DNS label (at most 63 characters of `a-z`, `0-9`, `-`, starting
 * and ending alphanumeric), the syntax of namespace names.
 *
 * @param value candidate name.
 * @returns true when valid.
 */
export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS_LABEL.test(value);
}

/**
 * Whether `value` is an RFC 1123 DNS subdomain (at most 253 characters, dot-separated DNS
 * labels), the syntax of custom resource names such as an AppMonitor's or a PrometheusRule's.
 *
 * @param value candidate name.
 * @returns true when valid.
 */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS_SUBDOMAIN.test(value);
}

/**
 * Whether `value` is a label key (a qualified name): an optional DNS subdomain prefix and `/`,
 * then a name of at most 63 characters of alphanumerics, `-`, `_`, `.`, starting and ending
 * alphanumeric.
 *
 * @param value candidate key, e.g. `app.kubernetes.io/name`.
 * @returns true when valid.
 */
export function isLabelKey(value: string): boolean {
  const slash = value.indexOf("/");
  const name = slash === -1 ? value : value.slice(slash + 1);
  if (slash !== -1 && !isDnsSubdomain(value.slice(0, slash))) return false;
  return name.length <= 63 && LABEL_NAME.test(name);
}

/**
 * Whether `value` is a label value: empty, or at most 63 characters of alphanumerics, `-`, `_`,
 * `.`, starting and ending alphanumeric.
 *
 * @param value candidate value.
 * @returns true when valid.
 */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}
