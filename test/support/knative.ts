/**
 * What the tests of the install tree (`knative/`) share: the objects `kubectl kustomize` builds,
 * the published-schema model of each object's kind (kubernetes-models, @kubernetes-models/knative,
 * @kubernetes-models/prometheus-operator), the Knative Services by function, and the environment
 * variables a function's configuration reads.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { resolveBinaries } from "../harness/stack/paths.ts";
import { repoRoot } from "../../scripts/lib/paths.ts";
import { readState } from "../harness/stack/state.ts";
import type { KnativeService, ServiceContainer } from "../harness/lib/knative-service.ts";
import type { Manifest } from "../../scripts/lib/manifest.ts";
import { manifestFile, parseManifests } from "../harness/lib/manifests.ts";

export { manifestFile, parseManifests };

/** The functions, each a folder under `functions/` and a Knative Service of the same name. */
export const FUNCTION_NAMES = ["alert-receiver", "memory-scaler", "rule-sync"] as const;

/** One of {@link FUNCTION_NAMES}. */
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** The namespace everything of the install lives in (`knative/namespace/namespace.yaml`). */
export const INSTALL_NAMESPACE = "appmonitor";

/** The shapes of a manifest (scripts/lib/) and a Knative Service (the harness, which reads them too). */
export type { KnativeService, Manifest, ServiceContainer };

/**
 * The kubectl to use: the running test stack's own (what `npm test`'s global setup puts first on
 * PATH), else the one `test/harness/stack/paths.ts` finds or builds (cached after the first build).
 */
export async function kubectlBinary(): Promise<string> {
  const dir = process.env.APPMONITOR_STACK_DIR;
  const state = dir ? await readState(dir) : undefined;
  if (state && existsSync(path.join(state.kubectlDir, "kubectl"))) return path.join(state.kubectlDir, "kubectl");
  return (await resolveBinaries()).kubectl;
}


/**
 * `kubectl kustomize [flags] <repo>/<relativeDir>` (or `<dir>` when absolute), parsed
 * (`--load-restrictor=LoadRestrictionsNone` for a kustomization whose resources lie outside its directory).
 * @throws Error with kubectl's stderr when the build fails.
 */
export async function kustomize(relativeDir: string, flags: readonly string[] = []): Promise<Manifest[]> {
  const kubectl = await kubectlBinary();
  try {
    const { stdout } = await promisify(execFile)(kubectl, ["kustomize", ...flags, path.resolve(repoRoot, relativeDir)], { maxBuffer: 32 << 20 });
    return parseManifests(stdout, `kubectl kustomize ${relativeDir}`);
  } catch (error) {
    throw new Error(`kubectl kustomize ${relativeDir} failed: ${(error as { stderr?: string }).stderr ?? String(error)}`, { cause: error });
  }
}


/** `group/version` split; the core group is "". */
export function groupVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.lastIndexOf("/");
  return slash < 0 ? { group: "", version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** What the tests need of a kubernetes-models model class. */
interface ModelClass {
  readonly apiVersion: string;
  readonly kind: string;
  new (data: unknown): { validate(): void };
}

/**
 * The published-schema model of `apiVersion`/`kind`: Kubernetes' own kinds from kubernetes-models,
 * `*.knative.dev` from @kubernetes-models/knative, `monitoring.coreos.com` from
 * @kubernetes-models/prometheus-operator. Each kind's module is imported on its own: importing
 * the packages' indexes costs seconds.
 * @throws Error when no package publishes that kind.
 */
export async function modelFor(apiVersion: string, kind: string): Promise<ModelClass> {
  const { group, version } = groupVersion(apiVersion);
  const pkg = group.endsWith("knative.dev") ? "@kubernetes-models/knative" : group === "monitoring.coreos.com" ? "@kubernetes-models/prometheus-operator" : "kubernetes-models";
  const specifier = `${pkg}/${group === "" ? "" : `${group}/`}${version}/${kind}`;
  let module: Record<string, unknown>;
  try {
    module = (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`no published schema for ${apiVersion} ${kind} (${specifier})`, { cause: error });
  }
  const model = module[kind] as ModelClass | undefined;
  if (model === undefined || model.apiVersion !== apiVersion || model.kind !== kind) throw new Error(`${specifier} does not export the model of ${apiVersion} ${kind}`);
  return model;
}

/**
 * Kinds whose published model lists `status` as required although no manifest sets it (the
 * controller writes it; the Go type's `status` lacks `omitempty`, which the model generator
 * turns into `required`). Knative's own CRD does not require it.
 */
export const MODELS_REQUIRING_STATUS: ReadonlySet<string> = new Set(["sources.knative.dev/v1 SinkBinding"]);

/**
 * Validates `object` against its kind's published schema (`new Model(object).validate()`). For
 * a kind in {@link MODELS_REQUIRING_STATUS} without a status, an empty status is supplied.
 * @throws Error naming the object and listing the schema errors.
 */
export async function validateAgainstPublishedSchema(object: Manifest): Promise<void> {
  const Model = await modelFor(object.apiVersion, object.kind);
  const data = MODELS_REQUIRING_STATUS.has(`${object.apiVersion} ${object.kind}`) && object.status === undefined ? { ...object, status: {} } : object;
  try {
    new Model(data).validate();
  } catch (error) {
    throw new Error(`${object.apiVersion} ${object.kind} ${object.metadata.name}: ${(error as Error).message}`, { cause: error });
  }
}

/** The Knative Service of each function in `objects`. @throws Error when one is missing or doubled. */
export function servicesByFunction(objects: readonly Manifest[]): Record<FunctionName, KnativeService> {
  const services = objects.filter((o): o is KnativeService => o.apiVersion === "serving.knative.dev/v1" && o.kind === "Service");
  const result: Partial<Record<FunctionName, KnativeService>> = {};
  for (const name of FUNCTION_NAMES) {
    const matching = services.filter((s) => s.metadata.name === name);
    if (matching.length !== 1) throw new Error(`expected one Knative Service ${name}, found ${matching.length}`);
    result[name] = matching[0];
  }
  return result as Record<FunctionName, KnativeService>;
}

/** The one container of a Knative Service. @throws Error when there is not exactly one. */
export function containerOf(service: KnativeService): ServiceContainer {
  const [container, ...more] = service.spec.template.spec.containers;
  if (container === undefined || more.length > 0) throw new Error(`Service ${service.metadata.name}: expected one container`);
  return container;
}

/** The environment variables a function's configuration reads, found by a static scan. */
export interface ConfigVariables {
  /** The files scanned, relative to the repository. */
  readonly files: readonly string[];
  /** Every variable read, `*_FILE` variants of secrets included. */
  readonly names: ReadonlySet<string>;
}

/** The runtime's configuration module, read by every function (`PORT`, `LOG_LEVEL`, …). */
export const RUNTIME_CONFIG_MODULE = "functions/lib/runtime/config.ts";

/**
 * The variables function `name` reads: a static scan of `functions/<name>/config.ts`, the shared
 * `functions/lib/` modules it imports, and the runtime's `functions/lib/runtime/config.ts`. Every config module reads the environment through
 * the helpers of `functions/lib/runtime/env.ts`, called as `helper(env, "NAME", …)`, so the scan
 * takes the string literal after `env` in every call; `readSecret(env, "NAME")` also reads
 * `NAME_FILE`. Direct reads (`env.NAME`, `env["NAME"]`) count too.
 * @throws Error when the function has no config module.
 */
export async function configVariables(name: FunctionName): Promise<ConfigVariables> {
  const own = `functions/${name}/config.ts`;
  // The shared modules its config module reads variables through (functions/lib/namespace-scope.ts's WATCH_NAMESPACES).
  const shared = [...(await readFile(path.join(repoRoot, own), "utf8")).matchAll(/from "\.\.\/lib\/([\w-]+\.ts)"/g)].map((m) => `functions/lib/${m[1]}`);
  const files = [own, ...shared, RUNTIME_CONFIG_MODULE];
  const names = new Set<string>();
  for (const file of files) {
    const source = stripComments(await readFile(path.join(repoRoot, file), "utf8"));
    for (const m of source.matchAll(/\b(\w+)\(\s*env\s*,\s*["']([A-Z][A-Z0-9_]*)["']/g)) {
      const [, helper, variable] = m;
      if (variable === undefined) continue;
      names.add(variable);
      if (helper === "readSecret") names.add(`${variable}_FILE`);
    }
    for (const m of source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)\b|\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\])/g)) {
      const variable = m[1] ?? m[2];
      if (variable !== undefined) names.add(variable);
    }
  }
  return { files, names };
}

/** Drops `//` and block comments, so variables only mentioned in documentation do not count. */
function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}
