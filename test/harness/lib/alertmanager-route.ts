/**
 * The stack's Alertmanager configuration that sends one namespace's alerts to alert-receiver, as
 * docs/install.md's route does for appmonitor's alerts: grouped by namespace, Pod and container,
 * sent at once (`group_wait` 1 s), resolved alerts too, with the webhook's bearer token; every
 * other alert goes to a receiver that sends nothing.
 * @param namespace the namespace whose alerts are routed.
 * @param receiverUrl alert-receiver's base URL (the webhook posts to its `/`).
 * @param webhookToken the token alert-receiver checks (`WEBHOOK_TOKEN`).
 * @returns the configuration, to be written as YAML to the stack's `alertmanagerConfig` and reloaded.
 */
export function namespaceRoute(namespace: string, receiverUrl: string, webhookToken: string): Record<string, unknown> {
  return {
    route: {
      receiver: "null",
      group_wait: "1s", group_interval: "1s", repeat_interval: "1h",
      routes: [{
        receiver: "appmonitor", matchers: [`namespace="${namespace}"`],
        group_by: ["namespace", "pod", "container"], group_wait: "1s", group_interval: "5s", repeat_interval: "1m",
      }],
    },
    receivers: [
      { name: "null" },
      { name: "appmonitor", webhook_configs: [{ url: `${receiverUrl}/`, send_resolved: true, http_config: { authorization: { type: "Bearer", credentials: webhookToken } } }] },
    ],
  };
}
