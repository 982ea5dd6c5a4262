/** Temporary directories that a test removes when it is done. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

/** A created directory and the function that removes it with its content. */
export interface TempDir {
  readonly path: string;
  remove(): Promise<void>;
}

/** Creates `$TMPDIR/<prefix>-XXXXXX`. */
export async function tempDir(prefix: string): Promise<TempDir> {
  const dir = await mkdtemp(path.join(tmpdir(), `${prefix}-`));
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
