/**
 * Who may deliver a CloudEvent to memory-scaler and rule-sync: Knative Eventing's sender identity
 * (https://knative.dev/docs/eventing/features/sender-identity/), checked by the receiver. Pure:
 * the configuration, the request's header and the API server's TokenReview status in, a verdict
 * out (`sender-review.ts` asks the API server).
 *
 * With Eventing's `authentication-oidc` feature on (ConfigMap `config-features` in
 * `knative-eventing`), each Trigger has an OIDC identity of its own, the ServiceAccount
 * `<trigger>-oidc-eventing.knative.dev-trigger` in the Trigger's namespace (knative/eventing
 * `pkg/auth/serviceaccount.go`, `GetOIDCServiceAccountNameForResource`), and the Broker's filter
 * sends every delivery with `Authorization: Bearer <JWT>`, a token the API server issued for that
 * ServiceAccount with the subscriber's audience as `aud` (`pkg/broker/filter/filter_handler.go`;
 * `pkg/kncloudevents/event_dispatcher.go` attaches it only when the subscriber has an audience, so
 * each Trigger sets `spec.subscriber.audience`). With `REQUIRE_SENDER_IDENTITY=true` a function
 * accepts an event only when:
 * - it carries such a bearer token,
 * - the API server authenticates it for the function's audience (a TokenReview with
 *   `spec.audiences`: signature, expiry, the ServiceAccount and its bound object still there),
 * - and its user is one of the allowed senders (by default the OIDC identities of the Triggers
 *   that deliver to the function).
 * Anything else is refused with 401 and `WWW-Authenticate: Bearer`, which Knative does not retry:
 * the delivery goes to the dead-letter sink at once.
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `REQUIRE_SENDER_IDENTITY` | `false` | `true`: every event must carry a sender token as above, else 401 |
 * | `SENDER_AUDIENCE` | the function's ({@link SenderDefaults}) | the audience the tokens must be for: the Triggers' `spec.subscriber.audience` |
 * | `ALLOWED_SENDERS` | the OIDC identities of the function's Triggers | comma-separated ServiceAccounts: `name` (in the function's own namespace, its credentials' namespace) or `namespace/name` |
 */
import { createHash } from "node:crypto";
import { isDnsLabel, isDnsSubdomain } from "./kube-names.ts";
import { ConfigError, readEnum, readString } from "./runtime/env.ts";
import { HttpError } from "./runtime/errors.ts";
import type { Env } from "./runtime/types.ts";

/** What a function that receives Broker events accepts by default. */
export interface SenderDefaults {
  /** Its audience, as its Triggers' `spec.subscriber.audience` give it (knative/eventing/triggers.yaml). */
  readonly audience: string;
  /** The names of the Triggers that deliver to it, in the install's namespace. */
  readonly triggers: readonly string[];
}

/** A ServiceAccount that may send; `namespace` undefined: the function's own. */
export interface SenderAccount {
  readonly namespace: string | undefined;
  readonly name: string;
}

/** The sender check's configuration; `undefined` from {@link readSenderIdentity} when it is off. */
export interface SenderIdentityConfig {
  readonly audience: string;
  readonly senders: readonly SenderAccount[];
}

/** The suffix Knative Eventing gives a Trigger's OIDC ServiceAccount (`-oidc-<group>-<kind>`, lower-cased). */
export const TRIGGER_IDENTITY_SUFFIX = "-oidc-eventing.knative.dev-trigger";

/**
 * A Trigger's OIDC ServiceAccount name, as Knative Eventing makes it: `kmeta.ChildName(trigger,
 * suffix)` (knative.dev/pkg `kmeta/names.go`): the name and suffix when they fit in 63 characters;
 * else, as this suffix is too long to keep, the name's first 31 characters and the MD5 of name and
 * suffix, padded with the suffix's start to 63, trailing non-alphanumerics dropped.
 */
export function triggerIdentity(trigger: string): string {
  const longest = 63;
  if (trigger.length + TRIGGER_IDENTITY_SUFFIX.length <= longest) return trigger + TRIGGER_IDENTITY_SUFFIX;
  const hash = createHash("md5").update(trigger + TRIGGER_IDENTITY_SUFFIX).digest("hex");
  let name = trigger.slice(0, longest - hash.length) + hash;
  if (name.length < longest) name += TRIGGER_IDENTITY_SUFFIX.slice(0, longest - name.length);
  return name.replace(/[^a-zA-Z0-9]+$/, "");
}

/**
 * Reads the variables in the table above.
 * @returns undefined when `REQUIRE_SENDER_IDENTITY` is not `true`.
 * @throws ConfigError naming the variable: `REQUIRE_SENDER_IDENTITY` other than `true`/`false`, an
 *   `ALLOWED_SENDERS` entry that is not `name` or `namespace/name` of a ServiceAccount.
 */
export function readSenderIdentity(env: Env, defaults: SenderDefaults): SenderIdentityConfig | undefined {
  if (readEnum(env, "REQUIRE_SENDER_IDENTITY", ["true", "false"], "false") !== "true") return undefined;
  const listed = readString(env, "ALLOWED_SENDERS");
  const entries = listed === undefined ? defaults.triggers.map(triggerIdentity) : listed.split(",").map((e) => e.trim()).filter((e) => e !== "");
  if (entries.length === 0) throw new ConfigError("ALLOWED_SENDERS", "names no ServiceAccount: every event would be refused");
  const senders = entries.map((entry): SenderAccount => {
    const [first, second, ...rest] = entry.split("/");
    const [namespace, name] = second === undefined ? [undefined, first] : [first, second];
    if (rest.length > 0 || name === undefined || !isDnsSubdomain(name) || (namespace !== undefined && !isDnsLabel(namespace))) {
      throw new ConfigError("ALLOWED_SENDERS", `${JSON.stringify(entry)} is not a ServiceAccount as name or namespace/name`);
    }
    return { namespace, name };
  });
  return { audience: readString(env, "SENDER_AUDIENCE") ?? defaults.audience, senders };
}

/** The usernames the API server gives the senders' tokens (`system:serviceaccount:<namespace>:<name>`). */
export function senderUsernames(config: SenderIdentityConfig, ownNamespace: string): Set<string> {
  return new Set(config.senders.map((s) => `system:serviceaccount:${s.namespace ?? ownNamespace}:${s.name}`));
}

/** The `WWW-Authenticate` of every refusal (RFC 6750 §3). */
export const BEARER_CHALLENGE = 'Bearer realm="appmonitor", error="invalid_token"';

/** A refusal: 401, which Knative dead-letters without retrying. */
export function senderRefused(reason: string): HttpError {
  return new HttpError(401, `sender not verified: ${reason}`, { headers: { "www-authenticate": BEARER_CHALLENGE } });
}

/**
 * The bearer token of an `Authorization` header.
 * @throws HttpError 401 when there is none, or it is not `Bearer <token>`.
 */
export function bearerToken(header: string | string[] | undefined): string {
  if (header === undefined || header === "") {
    throw senderRefused("no Authorization header: each event must carry its sender's token (Knative Eventing's authentication-oidc, the Trigger's subscriber.audience)");
  }
  const value = Array.isArray(header) ? (header.length === 1 ? header[0] ?? "" : "") : header;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(value);
  if (match?.[1] === undefined) throw senderRefused("the Authorization header is not one Bearer token");
  return match[1];
}

/** What a TokenReview's status says (authentication.k8s.io/v1 `TokenReviewStatus`). */
export interface ReviewStatus {
  readonly authenticated?: boolean;
  readonly user?: { readonly username?: string };
  readonly audiences?: readonly string[];
  readonly error?: string;
}

/** The verdict on one token. */
export type SenderVerdict = { readonly allowed: true; readonly sender: string } | { readonly allowed: false; readonly reason: string };

/**
 * Whether a reviewed token is an allowed sender's for `audience`: authenticated, for the audience
 * (a review with `spec.audiences` answers with the ones it matched), and its user one of `senders`.
 */
export function judgeReview(status: ReviewStatus, audience: string, senders: ReadonlySet<string>): SenderVerdict {
  if (status.authenticated !== true) return { allowed: false, reason: `the API server did not authenticate the token${status.error ? `: ${status.error.slice(0, 200)}` : ""}` };
  if (!(status.audiences ?? []).includes(audience)) return { allowed: false, reason: `the token is not for audience ${audience}` };
  const sender = status.user?.username ?? "";
  if (!senders.has(sender)) return { allowed: false, reason: `${sender || "an unnamed user"} is not an allowed sender (ALLOWED_SENDERS: ${[...senders].join(", ")})` };
  return { allowed: true, sender };
}

/** A JWT's `exp` (seconds since the epoch), read without verifying: only to bound how long a verdict is kept. */
export function tokenExpiry(token: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { exp?: unknown };
    return typeof payload.exp === "number" && Number.isFinite(payload.exp) ? payload.exp : undefined;
  } catch {
    return undefined;
  }
}
