/**
 * What `kubectl appmonitor resend` sends, and where. Pure: a dead letter's Warning Event (written
 * by functions/dead-letter/, `letter.ts`) in, the CloudEvent and the API server path of the
 * Broker's ingress out.
 *
 * The Broker ingress is reached through the API server's service proxy
 * (https://kubernetes.io/docs/tasks/access-application-cluster/access-cluster-services/#manually-constructing-apiserver-proxy-urls):
 * a workstation reaches the API server, not the cluster's Services, and the user's own kubeconfig
 * and RBAC decide who may resend.
 */
import { CloudEvent } from "cloudevents";
import { BROKER_ANNOTATION, CLOUDEVENT_ANNOTATION, DEAD_LETTER_REASON, OMITTED_ANNOTATION } from "../../functions/dead-letter/letter.ts";
import { isRecord } from "../../functions/lib/is-record.ts";

/** Knative Eventing's multi-tenant Broker ingress: its Service and namespace, port 80. */
export const BROKER_INGRESS = { namespace: "knative-eventing", service: "broker-ingress", port: 80 } as const;

/** A resend that cannot be made from this Event; the message says why (exit code 1). */
export class ResendError extends Error {}

/** The parts of an events.k8s.io/v1 Event this module reads. */
export interface DeadLetterEventLike {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly annotations?: Readonly<Record<string, string>> };
  readonly reason?: string;
}

/** What to send and where. */
export interface Resend {
  readonly event: CloudEvent<unknown>;
  readonly broker: { readonly namespace: string; readonly name: string };
  /** The API server path that proxies to the Broker's ingress, e.g. `/api/v1/namespaces/knative-eventing/services/broker-ingress:80/proxy/appmonitor/default`. */
  readonly path: string;
}

/** The API server path of the Broker `namespace/name`'s ingress through the service proxy. */
export function brokerProxyPath(namespace: string, name: string): string {
  const { namespace: ns, service, port } = BROKER_INGRESS;
  return `/api/v1/namespaces/${ns}/services/${service}:${port}/proxy/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

/**
 * The resend of a dead letter's Event.
 * @param broker overrides the Broker the Event names (`<namespace>/<name>`).
 * @throws ResendError when it is no dead letter's Event, it kept no event (too large: the sink's
 * log has it), or the kept event or the Broker is malformed.
 */
export function resendOf(event: DeadLetterEventLike, broker?: string): Resend {
  const where = `Event ${event.metadata?.namespace ?? "?"}/${event.metadata?.name ?? "?"}`;
  const annotations = event.metadata?.annotations ?? {};
  if (event.reason !== DEAD_LETTER_REASON || (annotations[CLOUDEVENT_ANNOTATION] === undefined && annotations[OMITTED_ANNOTATION] === undefined)) {
    throw new ResendError(`${where} is not a dead letter's (reason ${JSON.stringify(event.reason)}; the dead-letter sink writes reason ${DEAD_LETTER_REASON})`);
  }
  const stored = annotations[CLOUDEVENT_ANNOTATION];
  if (stored === undefined) {
    throw new ResendError(`${where}: the event (${annotations[OMITTED_ANNOTATION]} bytes) was too large to keep on it; the dead-letter sink's log line "dead letter" has it whole: kubectl logs -n <install namespace> -l app.kubernetes.io/name=appmonitor-dead-letter`);
  }
  let attributes: unknown;
  try {
    attributes = JSON.parse(stored);
  } catch (error) {
    throw new ResendError(`${where}: annotation ${CLOUDEVENT_ANNOTATION} is not JSON: ${(error as Error).message}`);
  }
  if (!isRecord(attributes)) throw new ResendError(`${where}: annotation ${CLOUDEVENT_ANNOTATION} is not a JSON object`);
  let cloudEvent: CloudEvent<unknown>;
  try {
    cloudEvent = new CloudEvent<unknown>(attributes as ConstructorParameters<typeof CloudEvent>[0], true);
  } catch (error) {
    throw new ResendError(`${where}: the kept event is not a valid CloudEvent: ${(error as Error).message}`);
  }
  const target = broker ?? annotations[BROKER_ANNOTATION] ?? "";
  const match = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/.exec(target);
  if (match === null) throw new ResendError(`${where}: no Broker to send to (${JSON.stringify(target)}): name one as --broker NAMESPACE/NAME`);
  const [namespace, name] = [match[1] as string, match[3] as string];
  return { event: cloudEvent, broker: { namespace, name }, path: brokerProxyPath(namespace, name) };
}
