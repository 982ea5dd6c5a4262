/**
 * A real program no one here wrote, for the tests on the real node: Debian's Redis (`redis-server`
 * and `redis-cli` from bookworm, 7.0), unpacked by `mmdebstrap` (variant `extract`: the packages
 * and their libraries, no package manager, no maintainer scripts) with `dash` as `/bin/sh` for a
 * loader's shell loop, the user `redis` (999), and `redis-server` as the entry point, so that it
 * runs as its container's PID 1. The tag carries a key of the recipe, so a second build finds the
 * image and does nothing.
 */
import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { podman } from "./podman.ts";

const SUITE = "bookworm";
const PACKAGES = ["redis-server", "redis-tools", "dash"];
const SOURCES = [`deb http://deb.debian.org/debian ${SUITE} main`, `deb http://deb.debian.org/debian-security ${SUITE}-security main`];
/** Bumped when the recipe below changes in a way the inputs do not show. */
const RECIPE = 1;

/** The image's name: what a Pod's `image` says (imported into the real node's containerd, never pulled). */
export function redisImageTag(): string {
  const key = createHash("sha256").update(JSON.stringify({ SUITE, PACKAGES, SOURCES, RECIPE })).digest("hex").slice(0, 12);
  return `localhost/appmonitor/redis:${SUITE}-${key}`;
}

const run = promisify(execFile);

/**
 * Builds the image under {@link redisImageTag} (about 30 s, mmdebstrap's downloads most of it).
 * @returns its tags.
 * @throws Error naming the step that failed (mmdebstrap, podman import).
 */
export async function buildRedis(): Promise<readonly string[]> {
  const tag = redisImageTag();
  const work = await mkdtemp(path.join(os.tmpdir(), "appmonitor-redis-"));
  try {
    const root = path.join(work, "root");
    try {
      await run("mmdebstrap", ["--variant=extract", `--include=${PACKAGES.join(",")}`, "--quiet", SUITE, root, ...SOURCES], { maxBuffer: 64 << 20 });
    } catch (error) {
      throw new Error(`mmdebstrap ${SUITE} ${PACKAGES.join(",")} failed: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
    // variant extract leaves /bin/sh to dash's maintainer script, which it does not run.
    await run("ln", ["-sf", "dash", path.join(root, "bin/sh")]);
    await writeFile(path.join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nredis:x:999:999::/data:/bin/sh\n");
    await writeFile(path.join(root, "etc/group"), "root:x:0:\nredis:x:999:\n");
    for (const dir of ["data", "tmp"]) await mkdir(path.join(root, dir), { recursive: true, mode: 0o1777 });
    const archive = path.join(work, "root.tar");
    await run("tar", ["-C", root, "--numeric-owner", "-cf", archive, "."]);
    await podman(
      ["import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "--change", "USER 999:999", "--change", "WORKDIR /data",
        "--change", 'ENTRYPOINT ["/usr/bin/redis-server"]', "-", tag],
      { input: createReadStream(archive) },
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return [tag];
}
