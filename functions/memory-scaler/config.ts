/**
 * memory-scaler's configuration: defaults as named constants, the environment overrides them,
 * validated at start-up with a message that names the variable (DESIGN.md "Configuration
 * shared by the functions").
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `KUBECONFIG` | unset | kubeconfig file(s), `:`-separated; unset: `~/.kube/config`, else in-cluster credentials |
 * | `PROMETHEUS_URL` | unset | verify each alert against Prometheus before scaling; unset: no check |
 * | `KUBE_API_TIMEOUT_MS` | 10000 | per Kubernetes API request, headers and body (`DEFAULT_KUBE_API_TIMEOUT_MS` in functions/lib/kubeconfig.ts says why); past it, 503 |
 * | `PROMETHEUS_TIMEOUT_MS` | 2000 | per query, headers and body; a timeout counts as Prometheus unavailable (503) |
 * | `SCALE_MAX_ATTEMPTS` | 5 | read–decide–write rounds when the compare-and-swap write loses a race |
 * | `RECENT_SCALES_LIMIT` | 10 | entries kept in an AppMonitor's `status.recentScales` (the CRD allows 20) |
 * | `DEFAULT_MAX_MEMORY` | 8Gi | the cap of a container no `spec.containerPolicies` entry and no `spec.maxMemory` caps (`caps.ts` says why) |
 * | `ALERTMANAGER_URL` | unset | Alertmanager's base URL: the leak guard's `AppMonitorProbableLeak` alert is posted there (`kube/alertmanager.ts`); unset: none |
 * | `PAUSE_SCALING` | `false` | `true`: every AppMonitor behaves as `spec.mode: DryRun` — each alert runs every check of its write (dry runs, quota, Node fit) and writes nothing; outcomes, Events and `status.lastOutcome` say `paused install-wide (PAUSE_SCALING)` |
 * | `WATCH_NAMESPACES` | all namespaces | comma-separated namespaces served: an alert from another is skipped (`NamespaceNotWatched`), and the follow-up ticks list AppMonitors in these only |
 * | `MAX_MEMORY` | unset | the install's ceiling (`ceilings.ts`): a quantity no container's limit is raised above, whatever its AppMonitor's caps say; unset: none |
 * | `MAX_MEM_MULTIPLIER` | unset | the install's ceiling on `spec.memMultiplier`, a decimal above 1, at most 10; unset: none |
 * | `MIN_COOLDOWN_SECONDS` | unset | the install's floor of `spec.cooldownSeconds`, 0–604800; unset: none |
 * | `LEAK_GUARD_MAX_SCALES` | unset | the install's ceiling on `spec.leakGuard.maxScales` (its default 3 too), 1–10; unset: none |
 * | `LEAK_GUARD_MIN_WINDOW_SECONDS` | unset | the install's floor of `spec.leakGuard.windowSeconds` (its default 86400 too), 60–604800; unset: none |
 * | `REQUIRE_SENDER_IDENTITY`, `SENDER_AUDIENCE`, `ALLOWED_SENDERS` | `false`, {@link SENDERS} | accept only events the Broker sends with its OIDC token (functions/lib/sender-identity.ts) |
 *
 * The five ceilings come from the ConfigMap `appmonitor-ceilings` (knative/admission/), which the
 * admission policy of the same name reads too: an empty value is unset.
 */
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS } from "../lib/kubeconfig.ts";
import { readNamespaceScope, type NamespaceScope } from "../lib/namespace-scope.ts";
import { ConfigError, readEnum, readHttpUrl, readInteger, readString } from "../lib/runtime/env.ts";
import { readSenderIdentity, type SenderDefaults, type SenderIdentityConfig } from "../lib/sender-identity.ts";
import type { Env } from "../lib/runtime/types.ts";
import { floor, parseQuantity } from "../lib/quantity.ts";
import { DEFAULT_MAX_MEMORY } from "./caps.ts";
import { CEILINGS, type Ceilings, DECIMAL_PATTERN } from "./ceilings.ts";

/**
 * ms, the whole answer. One query per event, so its bound is the event's: well under the 60 s a
 * Broker's delivery waits (the Service's `timeoutSeconds`; the Triggers set no delivery timeout,
 * see `DEFAULT_KUBE_API_TIMEOUT_MS`), and a Prometheus that has not answered an instant query of
 * one Pod's series in 2 s is not going to: 503, and the Broker retries.
 */
export const DEFAULT_PROMETHEUS_TIMEOUT_MS = 2_000;
/** memory-scaler's audience and the Triggers that deliver to it (knative/eventing/triggers.yaml), the senders it accepts by default. */
export const SENDERS: SenderDefaults = {
  audience: "appmonitor.kubedemo.com/memory-scaler",
  triggers: ["memory-scaler-alert-firing", "memory-scaler-rollouts-ping"],
};
/** A lost race costs one round; five rounds outlast any realistic burst of concurrent writers. */
export const DEFAULT_SCALE_MAX_ATTEMPTS = 5;
/** Entries of `status.recentScales`; the CRD caps the list at {@link MAX_RECENT_SCALES}. */
export const DEFAULT_RECENT_SCALES_LIMIT = 10;
/** `maxItems` of `status.recentScales` in the AppMonitor CRD (scripts/appmonitor-crd.ts). */
export const MAX_RECENT_SCALES = 20;

/** The validated configuration. */
export interface MemoryScalerConfig {
  /** `KUBECONFIG` as given (one or more paths joined by `:`); undefined → the client's default lookup. */
  readonly kubeconfig: string | undefined;
  /** Prometheus's base URL, e.g. `http://prometheus:9090`; undefined → no verification. */
  readonly prometheusUrl: URL | undefined;
  /** Per Prometheus query, the whole answer, in ms. */
  readonly prometheusTimeoutMs: number;
  /** Per Kubernetes API request, headers and body, in ms. */
  readonly kubeApiTimeoutMs: number;
  readonly scaleMaxAttempts: number;
  readonly recentScalesLimit: number;
  /** The namespaces served (`WATCH_NAMESPACES`). */
  readonly scope: NamespaceScope;
  /** The install's cap, a quantity (`DEFAULT_MAX_MEMORY`). */
  readonly defaultMaxMemory: string;
  /** Alertmanager's base URL; undefined → no leak alert is posted. */
  readonly alertmanagerUrl: URL | undefined;
  /** `PAUSE_SCALING=true`: every AppMonitor behaves as DryRun. */
  readonly paused: boolean;
  /** `ALLOW_UNVERIFIED_ALERTS=true`: scaling without `PROMETHEUS_URL` was asked for. */
  readonly allowUnverifiedAlerts: boolean;
  /** The install's ceilings (`MAX_MEMORY`, `MAX_MEM_MULTIPLIER`, `MIN_COOLDOWN_SECONDS`, `LEAK_GUARD_*`); each absent when unset. */
  readonly ceilings: Ceilings;
  /** The sender check (`REQUIRE_SENDER_IDENTITY=true`); undefined: every sender is taken. */
  readonly senderIdentity: SenderIdentityConfig | undefined;
}

/**
 * Reads the variables in the table above.
 * @throws ConfigError naming the variable: a `KUBECONFIG` file that cannot be read, a
 * `PROMETHEUS_URL` that is not an http(s) URL, a number out of range (`KUBE_API_TIMEOUT_MS`: 100–60000),
 * a `WATCH_NAMESPACES` entry that is not a namespace name, a `DEFAULT_MAX_MEMORY` that is not a
 * positive quantity, an `ALERTMANAGER_URL` that is not an http(s) URL, a `PAUSE_SCALING` or
 * `ALLOW_UNVERIFIED_ALERTS` other than `true` or `false`, a ceiling that is not a positive
 * quantity, a decimal or an integer in its range (the table's); no `PROMETHEUS_URL` while scaling
 * (`PAUSE_SCALING` not `true`) without `ALLOW_UNVERIFIED_ALERTS=true` ({@link requireVerification});
 * `REQUIRE_SENDER_IDENTITY` or `ALLOWED_SENDERS` as `readSenderIdentity` refuses them.
 */
export function readConfig(env: Env): MemoryScalerConfig {
  const kubeconfig = readString(env, "KUBECONFIG");
  if (kubeconfig !== undefined) {
    for (const file of kubeconfig.split(path.delimiter).filter((f) => f !== "")) {
      try {
        accessSync(file, constants.R_OK);
      } catch (error) {
        throw new ConfigError("KUBECONFIG", `cannot read ${file}: ${(error as Error).message}`, { cause: error });
      }
    }
  }
  const prometheusUrl = readHttpUrl(env, "PROMETHEUS_URL");
  const paused = readBoolean(env, "PAUSE_SCALING");
  const allowUnverifiedAlerts = readBoolean(env, "ALLOW_UNVERIFIED_ALERTS");
  requireVerification(prometheusUrl, paused, allowUnverifiedAlerts);
  return {
    kubeconfig,
    prometheusUrl,
    prometheusTimeoutMs: readInteger(env, "PROMETHEUS_TIMEOUT_MS", DEFAULT_PROMETHEUS_TIMEOUT_MS, { min: 1, max: 60_000 }),
    kubeApiTimeoutMs: readInteger(env, "KUBE_API_TIMEOUT_MS", DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS),
    scaleMaxAttempts: readInteger(env, "SCALE_MAX_ATTEMPTS", DEFAULT_SCALE_MAX_ATTEMPTS, { min: 1, max: 20 }),
    recentScalesLimit: readInteger(env, "RECENT_SCALES_LIMIT", DEFAULT_RECENT_SCALES_LIMIT, { min: 1, max: MAX_RECENT_SCALES }),
    scope: readNamespaceScope(env),
    defaultMaxMemory: readCap(env),
    alertmanagerUrl: readHttpUrl(env, "ALERTMANAGER_URL"),
    paused,
    allowUnverifiedAlerts,
    ceilings: readCeilings(env),
    senderIdentity: readSenderIdentity(env, SENDERS),
  };
}

/** A `true`/`false` variable, `false` when unset. @throws ConfigError for any other value. */
function readBoolean(env: Env, name: "PAUSE_SCALING" | "ALLOW_UNVERIFIED_ALERTS"): boolean {
  return readEnum(env, name, ["true", "false"], "false") === "true";
}

/**
 * Without `PROMETHEUS_URL` an alert is acted on as it came, so anyone who can deliver memory-scaler
 * a CloudEvent can make it scale (docs/operations.md, "Security model"): that must be asked for.
 * A paused install writes nothing, so it may start without one.
 * @throws ConfigError naming `PROMETHEUS_URL` and the setting that lifts the refusal.
 */
function requireVerification(prometheusUrl: URL | undefined, paused: boolean, allowUnverifiedAlerts: boolean): void {
  if (prometheusUrl !== undefined || paused || allowUnverifiedAlerts) return;
  throw new ConfigError(
    "PROMETHEUS_URL",
    "is required to scale: without it every alert is taken as it came, unchecked against Prometheus, so anyone who can send memory-scaler an event can make it scale; " +
      "set it to your Prometheus's base URL, or set ALLOW_UNVERIFIED_ALERTS=true to scale without the check (the chart's allowUnverifiedAlerts), or PAUSE_SCALING=true",
  );
}

/**
 * The ceilings (`ceilings.ts`), each with the range of the field it bounds; also `npm run
 * explain`'s, from its shell. @throws ConfigError naming the variable (see {@link readConfig}).
 */
export function readCeilings(env: Env): Ceilings {
  const read = {
    maxMemory: readMemory(env, "MAX_MEMORY"),
    maxMemMultiplier: readMultiplier(env, "MAX_MEM_MULTIPLIER"),
    minCooldownSeconds: readBound(env, "MIN_COOLDOWN_SECONDS", "minCooldownSeconds"),
    leakGuardMaxScales: readBound(env, "LEAK_GUARD_MAX_SCALES", "leakGuardMaxScales"),
    leakGuardMinWindowSeconds: readBound(env, "LEAK_GUARD_MIN_WINDOW_SECONDS", "leakGuardMinWindowSeconds"),
  };
  return Object.fromEntries(Object.entries(read).filter(([, value]) => value !== undefined)) as Ceilings;
}

/** The range of ceiling `key` ({@link CEILINGS}). */
function rangeOf(key: keyof Ceilings): { min: number; max: number } {
  const range = CEILINGS.find((c) => c.key === key)?.range;
  if (range === undefined) throw new Error(`ceiling ${key} has no range`);
  return range;
}

/** An integer ceiling in its range, or undefined when unset. */
function readBound(env: Env, name: string, key: keyof Ceilings): number | undefined {
  return readString(env, name) === undefined ? undefined : readInteger(env, name, 0, rangeOf(key));
}

/** A decimal ceiling of the multiplier: above 1 (a factor of 1 raises nothing), at most 10 (the schema's). */
function readMultiplier(env: Env, name: string): number | undefined {
  const raw = readString(env, name);
  if (raw === undefined) return undefined;
  const { min, max } = rangeOf("maxMemMultiplier");
  if (!new RegExp(DECIMAL_PATTERN).test(raw.trim())) throw new ConfigError(name, `must be a decimal number, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value <= min || value > max) throw new ConfigError(name, `must be above ${min} and at most ${max}, got ${value}`);
  return value;
}

/** A positive quantity of memory (spaces around it dropped, as the ceilings policy drops them), or undefined when unset. */
function readMemory(env: Env, name: string): string | undefined {
  const raw = readString(env, name)?.trim();
  if (raw === undefined || raw === "") return undefined;
  let bytes: bigint;
  try {
    bytes = floor(parseQuantity(raw));
  } catch (error) {
    throw new ConfigError(name, `${JSON.stringify(raw)} is not a Kubernetes quantity: ${(error as Error).message}`, { cause: error });
  }
  if (bytes <= 0n) throw new ConfigError(name, `${raw} is not a positive quantity of memory`);
  return raw;
}

/** `DEFAULT_MAX_MEMORY`, a positive quantity; unset: `caps.ts` `DEFAULT_MAX_MEMORY`. */
function readCap(env: Env): string {
  return readMemory(env, "DEFAULT_MAX_MEMORY") ?? DEFAULT_MAX_MEMORY;
}
