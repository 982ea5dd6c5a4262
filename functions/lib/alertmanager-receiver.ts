// The name of the Alertmanager receiver that calls alert-receiver's webhook: the routing the
// install ships (scripts/alertmanager-routing.ts) names it, and rule-sync looks for it among the
// receivers Alertmanager routed an AppMonitor's alert to (functions/rule-sync/alert-delivery.ts).

/** The receiver that calls alert-receiver. */
export const APPMONITOR_RECEIVER = "appmonitor";
