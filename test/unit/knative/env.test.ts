// The environment of each Knative Service matches what the function's configuration reads: no
// name the function ignores, every required one provided (K_SINK by the SinkBinding), and the
// values as wired pass the function's own start-up validation.
//
// "What the function reads" is a static scan of functions/<name>/config.ts and the runtime's
// functions/lib/runtime/config.ts (configVariables in test/support/knative.ts): every variable
// is read through the helpers of functions/lib/runtime/env.ts as `helper(env, "NAME", …)`.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { readConfig as readAlertReceiverConfig } from "../../../functions/alert-receiver/config.ts";
import { readConfig as readMemoryScalerConfig } from "../../../functions/memory-scaler/config.ts";
import { readConfig as readRuleSyncConfig } from "../../../functions/rule-sync/config.ts";
import { readRuntimeConfig } from "../../../functions/lib/runtime/config.ts";
import { ConfigError } from "../../../functions/lib/runtime/env.ts";
import type { Env } from "../../../functions/lib/runtime/types.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { FUNCTION_NAMES, configVariables, containerOf, kustomize, servicesByFunction, type FunctionName, type KnativeService, type Manifest } from "../../support/knative.ts";
import { tempDir } from "../../support/temp-dir.ts";

const readers: Record<FunctionName, (env: Env) => unknown> = {
  "alert-receiver": readAlertReceiverConfig,
  "memory-scaler": readMemoryScalerConfig,
  "rule-sync": readRuleSyncConfig,
};

let objects: Manifest[] = [];
let services: Record<FunctionName, KnativeService>;

before(async () => {
  objects = await kustomize("knative");
  services = servicesByFunction(objects);
});

/**
 * The Service's env as a plain record: every entry has a literal value, or a key of a ConfigMap
 * the install ships (the ceilings'), taken from it as the kubelet would.
 */
function serviceEnv(name: FunctionName): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of containerOf(services[name]).env ?? []) {
    const ref = entry.valueFrom?.configMapKeyRef;
    const configMap = ref === undefined ? undefined : objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === ref.name && o.metadata.namespace === services[name].metadata.namespace);
    const value = ref === undefined ? entry.value : (configMap?.data as Record<string, string> | undefined)?.[ref.key];
    assert.equal(typeof value, "string", `${name}: ${entry.name} has a literal value, or one from a key of a ConfigMap the install ships`);
    assert.equal(env[entry.name], undefined, `${name}: ${entry.name} is set once`);
    env[entry.name] = value as string;
  }
  return env;
}

/** The variables documented in a config module's table (`| \`NAME\` |` rows). */
async function documentedVariables(file: string): Promise<string[]> {
  const text = await readFile(path.join(repoRoot, file), "utf8");
  const rows = text.split("\n").filter((line) => /^\s*\*\s*\|\s*`[A-Z]/.test(line));
  return rows.flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] as string));
}

describe("the static scan of the config modules", () => {
  test("finds the variables each module documents, and the runtime's", async () => {
    for (const name of FUNCTION_NAMES) {
      const { names } = await configVariables(name);
      const documented = await documentedVariables(`functions/${name}/config.ts`);
      assert.ok(documented.length >= 3, `${name}: the table was found`);
      for (const variable of documented) assert.ok(names.has(variable), `${name}: ${variable} is documented but the scan did not find it read`);
      for (const variable of ["PORT", "HOST", "LOG_LEVEL", "SHUTDOWN_TIMEOUT_MS"]) assert.ok(names.has(variable), `${name}: runtime ${variable}`);
    }
  });

  test("counts *_FILE for secrets and ignores names only mentioned in comments", async () => {
    const { names } = await configVariables("alert-receiver");
    for (const variable of ["K_SINK", "WEBHOOK_TOKEN", "WEBHOOK_TOKEN_FILE", "WEBHOOK_PASSWORD_FILE", "WEBHOOK_AUTH"]) assert.ok(names.has(variable), variable);
    assert.ok(!names.has("KUBECONFIG"), "alert-receiver reads no KUBECONFIG");
    assert.ok(!names.has("CE_MODE_FILE"), "CE_MODE is not a secret");
  });
});

describe("each Service's env", () => {
  for (const name of FUNCTION_NAMES) {
    test(`${name}: every variable is one the function reads`, async () => {
      const { names, files } = await configVariables(name);
      for (const variable of Object.keys(serviceEnv(name))) assert.ok(names.has(variable), `${variable} is not read by ${files.join(" or ")}`);
    });
  }

  test("the wired values pass each function's start-up validation, as Knative runs it", async (t) => {
    const dir = await tempDir("knative-env");
    t.after(dir.remove);
    await writeFile(path.join(dir.path, "token"), "a-token\n");
    for (const name of FUNCTION_NAMES) {
      const env: Record<string, string> = { ...serviceEnv(name), PORT: "8080" };
      // Mounted files: the Secret volume, here a temporary file.
      if (env.WEBHOOK_TOKEN_FILE !== undefined) env.WEBHOOK_TOKEN_FILE = path.join(dir.path, "token");
      // Injected by the SinkBinding (the Broker's address).
      if (name === "alert-receiver") env.K_SINK = "http://broker-ingress.knative-eventing.svc.cluster.local/appmonitor/default";
      assert.doesNotThrow(() => readRuntimeConfig(env), `${name}: runtime`);
      assert.doesNotThrow(() => readers[name](env), `${name}: config`);
    }
  });

  test("alert-receiver cannot start without the K_SINK the SinkBinding injects, nor without its token", () => {
    const env = serviceEnv("alert-receiver");
    assert.equal(env.K_SINK, undefined, "K_SINK is left to the SinkBinding");
    assert.throws(() => readAlertReceiverConfig({ ...env, WEBHOOK_TOKEN_FILE: undefined, K_SINK: "http://sink" }), (e: unknown) => e instanceof ConfigError && e.variable === "WEBHOOK_TOKEN");
    assert.throws(() => readAlertReceiverConfig({ WEBHOOK_TOKEN: "t" }), (e: unknown) => e instanceof ConfigError && e.variable === "K_SINK");
    const [binding] = objects.filter((o) => o.kind === "SinkBinding");
    assert.equal((binding?.spec as { subject: { name: string } }).subject.name, "alert-receiver");
  });

  test("a misspelt variable would be caught", async () => {
    const { names } = await configVariables("memory-scaler");
    assert.ok(names.has("PROMETHEUS_URL"));
    assert.ok(!names.has("PROMETHEUS_URI"));
  });
});
