/**
 * `npm test`'s two lanes (`run-suite.ts`): the test files that take the real node's lock, which
 * hold it one at a time, and those that hold it together (on a stack one of them lends, else at
 * the lane's end); and the others,
 * run beside them. A file takes the lock when its relative imports reach
 * `test/harness/stack/real-node-lock.ts`, and holds it together with others when they reach
 * `test/support/real-node-alongside.ts`; one that waited for the lock in a shared pool would hold
 * a slot idle there while another file held the node.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

/** The module whose importers take the real node's lock, relative to the repository. */
export const REAL_NODE_LOCK_MODULE = path.join("test", "harness", "stack", "real-node-lock.ts");

/** The module whose importers use the run's shared real-node stack, relative to the repository. */
export const SHARED_STACK_MODULE = path.join("test", "support", "real-node-file.ts");

/** The module whose importers hold the run's shared real-node stack beside each other, relative to the repository. */
export const ALONGSIDE_MODULE = path.join("test", "support", "real-node-alongside.ts");

/** The relative module specifiers of a TypeScript source: static and dynamic imports and re-exports. */
export function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm)) found.push(m[1] as string);
  return found;
}

/** The two lanes: files as given, each list in the order of `files`. */
export interface Lanes {
  /**
   * Files that take the real node's lock and hold it one at a time, those with a node of their own
   * first, then those on the run's shared stack, which stays up from one of them to the next. A
   * file of the other lane that starts a node (the demo's) takes the shared stack down when it
   * comes between two of those; it comes after its builds, minutes into the run, among the first.
   */
  readonly realNode: string[];
  /** Files on the run's shared stack that hold the real node together, on a stack one of {@link realNode}'s lends, else after them. */
  readonly alongside: string[];
  /** Every other file. */
  readonly others: string[];
}

/** The modules that place a file in a lane (absolute paths). */
export interface LaneModules {
  /** Its importers take the real node's lock. */
  readonly lock: string;
  /** Its importers use the run's shared stack. */
  readonly shared: string;
  /** Its importers hold the shared stack beside each other. */
  readonly alongside: string;
}

/** Whether a module's relative imports reach `target` (absolute), each module read once. */
function reacher(target: string, read: (file: string) => string | undefined): (file: string) => boolean {
  const reaches = new Map<string, boolean>();
  const visit = (file: string): boolean => {
    const known = reaches.get(file);
    if (known !== undefined) return known;
    reaches.set(file, false); // the tree has no import circle (eslint); this only ends the walk if one came
    const source = file === target ? undefined : read(file);
    const result = file === target || (source !== undefined && relativeImports(source).some((spec) => visit(path.resolve(path.dirname(file), spec))));
    reaches.set(file, result);
    return result;
  };
  return visit;
}

/**
 * Splits `files` (absolute paths) by whether their imports reach `modules.lock`, and orders the
 * real-node lane by whether they reach `modules.shared`, setting apart those that reach `modules.alongside`.
 * @param read a module's source, or undefined when there is none (a package, a missing file).
 */
export function splitLanes(files: readonly string[], modules: LaneModules, read: (file: string) => string | undefined): Lanes {
  const locks = reacher(modules.lock, read);
  const shares = reacher(modules.shared, read);
  const together = reacher(modules.alongside, read);
  const taking = files.filter((f) => locks(f));
  const alone = taking.filter((f) => !together(f));
  return {
    realNode: [...alone.filter((f) => !shares(f)), ...alone.filter((f) => shares(f))],
    alongside: taking.filter((f) => together(f)),
    others: files.filter((f) => !taking.includes(f)),
  };
}

/** {@link splitLanes} of `files` (absolute paths) in the checkout at `root`, each module read from disk. */
export function laneFiles(root: string, files: readonly string[]): Lanes {
  const modules = { lock: path.join(root, REAL_NODE_LOCK_MODULE), shared: path.join(root, SHARED_STACK_MODULE), alongside: path.join(root, ALONGSIDE_MODULE) };
  return splitLanes(files, modules, (f) => {
    try {
      return readFileSync(f, "utf8");
    } catch {
      return undefined;
    }
  });
}
