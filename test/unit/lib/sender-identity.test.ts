// The sender check's pure parts (functions/lib/sender-identity.ts): the Triggers' OIDC identities
// as Knative Eventing names them, the configuration, the bearer header and the verdict on a
// TokenReview's status. On a real API server with real tokens: test/integration/sender-identity.test.ts.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";
import { HttpError } from "../../../functions/lib/runtime/errors.ts";
import {
  BEARER_CHALLENGE, bearerToken, judgeReview, readSenderIdentity, senderUsernames, tokenExpiry, triggerIdentity,
} from "../../../functions/lib/sender-identity.ts";

const DEFAULTS = { audience: "appmonitor.kubedemo.com/memory-scaler", triggers: ["memory-scaler-alert-firing", "memory-scaler-rollouts-ping"] };

describe("triggerIdentity", () => {
  // Knative's own answers (knative.dev/pkg kmeta.ChildName, run with the Eventing module's pin).
  test("a name that fits keeps the suffix whole", () => {
    assert.equal(triggerIdentity("memory-scaler-alert-firing"), "memory-scaler-alert-firing-oidc-eventing.knative.dev-trigger");
    assert.equal(triggerIdentity("x"), "x-oidc-eventing.knative.dev-trigger");
  });
  test("a name too long for the suffix becomes its first 31 characters and an MD5, as Knative's", () => {
    assert.equal(triggerIdentity("a-trigger-whose-name-is-rather-long-indeed"), "a-trigger-whose-name-is-rather-a0c0ad0dbac24c0a5c937834383f9af0");
  });
  test("every identity is a DNS subdomain of at most 63 characters", () => {
    for (const name of ["a", "a".repeat(29), "a".repeat(30), "b".repeat(63)]) assert.ok(triggerIdentity(name).length <= 63, name);
  });
});

describe("readSenderIdentity", () => {
  test("off unless REQUIRE_SENDER_IDENTITY is true", () => {
    assert.equal(readSenderIdentity({}, DEFAULTS), undefined);
    assert.equal(readSenderIdentity({ REQUIRE_SENDER_IDENTITY: "false", ALLOWED_SENDERS: "x" }, DEFAULTS), undefined);
  });
  test("on: the function's audience and its Triggers' identities in its own namespace", () => {
    const config = readSenderIdentity({ REQUIRE_SENDER_IDENTITY: "true" }, DEFAULTS);
    assert.deepEqual(config, {
      audience: DEFAULTS.audience,
      senders: DEFAULTS.triggers.map((t) => ({ namespace: undefined, name: `${t}-oidc-eventing.knative.dev-trigger` })),
    });
    assert.ok(config);
    assert.deepEqual([...senderUsernames(config, "appmonitor")], DEFAULTS.triggers.map((t) => `system:serviceaccount:appmonitor:${t}-oidc-eventing.knative.dev-trigger`));
  });
  test("SENDER_AUDIENCE and ALLOWED_SENDERS (name or namespace/name) replace the defaults", () => {
    const config = readSenderIdentity({ REQUIRE_SENDER_IDENTITY: "true", SENDER_AUDIENCE: "other", ALLOWED_SENDERS: " a , team/b ,," }, DEFAULTS);
    assert.deepEqual(config, { audience: "other", senders: [{ namespace: undefined, name: "a" }, { namespace: "team", name: "b" }] });
    assert.ok(config);
    assert.deepEqual([...senderUsernames(config, "appmonitor")], ["system:serviceaccount:appmonitor:a", "system:serviceaccount:team:b"]);
  });
  const refused: [Record<string, string>, string, RegExp][] = [
    [{ REQUIRE_SENDER_IDENTITY: "yes" }, "REQUIRE_SENDER_IDENTITY", /must be one of true, false/],
    [{ REQUIRE_SENDER_IDENTITY: "true", ALLOWED_SENDERS: " , " }, "ALLOWED_SENDERS", /names no ServiceAccount/],
    [{ REQUIRE_SENDER_IDENTITY: "true", ALLOWED_SENDERS: "a/b/c" }, "ALLOWED_SENDERS", /"a\/b\/c" is not a ServiceAccount/],
    [{ REQUIRE_SENDER_IDENTITY: "true", ALLOWED_SENDERS: "Team_A/b" }, "ALLOWED_SENDERS", /"Team_A\/b"/],
    [{ REQUIRE_SENDER_IDENTITY: "true", ALLOWED_SENDERS: "system:serviceaccount:a:b" }, "ALLOWED_SENDERS", /not a ServiceAccount as name or namespace\/name/],
  ];
  for (const [env, variable, message] of refused) {
    test(`refuses ${JSON.stringify(env)}, naming ${variable}`, () => {
      assert.throws(() => readSenderIdentity(env, DEFAULTS), (error: unknown) => error instanceof ConfigError && error.variable === variable && message.test(error.message));
    });
  }
});

describe("bearerToken", () => {
  test("the token of one Bearer header (any case of the scheme)", () => {
    assert.equal(bearerToken("Bearer abc.def-ghi_jkl"), "abc.def-ghi_jkl");
    assert.equal(bearerToken("bearer abc"), "abc");
    assert.equal(bearerToken(["Bearer abc"]), "abc");
  });
  const refusals: [string | string[] | undefined, RegExp][] = [
    [undefined, /no Authorization header/],
    ["", /no Authorization header/],
    ["Basic dXNlcjpwYXNz", /not one Bearer token/],
    ["Bearer", /not one Bearer token/],
    ["Bearer a b", /not one Bearer token/],
    [["Bearer a", "Bearer b"], /not one Bearer token/],
  ];
  for (const [header, reason] of refusals) {
    test(`401 with a Bearer challenge for ${JSON.stringify(header)}`, () => {
      assert.throws(() => bearerToken(header), (error: unknown) =>
        error instanceof HttpError && error.status === 401 && error.headers["www-authenticate"] === BEARER_CHALLENGE && reason.test(error.reason));
    });
  }
});

describe("judgeReview", () => {
  const senders = new Set(["system:serviceaccount:appmonitor:t-oidc-eventing.knative.dev-trigger"]);
  const audience = "appmonitor.kubedemo.com/memory-scaler";
  const ok = { authenticated: true, user: { username: "system:serviceaccount:appmonitor:t-oidc-eventing.knative.dev-trigger" }, audiences: [audience] };
  test("an authenticated token of an allowed sender for the audience is allowed", () => {
    assert.deepEqual(judgeReview(ok, audience, senders), { allowed: true, sender: ok.user.username });
  });
  const cases: [string, object, RegExp][] = [
    ["not authenticated, with the API server's error", { authenticated: false, error: "[invalid bearer token, token audiences [\"x\"] is invalid for the target audiences]" }, /did not authenticate the token: \[invalid bearer token/],
    ["an empty status", {}, /did not authenticate the token$/],
    ["authenticated for another audience", { ...ok, audiences: ["other"] }, /not for audience appmonitor.kubedemo.com\/memory-scaler/],
    ["authenticated without audiences", { ...ok, audiences: undefined }, /not for audience/],
    ["another ServiceAccount", { ...ok, user: { username: "system:serviceaccount:appmonitor:intruder" } }, /system:serviceaccount:appmonitor:intruder is not an allowed sender \(ALLOWED_SENDERS: system:serviceaccount:appmonitor:t-oidc/],
    ["the same name in another namespace", { ...ok, user: { username: "system:serviceaccount:other:t-oidc-eventing.knative.dev-trigger" } }, /not an allowed sender/],
    ["no username", { ...ok, user: {} }, /an unnamed user is not an allowed sender/],
  ];
  for (const [name, status, reason] of cases) {
    test(`refused: ${name}`, () => {
      const verdict = judgeReview(status, audience, senders);
      assert.equal(verdict.allowed, false);
      assert.match((verdict as { reason: string }).reason, reason);
    });
  }
});

describe("tokenExpiry", () => {
  const jwt = (payload: object) => `e30.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.sig`;
  test("a JWT's exp", () => assert.equal(tokenExpiry(jwt({ exp: 1_800_000_000, sub: "x" })), 1_800_000_000));
  test("none when it has none or is no JWT", () => {
    assert.equal(tokenExpiry(jwt({ sub: "x" })), undefined);
    assert.equal(tokenExpiry(jwt({ exp: "soon" })), undefined);
    assert.equal(tokenExpiry("not-a-jwt"), undefined);
    assert.equal(tokenExpiry("a.%%%.c"), undefined);
  });
});
