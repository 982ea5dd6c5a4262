/**
 * `npm run chart -- DIR`: builds the Helm chart into `DIR/appmonitor/`: the chart's own files
 * (charts/appmonitor/: values, schema, helpers, NOTES, the webhook Secret, the scoped RBAC, the
 * dashboard's ConfigMap, with knative/monitoring/dashboard.json in `dashboards/`), the
 * templates generated from knative/ (`chart-templates.ts`), knative/monitoring/
 * (`monitoring.yaml`, where prometheus-operator's API is) and knative/eventing/event-policy.yaml
 * (`eventing-event-policy.yaml`, with `requireSenderIdentity`), the workloads' PodDisruptionBudgets
 * (`poddisruptionbudgets.yaml`), the `helm test` Pod (`tests/release-test.yaml`, running
 * release-test.mjs), the Alertmanager values NOTES prints (`_alertmanager.tpl`, from
 * scripts/alertmanager-routing.ts), values.yaml's defaults (`_defaults.tpl`), the CRD in `crds/`,
 * and `Chart.yaml` with package.json's version as both the chart's version and its appVersion, and
 * the release's image digests in its annotations. Prints the chart's
 * directory.
 * Its arguments, options and exit codes: {@link USAGE} (`--help`).
 */
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { parseAllDocuments, parseDocument, stringify } from "yaml";
import { buildBinaries } from "../lib/binaries.ts";
import { repoRoot } from "../lib/paths.ts";
import { exitOnHelp, usageText, type CommandUsage } from "../lib/usage.ts";
import {
  alertmanagerValuesTemplate, chartTemplates, defaultsTemplate, DIGESTS_ANNOTATION, disruptionBudgetsTemplate, eventPolicyTemplate, IMAGE_KEYS, monitoringTemplate, NAMESPACE_SENTINEL, releaseTestTemplate,
  type RenderedObject, type RenderedProfiles,
} from "./chart-templates.ts";

const run = promisify(execFile);

/** The script of the chart's `helm test` Pod (run by node in alert-receiver's image). */
export const RELEASE_TEST_SCRIPT = path.join(repoRoot, "scripts", "release", "release-test.mjs");

/** The chart's own files, copied as they are into the chart built. */
export const CHART_SOURCE = path.join(repoRoot, "charts", "appmonitor");

/** The kustomization directory of each profile, under knative/. */
export const PROFILE_DIRS: Readonly<Record<keyof RenderedProfiles, string>> = { serving: ".", "eventing-only": "eventing-only" };

/** package.json's name, version and description. */
export async function packageFacts(): Promise<{ name: string; version: string; description: string }> {
  return JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { name: string; version: string; description: string };
}

/** `kubectl kustomize DIR`, its objects. @throws Error with kubectl's stderr. */
async function kustomize(kubectl: string, dir: string): Promise<RenderedObject[]> {
  try {
    const { stdout } = await run(kubectl, ["kustomize", dir], { maxBuffer: 32 << 20 });
    return parseAllDocuments(stdout).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null);
  } catch (error) {
    throw new Error(`kubectl kustomize ${dir}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
  }
}

/** A kustomize `images` entry: the image as knative/ names it, and what it becomes. */
export interface ImagePin {
  readonly name: string;
  readonly newName: string;
  readonly newTag: string;
  readonly digest: string;
}

/** How {@link renderProfiles} renders. */
export interface RenderOptions {
  /** The install's namespace (knative/namespace/namespace.yaml renamed in a copy, as a user would). */
  readonly namespace: string;
  /** Each object's source file in kustomize's origin annotation (`buildMetadata: [originAnnotations]`). */
  readonly origins?: boolean;
  /** Images to pin, through an overlay of each profile (`images:`), as a user would pin them. */
  readonly images?: readonly ImagePin[];
}

/**
 * Hands `use` a copy of knative/ with the install's namespace renamed in namespace.yaml, as a user
 * would rename it, and a scratch directory beside it; removes both after.
 * @throws Error when namespace.yaml has no `name: appmonitor` line.
 */
async function withKnativeCopy<T>(namespace: string, use: (copy: string, tmp: string) => Promise<T>): Promise<T> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "appmonitor-profiles-"));
  try {
    const copy = path.join(tmp, "knative");
    await cp(path.join(repoRoot, "knative"), copy, { recursive: true });
    const nsFile = path.join(copy, "namespace", "namespace.yaml");
    const text = await readFile(nsFile, "utf8");
    const renamed = text.replace(/^ {2}name: appmonitor$/m, `  name: ${namespace}`);
    if (namespace !== "appmonitor" && renamed === text) throw new Error(`${nsFile}: no "name: appmonitor" line to rename`);
    await writeFile(nsFile, renamed);
    return await use(copy, tmp);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Both profiles as kustomize renders them from a copy of knative/.
 * @throws Error when namespace.yaml has no `name: appmonitor` line, or kustomize fails.
 */
export async function renderProfiles(kubectl: string, options: RenderOptions): Promise<RenderedProfiles> {
  return withKnativeCopy(options.namespace, async (copy, tmp) => {
    const rendered: Partial<Record<keyof RenderedProfiles, RenderedObject[]>> = {};
    for (const [profile, dir] of Object.entries(PROFILE_DIRS) as [keyof RenderedProfiles, string][]) {
      let root = path.join(copy, dir);
      if (options.origins) {
        const file = path.join(root, "kustomization.yaml");
        await writeFile(file, `${await readFile(file, "utf8")}\nbuildMetadata: [originAnnotations]\n`);
      }
      if (options.images) {
        const overlay = path.join(tmp, `pinned-${profile}`);
        await mkdir(overlay);
        await writeFile(path.join(overlay, "kustomization.yaml"), stringify({
          apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources: [path.relative(overlay, root)], images: options.images,
        }));
        root = overlay;
      }
      rendered[profile] = await kustomize(kubectl, root);
    }
    return rendered as RenderedProfiles;
  });
}

/**
 * What knative/monitoring/ holds for prometheus-operator, in `namespace`: the functions' PodMonitor
 * as kustomize renders it (not the dashboard's ConfigMap, which the chart makes itself) and the
 * PrometheusRule of alerts on appmonitor (appmonitor-alerts.yaml, applied on its own).
 * @throws Error when kustomize fails.
 */
export async function renderMonitoring(kubectl: string, namespace: string): Promise<RenderedObject[]> {
  return withKnativeCopy(namespace, async (copy) => {
    // The ConfigMap is the chart's own dashboard.yaml.
    const monitors = (await kustomize(kubectl, path.join(copy, "monitoring"))).filter((o) => o.kind !== "ConfigMap");
    const alerts = parseDocument(await readFile(path.join(copy, "monitoring", "appmonitor-alerts.yaml"), "utf8")).toJS() as RenderedObject;
    return [...monitors, { ...alerts, metadata: { ...alerts.metadata, namespace } }];
  });
}

/** knative/eventing/event-policy.yaml's objects (applied on their own, not by the profiles), in `namespace`. */
export async function renderEventPolicies(namespace: string): Promise<RenderedObject[]> {
  const text = await readFile(path.join(repoRoot, "knative", "eventing", "event-policy.yaml"), "utf8");
  return parseAllDocuments(text).map((d) => d.toJS() as RenderedObject).filter((o) => o !== null).map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }));
}

/** What a build pins beside the chart's values (the release's digests). */
export interface ChartOverrides {
  /**
   * Each image's digest by its key in `values.images` (`memoryScaler`: `sha256:…`), written into
   * Chart.yaml's {@link DIGESTS_ANNOTATION}, not values.yaml: an untagged image (the appVersion)
   * is pinned by it, so values kept from an older release cannot hold the image back.
   */
  readonly digests?: Readonly<Record<string, string>>;
}

/**
 * Builds the chart into `<outDir>/appmonitor/` (replaced if there).
 * @param kubectl the kubectl whose kustomize renders knative/ (default build.sh's, built when missing).
 * @returns the chart's directory.
 * @throws Error naming the step that failed.
 */
export async function buildChart(outDir: string, overrides: ChartOverrides = {}, kubectl?: string): Promise<string> {
  const chartDir = path.join(outDir, "appmonitor");
  await rm(chartDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  await cp(CHART_SOURCE, chartDir, { recursive: true });
  const kubectlBin = kubectl ?? path.join(await buildBinaries(process.env, undefined, ["kube"]), "kubectl");
  const profiles = await renderProfiles(kubectlBin, { namespace: NAMESPACE_SENTINEL, origins: true });
  for (const [file, text] of chartTemplates(profiles)) await writeFile(path.join(chartDir, file), text);
  await writeFile(path.join(chartDir, "templates", "_alertmanager.tpl"), alertmanagerValuesTemplate());
  const monitoring = await renderMonitoring(kubectlBin, NAMESPACE_SENTINEL);
  await writeFile(path.join(chartDir, "templates", "monitoring.yaml"), monitoringTemplate(monitoring));
  await writeFile(path.join(chartDir, "templates", "poddisruptionbudgets.yaml"), disruptionBudgetsTemplate(profiles));
  await mkdir(path.join(chartDir, "templates", "tests"));
  await writeFile(path.join(chartDir, "templates", "tests", "release-test.yaml"), releaseTestTemplate(profiles, monitoring, await readFile(RELEASE_TEST_SCRIPT, "utf8")));
  await writeFile(path.join(chartDir, "templates", "eventing-event-policy.yaml"), eventPolicyTemplate(await renderEventPolicies(NAMESPACE_SENTINEL)));
  // The dashboard's one source is knative/monitoring/; templates/dashboard.yaml reads this copy.
  await mkdir(path.join(chartDir, "dashboards"));
  await cp(path.join(repoRoot, "knative", "monitoring", "dashboard.json"), path.join(chartDir, "dashboards", "appmonitor.json"));
  await mkdir(path.join(chartDir, "crds"));
  await cp(path.join(repoRoot, "knative", "crd", "appmonitor.yaml"), path.join(chartDir, "crds", "appmonitor.yaml"));
  const values = parseDocument(await readFile(path.join(chartDir, "values.yaml"), "utf8")).toJS() as Record<string, unknown>;
  await writeFile(path.join(chartDir, "templates", "_defaults.tpl"), defaultsTemplate(values));
  const keys = new Set(Object.values(IMAGE_KEYS));
  for (const key of Object.keys(overrides.digests ?? {})) if (!keys.has(key)) throw new Error(`values.images has no ${key}`);
  const pkg = await packageFacts();
  await writeFile(path.join(chartDir, "Chart.yaml"), [
    "# Written by scripts/release/build-chart.ts from package.json.",
    stringify({
      apiVersion: "v2", name: pkg.name, description: pkg.description, type: "application",
      version: pkg.version, appVersion: pkg.version, kubeVersion: ">=1.30.0-0",
      keywords: ["knative", "memory", "autoscaling", "prometheus", "vertical-scaling"],
      annotations: {
        "appmonitor.kubedemo.com/profiles": "serving, eventing-only",
        ...(overrides.digests ? { [DIGESTS_ANNOTATION]: JSON.stringify(overrides.digests) } : {}),
      },
    }),
  ].join("\n"));
  return chartDir;
}

const USAGE: CommandUsage = {
  synopsis: ["npm run chart -- DIR"],
  arguments: [{ name: "DIR", means: "the chart is built into DIR/appmonitor/, replaced if there" }],
  notes: ["kubectl (for kustomize) is build.sh's, built when missing. Exit codes: 0 built; 1 a step failed (named); 2 usage."],
};

if (import.meta.main) {
  exitOnHelp(process.argv.slice(2), USAGE);
  let outDir = "";
  try {
    const { positionals } = parseArgs({ allowPositionals: true, options: {} });
    if (positionals.length !== 1) throw new Error(`one DIR is needed, got ${positionals.length}`);
    outDir = positionals[0] as string;
  } catch (error) {
    console.error(`chart: ${(error as Error).message}\n${usageText(USAGE)}`);
    process.exit(2);
  }
  try {
    console.log(await buildChart(path.resolve(outDir)));
  } catch (error) {
    console.error(`chart: ${(error as Error).message}`);
    process.exit(1);
  }
}
