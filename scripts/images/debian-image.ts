/**
 * Real programs no one here wrote, as images for the real node: Debian bookworm's packages,
 * unpacked by `mmdebstrap` (variant `extract`: the packages and their libraries, no package
 * manager, no maintainer scripts) with `dash` as `/bin/sh`, a user of the recipe's own, and the
 * program as the entry point, so that it runs as its container's PID 1. Each tag carries a key of
 * its recipe, so a second build finds the image and does nothing.
 * - Redis (`redis-server`, `redis-cli`, 7.0): a real program for the real node's tests.
 * - Alertmanager (`prometheus-alertmanager`, 0.25): the image prometheus-operator's Alertmanager
 *   StatefulSet runs on the real node. Upstream's module (0.35) cannot be built here: its web UI
 *   (`ui/app/dist`, embedded) is not in the module. The operator passes args only, so the
 *   entry point is the binary, as in upstream's image.
 * - OpenJDK 17 (`openjdk-17-jdk-headless`): a JVM with its default heap settings, for the real
 *   node's heap tests. The JDK, not only the JRE, for the source launcher (`java Program.java`), so
 *   that a test's program is a ConfigMap and not a class file built here. Its path, not
 *   `/usr/bin/java`: that link is made by a maintainer script, which `extract` does not run.
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
const SOURCES = [`deb http://deb.debian.org/debian ${SUITE} main`, `deb http://deb.debian.org/debian-security ${SUITE}-security main`];

/** One image's recipe: what goes in and how it runs. */
export interface DebianImageRecipe {
  /** The image's short name, in its tag `localhost/appmonitor/<name>:<suite>-<key>`. */
  readonly name: string;
  /** Debian packages to unpack (`dash` is added for `/bin/sh`). */
  readonly packages: readonly string[];
  /** The user it runs as: name, uid (= gid) and home, which is also its working directory. */
  readonly user: { readonly name: string; readonly id: number; readonly home: string };
  readonly entrypoint: string;
  /** Bumped when the recipe changes in a way its other fields do not show. */
  readonly revision: number;
}

/** Debian's Redis, as the real node's tests run it. */
export const REDIS: DebianImageRecipe = {
  name: "redis", packages: ["redis-server", "redis-tools"], user: { name: "redis", id: 999, home: "/data" }, entrypoint: "/usr/bin/redis-server", revision: 1,
};

/** Debian's Alertmanager, for prometheus-operator's StatefulSet (65534, as upstream's image runs it). */
export const ALERTMANAGER: DebianImageRecipe = {
  name: "alertmanager", packages: ["prometheus-alertmanager"], user: { name: "nobody", id: 65534, home: "/alertmanager" },
  entrypoint: "/usr/bin/prometheus-alertmanager", revision: 1,
};

/** Debian's OpenJDK 17, as the real node's heap tests run it (the `java` launcher as the entry point). */
export const OPENJDK: DebianImageRecipe = {
  name: "openjdk", packages: ["openjdk-17-jdk-headless"], user: { name: "app", id: 1000, home: "/app" },
  entrypoint: "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", revision: 1,
};

/** The image's name: what a Pod's `image` says (imported into the real node's containerd, never pulled). */
export function debianImageTag(recipe: DebianImageRecipe): string {
  const { name, packages, user, entrypoint, revision } = recipe;
  const key = createHash("sha256").update(JSON.stringify({ SUITE, SOURCES, packages, user, entrypoint, revision })).digest("hex").slice(0, 12);
  return `localhost/appmonitor/${name}:${SUITE}-${key}`;
}

const run = promisify(execFile);

/**
 * Builds the image under {@link debianImageTag} (about 30 s, mmdebstrap's downloads most of it).
 * @returns its tags.
 * @throws Error naming the step that failed (mmdebstrap, podman import).
 */
export async function buildDebianImage(recipe: DebianImageRecipe): Promise<readonly string[]> {
  const tag = debianImageTag(recipe);
  const packages = [...recipe.packages, "dash"];
  const { user } = recipe;
  const work = await mkdtemp(path.join(os.tmpdir(), `appmonitor-${recipe.name}-`));
  try {
    const root = path.join(work, "root");
    try {
      await run("mmdebstrap", ["--variant=extract", `--include=${packages.join(",")}`, "--quiet", SUITE, root, ...SOURCES], { maxBuffer: 64 << 20 });
    } catch (error) {
      throw new Error(`mmdebstrap ${SUITE} ${packages.join(",")} failed: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
    // variant extract leaves /bin/sh to dash's maintainer script, which it does not run.
    await run("ln", ["-sf", "dash", path.join(root, "bin/sh")]);
    await writeFile(path.join(root, "etc/passwd"), `root:x:0:0:root:/root:/bin/sh\n${user.name}:x:${user.id}:${user.id}::${user.home}:/bin/sh\n`);
    await writeFile(path.join(root, "etc/group"), `root:x:0:\n${user.name}:x:${user.id}:\n`);
    for (const dir of [user.home, "/tmp"]) await mkdir(path.join(root, dir), { recursive: true, mode: 0o1777 });
    const archive = path.join(work, "root.tar");
    await run("tar", ["-C", root, "--numeric-owner", "-cf", archive, "."]);
    await podman(
      ["import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "--change", `USER ${user.id}:${user.id}`, "--change", `WORKDIR ${user.home}`,
        "--change", `ENTRYPOINT ["${recipe.entrypoint}"]`, "-", tag],
      { input: createReadStream(archive) },
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return [tag];
}
