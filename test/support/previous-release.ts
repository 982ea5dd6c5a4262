/**
 * A released version's release directory, built as it was released: `npm run release` of the
 * commit that set package.json's version to it, in a temporary `git worktree` of that commit
 * (this checkout's node_modules linked in; the images' own `npm ci` runs from that commit's lock
 * file). Kept by commit under `<cache>/releases/<commit>/`, so a second call returns at once.
 *
 * Its tools, the Go-built binaries (kubectl and helm, which package and lint the chart), are this
 * checkout's: the worktree's `test/harness/bins/` is replaced by this one's, its build.sh by one
 * that asks this checkout's for those two sets alone (the commit's asked for every set, so on a
 * cold machine it waited for the last of them), on a cache of its own
 * (`<cache>/releases/<commit>/cache`, removed once the release is written) whose `bin/` is a link
 * to this cache's, so it builds nothing, or, where a set is not built yet, builds it once for
 * both, under the same lock. Building the sets
 * from that commit's own pins would compile most of the cold build again (their shared modules
 * were aligned since), for no change to what it releases: the chart, the manifests and the images,
 * all from the commit's own files. Its images are built in a podman store of its own
 * (`CONTAINERS_STORAGE_CONF`, removed with the cache): they carry the same tags as this checkout's,
 * and another file building or saving images meanwhile would otherwise read the commit's under them.
 * So it needs no lock, and a test builds it while another file holds the real node.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { cacheDir, repoRoot } from "../../scripts/lib/paths.ts";
import { RELEASE_BINARY_SETS } from "../../scripts/release/release.ts";

const run = promisify(execFile);

async function git(args: readonly string[], cwd = repoRoot): Promise<string> {
  return (await run("git", [...args], { cwd, maxBuffer: 16 << 20 })).stdout.trim();
}

/**
 * The commit that set package.json's version to `version`: the oldest that added the line.
 * @throws Error when no commit did, or its CHANGELOG.md has no `## <version>` section.
 */
export async function releaseCommit(version: string): Promise<string> {
  const commits = (await git(["log", "--reverse", "--format=%H", `-S"version": "${version}"`, "--", "package.json"])).split("\n").filter(Boolean);
  const commit = commits[0];
  if (commit === undefined) throw new Error(`no commit set package.json's version to ${version} (a shallow clone? git fetch --unshallow)`);
  const changelog = await git(["show", `${commit}:CHANGELOG.md`]);
  if (!changelog.split("\n").includes(`## ${version}`)) throw new Error(`${commit.slice(0, 7)}'s CHANGELOG.md has no "## ${version}" section`);
  return commit;
}

/**
 * Writes a storage.conf under `dir` for a podman store of its own (images and layers in
 * `dir/containers/storage`, its locks in `dir/containers/run`); returns its path.
 */
async function ownImageStore(dir: string): Promise<string> {
  const root = path.join(dir, "containers");
  const file = path.join(dir, "storage.conf");
  await writeFile(file, ["[storage]", 'driver = "overlay"', `graphroot = "${path.join(root, "storage")}"`, `runroot = "${path.join(root, "run")}"`, ""].join("\n"));
  return file;
}

/**
 * The release directory of `version` (`appmonitor-<version>/`, as its `npm run release` wrote it),
 * built unless kept.
 * @param say hears the build's lines.
 * @throws Error naming the step that failed (the commit's release, with its output's tail).
 */
export async function previousRelease(version: string, say: (line: string) => void = () => {}): Promise<{ dir: string; commit: string; built: boolean }> {
  const commit = await releaseCommit(version);
  const home = path.join(cacheDir(), "releases", commit);
  const dir = path.join(home, `appmonitor-${version}`);
  const stamp = path.join(home, ".complete");
  if (existsSync(stamp) && (await readFile(stamp, "utf8")) === dir) return { dir, commit, built: false };
  await rm(home, { recursive: true, force: true });
  const cache = path.join(home, "cache");
  await mkdir(cache, { recursive: true });
  say(`building ${version} from ${commit.slice(0, 7)}, with this cache's binaries`);
  await symlink(path.join(cacheDir(), "bin"), path.join(cache, "bin"));
  const scratch = await mkdtemp(path.join(os.tmpdir(), "appmonitor-previous-"));
  const worktree = path.join(scratch, "repo");
  const storageConf = await ownImageStore(cache);
  await git(["worktree", "add", "--detach", worktree, commit]);
  try {
    const bins = path.join("test", "harness", "bins");
    await rm(path.join(worktree, bins), { recursive: true, force: true });
    await cp(path.join(repoRoot, bins), path.join(worktree, bins), { recursive: true });
    // Its build.sh asked for every set; its release uses kubectl and helm alone, as this one's does.
    await writeFile(path.join(worktree, bins, "build.sh"), `#!/usr/bin/env bash\n# Written by test/support/previous-release.ts: the release needs kubectl and helm alone.\nexec bash ${JSON.stringify(path.join(repoRoot, bins, "build.sh"))} ${RELEASE_BINARY_SETS.join(" ")}\n`);
    await symlink(path.join(repoRoot, "node_modules"), path.join(worktree, "node_modules"));
    const child = run("npm", ["run", "release", "--", dir], { cwd: worktree, env: { ...process.env, APPMONITOR_CACHE: cache, CONTAINERS_STORAGE_CONF: storageConf, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ""}` }, maxBuffer: 64 << 20, timeout: 60 * 60_000 });
    child.child.stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) if (line.startsWith("release: ")) say(line);
    });
    await child.catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`npm run release of ${commit.slice(0, 7)} (${version}): ${(error.stderr ?? String(error)).slice(-4000)}`, { cause: error });
    });
  } finally {
    await git(["worktree", "remove", "--force", worktree]).catch(() => undefined);
    await rm(scratch, { recursive: true, force: true });
    // Its images removed by podman (which unmounts their layers), then the directory.
    await run("podman", ["image", "rm", "--all", "--force"], { env: { ...process.env, CONTAINERS_STORAGE_CONF: storageConf } }).catch(() => undefined);
    await rm(cache, { recursive: true, force: true });
  }
  await writeFile(stamp, dir);
  return { dir, commit, built: true };
}
