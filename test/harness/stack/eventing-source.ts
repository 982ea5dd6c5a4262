/**
 * Where the pinned Knative Eventing comes from: the module `test/harness/bins/eventing` requires (its
 * version, and the directory Go unpacked it to, whose `config/` tree holds Eventing's own YAML),
 * the commands its go.mod tool block names (what build.sh builds), and the image archives
 * build.sh makes of them. Reads files and asks `go`; the rendering itself is
 * `eventing-manifests.ts`.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { renderEventing, selectEventingFiles, type EventingFile, type EventingObject } from "./eventing-manifests.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { goModEntries } from "../bins/go-mod.ts";

/** The Go module that pins Eventing and lists its commands. */
export const EVENTING_MODULE_DIR = path.join(repoRoot, "test", "harness", "bins", "eventing");

/** The Eventing module as Go resolved it. */
export interface EventingModule {
  /** Its version, such as `v0.50.0`: the tag of every image. */
  readonly version: string;
  /** Its directory in the Go module cache (read-only). */
  readonly dir: string;
  /** The commands built, as package paths under `cmd/` (`controller`, `broker/ingress`, …). */
  readonly commands: readonly string[];
}

const EVENTING_MODULE = "knative.dev/eventing";

/**
 * Commands of the tool block that no file of the install names, with what they are built for.
 * Their images are imported with the install's all the same (`installEventing`).
 */
export const EVENTING_SINK_COMMANDS: Readonly<Record<string, string>> = {
  event_display: "Knative's event_display, a subscriber that logs every event it gets: what the tests watch the Broker with (test/support/event-display.ts)",
};

/**
 * The packages of a go.mod's `tool` directives, single-line or in a block, in file order.
 */
export function goModTools(goMod: string): string[] {
  return goModEntries(goMod, "tool");
}

/** The Go toolchain: `go` on PATH, else /usr/local/go/bin/go (where build.sh looks too). */
function goBinary(): string {
  const onPath = (process.env.PATH ?? "").split(path.delimiter).some((d) => d && existsSync(path.join(d, "go")));
  return onPath || !existsSync("/usr/local/go/bin/go") ? "go" : "/usr/local/go/bin/go";
}

/**
 * A module required by the go.mod in `goModDir`, as `go mod download -json` resolves it there
 * (downloading it into the module cache if it is not there yet; a no-op otherwise).
 * @throws Error with go's message when Go or the module proxy fails.
 */
export async function downloadModule(goModDir: string, modulePath: string): Promise<{ version: string; dir: string }> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(goBinary(), ["mod", "download", "-json", modulePath], { cwd: goModDir, timeout: 10 * 60_000 }));
  } catch (error) {
    throw new Error(`go mod download ${modulePath} in ${goModDir} failed: ${(error as { stderr?: string }).stderr ?? error}`, { cause: error });
  }
  const { Version: version, Dir: dir } = JSON.parse(stdout) as { Version?: string; Dir?: string };
  if (!version || !dir) throw new Error(`go mod download -json ${modulePath} gave no version or directory: ${stdout}`);
  return { version, dir };
}

/**
 * The module `modulePath` pinned by the go.mod in `goModDir` ({@link downloadModule}) and the
 * commands of that go.mod's tool block, as paths under `<modulePath>/cmd/`.
 * @throws Error as {@link downloadModule}, or when a tool is not one of the module's commands.
 */
export async function pinnedModule(goModDir: string, modulePath: string): Promise<EventingModule> {
  const { version, dir } = await downloadModule(goModDir, modulePath);
  const prefix = `${modulePath}/cmd/`;
  const tools = goModTools(await readFile(path.join(goModDir, "go.mod"), "utf8"));
  const commands = tools.map((tool) => {
    if (!tool.startsWith(prefix)) throw new Error(`${goModDir}/go.mod: tool ${tool} is not under ${prefix}`);
    return tool.slice(prefix.length);
  });
  return { version, dir, commands };
}

/**
 * Resolves the Eventing module in {@link EVENTING_MODULE_DIR} ({@link pinnedModule}).
 * @throws Error with go's message when Go or the module proxy fails, or a tool is not an Eventing command.
 */
export function eventingModule(): Promise<EventingModule> {
  return pinnedModule(EVENTING_MODULE_DIR, EVENTING_MODULE);
}

/** Every file under `dir`, as paths relative to it with `/` separators. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/"));
}

/**
 * Files of Eventing's `config/` tree that are symbolic links in its repository, which a Go module
 * zip leaves out (it holds regular files only): their path under `config/`, and the file of the
 * module they point at. The controller's Deployment reads both ConfigMaps (`configMapKeyRef`), so
 * without them its container never starts (`configmap "eventing-transformations-images" not found`).
 */
export const MODULE_DROPPED_LINKS: Readonly<Record<string, string>> = {
  "core/configmaps/eventing-integrations-images.yaml": "third_party/eventing-integrations-latest/eventing-integrations-images.yaml",
  "core/configmaps/eventing-transformations-images.yaml": "third_party/eventing-integrations-latest/eventing-transformations-images.yaml",
};

/** The install's files from `config/` of the module in `moduleDir` (with {@link MODULE_DROPPED_LINKS} put back), selected and ordered. */
export async function eventingFiles(moduleDir: string): Promise<EventingFile[]> {
  const config = path.join(moduleDir, "config");
  const selected = selectEventingFiles([...await filesUnder(config), ...Object.keys(MODULE_DROPPED_LINKS)]);
  const source = (p: string) => (p in MODULE_DROPPED_LINKS ? path.join(moduleDir, MODULE_DROPPED_LINKS[p] as string) : path.join(config, p));
  return Promise.all(selected.map(async (p) => ({ path: p, text: await readFile(source(p), "utf8") })));
}

/** The rendered install of the pinned Eventing ({@link renderEventing} of {@link eventingFiles}), with its module. */
export async function eventingInstall(): Promise<{ module: EventingModule; objects: EventingObject[] }> {
  const module = await eventingModule();
  return { module, objects: renderEventing(await eventingFiles(module.dir), module.version, module.commands) };
}

/**
 * The image archive build.sh makes of `command` (a path under `cmd/`) in its output directory
 * `binDir`: `<binDir>/knative-eventing/<last element of command>.oci.tar`.
 */
export function eventingImageArchive(binDir: string, command: string): string {
  return path.join(binDir, "knative-eventing", `${path.posix.basename(command)}.oci.tar`);
}
