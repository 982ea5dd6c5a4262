/**
 * The leak guard's alert (`../scale/decide/leak-guard.ts`), posted to Alertmanager's v2 API
 * (`POST /api/v2/alerts`, https://github.com/prometheus/alertmanager/blob/main/api/v2/openapi.yaml)
 * so a person can route it as any other alert. Labels: `alertname` {@link LEAK_ALERT_NAME},
 * `severity: warning`, `namespace`, `kind`, `workload` (its name) and `appmonitor`;
 * annotations `summary` and `description` (the scales). `startsAt` is the hold's `since`,
 * `endsAt` its `until` — or the time it was cleared, which resolves it. Posted again with every
 * alert the hold answers, so an Alertmanager that restarted or missed one gets it again; the
 * same labels are the same alert to Alertmanager.
 */
import axios from "axios";
import type { ProbableLeak } from "../status/leaks.ts";

/** `alertname` of the leak guard's alert. */
export const LEAK_ALERT_NAME = "AppMonitorProbableLeak";

/** Posts leak alerts; an interface so the flow can be tested without Alertmanager. */
export interface LeakAlerter {
  /**
   * Posts the alert of `entry` (resolved at `endsAt`).
   * @throws Error naming Alertmanager's answer when it is unreachable, times out or does not answer 2xx.
   */
  post(entry: ProbableLeak, input: { readonly namespace: string; readonly appmonitor: string; readonly description: string; readonly endsAt: string }): Promise<void>;
}

/** The alerter for Alertmanager at `url` (e.g. `http://alertmanager:9093`); `timeoutMs` per post. */
export function createLeakAlerter(url: URL, timeoutMs: number): LeakAlerter {
  const endpoint = new URL("api/v2/alerts", url.href.endsWith("/") ? url.href : `${url.href}/`).href;
  return {
    async post(entry, input) {
      const alert = {
        labels: { alertname: LEAK_ALERT_NAME, severity: "warning", namespace: input.namespace, kind: entry.workload.kind, workload: entry.workload.name, appmonitor: input.appmonitor },
        annotations: { summary: `${entry.workload.kind} ${entry.workload.name} in ${input.namespace}: a probable memory leak, no longer scaled`, description: input.description },
        startsAt: entry.since,
        endsAt: input.endsAt,
      };
      try {
        await axios.post(endpoint, [alert], { timeout: timeoutMs, validateStatus: (s) => s >= 200 && s < 300 });
      } catch (error) {
        throw new Error(`posting the ${LEAK_ALERT_NAME} alert to ${endpoint} failed: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}
