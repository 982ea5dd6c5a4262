/**
 * `npm run release [-- DIR]`: writes the release of package.json's version into one directory
 * (default `dist/appmonitor-<version>/`, replaced if there):
 *
 *   images/*.oci.tar        alert-receiver, memory-scaler, rule-sync, the dead-letter sink
 *                           (dead-letter) and memhog, each an OCI archive named
 *                           ghcr.io/kubedemo/appmonitor-<name>:<tag>, its digest kept from the build
 *   images.txt              archive, name, tag and digest of each, for push-images.sh
 *   push-images.sh          pushes them to a registry of yours, keeping (and checking) the digests
 *   manifests/              each install profile rendered by kustomize from knative/, every image
 *                           pinned by tag and digest (appmonitor-serving.yaml, appmonitor-eventing-only.yaml),
 *                           and the CRD alone (appmonitor-crd.yaml, for upgrades)
 *   appmonitor-<v>.tgz      the Helm chart (build-chart.ts), linted, its values pinning the digests
 *   examples/, alertmanager/  the original demo's objects; Alertmanager's routing: a plain
 *                           Alertmanager's (knative/) and kube-prometheus-stack's values
 *                           (scripts/alertmanager-routing.ts), alert-receiver in namespace appmonitor
 *   monitoring/             for a Prometheus prometheus-operator runs (knative/monitoring/): the
 *                           functions' PodMonitor and the Grafana dashboard's ConfigMap
 *                           (monitoring.yaml), the dashboard alone (appmonitor-dashboard.json) and
 *                           the PrometheusRule of alerts on appmonitor itself
 *   admission/              in-place-memory.yaml: the MutatingAdmissionPolicies that give a
 *                           workload's new Pods the memory an in-place scale recorded (Kubernetes
 *                           1.36; not in the manifests or the chart, which older clusters install)
 *   RELEASE-NOTES.md        CHANGELOG.md's section for the version, the images, the commands
 *   SHA256SUMS              every file above
 *
 * The images are built with `npm run image`'s builder (podman, cached); helm and kubectl by
 * test/harness/bins/build.sh (`scripts/lib/binaries.ts`). Prints one line per step and the directory.
 * Its arguments, options and exit codes: {@link USAGE} (`--help`).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, cp, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { stringify } from "yaml";
import { archiveDigest } from "../images/archive.ts";
import { buildImages } from "../images/build.ts";
import { buildBinaries } from "../lib/binaries.ts";
import { repoRoot } from "../lib/paths.ts";
import { exitOnHelp, usageText, type CommandUsage } from "../lib/usage.ts";
import { kubePrometheusStackValuesYaml } from "../alertmanager-routing.ts";
import { policyPath as inPlacePolicyPath } from "../in-place-policy.ts";
import { buildChart, packageFacts, renderProfiles, type ImagePin } from "./build-chart.ts";
import { IMAGE_KEYS, PROFILES } from "./chart-templates.ts";
import { changelogSection, checksums, imagesList, PUSH_SCRIPT, RELEASE_REGISTRY, releaseNotes, type ReleaseImage } from "./release-files.ts";

const run = promisify(execFile);
/** kubectl and Helm read YAML 1.1, where a bare `Off` (an enum value of the CRD) is false: quote such strings. */
const YAML_11 = { lineWidth: 0, version: "1.1" } as const;

/** Runs a tool; its stdout. @throws Error naming the command, with its stderr. */
async function tool(file: string, args: readonly string[]): Promise<string> {
  try {
    return (await run(file, [...args], { maxBuffer: 64 << 20 })).stdout;
  } catch (error) {
    throw new Error(`${path.basename(file)} ${args.join(" ")}: ${(error as { stderr?: string }).stderr?.trim() || String(error)}`, { cause: error });
  }
}

/** Every file under `dir`, as paths relative to it. */
async function filesUnder(dir: string, prefix = ""): Promise<string[]> {
  const entries = await readdir(path.join(dir, prefix), { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? filesUnder(dir, path.join(prefix, e.name)) : [path.join(prefix, e.name)])));
  return nested.flat();
}

async function sha256(file: string): Promise<string> {
  return createHash("sha256").update(await readFile(file)).digest("hex");
}

/** build.sh's sets the release uses: kubectl (`kube`) and helm, which render, package and lint the chart. */
export const RELEASE_BINARY_SETS = ["kube", "helm"] as const;

/**
 * Writes the release into `outDir`.
 * @param say hears one line per step.
 * @returns the directory.
 * @throws Error naming the step that failed.
 */
export async function release(outDir: string, say: (line: string) => void = () => {}): Promise<string> {
  const t0 = Date.now();
  const step = (line: string) => say(`${line} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  const { version } = await packageFacts();
  const section = changelogSection(await readFile(path.join(repoRoot, "CHANGELOG.md"), "utf8"), version);
  const bin = await buildBinaries(process.env, say, RELEASE_BINARY_SETS);
  const [kubectl, helm] = [path.join(bin, "kubectl"), path.join(bin, "helm")];
  step("binaries: kubectl, helm");

  await rm(outDir, { recursive: true, force: true });
  await mkdir(path.join(outDir, "images"), { recursive: true });
  const built = await buildImages(["alert-receiver", "memory-scaler", "rule-sync", "dead-letter", "memhog"], say);
  const archiveOf = (name: string) => built.find((b) => b.name === name)?.archive ?? "";
  const sources = [
    { key: "alertReceiver", name: "appmonitor-alert-receiver", tag: version, from: archiveOf("alert-receiver"), what: "alert-receiver: Alertmanager's webhook → one CloudEvent per alert" },
    { key: "memoryScaler", name: "appmonitor-memory-scaler", tag: version, from: archiveOf("memory-scaler"), what: "memory-scaler: raises the workload's memory" },
    { key: "ruleSync", name: "appmonitor-rule-sync", tag: version, from: archiveOf("rule-sync"), what: "rule-sync: one PrometheusRule per AppMonitor" },
    { key: "deadLetter", name: "appmonitor-dead-letter", tag: version, from: archiveOf("dead-letter"), what: "dead-letter: the dead-letter sink, one Warning Event per dead letter" },
    { key: undefined, name: "appmonitor-memhog", tag: version, from: archiveOf("memhog"), what: "memhog, the original demo's workload (examples/memhog.yaml names it quay.io/metral/memhog:v0.0.1)" },
  ];
  const images: (ReleaseImage & { key: string | undefined })[] = [];
  for (const s of sources) {
    const archive = `${s.name}.oci.tar`;
    // The same manifest under the release's name: the digest is the build's.
    await tool("skopeo", ["copy", "--quiet", "--preserve-digests", `oci-archive:${s.from}`, `oci-archive:${path.join(outDir, "images", archive)}:${RELEASE_REGISTRY}/${s.name}:${s.tag}`]);
    const digest = await archiveDigest(path.join(outDir, "images", archive));
    if (digest !== (await archiveDigest(s.from))) throw new Error(`images/${archive}: its digest ${digest} is not the build's`);
    images.push({ key: s.key, archive, name: s.name, tag: s.tag, digest, what: s.what });
  }
  await writeFile(path.join(outDir, "images.txt"), imagesList(images));
  await writeFile(path.join(outDir, "push-images.sh"), PUSH_SCRIPT);
  await chmod(path.join(outDir, "push-images.sh"), 0o755);
  step(`images: ${images.map((i) => `${i.name}:${i.tag}@${i.digest.slice(0, 19)}`).join(", ")}`);

  const pins: ImagePin[] = Object.entries(IMAGE_KEYS).map(([name, key]) => {
    const image = images.find((i) => i.key === key);
    if (!image) throw new Error(`no release image for ${name} (${key})`);
    return { name, newName: `${RELEASE_REGISTRY}/${image.name}`, newTag: image.tag, digest: image.digest };
  });
  const profiles = await renderProfiles(kubectl, { namespace: "appmonitor", images: pins });
  await mkdir(path.join(outDir, "manifests"));
  for (const profile of PROFILES) {
    const text = profiles[profile].map((o) => stringify(o, YAML_11)).join("---\n");
    const unpinned = [...text.matchAll(/^\s*image: (\S+)$/gm)].map((m) => m[1] ?? "").filter((i) => !/:[\w.-]+@sha256:[0-9a-f]{64}$/.test(i));
    if (unpinned.length > 0) throw new Error(`manifests/appmonitor-${profile}.yaml: images not pinned by tag and digest: ${unpinned.join(", ")}`);
    await writeFile(path.join(outDir, "manifests", `appmonitor-${profile}.yaml`), `# appmonitor ${version}, the ${profile} profile (knative/${profile === "serving" ? "" : "eventing-only/"}), rendered by kustomize.\n${text}`);
  }
  // The CRD alone too: `helm upgrade` never changes a CRD, so an upgrade applies it first.
  await cp(path.join(repoRoot, "knative", "crd", "appmonitor.yaml"), path.join(outDir, "manifests", "appmonitor-crd.yaml"));
  step("manifests: both profiles rendered, every image pinned by tag and digest; the CRD");

  const chartBuild = path.join(outDir, ".chart");
  const digests = Object.fromEntries(images.filter((i) => i.key !== undefined).map((i) => [i.key as string, i.digest]));
  const chart = await buildChart(chartBuild, { digests }, kubectl);
  for (const profile of PROFILES) await tool(helm, ["lint", "--strict", chart, "--set", `profile=${profile}`]);
  await tool(helm, ["package", chart, "--destination", outDir]);
  await rm(chartBuild, { recursive: true, force: true });
  step(`chart: appmonitor-${version}.tgz, helm lint clean for both profiles`);

  await cp(path.join(repoRoot, "knative", "examples"), path.join(outDir, "examples"), { recursive: true, filter: (f) => !f.endsWith("kustomization.yaml") });
  await mkdir(path.join(outDir, "alertmanager"));
  await cp(path.join(repoRoot, "knative", "alertmanager", "alertmanager.yml"), path.join(outDir, "alertmanager", "alertmanager.yml"));
  await writeFile(path.join(outDir, "alertmanager", "kube-prometheus-stack-values.yaml"), kubePrometheusStackValuesYaml("appmonitor"));
  // Not in the manifests: it needs prometheus-operator's CRDs, which an install may lack.
  await mkdir(path.join(outDir, "monitoring"));
  await writeFile(path.join(outDir, "monitoring", "monitoring.yaml"), await tool(kubectl, ["kustomize", path.join(repoRoot, "knative", "monitoring")]));
  await cp(path.join(repoRoot, "knative", "monitoring", "dashboard.json"), path.join(outDir, "monitoring", "appmonitor-dashboard.json"));
  await cp(path.join(repoRoot, "knative", "monitoring", "appmonitor-alerts.yaml"), path.join(outDir, "monitoring", "appmonitor-alerts.yaml"));
  await mkdir(path.join(outDir, "admission"));
  await cp(inPlacePolicyPath, path.join(outDir, "admission", "in-place-memory.yaml"));
  await writeFile(path.join(outDir, "RELEASE-NOTES.md"), releaseNotes(version, section, images));
  const files = await filesUnder(outDir);
  await writeFile(path.join(outDir, "SHA256SUMS"), checksums(await Promise.all(files.map(async (f) => ({ path: f, sha256: await sha256(path.join(outDir, f)) })))));
  step(`RELEASE-NOTES.md, SHA256SUMS over ${files.length} files`);
  return outDir;
}

const USAGE: CommandUsage = {
  synopsis: ["npm run release [-- DIR]"],
  arguments: [{ name: "DIR", means: "where the release is written, replaced if there", defaultIs: "dist/appmonitor-<package.json's version>/" }],
  notes: ["Exit codes: 0 written; 1 a step failed (named); 2 usage."],
};

if (import.meta.main) {
  exitOnHelp(process.argv.slice(2), USAGE);
  let dirArg: string | undefined;
  try {
    const { positionals } = parseArgs({ allowPositionals: true, options: {} });
    if (positionals.length > 1) throw new Error(`one DIR at most, got ${positionals.length}`);
    dirArg = positionals[0];
  } catch (error) {
    console.error(`release: ${(error as Error).message}\n${usageText(USAGE)}`);
    process.exit(2);
  }
  try {
    const { version } = await packageFacts();
    const dir = path.resolve(dirArg ?? path.join(repoRoot, "dist", `appmonitor-${version}`));
    console.log(await release(dir, (line) => process.stderr.write(`release: ${line}\n`)));
  } catch (error) {
    console.error(`release: ${(error as Error).message}`);
    process.exit(1);
  }
}
