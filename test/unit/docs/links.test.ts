/**
 * The user documentation names only what exists: every repository path (a backticked path or a
 * relative Markdown link), every `npm run <script>` and every environment variable that
 * README.md and docs/*.md name is in the repository, in package.json, or in the code that reads
 * it; and README.md stays short, at most 200 lines, with the rest in docs/.
 *
 * What counts as a repository path: a backticked span without spaces whose first segment is an
 * entry at the repository root (`test/harness/bins/kube`, `.ci/run`, `Dockerfile`) must exist
 * (a `*` or a `<placeholder>` segment matches any name); one that does not start there but ends
 * in a source or manifest extension (`rule.ts`, `eventing/broker.yaml`) must end some tracked
 * file's path. A relative link must resolve from the file it is in. Environment variables are
 * backticked upper-case names (`K_SINK`, `RULE_LABELS=release=prometheus`) and `$NAMES` in the
 * text or its code blocks; each must occur, as a whole word, in a tracked file under functions/,
 * test/harness/, scripts/ or knative/, or in the Dockerfile (its build arguments). The arguments
 * after `npm run <script> --` must be the script's: each `--flag` occurs in the code under the
 * folder of the file the script runs, and each lower-case word (a subcommand, a benchmark, an
 * image) occurs there as a quoted string or is the name of a tracked file or folder. Every
 * resource that `kubectl get|describe|delete|edit|patch|annotate|label|wait` is given is a
 * resource Kubernetes serves (the list below) or a kind some tracked manifest declares or uses.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const README_MAX_LINES = 200;

/**
 * Names the documentation may use that legitimately are not in the repository, each with why.
 * Keep it short: anything else that fails here is a path, script or variable that does not exist.
 */
const ALLOWED_PATHS: ReadonlyMap<string, string> = new Map([
  ["deploy/vpa-v1-crd-gen.yaml", "a file of the pinned k8s.io/autoscaler module, not of this repository"],
  ["crds/monitoring.coreos.com_prometheusrules.yaml", "generated into the binaries' cache directory"],
  ["crds/autoscaling.k8s.io_verticalpodautoscalers.yaml", "generated into the binaries' cache directory"],
  ["cmd/kube-apiserver/app/server.go", "a file of the pinned k8s.io/kubernetes module"],
  ["pause.oci.tar", "an archive the build writes into the cache directory"],
  ["appmonitor-rules.yml", "the file the user writes with npm run rules"],
  ...["push-images.sh", "RELEASE-NOTES.md", "manifests/appmonitor-serving.yaml", "manifests/appmonitor-eventing-only.yaml", "manifests/appmonitor-crd.yaml",
    "monitoring/monitoring.yaml", "monitoring/appmonitor-dashboard.json", "alertmanager/kube-prometheus-stack-values.yaml", "admission/in-place-memory.yaml"]
    .map((file) => [file, "a file of the release directory npm run release writes (scripts/release/release.ts)"] as const),
]);
const ALLOWED_ENV: ReadonlyMap<string, string> = new Map([
  ["APPLY", "the API server's verb label for a server-side apply, not a variable"],
  ["STOPPED", "the state npm run stack -- status prints, not a variable"],
  ["EBADENGINE", "the code of npm's engine warning, not a variable"],
]);

/**
 * Resource names of the built-in Kubernetes API the documentation may give kubectl, as kubectl
 * accepts them (plural, singular, short name). A kind of another project (Knative,
 * prometheus-operator, ours) passes when a tracked manifest names it as `kind:`.
 */
const BUILT_IN_RESOURCES = new Set([
  "pods", "pod", "po", "deployments", "deployment", "deploy", "statefulsets", "statefulset", "sts", "daemonsets", "daemonset", "ds",
  "replicasets", "replicaset", "rs", "jobs", "job", "events", "event", "ev", "nodes", "node", "no", "namespaces", "namespace", "ns",
  "services", "service", "svc", "secrets", "secret", "configmaps", "configmap", "cm", "serviceaccounts", "serviceaccount", "sa",
  "leases", "lease", "resourcequotas", "resourcequota", "quota", "horizontalpodautoscalers", "horizontalpodautoscaler", "hpa",
  "customresourcedefinitions", "customresourcedefinition", "crd", "crds", "validatingadmissionpolicies", "validatingadmissionpolicy",
  "clusterroles", "clusterrole", "roles", "role", "rolebindings", "rolebinding", "clusterrolebindings", "clusterrolebinding", "all",
]);

/** Repository files, as git tracks them, plus the documentation itself if not yet committed. */
function trackedFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  return listed.split("\0").filter((file) => file !== "" && existsSync(join(ROOT, file)));
}

function docs(): string[] {
  return ["README.md", ...readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];
}

function read(file: string): string {
  return readFileSync(join(ROOT, file), "utf8");
}

/** Inline code spans outside fenced blocks, and the fenced blocks' text. */
function split(text: string): { spans: string[]; fenced: string } {
  const fenced: string[] = [];
  const prose = text.replace(/^[ \t]*```[^\n]*\n([\s\S]*?)^[ \t]*```[ \t]*$/gm, (_match, body: string) => {
    fenced.push(body);
    return "";
  });
  const spans = [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? "");
  return { spans, fenced: fenced.join("\n") };
}

const SOURCE_EXTENSION = /\.(?:ts|js|json|ya?ml|md|sh|svg|go|mod|tar)$/;

/** A path pattern (with `*` and `<placeholder>` segments) as a regular expression over tracked paths. */
function pathPattern(path: string): RegExp {
  const escaped = path
    .replace(/\/$/, "")
    .split(/(<[^>]+>|\*|…)/)
    .map((part, index) => (index % 2 === 1 ? "[^/]+" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${escaped}(?:/.*)?$`);
}

function candidatePath(span: string): string | undefined {
  const path = span.replace(/[.,;:]$/, "");
  if (/\s/.test(path) || /^(?:https?:|\/|~|\$|-|\.\.)/.test(path) || path.includes("=") || path.includes("://")) return undefined;
  if (!path.includes("/") && !SOURCE_EXTENSION.test(path) && path !== "Dockerfile") return undefined;
  return path;
}

describe("the user documentation", () => {
  const files = trackedFiles();
  const fileSet = new Set(files);
  const dirSet = new Set(files.flatMap((file) => file.split("/").slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join("/"))));
  const rootEntries = new Set(files.map((file) => file.split("/")[0] ?? ""));
  const existsInRepo = (path: string): boolean => {
    const clean = path.replace(/\/$/, "");
    if (/[*<…]/.test(clean)) {
      const pattern = pathPattern(clean);
      return files.some((file) => pattern.test(file));
    }
    return fileSet.has(clean) || dirSet.has(clean);
  };

  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    const lines = read("README.md").split("\n").length - (read("README.md").endsWith("\n") ? 1 : 0);
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines; move detail into docs/`);
  });

  it("names only repository paths that exist", () => {
    const missing: string[] = [];
    for (const doc of docs()) {
      for (const span of split(read(doc)).spans) {
        const path = candidatePath(span);
        if (path === undefined || ALLOWED_PATHS.has(path)) continue;
        const first = path.split("/")[0] ?? "";
        if (rootEntries.has(first)) {
          if (!existsInRepo(path)) missing.push(`${doc}: \`${span}\``);
        } else if (SOURCE_EXTENSION.test(path) && !/[*<…]/.test(path)) {
          if (!files.some((file) => file === path || file.endsWith(`/${path}`))) missing.push(`${doc}: \`${span}\` (no tracked file ends so)`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });

  it("links only to files and folders that exist", () => {
    const missing: string[] = [];
    for (const doc of docs()) {
      const { fenced } = split(read(doc));
      const text = read(doc).replace(fenced, "");
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1] ?? "";
        if (/^(?:[a-z]+:|#)/.test(target)) continue;
        const path = normalize(join(dirname(doc), target.replace(/#.*$/, "")));
        if (relative(".", path).startsWith("..") || !existsInRepo(path.replace(/\\/g, "/"))) missing.push(`${doc}: (${target})`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("names only npm scripts package.json has", () => {
    const scripts = new Set(Object.keys((JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts));
    const missing: string[] = [];
    for (const doc of docs()) {
      for (const match of read(doc).matchAll(/\bnpm run(?: -s| --silent)? ([a-z][\w:-]*)/g)) {
        if (!scripts.has(match[1] ?? "")) missing.push(`${doc}: npm run ${match[1]}`);
      }
    }
    assert.ok(scripts.size > 0);
    assert.deepEqual(missing, []);
  });

  it("names only environment variables the code reads or sets", () => {
    const searched = files.filter((file) => /^(?:functions|test\/harness|test\/support|scripts|knative)\//.test(file) || file === "Dockerfile");
    const code = searched.map((file) => read(file)).join("\n");
    const words = new Set(code.match(/\b[A-Z][A-Z0-9_]*[A-Z0-9]\b/g) ?? []);
    const missing = new Set<string>();
    for (const doc of docs()) {
      const { spans, fenced } = split(read(doc));
      const named = [
        ...spans.flatMap((span) => {
          const match = /^\$?([A-Z][A-Z0-9_]*[A-Z0-9])(?:=.*)?$/.exec(span.trim());
          return match?.[1] === undefined ? [] : [match[1]];
        }),
        ...[...read(doc).matchAll(/\$\{?([A-Z][A-Z0-9_]*[A-Z0-9])\b/g)].map((match) => match[1] ?? ""),
        ...[...fenced.matchAll(/^\s*([A-Z][A-Z0-9_]*_[A-Z0-9_]+)=/gm)].map((match) => match[1] ?? ""),
      ];
      for (const name of named) {
        if (name.length < 3) continue;
        if (!words.has(name) && !ALLOWED_ENV.has(name)) missing.add(`${doc}: ${name}`);
      }
    }
    assert.deepEqual([...missing], []);
  });

  it("gives each npm script only the arguments it takes", () => {
    const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
    const basenames = new Set([...fileSet, ...dirSet].map((path) => path.split("/").pop() ?? ""));
    const missing: string[] = [];
    let checked = 0;
    for (const doc of docs()) {
      const text = read(doc);
      for (const match of text.matchAll(/\bnpm run(?: -s| --silent)? ([a-z][\w:-]*) -- ([^`\n#)]*)/g)) {
        const entry = /\bnode (\S+\.ts)\b/.exec(scripts[match[1] ?? ""] ?? "")?.[1];
        if (entry === undefined) continue;
        const folder = dirname(entry);
        const code = files.filter((file) => file.startsWith(`${folder}/`) && file.endsWith(".ts")).map((file) => read(file)).join("\n");
        for (const arg of (match[2] ?? "").split(/\s+/)) {
          const word = arg.replace(/[.,;:]$/, "");
          if (/^--[a-z][\w-]*$/.test(word)) {
            checked += 1;
            if (!new RegExp(`${word}\\b`).test(code)) missing.push(`${doc}: npm run ${match[1]} -- ${word}`);
          } else if (/^[a-z][a-z0-9-]*$/.test(word)) {
            checked += 1;
            const quoted = new RegExp(`["'\`]${word}["'\`]`).test(code);
            if (!quoted && !basenames.has(word) && !basenames.has(`${word}.ts`)) missing.push(`${doc}: npm run ${match[1]} -- ${word}`);
          } else if (/^[&|;>]/.test(word)) break;
        }
      }
    }
    assert.ok(checked > 0);
    assert.deepEqual(missing, []);
  });

  it("gives kubectl only resources that exist", () => {
    const kinds = new Set<string>();
    for (const file of files.filter((path) => /\.(?:ya?ml|ts)$/.test(path) && !path.startsWith("test/unit/docs/"))) {
      for (const match of read(file).matchAll(/\bkind: "?([A-Z][A-Za-z]+)"?/g)) kinds.add((match[1] ?? "").toLowerCase());
    }
    const known = (resource: string): boolean => {
      const name = resource.split(".")[0] ?? "";
      return BUILT_IN_RESOURCES.has(name) || kinds.has(name) || kinds.has(name.replace(/e?s$/, "")) || kinds.has(name.replace(/s$/, ""));
    };
    const missing: string[] = [];
    let checked = 0;
    for (const doc of docs()) {
      for (const match of read(doc).matchAll(/\bkubectl((?: -[nA](?: [a-z0-9-]+)?)*) (get|describe|delete|edit|patch|annotate|label|wait)((?: -[-a-zA-Z]+(?:[ =][^ `]+)?)*) ([a-z][a-z0-9.,/-]*)/g)) {
        // With -k or -f kubectl takes its objects from files, which the path checks cover.
        if (/ -[kf]\b/.test(match[3] ?? "")) continue;
        const target = match[4] ?? "";
        for (const resource of target.split("/")[0]?.split(",") ?? []) {
          checked += 1;
          if (!known(resource)) missing.push(`${doc}: kubectl ${match[2]} ${resource}`);
        }
      }
    }
    assert.ok(checked > 0);
    assert.deepEqual(missing, []);
  });
});
