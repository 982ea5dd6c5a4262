/**
 * `npm run explain -- KIND/NAME -n NAMESPACE [--prometheus-url URL] [--source cadvisor|kube-state-metrics]`
 * (or `kubectl appmonitor explain KIND/NAME -n NAMESPACE`, through `scripts/explain/kubectl-appmonitor`):
 * says, one line per link, where one workload stands in the chain AppMonitor → rule → series →
 * alert → memory-scaler (`explain.ts`). KIND is deploy|deployment|sts|statefulset|ds|daemonset|rs|replicaset.
 *
 * Reads, with the kubeconfig of `KUBECONFIG` or the default (`KubeConfig.loadFromDefault`): the
 * workload, its Pods, the namespace's AppMonitors, the governing one's PrometheusRule; and from
 * the Prometheus at `--prometheus-url` or `PROMETHEUS_URL`: the rule group, the threshold query
 * without its threshold (`rule.ts` `percentOfLimitExpression`) and `ALERTS`. Without a
 * Prometheus URL those lines say so.
 *
 * Its arguments, options and exit codes: {@link USAGE} (`--help`).
 */
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { APPMONITOR_ALERT_LABEL, APPMONITOR_GROUP, APPMONITOR_PLURAL, APPMONITOR_VERSION } from "../../functions/lib/appmonitor.ts";
import { promqlString } from "../../functions/lib/promql.ts";
import { matchesLabelSelector, type LabelSelector } from "../../functions/lib/label-selector.ts";
import { DEFAULT_MAX_MEMORY } from "../../functions/memory-scaler/caps.ts";
import { readCeilings } from "../../functions/memory-scaler/config.ts";
import { KNATIVE_SERVING, SERVICE_LABEL } from "../../functions/memory-scaler/knative.ts";
import type { WorkloadKind } from "../../functions/memory-scaler/model.ts";
import { createPrometheusApi, type PrometheusApi } from "../../functions/rule-sync/prometheus.ts";
import { GENERATION_ANNOTATION, percentOfLimitExpression, ruleGroupName } from "../../functions/rule-sync/rule.ts";
import { DEFAULT_METRIC_SOURCE, METRIC_SOURCES, type MetricSource } from "../../functions/rule-sync/rule-config.ts";
import { checkRuleInput } from "../../functions/rule-sync/rule-input.ts";
import { exitOnHelp, usageText, type CommandUsage, type OptionUsage } from "../lib/usage.ts";
import { explainLines, governing, workloadName, type ChainFacts, type ExplainedWorkload, type Read } from "./explain.ts";

const OPTIONS = {
  namespace: { type: "string", short: "n", default: "default", value: "NAMESPACE", means: "the workload's namespace" },
  "prometheus-url": { type: "string", value: "URL", means: "the Prometheus to read the rule, the series and ALERTS from", defaultIs: "$PROMETHEUS_URL; without one those lines say so" },
  source: { type: "string", default: DEFAULT_METRIC_SOURCE, value: METRIC_SOURCES.join("|"), means: "where the rule reads the memory limit (rule-sync's METRIC_SOURCE)" },
} as const satisfies Record<string, OptionUsage>;

const USAGE: CommandUsage = {
  synopsis: [
    `npm run explain -- KIND/NAME -n NAMESPACE [--prometheus-url URL] [--source ${METRIC_SOURCES.join("|")}]`,
    "kubectl appmonitor explain KIND/NAME -n NAMESPACE",
  ],
  arguments: [{ name: "KIND/NAME", means: "the workload; KIND: deploy|deployment|sts|statefulset|ds|daemonset|rs|replicaset|ksvc (a Knative Service)" }],
  options: OPTIONS,
  notes: [
    "The kubeconfig is KUBECONFIG's or the default. Exit codes: 0 explained (also when the Prometheus reads fail:",
    "their lines say so); 1 a read of the workload, its Pods or the AppMonitors failed (named); 2 usage.",
  ],
};

/** The workload kinds and their short names, as kubectl spells them (a Knative Service as Serving's CRD names it: `ksvc`, `kservice`). */
const KINDS: Readonly<Record<string, WorkloadKind>> = {
  deploy: "Deployment",
  deployment: "Deployment",
  deployments: "Deployment",
  sts: "StatefulSet",
  statefulset: "StatefulSet",
  statefulsets: "StatefulSet",
  ds: "DaemonSet",
  daemonset: "DaemonSet",
  daemonsets: "DaemonSet",
  rs: "ReplicaSet",
  replicaset: "ReplicaSet",
  replicasets: "ReplicaSet",
  ksvc: "Service",
  kservice: "Service",
  kservices: "Service",
};

/** A problem with the command line; exit code 2. */
export class UsageError extends Error {}

/** A read of the workload, its Pods or the AppMonitors failed; exit code 1. */
export class ReadError extends Error {}

/** The parsed command line. */
export interface ExplainArgs {
  readonly kind: WorkloadKind;
  readonly name: string;
  readonly namespace: string;
  readonly prometheusUrl: string | undefined;
  readonly source: MetricSource;
}

/**
 * Parses `argv` (after the program name; a leading `explain` is dropped, as kubectl passes it).
 * @throws {UsageError} naming what is wrong.
 */
export function parseExplainArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ExplainArgs {
  const args = argv[0] === "explain" ? argv.slice(1) : [...argv];
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError(`expected one KIND/NAME, got ${positionals.length}`);
  const [kindWord = "", name = "", ...rest] = (positionals[0] ?? "").split("/");
  const kind = KINDS[kindWord.toLowerCase()];
  if (kind === undefined) throw new UsageError(`unknown kind ${JSON.stringify(kindWord)}`);
  if (name === "" || rest.length > 0) throw new UsageError(`expected KIND/NAME, got ${JSON.stringify(positionals[0])}`);
  if (!(METRIC_SOURCES as readonly string[]).includes(values.source)) throw new UsageError(`--source must be one of ${METRIC_SOURCES.join(", ")}`);
  const url = values["prometheus-url"] ?? env.PROMETHEUS_URL;
  return { kind, name, namespace: values.namespace, prometheusUrl: url === "" ? undefined : url, source: values.source as MetricSource };
}

/** What a failed read says. */
function why(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return `${typeof code === "number" ? `HTTP ${code}: ` : ""}${(error as Error).message.split("\n")[0] ?? ""}`;
}

/** Attempts of a read the API server answers 429 (busy, or a CRD just established): it asks to try again. */
const ATTEMPTS = 5;

/** `read`'s value, or a {@link ReadError} naming `what`; a 429 is tried again after a second, {@link ATTEMPTS} times in all. */
async function mustRead<T>(what: string, read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await read();
    } catch (error) {
      if ((error as { code?: unknown }).code === 429 && attempt < ATTEMPTS) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      throw new ReadError(`cannot read ${what}: ${why(error)}`, { cause: error });
    }
  }
}

/** `read`'s value as a {@link Read}. */
async function tryRead<T>(read: () => Promise<T>): Promise<Read<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (error) {
    return { ok: false, error: why(error) };
  }
}

type AppsObject = k8s.V1Deployment | k8s.V1StatefulSet | k8s.V1DaemonSet | k8s.V1ReplicaSet;

/** Reads the workload (a Knative Service through the custom objects API: its `spec.template` is where the apps/v1 kinds keep theirs). */
function readWorkload(apps: k8s.AppsV1Api, custom: k8s.CustomObjectsApi, args: ExplainArgs): Promise<AppsObject> {
  const p = { name: args.name, namespace: args.namespace };
  if (args.kind === "Service") return custom.getNamespacedCustomObject({ ...KNATIVE_SERVING.Service, ...p }) as Promise<AppsObject>;
  if (args.kind === "Deployment") return apps.readNamespacedDeployment(p);
  if (args.kind === "StatefulSet") return apps.readNamespacedStatefulSet(p);
  if (args.kind === "DaemonSet") return apps.readNamespacedDaemonSet(p);
  return apps.readNamespacedReplicaSet(p);
}

/**
 * The explanation of the workload `args` names, as lines.
 * @throws {ReadError} when the workload, its Pods or the AppMonitors cannot be read.
 */
export async function explain(args: ExplainArgs, kc: k8s.KubeConfig, now: Date = new Date()): Promise<string[]> {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const { namespace } = args;
  const object = await mustRead(`${args.kind} ${namespace}/${args.name}`, () => readWorkload(apps, custom, args));
  const controller = object.metadata?.ownerReferences?.find((ref) => ref.controller === true);
  const workload: ExplainedWorkload = {
    kind: args.kind,
    name: args.name,
    namespace,
    ...(controller === undefined ? {} : { controller: { apiVersion: controller.apiVersion, kind: controller.kind, name: controller.name, uid: controller.uid } }),
    annotations: object.metadata?.annotations ?? {},
    template: (object.spec?.template ?? {}) as ExplainedWorkload["template"],
    ...(object.metadata?.labels?.[SERVICE_LABEL] === undefined ? {} : { knativeService: object.metadata.labels[SERVICE_LABEL] }),
  };
  const list = await mustRead(`AppMonitors (${APPMONITOR_GROUP}/${APPMONITOR_VERSION}) in namespace ${namespace}`, () =>
    custom.listNamespacedCustomObject({ group: APPMONITOR_GROUP, version: APPMONITOR_VERSION, namespace, plural: APPMONITOR_PLURAL }),
  );
  // memory-scaler's install-wide settings, from this shell's environment (docs/operations.md).
  const settings = { defaultMaxMemory: process.env.DEFAULT_MAX_MEMORY ?? DEFAULT_MAX_MEMORY, ceilings: readCeilings(process.env) };
  const found = governing(workload, ((list as { items?: unknown[] }).items ?? []) as unknown[], settings.ceilings);
  const am = found.governing?.appMonitor;
  if (am === undefined) return explainLines(workload, found, undefined, settings, now);

  // A Knative Service's Pods are every Revision's, which Serving labels with its name.
  const selector = args.kind === "Service" ? { matchLabels: { [SERVICE_LABEL]: args.name } } : (object.spec?.selector as LabelSelector | undefined);
  const pods = await mustRead(`Pods of ${workloadName(workload)} in namespace ${namespace}`, () => core.listNamespacedPod({ namespace }));
  const podNames = pods.items.filter((p) => selector !== undefined && matchesLabelSelector(selector, p.metadata?.labels)).flatMap((p) => (p.metadata?.name === undefined ? [] : [p.metadata.name]));
  const input = checkRuleInput({ metadata: am.metadata, spec: am.spec });
  const group = ruleGroupName(input);
  const usageQuery = percentOfLimitExpression(input, args.source);
  const alertsQuery = `ALERTS{namespace=${promqlString(namespace)}, ${APPMONITOR_ALERT_LABEL}=${promqlString(am.metadata.name)}}`;
  const prometheus: PrometheusApi | undefined = args.prometheusUrl === undefined ? undefined : createPrometheusApi(new URL(args.prometheusUrl), 10_000);
  const noPrometheus = { ok: false as const, error: "no Prometheus URL (--prometheus-url or PROMETHEUS_URL)" };
  const chain: ChainFacts = {
    prometheusRule: await tryRead(async () => {
      try {
        const rule = (await custom.getNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace, plural: "prometheusrules", name: am.metadata.name })) as k8s.KubernetesObject;
        return { generation: rule.metadata?.annotations?.[GENERATION_ANNOTATION] };
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) return undefined;
        throw error;
      }
    }),
    ruleGroup: { name: group, loaded: prometheus === undefined ? noPrometheus : await tryRead(async () => (await prometheus.ruleGroups([group])).get(group)) },
    usage: { query: usageQuery, samples: prometheus === undefined ? noPrometheus : await tryRead(() => prometheus.query(usageQuery)) },
    alerts: { query: alertsQuery, samples: prometheus === undefined ? noPrometheus : await tryRead(() => prometheus.query(alertsQuery)) },
    pods: podNames,
  };
  return explainLines(workload, found, chain, settings, now);
}

if (import.meta.main) {
  exitOnHelp(process.argv.slice(2), USAGE);
  try {
    const args = parseExplainArgs(process.argv.slice(2), process.env);
    const kc = new k8s.KubeConfig();
    await mustRead(`the kubeconfig (${process.env.KUBECONFIG === undefined ? "the default" : `KUBECONFIG=${process.env.KUBECONFIG}`})`, async () => kc.loadFromDefault());
    process.stdout.write(`${(await explain(args, kc)).join("\n")}\n`);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`explain: ${error.message}\n${usageText(USAGE)}\n`);
      process.exitCode = 2;
    } else if (error instanceof ReadError) {
      process.stderr.write(`explain: ${error.message}\n`);
      process.exitCode = 1;
    } else {
      throw error;
    }
  }
}
