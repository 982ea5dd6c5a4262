/**
 * appmonitor's Alertmanager routing, the one source of every copy a user takes it from: a child
 * route that sends every alert rule-sync's rules can raise ({@link GENERATED_ALERT_NAMES}) to the
 * `appmonitor` receiver, alert-receiver's webhook.
 *
 * - knative/alertmanager/alertmanager.yml, for a plain Alertmanager: `node
 *   scripts/alertmanager-routing.ts` rewrites it, and a unit test checks the committed file.
 * - kube-prometheus-stack's values ({@link kubePrometheusStackValuesYaml}), in docs/install.md
 *   and printed by the chart's NOTES.txt (build-chart.ts writes them into the chart as a named
 *   template): the chart's default `alertmanager.config` whole, appmonitor's route first and its
 *   receiver added. Whole, because Helm merges a user's maps into the chart's values but replaces
 *   its lists: values with only `route.routes` and `receivers` drop the chart's `null` receiver
 *   while its root and Watchdog routes still name it, and prometheus-operator then refuses the
 *   configuration and runs no Alertmanager.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Document, isMap, isScalar, isSeq, visit, type Node } from "yaml";
import { APPMONITOR_RECEIVER } from "../functions/lib/alertmanager-receiver.ts";
import { GENERATED_ALERT_NAMES } from "../functions/rule-sync/rule.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the plain Alertmanager's file is committed. */
export const alertmanagerYamlPath = path.join(root, "knative", "alertmanager", "alertmanager.yml");

// One name with rule-sync, which checks that Alertmanager routes its alerts here.
export { APPMONITOR_RECEIVER };

/** The Secret, in the Alertmanager's namespace, that holds alert-receiver's token (key `token`), as the install names it. */
export const ALERTMANAGER_TOKEN_SECRET = "appmonitor-webhook";

/** Where prometheus-operator mounts an Alertmanager's `spec.secrets`: `/etc/alertmanager/secrets/<secret>/<key>`. */
export const TOKEN_FILE = `/etc/alertmanager/secrets/${ALERTMANAGER_TOKEN_SECRET}/token`;

/** An Alertmanager configuration (https://prometheus.io/docs/alerting/latest/configuration/), as far as this module writes it. */
export interface AlertmanagerConfig {
  readonly global?: Record<string, string>;
  readonly inhibit_rules?: readonly Record<string, readonly string[]>[];
  readonly route: Route;
  readonly receivers: readonly Receiver[];
  readonly templates?: readonly string[];
}

/** A route of Alertmanager's routing tree. */
export interface Route {
  readonly receiver: string;
  readonly matchers?: readonly string[];
  readonly group_by?: readonly string[];
  readonly group_wait?: string;
  readonly group_interval?: string;
  readonly repeat_interval?: string;
  readonly routes?: readonly Route[];
}

/** A receiver; appmonitor's has one webhook. */
export interface Receiver {
  readonly name: string;
  readonly webhook_configs?: readonly Record<string, unknown>[];
}

/**
 * kube-prometheus-stack's default `alertmanager.config` (chart 88.5.3, its values.yaml), which
 * the chart writes into the Secret `alertmanager-<name>`: the inhibit rules (a critical alert
 * silences the warning and info alerts of the same name and namespace, a warning alert the info
 * ones, the InfoInhibitor alert every info alert of its namespace, and any alert InfoInhibitor),
 * one `null` receiver for everything, the Watchdog route, and the template files' glob.
 */
export const KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG: AlertmanagerConfig = {
  global: { resolve_timeout: "5m" },
  inhibit_rules: [
    { source_matchers: ["severity = critical"], target_matchers: ["severity =~ warning|info"], equal: ["namespace", "alertname"] },
    { source_matchers: ["severity = warning"], target_matchers: ["severity = info"], equal: ["namespace", "alertname"] },
    { source_matchers: ["alertname = InfoInhibitor"], target_matchers: ["severity = info"], equal: ["namespace"] },
    { target_matchers: ["alertname = InfoInhibitor"] },
  ],
  route: {
    group_by: ["namespace"],
    group_wait: "30s",
    group_interval: "5m",
    repeat_interval: "12h",
    receiver: "null",
    routes: [{ receiver: "null", matchers: ['alertname = "Watchdog"'] }],
  },
  receivers: [{ name: "null" }],
  templates: ["/etc/alertmanager/config/*.tmpl"],
};

/** The route to alert-receiver: every alert rule-sync's rules can raise, one group per container. */
export function appmonitorRoute(): Route {
  return {
    receiver: APPMONITOR_RECEIVER,
    // Anchored by Alertmanager: exactly these names, not one that merely starts with them.
    matchers: [`alertname=~"${GENERATED_ALERT_NAMES.join("|")}"`],
    group_by: ["namespace", "pod", "container"],
    group_wait: "5s",
    group_interval: "1m",
    repeat_interval: "1h",
  };
}

/** The receiver that calls alert-receiver in `namespace` (the install's) with the token at {@link TOKEN_FILE}. */
export function appmonitorReceiver(namespace: string): Receiver {
  return {
    name: APPMONITOR_RECEIVER,
    webhook_configs: [{
      url: `http://alert-receiver.${namespace}.svc.cluster.local/`,
      send_resolved: true,
      max_alerts: 64,
      http_config: { authorization: { type: "Bearer", credentials_file: TOKEN_FILE } },
    }],
  };
}

/** `config` with appmonitor's route first under its root route and its receiver last. */
export function withAppmonitorRouting(config: AlertmanagerConfig, namespace: string): AlertmanagerConfig {
  return {
    ...config,
    route: { ...config.route, routes: [appmonitorRoute(), ...(config.route.routes ?? [])] },
    receivers: [...config.receivers, appmonitorReceiver(namespace)],
  };
}

/** knative/alertmanager/alertmanager.yml's configuration: a `default` receiver standing in for yours, and appmonitor's route and receiver. */
export function plainAlertmanagerConfig(namespace = "appmonitor"): AlertmanagerConfig {
  return withAppmonitorRouting({ route: { receiver: "default" }, receivers: [{ name: "default" }] }, namespace);
}

/** kube-prometheus-stack's values that route the alerts: its default `alertmanager.config` with appmonitor's routing, and the token's Secret mounted. */
export function kubePrometheusStackValues(namespace: string): { alertmanager: { config: AlertmanagerConfig; alertmanagerSpec: { secrets: string[] } } } {
  return {
    alertmanager: {
      config: withAppmonitorRouting(KUBE_PROMETHEUS_STACK_ALERTMANAGER_CONFIG, namespace),
      alertmanagerSpec: { secrets: [ALERTMANAGER_TOKEN_SECRET] },
    },
  };
}

/** A document of `value` with each list of scalars on one line (`[namespace, pod, container]`), as Alertmanager's own examples write them. */
function compactDocument(value: unknown): Document {
  const doc = new Document(value);
  visit(doc, { Seq: (_, seq) => void (seq.flow = seq.items.every(isScalar)) });
  return doc;
}

/** `text` in lines of at most `width` characters, broken at spaces. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/** Puts `text` as a comment before the map key at `keyPath` or the list item at an index. */
function comment(doc: Document, keyPath: readonly (string | number)[], text: string): void {
  const parent = doc.getIn(keyPath.slice(0, -1), true) as Node | undefined;
  const last = keyPath[keyPath.length - 1];
  const lines = text.split("\n").map((line) => ` ${line}`).join("\n");
  if (isSeq(parent) && typeof last === "number") {
    const item = parent.items[last];
    if (item && (isMap(item) || isScalar(item))) item.commentBefore = lines;
    return;
  }
  const pair = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && p.key.value === last) : undefined;
  if (!pair || !isScalar(pair.key)) throw new Error(`no key ${keyPath.join(".")} to comment`);
  pair.key.commentBefore = lines;
}

/** Why each of appmonitor's route and receiver settings is what it is, by path under the route and the receiver. */
function commentRouting(doc: Document, routePath: readonly (string | number)[], receiverPath: readonly (string | number)[]): void {
  comment(doc, [...routePath, "group_by"], "One notification per container: memory-scaler handles each alert on its own.");
  comment(doc, [...routePath, "group_wait"], "Short: a container near its limit should not wait long for the first webhook.");
  const webhook = [...receiverPath, "webhook_configs", 0];
  comment(doc, [...webhook, "send_resolved"], "Resolved alerts reach alert-receiver, which sends them on to the Broker; no Trigger passes\nthem to memory-scaler, which gets firing alerts only (knative/eventing/triggers.yaml).");
  comment(doc, [...webhook, "max_alerts"], "Keeps a payload at half of alert-receiver's 1 MiB body limit, even with alerts of\n8 KiB (about twice the largest a generated rule raises); above the limit alert-receiver\nanswers 413, which Alertmanager does not retry. functions/alert-receiver/README.md.");
}

/** knative/alertmanager/alertmanager.yml: {@link plainAlertmanagerConfig}, with why each setting is so. */
export function alertmanagerYaml(): string {
  const doc = compactDocument(plainAlertmanagerConfig());
  doc.commentBefore = [
    "Generated by scripts/alertmanager-routing.ts; do not edit.",
    `Routes every alert appmonitor's rules raise (${GENERATED_ALERT_NAMES.join(", ")}) to alert-receiver, for a plain Alertmanager: ` +
      "a complete, valid alertmanager.yml (`amtool check-config` passes). Copy the child route into your route tree, ahead of any route " +
      "that would catch these alerts first, and the `appmonitor` receiver into your receivers. With kube-prometheus-stack, take " +
      "docs/install.md's values instead, which keep the chart's defaults.",
    "credentials_file holds the same token as the Secret appmonitor-webhook (key `token`) that alert-receiver reads; the path is " +
      "where prometheus-operator mounts an Alertmanager's spec.secrets, use any path your Alertmanager can read.",
  ].map((paragraph) => wrap(paragraph, 96).map((line) => ` ${line}`).join("\n")).join("\n\n");
  comment(doc, ["receivers", 0], "Stands in for your own default receiver.");
  commentRouting(doc, ["route", "routes", 0], ["receivers", 1]);
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/**
 * {@link kubePrometheusStackValues} as the YAML docs/install.md gives and NOTES.txt prints: the
 * chart's defaults and appmonitor's parts told apart by comments.
 */
export function kubePrometheusStackValuesYaml(namespace: string): string {
  const doc = compactDocument(kubePrometheusStackValues(namespace));
  comment(doc, ["alertmanager", "config"], "The chart's default alertmanager.config, whole (Helm replaces lists, it does not merge\nthem), with appmonitor's route and receiver added.");
  comment(doc, ["alertmanager", "config", "route", "routes", 0], "appmonitor's: first, and without continue, so no later route gets these alerts.");
  comment(doc, ["alertmanager", "config", "receivers", 1], `appmonitor's: the token is the Secret ${ALERTMANAGER_TOKEN_SECRET} of alertmanagerSpec.secrets, mounted there.`);
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(alertmanagerYamlPath, alertmanagerYaml());
}
