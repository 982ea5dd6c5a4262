/**
 * memory-scaler's configuration: defaults as named constants, the environment overrides them,
 * validated at start-up with a message that names the variable (DESIGN.md "Configuration
 * shared by the functions").
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `KUBECONFIG` | unset | kubeconfig file(s), `:`-separated; unset: `~/.kube/config`, else in-cluster credentials |
 * | `PROMETHEUS_URL` | unset | verify each alert against Prometheus before scaling; unset: no check, refused at start-up unless `ALLOW_UNVERIFIED_ALERTS` or `PAUSE_SCALING` is `true` |
 * | `ALLOW_UNVERIFIED_ALERTS` | `false` | `true`: start without `PROMETHEUS_URL` and scale on an alert as it came, the working set unchecked (whoever can send memory-scaler an event can then make it scale) |
 * | `KUBE_API_TIMEOUT_MS` | 10000 | per Kubernetes API request, headers and body (`DEFAULT_KUBE_API_TIMEOUT_MS` in functions/lib/kubeconfig.ts says why); past it, 503 |
 * | `PROMETHEUS_TIMEOUT_MS` | 2000 | per query, headers and body; a timeout counts as Prometheus unavailable (503) |
 * | `SCALE_MAX_ATTEMPTS` | 5 | read–decide–write rounds when the compare-and-swap write loses a race |
 * | `RECENT_SCALES_LIMIT` | 10 | entries kept in an AppMonitor's `status.recentScales` (the CRD allows 20) |
 * | `DEFAULT_MAX_MEMORY` | 8Gi | the cap of a container no `spec.containerPolicies` entry and no `spec.maxMemory` caps (`caps.ts` says why) |
 * | `ALERTMANAGER_URL` | unset | Alertmanager's base URL: the leak guard's `AppMonitorProbableLeak` alert is posted there (`kube/alertmanager.ts`); unset: none |
 * | `PAUSE_SCALING` | `false` | `true`: every AppMonitor behaves as `spec.mode: DryRun` — each alert runs every check of its write (dry runs, quota, Node fit) and writes nothing; outcomes, Events and `status.lastOutcome` say `paused install-wide (PAUSE_SCALING)` |
 * | `WATCH_NAMESPACES` | all namespaces | comma-separated namespaces served: an alert from another is skipped (`NamespaceNotWatched`), and the follow-up ticks list AppMonitors in these only |
 */
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { DEFAULT_KUBE_API_TIMEOUT_MS, KUBE_API_TIMEOUT_RANGE_MS } from "../lib/kubeconfig.ts";
import { readNamespaceScope, type NamespaceScope } from "../lib/namespace-scope.ts";
import { ConfigError, readEnum, readHttpUrl, readInteger, readString } from "../lib/runtime/env.ts";
import type { Env } from "../lib/runtime/types.ts";
import { floor, parseQuantity } from "../lib/quantity.ts";
import { DEFAULT_MAX_MEMORY } from "./caps.ts";

/**
 * ms, the whole answer. One query per event, so its bound is the event's: well under the 60 s a
 * Broker's delivery waits (the Service's `timeoutSeconds`; the Triggers set no delivery timeout,
 * see `DEFAULT_KUBE_API_TIMEOUT_MS`), and a Prometheus that has not answered an instant query of
 * one Pod's series in 2 s is not going to: 503, and the Broker retries.
 */
export const DEFAULT_PROMETHEUS_TIMEOUT_MS = 2_000;
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
}

/**
 * Reads the variables in the table above.
 * @throws ConfigError naming the variable: a `KUBECONFIG` file that cannot be read, a
 * `PROMETHEUS_URL` that is not an http(s) URL, a number out of range (`KUBE_API_TIMEOUT_MS`: 100–60000),
 * a `WATCH_NAMESPACES` entry that is not a namespace name, a `DEFAULT_MAX_MEMORY` that is not a
 * positive quantity, an `ALERTMANAGER_URL` that is not an http(s) URL, a `PAUSE_SCALING` or
 * `ALLOW_UNVERIFIED_ALERTS` other than `true` or `false`; no `PROMETHEUS_URL` while scaling
 * (`PAUSE_SCALING` not `true`) without `ALLOW_UNVERIFIED_ALERTS=true` ({@link requireVerification}).
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

/** `DEFAULT_MAX_MEMORY`, a positive quantity; unset: `caps.ts` `DEFAULT_MAX_MEMORY`. */
function readCap(env: Env): string {
  const raw = readString(env, "DEFAULT_MAX_MEMORY") ?? DEFAULT_MAX_MEMORY;
  let bytes: bigint;
  try {
    bytes = floor(parseQuantity(raw));
  } catch (error) {
    throw new ConfigError("DEFAULT_MAX_MEMORY", `${JSON.stringify(raw)} is not a Kubernetes quantity: ${(error as Error).message}`, { cause: error });
  }
  if (bytes <= 0n) throw new ConfigError("DEFAULT_MAX_MEMORY", `${raw} is not a positive quantity of memory`);
  return raw;
}
