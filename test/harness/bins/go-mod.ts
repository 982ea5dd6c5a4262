/**
 * A go.mod file's directives, read as text: what the binary sets' pins say, for the code that
 * reads them (the Eventing and Serving commands of a tool block, the versions a set requires).
 */

/**
 * The entries of a go.mod `directive` (`require`, `tool`, …), single-line or in a block, in file
 * order: each the line's text after the keyword, comments dropped, e.g. `k8s.io/client-go v0.37.2`.
 */
export function goModEntries(goMod: string, directive: string): string[] {
  const entries: string[] = [];
  let inBlock = false;
  for (const raw of goMod.split("\n")) {
    const line = raw.replace(/\/\/.*$/, "").trim();
    if (inBlock) {
      if (line === ")") inBlock = false;
      else if (line) entries.push(line);
    } else if (line === `${directive} (`) inBlock = true;
    else if (line.startsWith(`${directive} `)) entries.push(line.slice(directive.length + 1).trim());
  }
  return entries;
}
