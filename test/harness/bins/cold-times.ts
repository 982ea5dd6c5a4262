/**
 * The cold build times of `cold-times.txt` beside this module: the one table build.sh's and the
 * demo's progress lines read and the docs quote (test/unit/docs/facts.test.ts).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** One line of the table. */
export interface ColdTime {
  readonly name: string;
  readonly seconds: number;
  /** Where the figure comes from. */
  readonly source: string;
}

/** The table: `binaries` and `images` (the wholes), then build.sh's sets in build order. */
export interface ColdTimes {
  /** build.sh with every set, cold, seconds. */
  readonly binaries: ColdTime;
  /** The images a fresh demo builds, cold, seconds. */
  readonly images: ColdTime;
  /** Each set of build.sh, in build order. */
  readonly sets: readonly ColdTime[];
}

/** The table's path. */
export const COLD_TIMES_PATH = fileURLToPath(new URL("cold-times.txt", import.meta.url));

/**
 * Parses the table's text.
 * @throws Error naming the line that is not `name seconds source`, or a whole that is missing.
 */
export function parseColdTimes(text: string): ColdTimes {
  const rows = text.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-z-]+)\s+(\d+)\s+(.+)$/.exec(line);
    if (match === null) throw new Error(`${COLD_TIMES_PATH}: not "name seconds source": ${line}`);
    return { name: match[1] as string, seconds: Number(match[2]), source: match[3] as string };
  });
  const whole = (name: string): ColdTime => {
    const row = rows.find((r) => r.name === name);
    if (row === undefined) throw new Error(`${COLD_TIMES_PATH}: no line "${name}"`);
    return row;
  };
  return { binaries: whole("binaries"), images: whole("images"), sets: rows.filter((r) => r.name !== "binaries" && r.name !== "images") };
}

/** The table as the file holds it. */
export function coldTimes(): ColdTimes {
  return parseColdTimes(readFileSync(COLD_TIMES_PATH, "utf8"));
}

/**
 * The cold seconds of build.sh's sets `names` built together: their share of the measured whole
 * (`binaries`), as build.sh scales its estimate (the sets share packages, so the whole is less
 * than their sum).
 * @throws Error naming a set the table does not have.
 */
export function coldSecondsOf(times: ColdTimes, names: readonly string[]): number {
  const sum = (rows: readonly ColdTime[]) => rows.reduce((s, r) => s + r.seconds, 0);
  const unknown = names.filter((n) => !times.sets.some((s) => s.name === n));
  if (unknown.length > 0) throw new Error(`${COLD_TIMES_PATH}: no set ${unknown.join(", ")}`);
  return Math.round((sum(times.sets.filter((s) => names.includes(s.name))) * times.binaries.seconds) / sum(times.sets));
}

/** Seconds as the docs and progress lines say them: whole minutes, or a half (`4½`). */
export function aboutMinutes(seconds: number): string {
  const halves = Math.round(seconds / 30);
  return halves % 2 === 0 ? String(halves / 2) : `${(halves - 1) / 2}½`;
}
