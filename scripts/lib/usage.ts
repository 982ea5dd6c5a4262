/**
 * What every command of the project (`npm run <command>`, `kubectl appmonitor`) says to `--help`:
 * how it is called, each argument and option with what it means and its default. An option is
 * declared once, as node:util's `parseArgs` takes it plus what it means, so the parser and the
 * usage cannot disagree on a name or a default.
 */
import { parseArgs } from "node:util";

/** One option: `parseArgs`'s own fields, and what the usage says of it. */
export interface OptionUsage {
  readonly type: "string" | "boolean";
  readonly short?: string;
  readonly default?: string | boolean;
  /** What it means, one line. */
  readonly means: string;
  /** Its value's name in the usage (`URL`), for a string. */
  readonly value?: string;
  /** The default as the usage says it, where it is not `default` (an environment variable, say). */
  readonly defaultIs?: string;
}

/** A positional argument: its name as the synopsis spells it, what it means, its default when optional. */
export interface ArgumentUsage {
  readonly name: string;
  readonly means: string;
  readonly defaultIs?: string;
}

/** A command's usage, for {@link usageText}. */
export interface CommandUsage {
  /** Each way to call it, without `usage:` (`npm run chart -- DIR`). */
  readonly synopsis: readonly string[];
  /** Its commands, for one that has them (`npm run stack -- up`). */
  readonly commands?: readonly ArgumentUsage[];
  readonly arguments?: readonly ArgumentUsage[];
  readonly options?: Readonly<Record<string, OptionUsage>>;
  /** Lines after the options (environment variables, exit codes). */
  readonly notes?: readonly string[];
}

const HELP: OptionUsage = { type: "boolean", short: "h", means: "print this usage and exit" };

function defaultOf(option: OptionUsage): string | undefined {
  if (option.defaultIs !== undefined) return option.defaultIs;
  if (option.type === "boolean") return option.default === true ? "on" : "off";
  return option.default === undefined ? undefined : String(option.default);
}

/** Rows of two columns, the first padded to the widest. */
function table(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

/** The usage text: the synopsis, then each argument and option (`--help` last) with what it means and its default. */
export function usageText(usage: CommandUsage): string {
  const lines = usage.synopsis.map((s, i) => `${i === 0 ? "usage:" : "      "} ${s}`);
  for (const [title, list] of [["commands", usage.commands], ["arguments", usage.arguments]] as const) {
    if (list?.length) lines.push("", `${title}:`, ...table(list.map((a) => [a.name, a.defaultIs === undefined ? a.means : `${a.means} (default: ${a.defaultIs})`])));
  }
  const options = Object.entries({ ...usage.options, help: HELP }).map(([name, o]): [string, string] => {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${name}${o.type === "string" ? ` ${o.value ?? "VALUE"}` : ""}`;
    const value = name === "help" ? undefined : defaultOf(o);
    return [flag, value === undefined ? o.means : `${o.means} (default: ${value})`];
  });
  lines.push("", "options:", ...table(options));
  if (usage.notes?.length) lines.push("", ...usage.notes);
  return lines.join("\n");
}

/** Whether `args` ask for the usage (`--help` or `-h`, before any `--`); other arguments are not judged. */
export function helpAsked(args: readonly string[], options: Readonly<Record<string, OptionUsage>> = {}): boolean {
  const { values } = parseArgs({ args: [...args], options: { ...options, help: HELP }, strict: false, allowPositionals: true });
  return values.help === true;
}

/**
 * Prints the usage and exits 0 when `args` ask for it ({@link helpAsked}); else returns. Called
 * before anything else a command does, so `--help` never builds, reads or starts anything.
 */
export function exitOnHelp(args: readonly string[], usage: CommandUsage): void {
  if (!helpAsked(args, usage.options)) return;
  process.stdout.write(`${usageText(usage)}\n`);
  process.exit(0);
}
