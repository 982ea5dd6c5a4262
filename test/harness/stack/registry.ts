/**
 * The stack's local OCI registry: distribution's registry (test/harness/bins/registry) on 127.0.0.1 at a
 * free port, its storage under `<stateDir>/registry/`, holding the images the stack serves under
 * their own names (`registry-config.ts` says how). The real node's containerd pulls them from it
 * through one `hosts.toml` per registry host, so a manifest that names `quay.io/metral/memhog:v0.0.1`
 * runs unchanged, `imagePullPolicy: Always` included.
 *
 * The images go in with Debian's skopeo, from the OCI archives `npm run image` saves
 * (`<cache>/images/<name>.oci.tar`), digests kept as they are (`--preserve-digests`: the layers
 * stay uncompressed, as in the archive), so an image whose digest the registry already has under
 * its tag is skipped.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { FUNCTION_IMAGES, MEMHOG_IMAGES } from "../../../scripts/images/build.ts";
import { archiveDigest } from "../../../scripts/images/archive.ts";
import { archiveDir } from "../../../scripts/lib/paths.ts";
import { freePort } from "../lib/free-port.ts";
import { StepError } from "../../../scripts/lib/step-error.ts";
import { startProcess, waitReady, type Started } from "./processes.ts";
import { hostsDirName, hostsToml, mirroredHosts, mirroredReference, REGISTRY_ENV, registryConfig } from "./registry-config.ts";

const run = promisify(execFile);

/** An image the stack serves: its name as manifests write it, and the archive it comes from. */
export interface ServedImage {
  /** `npm run image`'s short name: memhog, alert-receiver, memory-scaler, rule-sync. */
  readonly name: string;
  /** The full reference manifests use, e.g. `quay.io/metral/memhog:v0.0.1`. */
  readonly reference: string;
  /** The OCI archive (`podman save --format oci-archive`) it is pushed from. */
  readonly archive: string;
}

/** What a push did for one image. */
export interface PushedImage {
  readonly reference: string;
  /** Where the local registry holds it: `127.0.0.1:<port>/<host>/<path>:<tag>`. */
  readonly mirrored: string;
  /** Its manifest digest, `sha256:…` (the archive's, kept by the push). */
  readonly digest: string;
  /** False when the registry already had this digest under the tag. */
  readonly pushed: boolean;
  /** Wall time of the check and push, milliseconds. */
  readonly ms: number;
}

/** What the stack's state records of its registry. */
export interface RegistryState {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** `127.0.0.1:<port>`, the host part of the mirrored references. */
  readonly address: string;
  /** The registry hosts the real node pulls from it (one hosts.toml each). */
  readonly mirrors: readonly string[];
  /** The images it was given at `up`; an image without an archive is not among them. */
  readonly images: readonly PushedImage[];
  /** Served images whose archive was missing at `up` (`npm run image` makes them). */
  readonly missing: readonly string[];
}

/**
 * The images the stack serves: memhog as the original demo names it, and the functions as
 * `knative/services/` and `knative/eventing/dead-letter.yaml` name them, each from its archive in `<cache>/images/` (memhog's from
 * `memhogArchive` when given).
 */
export function servedImages(env: NodeJS.ProcessEnv = process.env, memhogArchive?: string): ServedImage[] {
  const dir = archiveDir(env);
  return [
    { name: "memhog", reference: MEMHOG_IMAGES[1], archive: memhogArchive ?? path.join(dir, "memhog.oci.tar") },
    ...Object.entries(FUNCTION_IMAGES).map(([name, reference]) => ({ name, reference, archive: path.join(dir, `${name}.oci.tar`) })),
  ];
}

/** What {@link startRegistry} and {@link serveImages} need from the stack being started. */
export interface StartRegistryInput {
  readonly stateDir: string;
  /** The registry binary (test/harness/bins/build.sh's `registry`). */
  readonly bin: string;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (name: string) => string;
  /** Records the started process in the stack's state (so `down` stops it and `status` shows it). */
  readonly record: (s: Started, endpoint: string) => Promise<void>;
}

/**
 * Writes the registry's configuration, starts it and waits until `GET /v2/` answers 200.
 * @returns its URL and address.
 * @throws ComponentError when the registry exits or is not ready within 30 s, with its log tail.
 */
export async function startRegistry(input: StartRegistryInput): Promise<{ url: string; address: string }> {
  const dir = path.join(input.stateDir, "registry");
  await mkdir(path.join(dir, "data"), { recursive: true });
  const address = `127.0.0.1:${await freePort()}`;
  const config = path.join(dir, "config.yml");
  await writeFile(config, registryConfig({ address, rootDirectory: path.join(dir, "data") }));
  const url = `http://${address}`;
  const registry = startProcess("registry", input.bin, ["serve", config], input.log("registry"), { ...input.env, ...REGISTRY_ENV });
  await input.record(registry, url);
  await waitReady(registry, async () => (await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(2000) })).status === 200, 30_000);
  return { url, address };
}

/**
 * Writes `<certsDir>/<host>/hosts.toml` for the registry host of every served image, each making
 * the local registry at `address` that host's only server.
 * @returns the hosts mirrored, sorted.
 */
export async function writeMirrors(certsDir: string, address: string, images: readonly ServedImage[]): Promise<string[]> {
  const hosts = mirroredHosts(images.map((i) => i.reference));
  for (const host of hosts) {
    await mkdir(path.join(certsDir, hostsDirName(host)), { recursive: true });
    await writeFile(path.join(certsDir, hostsDirName(host), "hosts.toml"), hostsToml(host, address));
  }
  return hosts;
}

async function skopeo(args: readonly string[], step: string): Promise<string> {
  try {
    return (await run("skopeo", [...args], { maxBuffer: 16 << 20 })).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim() || String(error);
    throw new StepError(step, `skopeo ${args.join(" ")}: ${stderr}`, { cause: error });
  }
}

/** The digest the registry holds under `mirrored`'s tag, or undefined when it has none. */
async function registryDigest(mirrored: string): Promise<string | undefined> {
  try {
    return (await run("skopeo", ["inspect", "--tls-verify=false", "--format", "{{.Digest}}", `docker://${mirrored}`])).stdout.trim();
  } catch (error) {
    if (/manifest unknown|not found|name unknown/i.test((error as { stderr?: string }).stderr ?? "")) return undefined;
    throw new StepError("look an image up in the stack's registry", `skopeo inspect docker://${mirrored}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
  }
}

/**
 * Puts each served image whose archive exists into the registry at `address`, unless the
 * registry has its digest under its tag already. One at a time: two cores, and the registry
 * writes each blob to disk.
 * @throws StepError naming the image and skopeo's message when a check or push fails.
 */
export async function pushImages(address: string, images: readonly ServedImage[]): Promise<PushedImage[]> {
  const pushed: PushedImage[] = [];
  for (const image of images.filter((i) => existsSync(i.archive))) {
    const t0 = Date.now();
    const mirrored = mirroredReference(address, image.reference);
    const digest = await archiveDigest(image.archive);
    const had = (await registryDigest(mirrored)) === digest;
    if (!had) {
      await skopeo(["copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false", `oci-archive:${image.archive}`, `docker://${mirrored}`], `push ${image.name} to the stack's registry`);
    }
    pushed.push({ reference: image.reference, mirrored, digest, pushed: !had, ms: Date.now() - t0 });
  }
  return pushed;
}

/**
 * One line for the registry's mirrors and one per image: whether the registry still answers for
 * it with the digest pushed (`present`), or not (`MISSING`); images without an archive at `up`
 * are named as not served.
 */
export async function registryStatusLines(registry: RegistryState): Promise<string[]> {
  const lines = [`${"registry mirrors".padEnd(24)} ${registry.mirrors.join(", ")} → ${registry.url}`];
  for (const image of registry.images) {
    const digest = await registryDigest(image.mirrored).catch(() => undefined);
    lines.push(`${"registry image".padEnd(24)} ${digest === image.digest ? "present" : "MISSING"}  ${image.reference} ${image.digest.slice(0, 19)}`);
  }
  if (registry.missing.length > 0) lines.push(`${"registry image".padEnd(24)} not served (no archive; \`npm run image -- ${registry.missing.join(" ")}\` makes them): ${registry.missing.join(", ")}`);
  return lines;
}

/**
 * The progress line of a registry that `up` just filled, `ms` after it began: how many images it
 * serves and how many of them it pushed, and each image without an archive, with the command that
 * makes it (the real node cannot pull what the registry lacks).
 */
export function registryReadyLine(registry: Pick<RegistryState, "url" | "images" | "missing">, ms: number): string {
  const pushed = registry.images.filter((i) => i.pushed).length;
  const served = `${registry.images.length} image${registry.images.length === 1 ? "" : "s"} served (${pushed} pushed now)`;
  const missing = registry.missing.length === 0 ? "" :
    `; no archive for ${registry.missing.join(", ")}: the real node cannot pull ${registry.missing.length === 1 ? "it" : "them"} until \`npm run image -- ${registry.missing.join(" ")}\` makes ${registry.missing.length === 1 ? "it" : "them"} and the stack starts again (\`npm run demo\` pushes into a running stack itself)`;
  return `registry ready at ${registry.url} in ${(ms / 1000).toFixed(1)} s (its start and the pushes), ${served}${missing}`;
}

/**
 * The registry as the real node uses it: started, every served image with an archive pushed,
 * and the mirrors written into containerd's `hostsDir` (its `config_path`).
 * @param memhogArchive memhog's archive, when not `<cache>/images/memhog.oci.tar`.
 * @throws as {@link startRegistry} and {@link pushImages}.
 */
export async function serveImages(input: StartRegistryInput & { hostsDir: string; memhogArchive?: string }): Promise<RegistryState> {
  const served = servedImages(input.env, input.memhogArchive);
  const { url, address } = await startRegistry(input);
  const mirrors = await writeMirrors(input.hostsDir, address, served);
  const images = await pushImages(address, served);
  return { url, address, mirrors, images, missing: served.filter((i) => !existsSync(i.archive)).map((i) => i.name) };
}
