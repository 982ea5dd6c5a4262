/**
 * Authenticating Alertmanager's webhook requests as Alertmanager can send them
 * (https://prometheus.io/docs/alerting/latest/configuration/#http_config):
 * `authorization: { type: Bearer, credentials… }` → `Authorization: Bearer <token>` (RFC 6750 §2.1),
 * or `basic_auth` → `Authorization: Basic base64(user:password)` (RFC 7617).
 *
 * Comparison is constant-time: both sides are hashed with sha256 (equal lengths, so
 * `timingSafeEqual` applies and the secret's length does not leak) and compared with
 * `crypto.timingSafeEqual`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { AuthConfig } from "./config.ts";

/** Decides whether an `Authorization` header value is acceptable. */
export type Authenticator = (authorization: string | string[] | undefined) => boolean;

/** Builds the check for `config`; with `mode: "none"` every request passes. */
export function createAuthenticator(config: AuthConfig): Authenticator {
  if (config.mode === "none") return () => true;
  const token = config.token === undefined ? undefined : digest(config.token);
  const username = config.basic === undefined ? undefined : digest(config.basic.username);
  const password = config.basic === undefined ? undefined : digest(config.basic.password);
  return (authorization) => {
    if (typeof authorization !== "string") return false;
    const match = /^([A-Za-z]+) +(\S+) *$/.exec(authorization);
    if (match === null) return false;
    const scheme = (match[1] ?? "").toLowerCase();
    const credentials = match[2] ?? "";
    if (scheme === "bearer" && token !== undefined) return timingSafeEqual(digest(credentials), token);
    if (scheme === "basic" && username !== undefined && password !== undefined) {
      const decoded = Buffer.from(credentials, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon < 0) return false;
      // Both comparisons always run, so timing does not tell which half was wrong.
      const userOk = timingSafeEqual(digest(decoded.slice(0, colon)), username);
      const passwordOk = timingSafeEqual(digest(decoded.slice(colon + 1)), password);
      return userOk && passwordOk;
    }
    return false;
  };
}

/** The `WWW-Authenticate` challenge(s) sent with a 401 (RFC 9110 §11.6.1). */
export function challengeFor(config: AuthConfig): string {
  if (config.mode === "none") return "";
  const challenges: string[] = [];
  if (config.token !== undefined) challenges.push('Bearer realm="alert-receiver"');
  if (config.basic !== undefined) challenges.push('Basic realm="alert-receiver", charset="UTF-8"');
  return challenges.join(", ");
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
