/** Webhook authentication (functions/alert-receiver/auth.ts): bearer (RFC 6750) and basic (RFC 7617). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { challengeFor, createAuthenticator } from "../../../functions/alert-receiver/auth.ts";

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("createAuthenticator", () => {
  const both = createAuthenticator({ mode: "credentials", token: "s3cret-token", basic: { username: "am", password: "p:ss word" } });
  const bearerOnly = createAuthenticator({ mode: "credentials", token: "s3cret-token" });
  const cases: { header: string | string[] | undefined; both: boolean; bearerOnly: boolean }[] = [
    { header: "Bearer s3cret-token", both: true, bearerOnly: true },
    { header: "bearer s3cret-token", both: true, bearerOnly: true },
    { header: "Bearer  s3cret-token ", both: true, bearerOnly: true },
    { header: "Bearer s3cret-tokenX", both: false, bearerOnly: false },
    { header: "Bearer s3cret", both: false, bearerOnly: false },
    { header: "Bearer ", both: false, bearerOnly: false },
    { header: "s3cret-token", both: false, bearerOnly: false },
    { header: "Token s3cret-token", both: false, bearerOnly: false },
    { header: basic("am", "p:ss word"), both: true, bearerOnly: false },
    { header: basic("am", "wrong"), both: false, bearerOnly: false },
    { header: basic("AM", "p:ss word"), both: false, bearerOnly: false },
    { header: "Basic bm9jb2xvbg==", both: false, bearerOnly: false },
    { header: "Basic !!!", both: false, bearerOnly: false },
    { header: undefined, both: false, bearerOnly: false },
    { header: "", both: false, bearerOnly: false },
    { header: ["Bearer s3cret-token", "Bearer s3cret-token"], both: false, bearerOnly: false },
  ];
  for (const testCase of cases) {
    it(`${JSON.stringify(testCase.header)} → ${testCase.both ? "accepted" : "refused"}`, () => {
      assert.equal(both(testCase.header), testCase.both);
      assert.equal(bearerOnly(testCase.header), testCase.bearerOnly);
    });
  }

  it("accepts anything when authentication is off", () => {
    assert.equal(createAuthenticator({ mode: "none" })(undefined), true);
  });
});

describe("challengeFor", () => {
  it("names the schemes that are accepted", () => {
    assert.equal(challengeFor({ mode: "credentials", token: "t" }), 'Bearer realm="alert-receiver"');
    assert.equal(challengeFor({ mode: "credentials", basic: { username: "u", password: "p" } }), 'Basic realm="alert-receiver", charset="UTF-8"');
  });
});
