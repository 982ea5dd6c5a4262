/** What an image's OCI archive (`npm run image`'s, the release's) holds. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { StepError } from "../lib/step-error.ts";

const run = promisify(execFile);

/**
 * The manifest digest of the one image in an OCI archive, read from its `index.json`.
 * @throws StepError when the archive cannot be read or holds other than one image.
 */
export async function archiveDigest(archive: string): Promise<string> {
  let index: { manifests?: { digest?: string }[] };
  try {
    index = JSON.parse((await run("tar", ["-xOf", archive, "index.json"], { maxBuffer: 1 << 20 })).stdout) as typeof index;
  } catch (error) {
    throw new StepError("read an image archive", `${archive}: ${(error as Error).message}`, { cause: error });
  }
  const digests = (index.manifests ?? []).map((m) => m.digest ?? "");
  if (digests.length !== 1 || !/^sha256:[0-9a-f]{64}$/.test(digests[0] ?? "")) {
    throw new StepError("read an image archive", `${archive}: index.json lists ${digests.length} manifests; one image per archive is expected`);
  }
  return digests[0] as string;
}
