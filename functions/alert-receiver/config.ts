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
 * | `DELIVERY_TIMEOUT_MS` | 2000 | per-request timeout to the sink, from the request's start to the answer's last byte |
 * | `DELIVERY_CONCURRENCY` | 16 | events of one payload in flight at once |
 * | `SINK_TOKEN_FILE` | `/oidc/token` | the sender token each event to the sink carries (`Authorization: Bearer`), read at each send: where Knative's SinkBinding mounts its OIDC token when Eventing's `authentication-oidc` is on; no such file: no token |
 * | `WEBHOOK_DEADLINE_MS` | 6000 | the whole webhook: once passed, no event is sent or retried, those in flight are stopped, and the answer is 504 |
 *
 * Alertmanager gives a whole notification max(`group_interval`, 10 s) (its dispatcher's
 * context; its own retries of the webhook come out of the same time) and then closes the
 * connection: an answer after that is lost, and the notification counts as failed without
 * alert-receiver's details. Tries alone do not bound a webhook: a payload's events go
 * `DELIVERY_CONCURRENCY` at a time, each up to `DELIVERY_MAX_ATTEMPTS` tries of
 * `DELIVERY_TIMEOUT_MS` and its backoff (64 events to a sink that never answers took 34 s), so
 * {@link DEFAULT_WEBHOOK_DEADLINE_MS} bounds it whatever the sink does. 6 s leaves 4 s of
 * Alertmanager's 10: for the payload's read and the answer's write, a busy or paused process,
 * and a first retry by Alertmanager (functions/alert-receiver/README.md, "Deadline").
 */
import { ConfigError, readEnum, readHttpUrl, readInteger, readSecret, readString } from "../lib/runtime/env.ts";
import type { Env } from "../lib/runtime/types.ts";

export const DEFAULT_CE_MODE = "binary";
export const DEFAULT_DELIVERY_MAX_ATTEMPTS = 4;
export const DEFAULT_DELIVERY_BASE_DELAY_MS = 100;
export const DEFAULT_DELIVERY_MAX_DELAY_MS = 1_600;
export const DEFAULT_DELIVERY_TIMEOUT_MS = 2_000;
export const DEFAULT_DELIVERY_CONCURRENCY = 16;
/** The whole webhook's deadline in ms, from when its payload has been read: well under Alertmanager's 10 s (see above). */
export const DEFAULT_WEBHOOK_DEADLINE_MS = 6_000;
/** The largest `WEBHOOK_DEADLINE_MS` accepted, in ms: Alertmanager's budget with a `group_interval` of a minute. */
export const MAX_WEBHOOK_DEADLINE_MS = 60_000;

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
    /** Per request to the sink, headers and body, in ms. */
    readonly timeoutMs: number;
    readonly concurrency: number;
    /** The whole webhook, in ms; ≥ `timeoutMs`. */
    readonly deadlineMs: number;
  };
  /** The file of the sink's sender token (`SINK_TOKEN_FILE`); a missing file means none. */
  readonly sinkTokenFile: string;
}

/** Where Knative Eventing's SinkBinding mounts the OIDC token of its identity (knative/eventing `pkg/apis/sources/v1/sinkbinding_lifecycle.go`: the volume `oidc-token` at /oidc, key `token`). */
export const DEFAULT_SINK_TOKEN_FILE = "/oidc/token";

/**
 * Reads the variables in the table above.
 * @throws ConfigError naming the variable: `K_SINK` missing or not an http(s) URL; no
 * credentials and no `WEBHOOK_AUTH=none`; `WEBHOOK_AUTH=none` together with credentials; half
 * of a basic-auth pair; a number out of range; a `_FILE` that cannot be read;
 * `DELIVERY_TIMEOUT_MS` over `WEBHOOK_DEADLINE_MS` (a try the deadline always cuts short).
 */
export function readConfig(env: Env): AlertReceiverConfig {
  const sink = readHttpUrl(env, "K_SINK");
  if (sink === undefined) throw new ConfigError("K_SINK", "is required: the URL CloudEvents are sent to (a Broker or memory-scaler)");
  const maxDelayMs = readInteger(env, "DELIVERY_MAX_DELAY_MS", DEFAULT_DELIVERY_MAX_DELAY_MS, { min: 0, max: 60_000 });
  const deadlineMs = readInteger(env, "WEBHOOK_DEADLINE_MS", DEFAULT_WEBHOOK_DEADLINE_MS, { min: 100, max: MAX_WEBHOOK_DEADLINE_MS });
  const timeoutMs = readInteger(env, "DELIVERY_TIMEOUT_MS", DEFAULT_DELIVERY_TIMEOUT_MS, { min: 1, max: 60_000 });
  if (timeoutMs > deadlineMs) {
    throw new ConfigError("DELIVERY_TIMEOUT_MS", `is ${timeoutMs} ms, over WEBHOOK_DEADLINE_MS (${deadlineMs} ms): a try could never use it; lower it or raise the deadline`);
  }
  return {
    sink,
    mode: readEnum(env, "CE_MODE", ["binary", "structured"] as const, DEFAULT_CE_MODE),
    auth: readAuth(env),
    delivery: {
      maxAttempts: readInteger(env, "DELIVERY_MAX_ATTEMPTS", DEFAULT_DELIVERY_MAX_ATTEMPTS, { min: 1, max: 20 }),
      baseDelayMs: readInteger(env, "DELIVERY_BASE_DELAY_MS", DEFAULT_DELIVERY_BASE_DELAY_MS, { min: 0, max: maxDelayMs }),
      maxDelayMs,
      timeoutMs,
      concurrency: readInteger(env, "DELIVERY_CONCURRENCY", DEFAULT_DELIVERY_CONCURRENCY, { min: 1, max: 1_000 }),
      deadlineMs,
    },
    sinkTokenFile: readString(env, "SINK_TOKEN_FILE") ?? DEFAULT_SINK_TOKEN_FILE,
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
