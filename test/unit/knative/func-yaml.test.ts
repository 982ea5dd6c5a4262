// functions/<name>/func.yaml, one in every function's folder (a folder with an index.ts): valid
// Knative Functions project files that name the Knative Service of knative/ that runs the
// folder's function (its image's) and carry the same deploy facts as that Service and its
// ServiceAccount, so `func deploy` and `kubectl apply -k knative/` deploy the same Service; the
// Triggers come from knative/eventing/triggers.yaml alone, either way.
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Ajv } from "ajv";
import { parse } from "yaml";
import { LIVENESS_PATH, READINESS_PATH } from "../../../functions/lib/runtime/health.ts";
import type { FunctionModule } from "../../../functions/lib/runtime/types.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { INSTALL_NAMESPACE, containerOf, kustomize, type KnativeService, type Manifest } from "../../support/knative.ts";

/**
 * The func.yaml fields this project uses, with the types and closed objects of Knative
 * Functions' published schema (knative/func schema/func_yaml-schema.json), so a misspelt key
 * fails here instead of being ignored by `func`.
 */
const env = { type: "object", additionalProperties: false, required: ["value"], properties: { name: { type: "string", pattern: "^[-._a-zA-Z][-._a-zA-Z0-9]*$" }, value: { type: "string" } } };
const quantities = { type: "object", additionalProperties: false, properties: { cpu: { type: "string" }, memory: { type: "string" } } };
const FUNC_YAML_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["specVersion", "name", "runtime", "created"],
  properties: {
    specVersion: { type: "string", pattern: "^\\d+\\.\\d+\\.\\d+$" },
    name: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" },
    runtime: { type: "string" },
    registry: { type: "string" },
    image: { type: "string" },
    namespace: { type: "string" },
    created: { type: "string", format: "date-time" },
    invoke: { enum: ["http", "cloudevent"] },
    build: { type: "object", additionalProperties: false, properties: { builder: { enum: ["pack", "s2i", "host"] }, buildEnvs: { type: "array", items: env } } },
    run: {
      type: "object",
      additionalProperties: false,
      properties: {
        envs: { type: "array", items: env },
        volumes: {
          type: "array",
          items: { type: "object", additionalProperties: false, required: ["path"], properties: { secret: { type: "string" }, configMap: { type: "string" }, path: { type: "string" } } },
        },
      },
    },
    deploy: {
      type: "object",
      additionalProperties: false,
      properties: {
        namespace: { type: "string" },
        image: { type: "string" },
        annotations: { type: "object", additionalProperties: { type: "string" } },
        labels: { type: "array", items: { type: "object", additionalProperties: false, required: ["key"], properties: { key: { type: "string" }, value: { type: "string" } } } },
        healthEndpoints: { type: "object", additionalProperties: false, properties: { liveness: { type: "string" }, readiness: { type: "string" } } },
        serviceAccountName: { type: "string" },
        options: {
          type: "object",
          additionalProperties: false,
          properties: {
            scale: { type: "object", additionalProperties: false, properties: { min: { type: "integer", minimum: 0 }, max: { type: "integer", minimum: 0 }, metric: { enum: ["concurrency", "rps"] }, target: { type: "number" }, utilization: { type: "number" } } },
            resources: { type: "object", additionalProperties: false, properties: { requests: quantities, limits: { ...quantities, properties: { ...quantities.properties, concurrency: { type: "integer" } } } } },
          },
        },
        subscriptions: {
          type: "array",
          items: { type: "object", additionalProperties: false, required: ["source"], properties: { source: { type: "string" }, filters: { type: "object", additionalProperties: { type: "string" } } } },
        },
      },
    },
  },
} as const;

/** The parts of func.yaml the assertions read. */
interface FuncYaml {
  name: string;
  runtime: string;
  image?: string;
  namespace?: string;
  created: string;
  invoke?: string;
  run?: { envs?: { name: string; value: string }[]; volumes?: { secret?: string; path: string }[] };
  deploy?: {
    namespace?: string;
    labels?: { key: string; value?: string }[];
    healthEndpoints?: { liveness?: string; readiness?: string };
    serviceAccountName?: string;
    options?: { scale?: { min?: number; max?: number }; resources?: { requests?: Record<string, string>; limits?: Record<string, string> } };
    subscriptions?: { source: string; filters?: Record<string, string> }[];
  };
}

const ajv = new Ajv({ allErrors: true, strict: true });
ajv.addFormat("date-time", (value: string) => !Number.isNaN(Date.parse(value)) && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value));
const validateFuncYaml = ajv.compile(FUNC_YAML_SCHEMA);

async function readFuncYaml(name: string): Promise<FuncYaml> {
  return parse(await readFile(path.join(repoRoot, "functions", name, "func.yaml"), "utf8")) as FuncYaml;
}

/** Every function's folder: those of functions/ with an entry module (functions/lib/ has none). */
const FOLDERS = readdirSync(path.join(repoRoot, "functions"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(path.join(repoRoot, "functions", entry.name, "index.ts")))
  .map((entry) => entry.name);

let objects: Manifest[] = [];
const services: Record<string, KnativeService> = {};

before(async () => {
  objects = await kustomize("knative");
  const knativeServices = objects.filter((o): o is KnativeService => o.apiVersion === "serving.knative.dev/v1" && o.kind === "Service");
  for (const name of FOLDERS) {
    const running = knativeServices.filter((s) => containerOf(s).image === `ghcr.io/kubedemo/appmonitor-${name}:latest`);
    assert.equal(running.length, 1, `one Knative Service of knative/ runs functions/${name}/'s image`);
    services[name] = running[0] as KnativeService;
  }
});

test("every function's folder has a func.yaml and a README.md", () => {
  assert.ok(FOLDERS.length >= 4, `function folders: ${FOLDERS.join(", ")}`);
  const missing = FOLDERS.flatMap((name) => ["func.yaml", "README.md"].filter((file) => !existsSync(path.join(repoRoot, "functions", name, file))).map((file) => `functions/${name}/${file}`));
  assert.deepEqual(missing, []);
});

test("the func.yaml schema refuses a misspelt or mistyped field", () => {
  const good = { specVersion: "0.36.0", name: "x", runtime: "typescript", created: "2026-11-29T00:00:00Z" };
  assert.ok(validateFuncYaml(good));
  assert.ok(!validateFuncYaml({ ...good, deploy: { healthEndpoint: { liveness: "/" } } }));
  assert.ok(!validateFuncYaml({ ...good, deploy: { options: { scale: { min: "1" } } } }));
  assert.ok(!validateFuncYaml({ ...good, run: { env: [] } }));
});

for (const name of FOLDERS) {
  describe(`functions/${name}/func.yaml`, () => {
    test("parses, is a valid func.yaml and names the Knative Service of this folder's function", async () => {
      const func = await readFuncYaml(name);
      assert.equal(validateFuncYaml(func), true, JSON.stringify(validateFuncYaml.errors));
      assert.equal(func.name, services[name]?.metadata.name);
      assert.equal(func.runtime, "typescript");
      const entry = path.join(repoRoot, "functions", name, "index.ts");
      assert.ok(existsSync(entry), `${entry} exists`);
      const { fn } = (await import(pathToFileURL(entry).href)) as FunctionModule;
      assert.equal(fn.name, name, "the function's own name");
      assert.equal(func.invoke, fn.kind === "http" ? "http" : "cloudevent", "invoke matches the function's kind");
    });

    test("deploys what the Knative Service of knative/ deploys", async () => {
      const func = await readFuncYaml(name);
      const service = services[name] as KnativeService;
      const container = containerOf(service);
      const annotations = service.spec.template.metadata?.annotations ?? {};
      assert.equal(func.image, container.image);
      assert.equal(func.namespace, INSTALL_NAMESPACE);
      assert.equal(func.deploy?.namespace, INSTALL_NAMESPACE);
      assert.equal(func.deploy?.serviceAccountName, service.spec.template.spec.serviceAccountName);
      assert.deepEqual(func.deploy?.healthEndpoints, { liveness: LIVENESS_PATH, readiness: READINESS_PATH });
      assert.deepEqual(func.deploy?.options?.scale, { min: Number(annotations["autoscaling.knative.dev/min-scale"]), max: Number(annotations["autoscaling.knative.dev/max-scale"]) });
      assert.deepEqual(func.deploy?.options?.resources, container.resources);
      assert.ok(func.deploy?.labels?.some((l) => l.key === "networking.knative.dev/visibility" && l.value === "cluster-local"), "cluster-local");
      // A value from a ConfigMap's key, as func writes one: `{{ configMap:<name>:<key> }}`.
      const valueOf = (e: NonNullable<typeof container.env>[number]) => {
        const ref = e.valueFrom?.configMapKeyRef;
        return ref === undefined ? e.value : `{{ configMap:${ref.name}:${ref.key} }}`;
      };
      assert.deepEqual(func.run?.envs ?? [], (container.env ?? []).map((e) => ({ name: e.name, value: valueOf(e) })));
    });

    test("mounts the same Secrets at the same paths", async () => {
      const func = await readFuncYaml(name);
      const service = services[name] as KnativeService;
      const podSpec = service.spec.template.spec;
      const mounts = (containerOf(service).volumeMounts ?? []).map((m) => {
        const volume = podSpec.volumes?.find((v) => v.name === m.name);
        return { secret: volume?.secret?.secretName, path: m.mountPath };
      });
      assert.deepEqual(func.run?.volumes ?? [], mounts);
    });

    test("subscribes to nothing: every Trigger to the Service is one of knative/eventing/triggers.yaml, with its retries and dead-letter sink", async () => {
      // func turns each `deploy.subscriptions` entry into a Trigger of its own, with no delivery
      // spec (its schema has none): beside the shipped Triggers, every event would arrive twice,
      // once without retries or a dead-letter sink.
      const func = await readFuncYaml(name);
      assert.deepEqual(func.deploy?.subscriptions ?? [], []);
      const service = (services[name] as KnativeService).metadata.name;
      const triggers = objects.filter((o) => o.kind === "Trigger" && (o.spec as { subscriber: { ref: { name: string } } }).subscriber.ref.name === service);
      for (const trigger of triggers) {
        const delivery = (trigger.spec as { delivery?: { retry?: number; deadLetterSink?: unknown } }).delivery;
        assert.ok((delivery?.retry ?? 0) > 0 && delivery?.deadLetterSink !== undefined, `Trigger ${trigger.metadata?.name} retries and dead-letters`);
      }
      if (name === "alert-receiver") assert.equal(triggers.length, 0, "alert-receiver is called by Alertmanager, not the Broker");
      else if (name === "dead-letter") assert.equal(triggers.length, 0, "the dead-letter sink is named by the deliveries' deadLetterSink, not a Trigger");
      else assert.ok(triggers.length > 0);
    });
  });
}
