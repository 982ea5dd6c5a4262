/**
 * The repository's YAML manifests as plain objects: the one loader of `knative/*.yaml` (and any
 * other manifest file) for the harness and the tests alike.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../../scripts/lib/paths.ts";
import type { Manifest } from "../../../scripts/lib/manifest.ts";

/**
 * Every non-empty YAML document of `text`, in order.
 * @param origin names the text in the error. @throws Error listing the YAML errors of a document.
 */
export function parseManifests(text: string, origin: string): Manifest[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${origin}: ${doc.errors.map((e) => e.message).join("; ")}`);
    const value = doc.toJS() as Manifest | null;
    return value === null ? [] : [value];
  });
}

/** The objects of one YAML file of the repository (`relativePath` from its root, e.g. `knative/examples/memhog.yaml`), in order. */
export async function manifestFile(relativePath: string): Promise<Manifest[]> {
  return parseManifests(await readFile(path.join(repoRoot, relativePath), "utf8"), relativePath);
}
