/**
 * `npm run rules -- [OPTIONS] FILE…` (or `node functions/rule-sync/rules-cli.ts`): prints, on
 * stdout, a plain Prometheus rules file (https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/)
 * with one alerting rule group per AppMonitor found in the given manifest files, for a
 * Prometheus that runs without prometheus-operator (`rule_files:`).
 *
 * Files are multi-document YAML; documents of other kinds are ignored. A field the API server
 * would drop (not in the AppMonitor's schema, e.g. a misspelt `spec.forSecond`) does not stop
 * the run: it is named on stderr, as kubectl's field validation does, e.g.
 * `rules: warning: m.yaml: document 1 (AppMonitor default/m): unknown field "spec.forSecond"`.
 * Options:
 *   --source cadvisor|kube-state-metrics   metric source (default cadvisor; see rule.ts)
 *   --severity NAME                        the alert's severity label (default warning)
 *   --namespace NS                         for AppMonitors without metadata.namespace (default "default")
 *
 * Exit codes: 0 with the rules on stdout; 1 when a file cannot be read or parsed, an AppMonitor
 * is invalid (the message names the file, document and field), or no AppMonitor was found;
 * 2 on a usage error.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ManifestError, readAppMonitors, type LocatedAppMonitor } from "./manifests.ts";
import { isDnsLabel } from "../lib/kube-names.ts";
import { buildRulesFile } from "./rule.ts";
import { DEFAULT_RULE_CONFIG, METRIC_SOURCES, validateRuleConfig, type MetricSource, type RuleConfig } from "./rule-config.ts";
import { checkRuleInput, RuleInputError, type RuleInput } from "./rule-input.ts";

const USAGE = `usage: npm run rules -- [--source ${METRIC_SOURCES.join("|")}] [--severity NAME] [--namespace NS] FILE…`;

/** A problem with the command line; exit code 2. */
class UsageError extends Error {}

/** A problem with the input files; exit code 1. */
class InputError extends Error {}

async function main(argv: readonly string[], warn: (message: string) => void): Promise<string> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        source: { type: "string", default: DEFAULT_RULE_CONFIG.metricSource },
        severity: { type: "string", default: DEFAULT_RULE_CONFIG.severity },
        namespace: { type: "string", default: "default" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
  const { values, positionals: files } = parsed;
  if (values.help) return `${USAGE}\n`;
  if (files.length === 0) throw new UsageError("no FILE given");
  if (!isDnsLabel(values.namespace)) throw new UsageError(`--namespace must be a DNS label (RFC 1123), got ${JSON.stringify(values.namespace)}`);
  const config: RuleConfig = { ...DEFAULT_RULE_CONFIG, metricSource: values.source as MetricSource, severity: values.severity };
  try {
    validateRuleConfig(config);
  } catch (error) {
    if (error instanceof RuleInputError) {
      const option = error.field === "metricSource" ? "--source" : "--severity";
      throw new UsageError(`${option}${error.message.slice(error.field.length)}`, { cause: error });
    }
    throw error;
  }

  const found: LocatedAppMonitor[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      throw new InputError(`${file}: cannot read: ${(error as Error).message}`, { cause: error });
    }
    found.push(...readAppMonitors(text, file, values.namespace));
  }
  if (found.length === 0) throw new InputError(`no AppMonitor (kubedemo.com/v1) in ${files.join(", ")}`);

  const seen = new Map<string, LocatedAppMonitor>();
  const inputs: RuleInput[] = [];
  for (const entry of found) {
    const { name, namespace } = entry.appMonitor.metadata;
    const where = `${entry.file}: document ${entry.document} (AppMonitor ${namespace}/${name})`;
    for (const field of entry.unknownFields) warn(`${where}: unknown field ${JSON.stringify(field)}`);
    const first = seen.get(`${namespace}/${name}`);
    if (first !== undefined) throw new InputError(`${where}: the same AppMonitor is already in ${first.file} document ${first.document}`);
    seen.set(`${namespace}/${name}`, entry);
    // Rule-level checks (e.g. selector label syntax) reported with the AppMonitor's location.
    try {
      inputs.push(checkRuleInput(entry.appMonitor));
    } catch (error) {
      if (error instanceof RuleInputError) throw new InputError(`${where}: ${error.message}`, { cause: error });
      throw error;
    }
  }
  return buildRulesFile(inputs, config);
}

if (import.meta.main) {
  // `npm run rules -- f.yaml | head`: a reader that stops early is not an error.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
  });
  try {
    process.stdout.write(await main(process.argv.slice(2), (message) => process.stderr.write(`rules: warning: ${message}\n`)));
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`rules: ${error.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof InputError || error instanceof ManifestError) {
      process.stderr.write(`rules: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      throw error;
    }
  }
}
