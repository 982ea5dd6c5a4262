/**
 * The alert's way from the stack's own Prometheus to a memory-scaler a test runs itself, every hop
 * real: the rule rule-sync writes for an AppMonitor (`functions/rule-sync/rule.ts`), loaded as
 * prometheus-operator would load it (a rule file, a reload); the stack's Alertmanager routing the
 * namespace's alerts to alert-receiver, which runs in this process and sends each alert's
 * CloudEvent to memory-scaler.
 */
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fn as alertReceiver } from "../../functions/alert-receiver/index.ts";
import type { RunningServer } from "../../functions/lib/runtime/server.ts";
import { validateAppMonitorSpec } from "../../functions/lib/appmonitor-spec.ts";
import { buildRulesFile } from "../../functions/rule-sync/rule.ts";
import { DEFAULT_RULE_CONFIG } from "../../functions/rule-sync/rule-config.ts";
import { checkRuleInput } from "../../functions/rule-sync/rule-input.ts";
import { addRoute } from "../harness/lib/alertmanager-routes.ts";
import type { StackState } from "../harness/stack/state.ts";
import { startFunction } from "./function-server.ts";
import { waitFor } from "./stack.ts";

/** A running alert path ({@link startAlertPath}). */
export interface AlertPath {
  /**
   * Loads the rule of AppMonitor `<namespace>/<name>` with `spec` (validated as the CRD would, its
   * defaults filled) into Prometheus; resolves once Prometheus has loaded it and knows
   * Alertmanager again (a reload empties that list for a moment, and an alert sent then is lost).
   * @throws Error when the spec is invalid or Prometheus does not load the rule within 20 s.
   */
  load(name: string, spec: Record<string, unknown>): Promise<void>;
  /** Removes the rules, puts Alertmanager's configuration back (both reloaded) and stops alert-receiver; never throws. */
  stop(): Promise<void>;
}

/**
 * Starts alert-receiver (sink `scalerUrl`, a bearer token of its own) and routes `namespace`'s
 * alerts in the stack's Alertmanager to it.
 * @throws Error when alert-receiver does not start or Alertmanager does not reload.
 */
export async function startAlertPath(state: StackState, namespace: string, scalerUrl: string): Promise<AlertPath> {
  const token = randomBytes(24).toString("hex");
  const receiver: RunningServer = await startFunction(alertReceiver, { K_SINK: scalerUrl, WEBHOOK_TOKEN: token });
  const reload = async (url: string) => {
    const answer = await fetch(`${url}/-/reload`, { method: "POST" });
    if (!answer.ok) throw new Error(`${url}/-/reload answered ${answer.status}: ${await answer.text()}`);
  };
  const unroute = await addRoute(state, { namespace, receiverUrl: receiver.url, webhookToken: token });
  const files: string[] = [];
  const getJson = async <T>(url: string): Promise<T> => (await (await fetch(url)).json()) as T;
  return {
    async load(name, spec) {
      const file = path.join(state.rulesDir, `${namespace}-${name}.yml`);
      files.push(file);
      const input = checkRuleInput({ metadata: { name, namespace, uid: `${namespace}-${name}` }, spec: validateAppMonitorSpec(spec) });
      await writeFile(file, buildRulesFile([input], DEFAULT_RULE_CONFIG));
      await reload(state.prometheusUrl);
      await waitFor(`Prometheus loads the rule of AppMonitor ${namespace}/${name}`, async () =>
        (await getJson<{ data: { groups: { file: string }[] } }>(`${state.prometheusUrl}/api/v1/rules`)).data.groups.some((g) => g.file === file), 20_000, 200);
      await waitFor("Prometheus knows Alertmanager again after the reload", async () =>
        (await getJson<{ data: { activeAlertmanagers: unknown[] } }>(`${state.prometheusUrl}/api/v1/alertmanagers`)).data.activeAlertmanagers.length > 0, 20_000, 200);
    },
    async stop() {
      await Promise.all(files.map((f) => rm(f, { force: true })));
      await Promise.all([reload(state.prometheusUrl).catch(() => undefined), unroute().catch(() => undefined)]);
      await receiver.close().catch(() => undefined);
    },
  };
}
