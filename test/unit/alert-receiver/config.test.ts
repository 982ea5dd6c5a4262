/** alert-receiver's start-up configuration (functions/alert-receiver/config.ts): defaults, overrides, errors naming the variable. */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { DEFAULT_DELIVERY_MAX_ATTEMPTS, DEFAULT_DELIVERY_TIMEOUT_MS, DEFAULT_WEBHOOK_DEADLINE_MS, readConfig } from "../../../functions/alert-receiver/config.ts";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";
import { tempDir } from "../../support/temp-dir.ts";
import type { TempDir } from "../../support/temp-dir.ts";

const base = { K_SINK: "http://broker.example/default", WEBHOOK_TOKEN: "t0ken" };

describe("readConfig", () => {
  let dir: TempDir;
  before(async () => {
    dir = await tempDir("alert-config");
    await writeFile(path.join(dir.path, "token"), "from-file\n");
    await writeFile(path.join(dir.path, "empty"), "\n");
  });
  after(() => dir.remove());

  it("applies the defaults", () => {
    const config = readConfig(base);
    assert.equal(config.sink.href, "http://broker.example/default");
    assert.equal(config.mode, "binary");
    assert.deepEqual(config.auth, { mode: "credentials", token: "t0ken" });
    assert.equal(config.delivery.maxAttempts, DEFAULT_DELIVERY_MAX_ATTEMPTS);
    assert.equal(config.delivery.deadlineMs, DEFAULT_WEBHOOK_DEADLINE_MS);
  });

  it("keeps the default deadline well under Alertmanager's 10 s and over one try", () => {
    // Alertmanager's notification budget is max(group_interval, 10 s); the README's "Deadline" says why 4 s are left.
    assert.ok(DEFAULT_WEBHOOK_DEADLINE_MS <= 10_000 - 4_000, `${DEFAULT_WEBHOOK_DEADLINE_MS} ms`);
    assert.ok(DEFAULT_WEBHOOK_DEADLINE_MS >= 2 * DEFAULT_DELIVERY_TIMEOUT_MS, "room for a retry of a timed-out try");
  });

  it("reads WEBHOOK_DEADLINE_MS, and a DELIVERY_TIMEOUT_MS up to it", () => {
    const config = readConfig({ ...base, WEBHOOK_DEADLINE_MS: "3000", DELIVERY_TIMEOUT_MS: "3000" });
    assert.deepEqual([config.delivery.deadlineMs, config.delivery.timeoutMs], [3000, 3000]);
  });

  it("reads overrides, the token file without its newline, and basic auth", () => {
    const config = readConfig({
      K_SINK: "https://sink",
      CE_MODE: "structured",
      WEBHOOK_TOKEN_FILE: path.join(dir.path, "token"),
      WEBHOOK_USERNAME: "am",
      WEBHOOK_PASSWORD: "pw",
      DELIVERY_MAX_ATTEMPTS: "7",
    });
    assert.equal(config.mode, "structured");
    assert.deepEqual(config.auth, { mode: "credentials", token: "from-file", basic: { username: "am", password: "pw" } });
    assert.equal(config.delivery.maxAttempts, 7);
  });

  it("accepts WEBHOOK_AUTH=none alone", () => {
    assert.deepEqual(readConfig({ K_SINK: "http://sink", WEBHOOK_AUTH: "none" }).auth, { mode: "none" });
  });

  const refused: { name: string; env: Record<string, string>; variable: string; message: RegExp }[] = [
    { name: "no K_SINK", env: { ...base, K_SINK: "" }, variable: "K_SINK", message: /is required/ },
    { name: "a K_SINK that is not http(s)", env: { ...base, K_SINK: "ftp://x" }, variable: "K_SINK", message: /http or https/ },
    { name: "a K_SINK that is not a URL", env: { ...base, K_SINK: "broker" }, variable: "K_SINK", message: /absolute/ },
    { name: "no credentials", env: { K_SINK: "http://s" }, variable: "WEBHOOK_TOKEN", message: /WEBHOOK_AUTH=none/ },
    { name: "none with a token", env: { ...base, WEBHOOK_AUTH: "none" }, variable: "WEBHOOK_AUTH", message: /WEBHOOK_TOKEN is set/ },
    { name: "an unknown WEBHOOK_AUTH", env: { ...base, WEBHOOK_AUTH: "oauth" }, variable: "WEBHOOK_AUTH", message: /bearer, basic, none/ },
    { name: "both WEBHOOK_TOKEN and its file", env: { ...base, WEBHOOK_TOKEN_FILE: "/x" }, variable: "WEBHOOK_TOKEN", message: /not both/ },
    { name: "a missing token file", env: { K_SINK: "http://s", WEBHOOK_TOKEN_FILE: "/nonexistent/token" }, variable: "WEBHOOK_TOKEN_FILE", message: /cannot read/ },
    { name: "a username without password", env: { K_SINK: "http://s", WEBHOOK_USERNAME: "am" }, variable: "WEBHOOK_PASSWORD", message: /required/ },
    { name: "bearer requested without a token", env: { K_SINK: "http://s", WEBHOOK_AUTH: "bearer", WEBHOOK_USERNAME: "u", WEBHOOK_PASSWORD: "p" }, variable: "WEBHOOK_TOKEN", message: /required/ },
    { name: "an unknown CE_MODE", env: { ...base, CE_MODE: "batch" }, variable: "CE_MODE", message: /binary, structured/ },
    { name: "zero attempts", env: { ...base, DELIVERY_MAX_ATTEMPTS: "0" }, variable: "DELIVERY_MAX_ATTEMPTS", message: /between 1 and 20/ },
    { name: "a fractional timeout", env: { ...base, DELIVERY_TIMEOUT_MS: "1.5" }, variable: "DELIVERY_TIMEOUT_MS", message: /integer/ },
    { name: "a deadline that is not a number", env: { ...base, WEBHOOK_DEADLINE_MS: "6s" }, variable: "WEBHOOK_DEADLINE_MS", message: /integer/ },
    { name: "a deadline under 100 ms", env: { ...base, WEBHOOK_DEADLINE_MS: "50" }, variable: "WEBHOOK_DEADLINE_MS", message: /between 100 and 60000/ },
    { name: "a deadline over a minute", env: { ...base, WEBHOOK_DEADLINE_MS: "60001" }, variable: "WEBHOOK_DEADLINE_MS", message: /between 100 and 60000/ },
    { name: "a per-try timeout over the deadline", env: { ...base, WEBHOOK_DEADLINE_MS: "1000", DELIVERY_TIMEOUT_MS: "1001" }, variable: "DELIVERY_TIMEOUT_MS", message: /over WEBHOOK_DEADLINE_MS \(1000 ms\)/ },
    { name: "the default per-try timeout over a shorter deadline", env: { ...base, WEBHOOK_DEADLINE_MS: "1500" }, variable: "DELIVERY_TIMEOUT_MS", message: /is 2000 ms, over WEBHOOK_DEADLINE_MS/ },
  ];
  for (const testCase of refused) {
    it(`refuses ${testCase.name}, naming ${testCase.variable}`, () => {
      assert.throws(
        () => readConfig(testCase.env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, String(error));
          assert.equal(error.variable, testCase.variable);
          assert.match(error.message, testCase.message);
          return true;
        },
      );
    });
  }

  it("refuses an empty token file, naming it", () => {
    assert.throws(() => readConfig({ K_SINK: "http://s", WEBHOOK_TOKEN_FILE: path.join(dir.path, "empty") }), /WEBHOOK_TOKEN_FILE: .* is empty/);
  });
});
