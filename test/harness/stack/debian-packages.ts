/**
 * The Debian packages the stack, the demo and the tests need, checked and installed through the
 * one list in `scripts/install-debian.sh`, so `npm run demo` and `npm test` set up a fresh machine
 * themselves: as root they install what is missing (the script says which and why); otherwise
 * they stop with the one command to run.
 */
import { execFile, spawn } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "../../../scripts/lib/paths.ts";

const run = promisify(execFile);

/** The script that holds the list; `--check` prints what is missing. */
export const INSTALL_SCRIPT = path.join(repoRoot, "scripts", "install-debian.sh");

/** The Debian packages not installed yet (empty when all are). */
export async function missingDebianPackages(): Promise<string[]> {
  try {
    await run("bash", [INSTALL_SCRIPT, "--check"]);
    return [];
  } catch (error) {
    const { stdout, code } = error as { stdout?: string; code?: unknown };
    if (code !== 1 || stdout === undefined) throw error;
    return stdout.split("\n").filter(Boolean);
  }
}

/**
 * Installs the missing Debian packages when this process is root (apt-get; the script prints
 * each package and why it is needed on stderr).
 *
 * @throws Error naming the packages and the one command to run, when some are missing and this
 *   process is not root, or when the installation fails (with its exit code).
 */
export async function ensureDebianPackages(): Promise<void> {
  const missing = await missingDebianPackages();
  if (missing.length === 0) return;
  const command = `sudo bash ${path.relative(process.cwd(), INSTALL_SCRIPT) || INSTALL_SCRIPT}`;
  if (process.getuid?.() !== 0) throw new Error(`Debian packages missing: ${missing.join(", ")}; install them with: ${command}`);
  const code = await new Promise<number | null>((resolve, reject) => {
    spawn("bash", [INSTALL_SCRIPT], { stdio: ["ignore", "inherit", "inherit"] }).once("error", reject).once("exit", resolve);
  });
  if (code !== 0) throw new Error(`installing the Debian packages ${missing.join(", ")} failed (exit ${code}); run: ${command}`);
}
