/**
 * The runtime's own configuration: where to listen, how loud to log, how long to drain.
 * Defaults are the named constants below; the environment overrides them.
 */
import { ConfigError, readEnum, readInteger, readString } from "./env.ts";
import type { Env } from "./types.ts";

/** Knative's container contract: listen on `$PORT`, 8080 when unset. */
export const DEFAULT_PORT = 8080;
/** All interfaces, as a container must; tests set `HOST=127.0.0.1`. */
export const DEFAULT_HOST = "0.0.0.0";
export const DEFAULT_LOG_LEVEL = "info";
/** Largest request body accepted; larger → 413 before the function runs. 1 MiB. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Longest wait for in-flight requests after SIGTERM before connections are cut, in ms. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;
/** Longest a function's readiness check may take before the probe answers 503, in ms. */
export const READINESS_TIMEOUT_MS = 2_000;

/** pino's levels (https://getpino.io/#/docs/api?id=level-string). */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The validated runtime configuration. */
export interface RuntimeConfig {
  /** TCP port; 0 = any free port (the bound port is logged and returned by `startServer`). */
  readonly port: number;
  readonly host: string;
  readonly logLevel: LogLevel;
  /** ms, see {@link DEFAULT_SHUTDOWN_TIMEOUT_MS}. */
  readonly shutdownTimeoutMs: number;
}

/**
 * Reads `PORT`, `HOST`, `LOG_LEVEL`, `SHUTDOWN_TIMEOUT_MS`.
 * @throws ConfigError naming the variable.
 */
export function readRuntimeConfig(env: Env): RuntimeConfig {
  const host = readString(env, "HOST") ?? DEFAULT_HOST;
  if (/\s/.test(host)) throw new ConfigError("HOST", `must be a host name or IP address, got ${JSON.stringify(host)}`);
  return {
    port: readInteger(env, "PORT", DEFAULT_PORT, { min: 0, max: 65_535 }),
    host,
    logLevel: readEnum(env, "LOG_LEVEL", LOG_LEVELS, DEFAULT_LOG_LEVEL),
    shutdownTimeoutMs: readInteger(env, "SHUTDOWN_TIMEOUT_MS", DEFAULT_SHUTDOWN_TIMEOUT_MS, { min: 0, max: 3_600_000 }),
  };
}
