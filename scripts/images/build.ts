/**
 * `npm run image`: builds the images of the four functions (the dead-letter sink among them) from the repository's Dockerfile,
 * on the base image of `base.ts` (`--build-arg NODE_IMAGE=`), and the memhog demo image from
 * `memhog/`, Debian's Redis (a real program for the real node's tests), Alertmanager (prometheus-operator's on the real node) and OpenJDK 17 (a JVM for the heap tests), all `debian-image.ts`; saves each as an OCI archive under `<cache>/images/`; prints each image's name,
 * digest and size. Podman's layer cache and the base image's keyed tag make a second run
 * cheap. Needs root and Debian's podman, runc and mmdebstrap (`podman.ts` says why).
 *
 * Its arguments, options and exit codes: {@link USAGE} (`--help`).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { archiveDir, repoRoot } from "../lib/paths.ts";
import { exitOnHelp, usageText, type CommandUsage } from "../lib/usage.ts";
import { ensureBaseImage } from "./base.ts";
import { checkImageTools, podman } from "./podman.ts";
import { ALERTMANAGER, buildDebianImage, debianImageTag, OPENJDK, REDIS, type DebianImageRecipe } from "./debian-image.ts";

/** The functions, each built from the Dockerfile with `--build-arg FUNCTION=<name>`. */
export const FUNCTION_IMAGES = {
  "alert-receiver": "ghcr.io/kubedemo/appmonitor-alert-receiver:latest",
  "memory-scaler": "ghcr.io/kubedemo/appmonitor-memory-scaler:latest",
  "rule-sync": "ghcr.io/kubedemo/appmonitor-rule-sync:latest",
  "dead-letter": "ghcr.io/kubedemo/appmonitor-dead-letter:latest",
} as const;

/** The demo workload: our memhog, also tagged with the original demo's image name. */
export const MEMHOG_IMAGES = ["localhost/appmonitor/memhog:latest", "quay.io/metral/memhog:v0.0.1"] as const;

/** Every name `npm run image` takes. */
export type ImageName = keyof typeof FUNCTION_IMAGES | "memhog" | "redis" | "alertmanager" | "openjdk";
export const IMAGE_NAMES: readonly ImageName[] = [...(Object.keys(FUNCTION_IMAGES) as (keyof typeof FUNCTION_IMAGES)[]), "memhog", "redis", "alertmanager", "openjdk"];

/** The images unpacked from Debian's packages, by name. */
const DEBIAN_IMAGES: Readonly<Record<string, DebianImageRecipe>> = { redis: REDIS, alertmanager: ALERTMANAGER, openjdk: OPENJDK };

/** A built image as `npm run image` reports it. */
export interface BuiltImage {
  readonly name: ImageName;
  /** Every tag it carries, the first being the one to run. */
  readonly tags: readonly string[];
  /** Image ID (sha256 of its config): what `podman run` starts. */
  readonly id: string;
  /** Manifest digest, `sha256:…`. */
  readonly digest: string;
  /** Uncompressed size, bytes, as `podman images` shows it. */
  readonly sizeBytes: number;
  /** The OCI archive (`podman save --format oci-archive`). */
  readonly archive: string;
}

const run = promisify(execFile);

async function inspect(tag: string): Promise<{ id: string; digest: string; sizeBytes: number }> {
  const { stdout } = await podman(["image", "inspect", "--format", "{{.Id}} {{.Digest}} {{.Size}}", tag]);
  const [id = "", digest = "", size = "0"] = stdout.trim().split(" ");
  return { id, digest, sizeBytes: Number(size) };
}

/** Saves the image as an OCI archive unless one for this image ID is there already. */
async function saveArchive(name: ImageName, tag: string, id: string): Promise<string> {
  const dir = archiveDir();
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.oci.tar`);
  const stamp = path.join(dir, `.${name}.id`);
  if (existsSync(file) && existsSync(stamp) && (await readFile(stamp, "utf8")) === id) return file;
  // A name of this process's own: another test process may be saving the same image meanwhile.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await podman(["save", "--format", "oci-archive", "-o", tmp, tag]);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
  await writeFile(stamp, id);
  return file;
}

/**
 * The CA bundle this machine's npm trusts beyond Node's own (`NODE_EXTRA_CA_CERTS`, else npm's
 * `cafile`), handed to the build's `npm ci` as the Dockerfile's `npm-ca` secret; undefined if none.
 */
async function npmCaBundle(): Promise<string | undefined> {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const { stdout } = await run("npm", ["config", "get", "cafile"]).catch(() => ({ stdout: "" }));
  const cafile = stdout.trim();
  return cafile && cafile !== "null" && existsSync(cafile) ? cafile : undefined;
}

async function buildFunction(name: keyof typeof FUNCTION_IMAGES, base: string): Promise<readonly string[]> {
  const tag = FUNCTION_IMAGES[name];
  const ca = await npmCaBundle();
  const secret = ca === undefined ? [] : ["--secret", `id=npm-ca,src=${ca}`];
  // Host network: the build's `npm ci` reaches the npm registry and nothing else.
  await podman(
    ["build", "--network=host", ...secret, "--build-arg", `NODE_IMAGE=${base}`, "--build-arg", `FUNCTION=${name}`, "-t", tag, "-f", "Dockerfile", repoRoot],
  );
  return [tag];
}

async function buildMemhog(): Promise<readonly string[]> {
  const context = await mkdtemp(path.join(os.tmpdir(), "appmonitor-memhog-"));
  try {
    const source = path.join(repoRoot, "scripts/images/memhog");
    const go = existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : "go";
    await run(go, ["build", "-trimpath", "-ldflags=-s -w", "-o", path.join(context, "memhog"), "."], { cwd: source, env: { ...process.env, CGO_ENABLED: "0" } });
    await copyFile(path.join(source, "Dockerfile"), path.join(context, "Dockerfile"));
    await podman(["build", "--network=none", ...MEMHOG_IMAGES.flatMap((t) => ["-t", t]), context]);
  } finally {
    await rm(context, { recursive: true, force: true });
  }
  return MEMHOG_IMAGES;
}

/** An image of Debian's packages, built unless its keyed tag is there already. */
async function debianImage(recipe: DebianImageRecipe): Promise<readonly string[]> {
  const tag = debianImageTag(recipe);
  const found = await podman(["image", "exists", tag]).then(() => true, () => false);
  return found ? [tag] : buildDebianImage(recipe);
}

/**
 * Seconds each image took to build on a machine of two cores with podman's layer cache empty
 * (a cold `npm run image`'s own lines), for the progress line's expectation. The first function
 * image also fills the dependency layer (`npm ci`) the other two share.
 */
export const COLD_IMAGE_SECONDS: Readonly<Record<ImageName, number>> = {
  "alert-receiver": 120, "memory-scaler": 35, "rule-sync": 40, "dead-letter": 35, memhog: 5, redis: 30, alertmanager: 30, openjdk: 40,
};

/**
 * Builds the named images (all by default) and saves their archives. `progress` hears one line
 * per step: the base image when it is built, then each image as `[n/m] name: building (cold
 * about N s)` and `name: built in S s` (podman's own output only in an error).
 * @throws Error naming the image and the step that failed, with the tail of podman's stderr.
 */
export async function buildImages(names: readonly ImageName[] = IMAGE_NAMES, progress: (line: string) => void = () => {}): Promise<BuiltImage[]> {
  await checkImageTools();
  const needsBase = names.some((n) => n !== "memhog" && DEBIAN_IMAGES[n] === undefined);
  const base = needsBase ? await ensureBaseImage(progress) : undefined;
  const built: BuiltImage[] = [];
  for (const [i, name] of names.entries()) {
    progress(`[${i + 1}/${names.length}] ${name}: building (cold about ${COLD_IMAGE_SECONDS[name]} s, seconds when cached)`);
    const t0 = Date.now();
    let step = "build";
    try {
      const recipe = DEBIAN_IMAGES[name];
      const tags = name === "memhog" ? await buildMemhog() : recipe ? await debianImage(recipe) : await buildFunction(name as keyof typeof FUNCTION_IMAGES, base as string);
      const first = tags[0] as string;
      step = "inspect";
      const facts = await inspect(first);
      step = "save as an OCI archive";
      built.push({ name, tags, ...facts, archive: await saveArchive(name, first, facts.id) });
      progress(`${name}: built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    } catch (error) {
      throw new Error(`image ${name}: ${step}: ${(error as Error).message}`, { cause: error });
    }
  }
  return built;
}

function mib(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

const USAGE: CommandUsage = {
  synopsis: ["npm run image [-- NAME…]"],
  arguments: [{ name: "NAME", means: `an image to build: ${IMAGE_NAMES.join(", ")}`, defaultIs: "all of them" }],
  notes: [
    "Each is saved as <cache>/images/<NAME>.oci.tar (APPMONITOR_CACHE, default ~/.cache/appmonitor).",
    "Exit codes: 0 built; 1 a step failed (named); 2 usage.",
  ],
};

if (import.meta.main) {
  exitOnHelp(process.argv.slice(2), USAGE);
  let names: string[] = [];
  try {
    names = parseArgs({ allowPositionals: true, options: {} }).positionals;
    const unknown = names.filter((n) => !IMAGE_NAMES.includes(n as ImageName));
    if (unknown.length > 0) throw new Error(`unknown: ${unknown.join(", ")}`);
  } catch (error) {
    console.error(`image: ${(error as Error).message}\n${usageText(USAGE)}`);
    process.exit(2);
  }
  try {
    const built = await buildImages(names.length > 0 ? (names as ImageName[]) : IMAGE_NAMES, (line) => process.stderr.write(`image: ${line}\n`));
    for (const image of built) console.log(`${image.tags.join(" ")}\n  digest ${image.digest}  size ${mib(image.sizeBytes)}  archive ${image.archive}`);
  } catch (error) {
    console.error(`image: ${(error as Error).message}`);
    process.exit(1);
  }
}
