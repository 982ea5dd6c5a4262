/**
 * alert-receiver's configuration: defaults as named constants, the environment overrides
 * them, validated at start-up with a message that names the variable (DESIGN.md
 * "Configuration shared by the functions").
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `K_SINK` | required | where CloudEvents go (Knative SinkBinding / ContainerSource sets it) |
 * | `CE_MODE` | `binary` | `binary` or `structured` HTTP content mode |
 * | `WEBHOOK_TOKEN` / `WEBHOOK_TOKEN_FILE` | — | bearer token Alertmanager sends (`http_config.authorization`) |
 * | `WEBHOOK_USERNAME` / `WEBHOOK_PASSWORD` (`_FILE`) | — | basic auth (`http_config.basic_auth`) |
 * | `WEBHOOK_AUTH` | inferred | `bearer`, `basic` or `none`; `none` accepts unauthenticated webhooks (local use) |
 * | `DELIVERY_MAX_ATTEMPTS` | 4 | tries per event on a transient sink failure |
 * | `DELIVERY_BASE_DELAY_MS` | 100 | first backoff, doubled per retry |
 * | `DELIVERY_MAX_DELAY_MS` | 1600 | longest backoff |
 * | `DELIVERY_TIMEOUT_MS` | 2000 | per-request timeout to the sink |
 * | `DELIVERY_CONCURRENCY` | 16 | events of one payload in flight at once |
 *
 * The defaults keep a payload's worst case (4 × 2 s + backoff ≈ 8.7 s) under Alertmanager's
 * minimum notification timeout of 10 s, so our 5xx reaches it before it gives up on the try.
 */
import { ConfigError, readEnum, readHttpUrl, readInteger, readSecret, readString } from "../lib/runtime/env.ts";
import type { Env } from "../lib/runtime/types.ts";

export const DEFAULT_CE_MODE = "binary";
export const DEFAULT_DELIVERY_MAX_ATTEMPTS = 4;
export const DEFAULT_DELIVERY_BASE_DELAY_MS = 100;
export const DEFAULT_DELIVERY_MAX_DELAY_MS = 1_600;
export const DEFAULT_DELIVERY_TIMEOUT_MS = 2_000;
export const DEFAULT_DELIVERY_CONCURRENCY = 16;

/** How webhooks are authenticated; `bearer` and `basic` may both be set (e.g. during a migration). */
export type AuthConfig =
  | { readonly mode: "none" }
  | { readonly mode: "credentials"; readonly token?: string; readonly basic?: { readonly username: string; readonly password: string } };

/** The validated configuration. */
export interface AlertReceiverConfig {
  readonly sink: URL;
  readonly mode: "binary" | "structured";
  readonly auth: AuthConfig;
  readonly delivery: {
    readonly maxAttempts: number;
    /** ms */
    readonly baseDelayMs: number;
    /** ms */
    readonly maxDelayMs: number;
    /** ms */
    readonly timeoutMs: number;
    readonly concurrency: number;
  };
}

/**
 * Reads the variables in the table above.
 * @throws ConfigError naming the variable: `K_SINK` missing or not an http(s) URL; no
 * credentials and no `WEBHOOK_AUTH=none`; `WEBHOOK_AUTH=none` together with credentials; half
 * of a basic-auth pair; a number out of range; a `_FILE` that cannot be read.
 */
export function readConfig(env: Env): AlertReceiverConfig {
  const sink = readHttpUrl(env, "K_SINK");
  if (sink === undefined) throw new ConfigError("K_SINK", "is required: the URL CloudEvents are sent to (a Broker or memory-scaler)");
  const maxDelayMs = readInteger(env, "DELIVERY_MAX_DELAY_MS", DEFAULT_DELIVERY_MAX_DELAY_MS, { min: 0, max: 60_000 });
  return {
    sink,
    mode: readEnum(env, "CE_MODE", ["binary", "structured"] as const, DEFAULT_CE_MODE),
    auth: readAuth(env),
    delivery: {
      maxAttempts: readInteger(env, "DELIVERY_MAX_ATTEMPTS", DEFAULT_DELIVERY_MAX_ATTEMPTS, { min: 1, max: 20 }),
      baseDelayMs: readInteger(env, "DELIVERY_BASE_DELAY_MS", DEFAULT_DELIVERY_BASE_DELAY_MS, { min: 0, max: maxDelayMs }),
      maxDelayMs,
      timeoutMs: readInteger(env, "DELIVERY_TIMEOUT_MS", DEFAULT_DELIVERY_TIMEOUT_MS, { min: 1, max: 60_000 }),
      concurrency: readInteger(env, "DELIVERY_CONCURRENCY", DEFAULT_DELIVERY_CONCURRENCY, { min: 1, max: 1_000 }),
    },
  };
}

function readAuth(env: Env): AuthConfig {
  const requested = readString(env, "WEBHOOK_AUTH") === undefined ? undefined : readEnum(env, "WEBHOOK_AUTH", ["bearer", "basic", "none"] as const, "none");
  const token = readSecret(env, "WEBHOOK_TOKEN");
  const username = readSecret(env, "WEBHOOK_USERNAME");
  const password = readSecret(env, "WEBHOOK_PASSWORD");
  if (requested === "none") {
    const set = [token && "WEBHOOK_TOKEN", username && "WEBHOOK_USERNAME", password && "WEBHOOK_PASSWORD"].filter(Boolean);
    if (set.length > 0) throw new ConfigError("WEBHOOK_AUTH", `is none but ${set.join(", ")} is set: remove one or the other`);
    return { mode: "none" };
  }
  if (username !== undefined && password === undefined) {
    throw new ConfigError("WEBHOOK_PASSWORD", "is required with WEBHOOK_USERNAME (or WEBHOOK_PASSWORD_FILE)");
  }
  if (password !== undefined && username === undefined) {
    throw new ConfigError("WEBHOOK_USERNAME", "is required with WEBHOOK_PASSWORD (or WEBHOOK_USERNAME_FILE)");
  }
  const basic = username !== undefined && password !== undefined ? { username, password } : undefined;
  if (requested === "bearer") {
    if (token === undefined) throw new ConfigError("WEBHOOK_TOKEN", "is required when WEBHOOK_AUTH=bearer (or WEBHOOK_TOKEN_FILE)");
    return { mode: "credentials", token };
  }
  if (requested === "basic") {
    if (basic === undefined) throw new ConfigError("WEBHOOK_USERNAME", "and WEBHOOK_PASSWORD are required when WEBHOOK_AUTH=basic (or their _FILE variants)");
    return { mode: "credentials", basic };
  }
  if (token === undefined && basic === undefined) {
    throw new ConfigError(
      "WEBHOOK_TOKEN",
      "is required: the bearer token Alertmanager sends (or WEBHOOK_TOKEN_FILE, or WEBHOOK_USERNAME and WEBHOOK_PASSWORD for basic auth); set WEBHOOK_AUTH=none to accept unauthenticated webhooks",
    );
  }
  // Neither requested explicitly: accept whichever is configured, both during a migration.
  return { mode: "credentials", ...(token === undefined ? {} : { token }), ...(basic === undefined ? {} : { basic }) };
}
