/**
 * What Knative's event_display (knative.dev/eventing/cmd/event_display, the subscriber the tests
 * watch the Broker with; the dead-letter sink is appmonitor's own, functions/dead-letter/) logged: each event it received, printed by the CloudEvents Go
 * SDK's `Event.String()` (github.com/cloudevents/sdk-go/v2 event/event.go, eventcontext_v1.go)
 * after a `☁️  cloudevents.Event` line:
 *
 * ```
 * ☁️  cloudevents.Event
 * Context Attributes,
 *   specversion: 1.0
 *   type: com.kubedemo.appmonitor.alert.firing
 *   …
 * Extensions,
 *   knativeerrorcode: 400
 *   …
 * Data,
 *   {
 *     "alertname": …
 *   }
 * ```
 *
 * Read through the API with the container runtime's timestamps, so each event also says when it
 * was printed.
 */
import type * as k8s from "@kubernetes/client-node";
import type { PodRef } from "../harness/lib/function-logs.ts";

/** One event event_display printed. */
export interface DisplayedEvent {
  /** When its first line was written (ms since the epoch), from the log's timestamps; NaN without them. */
  readonly at: number;
  /** Context attributes: specversion, type, source, id, subject, time, datacontenttype, … */
  readonly attributes: Readonly<Record<string, string>>;
  /** Extension attributes, e.g. Knative's `knativeerrorcode`, `knativeerrordest`, `knativeerrordata`. */
  readonly extensions: Readonly<Record<string, string>>;
  /** The data as printed (JSON indented), `""` when the event has none. */
  readonly data: string;
}

const EVENT_START = "☁️  cloudevents.Event";
/** The timestamp the kubelet puts before each line when asked (`timestamps=true`): RFC 3339 with nanoseconds. */
const TIMESTAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) /;

/**
 * The events in event_display's log `text`, in order. Lines outside an event (its own start-up
 * messages) are passed over; each line may carry the kubelet's timestamp.
 */
export function parseEventDisplay(text: string): DisplayedEvent[] {
  const events: { at: number; attributes: Record<string, string>; extensions: Record<string, string>; data: string[] }[] = [];
  let section: "attributes" | "extensions" | "data" | undefined;
  for (const raw of text.split("\n")) {
    const stamp = TIMESTAMP.exec(raw);
    const line = stamp ? raw.slice(stamp[0].length) : raw;
    if (line === EVENT_START) {
      events.push({ at: stamp ? Date.parse(stamp[1] as string) : NaN, attributes: {}, extensions: {}, data: [] });
      section = undefined;
      continue;
    }
    const event = events.at(-1);
    if (event === undefined) continue;
    if (line === "Context Attributes,") section = "attributes";
    else if (line === "Extensions,") section = "extensions";
    else if (line === "Data," || line === "Data (binary),") section = "data";
    else if (section === "data" && line.startsWith("  ")) event.data.push(line.slice(2));
    else if ((section === "attributes" || section === "extensions") && line.startsWith("  ")) {
      const colon = line.indexOf(": ");
      if (colon > 2) event[section][line.slice(2, colon)] = line.slice(colon + 2);
    } else section = undefined;
  }
  return events.map((e) => ({ at: e.at, attributes: e.attributes, extensions: e.extensions, data: e.data.join("\n") }));
}

/** The events event_display in `pod` has printed so far. */
export async function displayedEvents(core: k8s.CoreV1Api, pod: PodRef): Promise<DisplayedEvent[]> {
  return parseEventDisplay(await core.readNamespacedPodLog({ name: pod.name, namespace: pod.namespace, timestamps: true }));
}
