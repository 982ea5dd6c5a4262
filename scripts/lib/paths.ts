/**
 * Where the repository is, and where what it builds is cached: the Go-built binaries and the
 * images' archives (`APPMONITOR_CACHE`, default `~/.cache/appmonitor`), outside the repository.
 */
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Absolute path of the repository root. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** `APPMONITOR_CACHE`, else `$XDG_CACHE_HOME/appmonitor`, else `~/.cache/appmonitor` (as test/harness/bins/build.sh). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.APPMONITOR_CACHE ?? path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "appmonitor"));
}

/** Where `npm run image` saves each image as an OCI archive: `<cache>/images/<short name>.oci.tar`. */
export function archiveDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), "images");
}
