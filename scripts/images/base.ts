/**
 * The base image the function images are built on here, since no registry is reachable to pull
 * `node:24-bookworm-slim`: what the Dockerfile needs of `NODE_IMAGE` (Node 24 and npm on PATH,
 * a POSIX sh) and nothing more.
 * - a Debian bookworm root file system of only the C and C++ runtime libraries Node links and
 *   `dash` as `/bin/sh`, unpacked by Debian's `mmdebstrap` (variant `extract`: no package
 *   manager, no maintainer scripts);
 * - the Node 24 binary the tests run on: the `node` devDependency's (`node_modules/node/bin/node`,
 *   the npm registry's platform package for this machine);
 * - npm itself, the registry's `npm` package at {@link NPM_VERSION};
 * - `/etc/passwd` and `/etc/group` with root and `node` (1000), as in the official image.
 *
 * The tag carries a key of all of these, so a second build finds the image and does nothing.
 */
import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { cacheDir, repoRoot } from "../lib/paths.ts";
import { podman } from "./podman.ts";

/** npm in the base image: pinned, from the npm 11 line that Node 24 ships. */
export const NPM_VERSION = "11.19.1";

/** Debian suite and the packages unpacked (their dependencies come along). */
const SUITE = "bookworm";
const PACKAGES = ["libc6", "libgcc-s1", "libstdc++6", "dash"];
const SOURCES = [
  `deb http://deb.debian.org/debian ${SUITE} main`,
  `deb http://deb.debian.org/debian ${SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${SUITE}-security main`,
];
/** Seconds the base image took to build here (mmdebstrap's downloads most of it), for the progress line. */
const COLD_BASE_SECONDS = 60;
/** Bumped when the recipe below changes in a way the inputs do not show. */
const RECIPE = 2;

const run = promisify(execFile);

/** The Node binary of the `node` devDependency and its version. */
export function pinnedNode(): { binary: string; version: string } {
  const dir = path.join(repoRoot, "node_modules", "node");
  const binary = path.join(dir, "bin", "node");
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`npm ci\` (the \`node\` devDependency installs it)`);
  const { version } = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string };
  return { binary, version };
}

/** The base image's tag, e.g. `localhost/appmonitor/node-base:24.21.0-3f2a9c1b`. */
export function baseImageTag(): string {
  const node = pinnedNode();
  const key = createHash("sha256").update(JSON.stringify({ RECIPE, SUITE, PACKAGES, SOURCES, NPM_VERSION, node: node.version })).digest("hex").slice(0, 8);
  return `localhost/appmonitor/node-base:${node.version}-${key}`;
}

async function imageExists(tag: string): Promise<boolean> {
  try {
    await podman(["image", "exists", tag]);
    return true;
  } catch {
    return false;
  }
}

/** npm's package tarball, fetched once into the cache with `npm pack`. */
async function npmTarball(): Promise<string> {
  const dir = path.join(cacheDir(), "npm-pack");
  const file = path.join(dir, `npm-${NPM_VERSION}.tgz`);
  if (existsSync(file)) return file;
  await mkdir(dir, { recursive: true });
  await run("npm", ["pack", `npm@${NPM_VERSION}`, "--pack-destination", dir, "--silent"], { maxBuffer: 16 << 20 });
  if (!existsSync(file)) throw new Error(`npm pack npm@${NPM_VERSION} did not write ${file}`);
  return file;
}

/** Removes documentation but keeps each package's copyright file. */
async function dropDocs(root: string): Promise<void> {
  for (const dir of ["usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian"]) await rm(path.join(root, dir), { recursive: true, force: true });
  const docs = path.join(root, "usr/share/doc");
  for (const pkg of existsSync(docs) ? await readdir(docs) : []) {
    for (const entry of await readdir(path.join(docs, pkg))) if (entry !== "copyright") await rm(path.join(docs, pkg, entry), { recursive: true, force: true });
  }
}

/**
 * Returns the base image's tag, building it first when podman does not have it (about a
 * minute: the Debian packages are downloaded from deb.debian.org).
 * @throws Error naming the step that failed (mmdebstrap, npm pack, podman import).
 */
export async function ensureBaseImage(progress: (line: string) => void = () => {}): Promise<string> {
  const tag = baseImageTag();
  if (await imageExists(tag)) return tag;
  progress(`base image ${tag}: building (Debian ${SUITE}: ${PACKAGES.join(", ")}; Node ${pinnedNode().version}; npm ${NPM_VERSION}; cold about ${COLD_BASE_SECONDS} s)`);
  const t0 = Date.now();
  const work = await mkdtemp(path.join(os.tmpdir(), "appmonitor-base-"));
  try {
    const root = path.join(work, "root");
    try {
      await run("mmdebstrap", ["--variant=extract", `--include=${PACKAGES.join(",")}`, "--quiet", SUITE, root, ...SOURCES], { maxBuffer: 64 << 20 });
    } catch (error) {
      throw new Error(`mmdebstrap ${SUITE} failed: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
    await dropDocs(root);
    await mkdir(path.join(root, "usr/local/bin"), { recursive: true });
    await copyFile(pinnedNode().binary, path.join(root, "usr/local/bin/node"));
    await chmod(path.join(root, "usr/local/bin/node"), 0o755);
    const npmDir = path.join(root, "usr/local/lib/node_modules/npm");
    await mkdir(npmDir, { recursive: true });
    await run("tar", ["-xzf", await npmTarball(), "-C", npmDir, "--strip-components=1", "--no-same-owner"]);
    // Wrappers, not symlinks: npm's scripts start with `#!/usr/bin/env node` and there is no env here.
    for (const tool of ["npm", "npx"]) {
      await writeFile(path.join(root, "usr/local/bin", tool), `#!/bin/sh\nexec node /usr/local/lib/node_modules/npm/bin/${tool}-cli.js "$@"\n`, { mode: 0o755 });
    }
    await writeFile(path.join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n");
    await writeFile(path.join(root, "etc/group"), "root:x:0:\nnode:x:1000:\n");
    for (const dir of ["root", "tmp"]) await mkdir(path.join(root, dir), { recursive: true });
    await chmod(path.join(root, "tmp"), 0o1777);
    const archive = path.join(work, "root.tar");
    await run("tar", ["-C", root, "--numeric-owner", "-cf", archive, "."]);
    await podman(
      ["import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "--change", 'CMD ["node"]', "-", tag],
      { input: createReadStream(archive) },
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  progress(`base image: built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return tag;
}
