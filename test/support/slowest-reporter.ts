/**
 * A node:test reporter that prints, at the end of a run, the test files that took longest, with
 * their wall time in seconds: where `npm test`'s minutes go. `npm test`'s runner (`run-suite.ts`)
 * prints the report from {@link FileTimes}; as a reporter beside the spec one it serves a
 * `node --test` run of some files (`--test-reporter=./test/support/slowest-reporter.ts`).
 *
 * A file's time is that of its own `test:complete` event (nesting 0, its name the file's path:
 * the runner's test of the whole file, process start and hooks included); a file whose runner
 * sent none falls back to its `test:summary` (the time inside the file's process).
 * https://nodejs.org/docs/latest-v24.x/api/test.html#custom-reporters
 */
import path from "node:path";

/** How many files the report names. */
export const SLOWEST_COUNT = 10;

/** One test file's wall time. */
export interface FileTime {
  /** The file, relative to the working directory. */
  readonly file: string;
  readonly seconds: number;
  /** Its run failed (a test, a hook, or the file's process). */
  readonly failed: boolean;
}

/** The `count` slowest of `times`, slowest first; equal times in file order. */
export function slowest(times: Iterable<FileTime>, count = SLOWEST_COUNT): FileTime[] {
  return [...times].sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file)).slice(0, count);
}

/**
 * The report's lines, each ending in a newline: a heading naming how many files ran and their
 * summed time, then one line per file, its seconds right-aligned. Empty when no file ran.
 */
export function formatSlowest(times: readonly FileTime[], count = SLOWEST_COUNT): string {
  if (times.length === 0) return "";
  const top = slowest(times, count);
  const total = times.reduce((sum, t) => sum + t.seconds, 0);
  const width = Math.max(...top.map((t) => t.seconds.toFixed(1).length));
  const lines = [`slowest ${top.length} of ${times.length} test files (${total.toFixed(1)} s summed over files run concurrently):`];
  top.forEach((t, i) => lines.push(`${String(i + 1).padStart(2)}. ${t.seconds.toFixed(1).padStart(width)} s  ${t.file}${t.failed ? "  (failed)" : ""}`));
  return lines.map((line) => `${line}\n`).join("");
}

/** The fields of a node:test reporter event this reporter reads. */
interface ReporterEvent {
  readonly type: string;
  readonly data: {
    readonly name?: string;
    readonly nesting?: number;
    readonly file?: string;
    readonly details?: { readonly duration_ms?: number; readonly passed?: boolean };
    readonly duration_ms?: number;
    readonly counts?: { readonly failed?: number; readonly cancelled?: number };
    readonly success?: boolean;
  };
}

/** Gathers files' times from a run's events. */
export class FileTimes {
  readonly #complete = new Map<string, FileTime>();
  readonly #summary = new Map<string, FileTime>();
  readonly #cwd: string;

  constructor(cwd = process.cwd()) {
    this.#cwd = cwd;
  }

  /** Takes one event; ignores those that are not a file's. */
  add(event: ReporterEvent): void {
    const { file, name, nesting } = event.data;
    if (file === undefined) return;
    const relative = path.relative(this.#cwd, file);
    if (event.type === "test:complete" && nesting === 0 && name !== undefined && path.resolve(this.#cwd, name) === path.resolve(file)) {
      this.#complete.set(relative, { file: relative, seconds: (event.data.details?.duration_ms ?? 0) / 1000, failed: event.data.details?.passed === false });
    } else if (event.type === "test:summary") {
      const counts = event.data.counts;
      const failed = event.data.success === false || (counts?.failed ?? 0) > 0 || (counts?.cancelled ?? 0) > 0;
      this.#summary.set(relative, { file: relative, seconds: (event.data.duration_ms ?? 0) / 1000, failed });
    }
  }

  /** Every file seen, by its `test:complete` when it had one. */
  all(): FileTime[] {
    const byFile = new Map(this.#summary);
    for (const [file, time] of this.#complete) byFile.set(file, time);
    return [...byFile.values()];
  }
}

/** The reporter: nothing while the run goes, the slowest files once it ends. */
export default async function* slowestReporter(source: AsyncIterable<ReporterEvent>): AsyncGenerator<string> {
  const times = new FileTimes();
  for await (const event of source) times.add(event);
  const report = formatSlowest(times.all());
  if (report !== "") yield `\n${report}`;
}
