/**
 * The CloudEvent type of every event a Knative PingSource sends (sources.knative.dev/v1,
 * https://knative.dev/docs/eventing/sources/ping-source/): rule-sync treats a tick as a resync,
 * memory-scaler as the time to follow its pending rollouts. One name for both, as their Triggers
 * filter on it.
 */
export const PING_EVENT_TYPE = "dev.knative.sources.ping";
