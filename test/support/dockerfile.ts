/**
 * Reading the repository's Dockerfile without a Docker engine: its stages and instructions
 * (https://docs.docker.com/reference/dockerfile/), the paths its COPY instructions take from
 * the build context, the files and packages the functions load at run time (to compare with
 * what the image holds), and the final stage's file system laid out in a directory.
 */
import { existsSync } from "node:fs";
import { cp, mkdir, readFile, symlink } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import { repoRoot } from "../stack/paths.ts";

/** One instruction, continuation lines joined. */
export interface Instruction {
  /** Upper-case, e.g. `COPY`. */
  readonly keyword: string;
  /** Everything after the keyword. */
  readonly args: string;
  /** 1-based line of the keyword. */
  readonly line: number;
}

/** A build stage: its `FROM` and the instructions up to the next `FROM`. */
export interface Stage {
  /** The image, with `${ARG}` references resolved from the global ARG defaults. */
  readonly image: string;
  /** `AS` name, if any. */
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

/** A parsed Dockerfile. */
export interface Dockerfile {
  /** Parser directives (`# syntax=…`) from the top of the file. */
  readonly directives: Readonly<Record<string, string>>;
  /** `ARG`s before the first `FROM`, with their defaults. */
  readonly globalArgs: Readonly<Record<string, string | undefined>>;
  readonly stages: readonly Stage[];
}

/** A COPY instruction: flags, sources, destination. */
export interface Copy {
  /** `--from=<stage or image>`, when copying from another stage. */
  readonly from: string | undefined;
  readonly sources: readonly string[];
  readonly destination: string;
  readonly line: number;
}

/**
 * Parses Dockerfile text: directives, comments, continuation lines (`\` at the end of a line),
 * global ARGs and stages.
 * @throws Error for an instruction before the first FROM other than ARG.
 */
export function parseDockerfile(text: string): Dockerfile {
  const directives: Record<string, string> = {};
  const globalArgs: Record<string, string | undefined> = {};
  const stages: { image: string; name: string | undefined; instructions: Instruction[] }[] = [];
  const lines = text.split("\n");
  let inDirectives = true;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    const directive = /^#\s*([a-z]+)\s*=\s*(.+?)\s*$/i.exec(raw);
    if (inDirectives && directive?.[1] && directive[2]) {
      directives[directive[1].toLowerCase()] = directive[2];
      continue;
    }
    inDirectives = false;
    if (/^\s*(#|$)/.test(raw)) continue;
    const start = i + 1;
    let joined = raw;
    while (/\\\s*$/.test(joined) && i + 1 < lines.length) {
      i++;
      const next = lines[i] ?? "";
      if (/^\s*#/.test(next)) continue;
      joined = `${joined.replace(/\s*\\\s*$/, "")} ${next.trim()}`;
    }
    const m = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(joined);
    if (!m?.[1] || m[2] === undefined) throw new Error(`Dockerfile line ${start}: cannot read ${JSON.stringify(joined)}`);
    const instruction = { keyword: m[1].toUpperCase(), args: m[2].trim(), line: start };
    if (instruction.keyword === "FROM") {
      const [image = "", as, name] = instruction.args.replace(/--platform=\S+\s*/, "").split(/\s+/);
      const resolved = image.replace(/\$\{?(\w+)\}?/g, (_all, arg: string) => globalArgs[arg] ?? "");
      stages.push({ image: resolved, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== "ARG") throw new Error(`Dockerfile line ${start}: ${instruction.keyword} before the first FROM`);
      const [argName = "", ...value] = instruction.args.split("=");
      globalArgs[argName.trim()] = value.length > 0 ? value.join("=").trim() : undefined;
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return { directives, globalArgs, stages };
}

/** Reads and parses `<repo>/Dockerfile`. */
export async function readDockerfile(): Promise<Dockerfile> {
  return parseDockerfile(await readFile(path.join(repoRoot, "Dockerfile"), "utf8"));
}

/** The COPY instructions of a stage, shell or JSON form. */
export function copiesOf(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.keyword === "COPY")
    .map((i) => {
      let rest = i.args;
      let from: string | undefined;
      for (let flag = /^--([a-z-]+)(?:=(\S+))?\s+/.exec(rest); flag; flag = /^--([a-z-]+)(?:=(\S+))?\s+/.exec(rest)) {
        if (flag[1] === "from") from = flag[2];
        rest = rest.slice(flag[0].length);
      }
      const parts = rest.startsWith("[") ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
      const destination = parts.at(-1);
      if (destination === undefined || parts.length < 2) throw new Error(`Dockerfile line ${i.line}: COPY needs a source and a destination`);
      return { from, sources: parts.slice(0, -1), destination, line: i.line };
    });
}

/** What the functions load when they run, found by following their imports. */
export interface ImportClosure {
  /** Repository files, relative (`functions/run.ts`, `schemas/….json`, …). */
  readonly files: ReadonlySet<string>;
  /** npm packages imported by those files (`express`, `@kubernetes/client-node`, …). */
  readonly packages: ReadonlySet<string>;
}

// `import … from "x"`, `export … from "x"` (not `import type` / `export type`, which type stripping
// erases), side-effect `import "x"`, and `import("x")` with a literal.
const STATIC_FROM = /^\s*(?:import|export)\s+(?!type[\s{])[\w*\s{},$]*?\s*from\s*["']([^"']+)["']/gm;
const SIDE_EFFECT = /^\s*import\s*["']([^"']+)["']/gm;
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

/**
 * Follows the runtime imports of `entries` (repository-relative) through relative specifiers,
 * collecting the files reached and the bare package names imported on the way.
 * @throws Error for a relative import whose file does not exist.
 */
export async function importClosure(entries: readonly string[]): Promise<ImportClosure> {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [...entries];
  const builtins = new Set(builtinModules);
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    if (!file.endsWith(".ts")) continue;
    const source = (await readFile(path.join(repoRoot, file), "utf8")).replace(/\/\*[\s\S]*?\*\//g, "");
    const specifiers = [...source.matchAll(STATIC_FROM), ...source.matchAll(SIDE_EFFECT), ...source.matchAll(DYNAMIC)].map((m) => m[1] as string);
    for (const specifier of specifiers) {
      if (specifier.startsWith(".")) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
        if (!existsSync(path.join(repoRoot, target))) throw new Error(`${file} imports ${specifier}, which does not exist`);
        queue.push(target);
      } else if (!specifier.startsWith("node:") && !builtins.has(specifier)) {
        const parts = specifier.split("/");
        packages.add(specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] as string));
      }
    }
  }
  return { files, packages };
}

/** Options of {@link assembleImage}. */
export interface AssembleOptions {
  /** Where the final stage's WORKDIR goes. */
  readonly root: string;
  /** Values of the final stage's ARGs (`--build-arg`). */
  readonly buildArgs: Readonly<Record<string, string>>;
}

/** The result of {@link assembleImage}: what the container would run, and with what. */
export interface AssembledImage {
  /** The final stage's CMD (exec form). */
  readonly cmd: readonly string[];
  /** The final stage's ENV, ARGs substituted. */
  readonly env: Readonly<Record<string, string>>;
  /** Packages linked into `node_modules` (the production closure of package-lock.json). */
  readonly packages: readonly string[];
}

/**
 * Lays out the final stage's file system under `root` (its WORKDIR) as a build would: each
 * COPY from the build context copied from the repository, and the COPY of `node_modules` from
 * the `npm ci --omit=dev` stage emulated with links to the repository's installed packages
 * that package-lock.json does not mark `dev` (what `--omit=dev` installs).
 * @throws Error for a COPY this emulation does not understand.
 */
export async function assembleImage(dockerfile: Dockerfile, options: AssembleOptions): Promise<AssembledImage> {
  const stage = dockerfile.stages.at(-1);
  if (stage === undefined) throw new Error("the Dockerfile has no stage");
  const workdir = stage.instructions.filter((i) => i.keyword === "WORKDIR").at(-1)?.args ?? "/";
  const inImage = (p: string): string => path.join(options.root, path.posix.isAbsolute(p) ? path.posix.relative(workdir, p) : p);
  let packages: string[] = [];
  for (const copy of copiesOf(stage)) {
    if (copy.from === undefined) {
      for (const source of copy.sources) {
        const target = copy.destination.endsWith("/") && !source.endsWith("/") ? path.join(inImage(copy.destination), path.basename(source)) : inImage(copy.destination);
        await mkdir(path.dirname(target), { recursive: true });
        await cp(path.join(repoRoot, source), target, { recursive: true });
      }
    } else if (copy.sources.length === 1 && copy.sources[0]?.endsWith("/node_modules")) {
      const lock = JSON.parse(await readFile(path.join(repoRoot, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> };
      packages = Object.entries(lock.packages)
        .filter(([key, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(key) && entry.dev !== true)
        .map(([key]) => key.slice("node_modules/".length));
      for (const name of packages) {
        const target = path.join(inImage(copy.destination), name);
        await mkdir(path.dirname(target), { recursive: true });
        await symlink(path.join(repoRoot, "node_modules", name), target, "dir");
      }
    } else {
      throw new Error(`Dockerfile line ${copy.line}: cannot emulate COPY --from=${copy.from} ${copy.sources.join(" ")}`);
    }
  }
  const args: Record<string, string> = { ...options.buildArgs };
  const env: Record<string, string> = {};
  const substitute = (value: string): string => value.replace(/\$\{?(\w+)\}?/g, (_all, name: string) => env[name] ?? args[name] ?? "");
  for (const instruction of stage.instructions.filter((i) => i.keyword === "ENV")) {
    for (const m of instruction.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[m[1] as string] = substitute((m[2] as string).replace(/^"|"$/g, ""));
  }
  const cmd = stage.instructions.filter((i) => i.keyword === "CMD").at(-1)?.args;
  if (cmd === undefined || !cmd.startsWith("[")) throw new Error("the final stage has no CMD in exec form");
  return { cmd: JSON.parse(cmd) as string[], env, packages };
}
