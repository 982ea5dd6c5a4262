// The image the Dockerfile builds, without a Docker engine: the final stage's file system laid
// out from its COPY instructions (the build context's paths, and node_modules as
// `npm ci --omit=dev` leaves it), then its CMD run for each function with the environment of the
// function's Knative Service, as Knative would start the container: it serves its health and
// metrics endpoints and exits 0 on SIGTERM.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { assembleImage, readDockerfile, type AssembledImage } from "../support/dockerfile.ts";
import { startProcess, tailOf } from "../support/child-process.ts";
import { freePort } from "../support/free-port.ts";
import { FUNCTION_NAMES, containerOf, kustomize, servicesByFunction, type FunctionName, type KnativeService } from "../support/knative.ts";
import { stack } from "../support/stack.ts";
import { tempDir, type TempDir } from "../support/temp-dir.ts";
import { waitUntil } from "../support/wait-until.ts";

let dir: TempDir;
let services: Record<FunctionName, KnativeService>;
const images = new Map<FunctionName, { root: string; image: AssembledImage }>();

before(async () => {
  dir = await tempDir("knative-image");
  services = servicesByFunction(await kustomize("knative"));
  const dockerfile = await readDockerfile();
  for (const name of FUNCTION_NAMES) {
    const root = path.join(dir.path, name, "app");
    images.set(name, { root, image: await assembleImage(dockerfile, { root, buildArgs: { FUNCTION: name } }) });
  }
  await writeFile(path.join(dir.path, "token"), "a-token\n");
});

after(async () => {
  await dir?.remove();
});

describe("the image's file system", () => {
  test("holds the sources, schemas and package metadata, and production packages only", () => {
    const { root, image } = images.get("alert-receiver") ?? assert.fail("assembled");
    for (const file of ["package.json", "package-lock.json", "functions/run.ts", "functions/alert-receiver/index.ts", "schemas/alert-event.schema.json"]) assert.ok(existsSync(path.join(root, file)), file);
    for (const absent of ["test", "scripts", "knative", "tsconfig.json"]) assert.ok(!existsSync(path.join(root, absent)), `${absent} is not in the image`);
    for (const name of ["express", "cloudevents", "@kubernetes/client-node"]) assert.ok(image.packages.includes(name), name);
    for (const dev of ["typescript", "eslint", "fast-check", "node"]) assert.ok(!existsSync(path.join(root, "node_modules", dev)), `${dev} (a dev dependency) is not installed`);
    assert.deepEqual(image.env, { NODE_ENV: "production", FUNCTION: "alert-receiver" });
  });
});

/** The Service's env with what Knative and the cluster would provide made local. */
async function containerEnv(name: FunctionName, port: number): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {};
  for (const entry of containerOf(services[name]).env ?? []) env[entry.name] = entry.value;
  // Knative's contract; 127.0.0.1 instead of the container's 0.0.0.0.
  Object.assign(env, { PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" });
  if (name === "alert-receiver") Object.assign(env, { WEBHOOK_TOKEN_FILE: path.join(dir.path, "token"), K_SINK: "http://127.0.0.1:9/" });
  // Outside a cluster: the stack's credentials instead of the ServiceAccount's mounted token.
  else env.KUBECONFIG = (await stack()).kubeconfig;
  // The shared stack's AppMonitors belong to other tests.
  if (name === "rule-sync") env.RESYNC_ON_START = "false";
  return env;
}

for (const name of FUNCTION_NAMES) {
  test(`the image's CMD starts ${name}, which serves health and metrics and stops cleanly on SIGTERM`, async () => {
    const { root, image } = images.get(name) ?? assert.fail("assembled");
    const port = await freePort();
    const [command, ...args] = image.cmd;
    assert.ok(command);
    const child = startProcess({
      name,
      command,
      args,
      cwd: root,
      // The image's node is Node 24, as is the one running this test.
      env: { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, ...image.env, ...(await containerEnv(name, port)) },
    });
    try {
      await waitUntil(`${name} to answer its liveness probe`, async () => {
        if (!child.running()) throw new Error(`${name} exited`);
        return (await fetch(`http://127.0.0.1:${port}/health/liveness`)).status === 200;
      }, { timeoutMs: 20_000, intervalMs: 100 });
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /appmonitor_http_requests_total/);
    } catch (error) {
      await child.stop("SIGKILL");
      throw new Error(`${(error as Error).message}\n${tailOf(child)}`, { cause: error });
    }
    const status = await child.stop("SIGTERM", 30_000);
    assert.deepEqual(status, { code: 0, signal: null }, tailOf(child));
  });
}
