/**
 * The last-scale record a write puts on a workload (`LAST_SCALE_RECORD_ANNOTATION`), for a raise
 * and a down-step alike: the scale, its earlier marks, and what the next down-step of
 * `spec.scaleDown` needs (`../decide/scale-down.ts`): per container its memory before the first scale, and
 * the flaps. Pure.
 */
import type { MemoryResources } from "../../../lib/appmonitor.ts";
import { type ContainerChange, formatScaleRecord, type ScaleRecordAnnotation } from "../../model.ts";
import { sameMemory } from "../decide/scale-down.ts";
import type { WriteInput } from "./target.ts";

/**
 * The last-scale record's value a write of `input` (with `changes`, as written) puts on the
 * workload, after `previous` (its record as read): the scale, its earlier marks, and the
 * down-step's fields ({@link recordFields}); `mode` `inPlace` for a resize in place.
 */
export function scaleRecordOf(input: WriteInput, changes: readonly ContainerChange[], previous: ScaleRecordAnnotation | undefined, mode?: "inPlace"): string {
  const { time, eventId, trigger, history, appMonitor: am } = input;
  return formatScaleRecord({
    time,
    appmonitor: am.metadata.name,
    event: eventId,
    multiplier: am.spec.memMultiplier,
    changes,
    ...(trigger === "oomKilled" ? { trigger } : {}),
    ...(mode === undefined ? {} : { mode }),
    earlier: history.marks,
    ...recordFields(previous, changes, input.direction ?? "up"),
  });
}

/**
 * What a new last-scale record carries beside its changes (`direction` `down` for a down-step):
 * per container its memory before the first scale, carried from `previous` while the chain holds
 * (the previous record set what this change starts from; a record of an older version gives its
 * `from`), else this change's `from` (a first scale, or a new declaration); and the flaps, one more
 * for a raise that follows a down-step.
 */
export function recordFields(previous: ScaleRecordAnnotation | undefined, changes: readonly ContainerChange[], direction: "up" | "down"): Pick<ScaleRecordAnnotation, "original" | "flaps" | "direction"> {
  const original: Record<string, MemoryResources> = { ...previous?.original };
  for (const change of changes) {
    const before = previous?.changes.find((c) => c.container === change.container);
    const chained = before !== undefined && sameMemory(before.to, change.from);
    original[change.container] = chained ? (previous?.original?.[change.container] ?? before.from) : change.from;
  }
  const flaps = (previous?.flaps ?? 0) + (direction === "up" && previous?.direction === "down" ? 1 : 0);
  return { original, ...(flaps > 0 ? { flaps } : {}), ...(direction === "down" ? { direction } : {}) };
}

