/**
 * The heap-error trigger (`AppMonitorHeapError`): a container restarted after an error exit.
 * Confirmed by the Pod already read, whose container's termination message must name its
 * runtime's heap error (`../decide/heap-error.ts`), never by an exit code alone; Prometheus is not
 * asked (the restarted container's working set says nothing of a heap that ran out inside it).
 * A confirmed error on a target that resizes in place (a bare Pod: a workload's heap error always
 * rolls out, `../decide/heap-relief.ts`) is `HeapNeedsRollout`; a skip the plan made
 * (a held flag, the cap, the leak guard) is said with the error it leaves unanswered.
 */
import { APPMONITOR_HEAP_ERROR_ALERT_NAME } from "../../../lib/appmonitor.ts";
import { afterHeapCheck, checkHeapErrors, heapErrors, unansweredHeapError } from "../decide/heap-error.ts";
import type { Trigger } from "./trigger.ts";

export const heapError: Trigger = {
  name: "heapError",
  alertname: APPMONITOR_HEAP_ERROR_ALERT_NAME,
  needsNewStart: true,
  measure: async () => undefined,
  check: (scale, { statuses, now, oomWindowSeconds, rollsOut }) => afterHeapCheck(scale, checkHeapErrors(scale.changes, statuses, now, oomWindowSeconds), rollsOut),
  explain: (skip, { statuses }) => unansweredHeapError(skip, heapErrors(statuses)),
};
