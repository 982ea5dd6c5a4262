/**
 * Where the images' inputs and outputs live: the cache shared with the stack's binaries
 * (`APPMONITOR_CACHE`, default `~/.cache/appmonitor`), outside the repository.
 */
import os from "node:os";
import path from "node:path";

/** `APPMONITOR_CACHE`, else `$XDG_CACHE_HOME/appmonitor`, else `~/.cache/appmonitor` (as test/harness/bins/build.sh). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.APPMONITOR_CACHE ?? path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "appmonitor"));
}

/** Where `npm run image` saves each image as an OCI archive: `<cache>/images/<short name>.oci.tar`. */
export function archiveDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), "images");
}
