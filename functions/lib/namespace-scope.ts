/**
 * Which namespaces a function serves: every one, or those `WATCH_NAMESPACES` lists (rule-sync and
 * memory-scaler read the same variable, which the chart's `watchNamespaces` sets for both). A
 * scoped install binds their permissions in those namespaces only, so a function that served
 * another would be refused there: it skips what lies outside, and lists only inside.
 */
import { isDnsLabel } from "./kube-names.ts";
import { ConfigError, readString } from "./runtime/env.ts";
import type { Env } from "./runtime/types.ts";

/** Which namespaces are served: every one, or the listed ones. */
export type NamespaceScope = { readonly all: true } | { readonly all: false; readonly namespaces: readonly string[] };

/**
 * `WATCH_NAMESPACES`: comma-separated namespace names, spaces and repeats ignored; unset or empty: all.
 * @throws ConfigError naming the variable when an entry is not a namespace name (an RFC 1123 DNS label).
 */
export function readNamespaceScope(env: Env): NamespaceScope {
  const raw = readString(env, "WATCH_NAMESPACES");
  if (raw === undefined) return { all: true };
  const namespaces = [...new Set(raw.split(",").map((part) => part.trim()).filter((part) => part !== ""))];
  if (namespaces.length === 0) return { all: true };
  for (const namespace of namespaces) {
    if (!isDnsLabel(namespace)) throw new ConfigError("WATCH_NAMESPACES", `${JSON.stringify(namespace)} is not a namespace name (an RFC 1123 DNS label)`);
  }
  return { all: false, namespaces };
}

/** Whether `namespace` is served under `scope`. */
export function inScope(scope: NamespaceScope, namespace: string): boolean {
  return scope.all || scope.namespaces.includes(namespace);
}

/** What to list under `scope`: `[undefined]` (one list across all namespaces) or each namespace. */
export function scopeNamespaces(scope: NamespaceScope): (string | undefined)[] {
  return scope.all ? [undefined] : [...scope.namespaces];
}
