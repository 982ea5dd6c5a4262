/**
 * How images get onto the real node: OCI archives imported into its containerd's `k8s.io`
 * namespace (where the CRI plugin, and so the kubelet, finds them). The one place that does it,
 * so a registry the node pulls from can take its place.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { StepError } from "../../../scripts/lib/step-error.ts";
import type { RealNodeState } from "./real-node.ts";

const run = promisify(execFile);

/** The command that makes `npm run image`'s archives (`<cache>/images/<image>.oci.tar`). */
export function npmRunImage(archives: readonly string[]): string {
  return `npm run image -- ${archives.map((a) => path.basename(a, ".oci.tar")).join(" ")}`;
}

/**
 * Imports each OCI archive (`podman save --format oci-archive`, `npm run image`) under the name its
 * index annotates (`org.opencontainers.image.ref.name`), e.g. `ghcr.io/kubedemo/appmonitor-memory-scaler:latest`.
 * @param maker the command that makes missing archives, for the error (default {@link npmRunImage}).
 * @throws StepError naming each missing archive and the command that makes it, or an
 *   archive and ctr's message.
 */
export async function importImages(node: Pick<RealNodeState, "bins" | "paths">, archives: readonly string[], maker = npmRunImage): Promise<void> {
  const missing = archives.filter((a) => !existsSync(a));
  if (missing.length > 0) {
    throw new StepError("import images into the real node", `no image archive ${missing.join(", ")}: \`${maker(missing)}\` builds ${missing.length === 1 ? "it" : "them"}`);
  }
  for (const archive of archives) {
    try {
      await run(node.bins.ctr, ["--address", node.paths.containerdSocket, "--namespace", "k8s.io", "images", "import", archive], { maxBuffer: 16 << 20 });
    } catch (error) {
      throw new StepError("import images into the real node", `ctr images import ${path.basename(archive)}: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
    }
  }
}

/**
 * The image reference an OCI archive's index names: containerd's `io.containerd.image.name`
 * (build.sh's archives, whose `org.opencontainers.image.ref.name` is the tag alone), else
 * `org.opencontainers.image.ref.name` (podman's, the full reference): what `ctr images import`
 * names it, so what a Pod's `image` must say.
 * @throws StepError when the archive cannot be read or names no image.
 */
export async function archiveReference(archive: string): Promise<string> {
  let index: { manifests?: { annotations?: Record<string, string> }[] };
  try {
    index = JSON.parse((await run("tar", ["-xOf", archive, "index.json"], { maxBuffer: 1 << 20 })).stdout) as typeof index;
  } catch (error) {
    throw new StepError("read an image archive", `${archive}: ${(error as Error).message}`, { cause: error });
  }
  const annotations = index.manifests?.[0]?.annotations ?? {};
  const reference = annotations["io.containerd.image.name"] ?? annotations["org.opencontainers.image.ref.name"];
  if (!reference?.includes(":")) throw new StepError("read an image archive", `${archive}: its index names no image reference`);
  return reference;
}
