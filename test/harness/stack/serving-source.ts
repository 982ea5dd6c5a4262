/**
 * Where the pinned Knative Serving comes from: the module `test/harness/bins/serving` requires
 * (its version, and its directory in the Go module cache, whose `config/core/` holds Serving's own
 * YAML; the networking and caching modules its links point into), the commands its go.mod tool
 * block names (what build.sh builds), and the image archives serving.sh makes of them. Reads
 * files and asks `go`; the rendering is `serving-manifests.ts`'s.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { EventingFile, EventingObject } from "./eventing-manifests.ts";
import { downloadModule, filesUnder, pinnedModule, type EventingModule } from "./eventing-source.ts";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import { renderServing, selectServingFiles, SERVING_LINKED_FILES } from "./serving-manifests.ts";

/** The Go module that pins Serving and lists its commands. */
export const SERVING_MODULE_DIR = path.join(repoRoot, "test", "harness", "bins", "serving");

/** Resolves the Serving module in {@link SERVING_MODULE_DIR}: its version, directory and commands (`activator`, `queue`, …). */
export function servingModule(): Promise<EventingModule> {
  return pinnedModule(SERVING_MODULE_DIR, "knative.dev/serving");
}

/** The install's files from `config/` of the module in `moduleDir`, with {@link SERVING_LINKED_FILES} put back from their modules, selected and ordered. */
export async function servingFiles(moduleDir: string): Promise<EventingFile[]> {
  const config = path.join(moduleDir, "config");
  const linkedDirs = new Map<string, string>();
  for (const { module } of Object.values(SERVING_LINKED_FILES)) {
    if (!linkedDirs.has(module)) linkedDirs.set(module, (await downloadModule(SERVING_MODULE_DIR, module)).dir);
  }
  const source = (p: string): string => {
    const link = SERVING_LINKED_FILES[p];
    return link ? path.join(linkedDirs.get(link.module) as string, link.file) : path.join(config, p);
  };
  const selected = selectServingFiles([...await filesUnder(config), ...Object.keys(SERVING_LINKED_FILES)]);
  return Promise.all(selected.map(async (p) => ({ path: p, text: await readFile(source(p), "utf8") })));
}

/** The rendered install of the pinned Serving ({@link renderServing} of {@link servingFiles}), with its module. */
export async function servingInstall(): Promise<{ module: EventingModule; objects: EventingObject[] }> {
  const module = await servingModule();
  return { module, objects: renderServing(await servingFiles(module.dir), module.version, module.commands) };
}

/** The image archive serving.sh makes of `command` in build.sh's output directory `binDir`: `<binDir>/knative-serving/<command>.oci.tar`. */
export function servingImageArchive(binDir: string, command: string): string {
  return path.join(binDir, "knative-serving", `${path.posix.basename(command)}.oci.tar`);
}
