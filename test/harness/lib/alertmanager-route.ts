/**
 * The stack's Alertmanager configuration that sends namespaces' alerts to alert-receivers, as
 * docs/install.md's route does for appmonitor's alerts: grouped by namespace, Pod and container,
 * sent at once (`group_wait` 1 s), resolved alerts too, with the webhook's bearer token; every
 * other alert goes to a receiver that sends nothing. One route and receiver per namespace, so that
 * chains in namespaces of their own can run at the same time (`alertmanager-routes.ts`).
 */

/** One namespace's alerts, and the alert-receiver they go to. */
export interface NamespaceRoute {
  /** The namespace whose alerts are routed. */
  readonly namespace: string;
  /** alert-receiver's base URL (the webhook posts to its `/`). */
  readonly receiverUrl: string;
  /** The token alert-receiver checks (`WEBHOOK_TOKEN`). */
  readonly webhookToken: string;
}

/** The receiver of a namespace's alerts: `appmonitor-<namespace>`. */
export const receiverName = (namespace: string): string => `appmonitor-${namespace}`;

/**
 * The configuration routing each of `routes` (in their order; none: every alert to `null`).
 * @returns the configuration, to be written as YAML to the stack's `alertmanagerConfig` and reloaded.
 */
export function namespaceRoutes(routes: readonly NamespaceRoute[]): Record<string, unknown> {
  return {
    route: {
      receiver: "null",
      group_wait: "1s", group_interval: "1s", repeat_interval: "1h",
      routes: routes.map((r) => ({
        receiver: receiverName(r.namespace), matchers: [`namespace="${r.namespace}"`],
        group_by: ["namespace", "pod", "container"], group_wait: "1s", group_interval: "5s", repeat_interval: "1m",
      })),
    },
    receivers: [
      { name: "null" },
      ...routes.map((r) => ({
        name: receiverName(r.namespace),
        webhook_configs: [{ url: `${r.receiverUrl}/`, send_resolved: true, http_config: { authorization: { type: "Bearer", credentials: r.webhookToken } } }],
      })),
    ],
  };
}
