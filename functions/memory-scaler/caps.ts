/**
 * The cap of each container (pure): the memory limit memory-scaler never raises it above, and
 * whether it may be scaled at all. There is always a cap, so no leak grows a container until no
 * Node fits it (DESIGN.md "Decisions that matter for correctness"). In order:
 * 1. the container's `spec.containerPolicies` entry (its own by `containerName`, else `*`):
 *    `mode: Off` → never scaled; its `maxMemory`, when set;
 * 2. `spec.maxMemory`;
 * 3. the install's `DEFAULT_MAX_MEMORY` (`config.ts`; {@link DEFAULT_MAX_MEMORY} when unset);
 * and whichever of these applies, the install's ceiling `MAX_MEMORY` when lower (`ceilings.ts`):
 * an AppMonitor lowers its cap, never lifts it above the ceiling.
 */
import type { AppMonitorSpec, ContainerPolicy } from "../lib/appmonitor.ts";
import { floor, parseQuantity } from "../lib/quantity.ts";

/**
 * The install-wide cap when `DEFAULT_MAX_MEMORY` is unset: 8Gi, a quarter to a half of the
 * common 16–32 GiB Nodes, so a leak stops well before it crowds a Node, while a container meant
 * to be larger says so in its AppMonitor (`spec.maxMemory` or a container policy).
 */
export const DEFAULT_MAX_MEMORY = "8Gi";

/** Where a container's cap comes from (`status.capped[].source`); `ceiling`: the install's `MAX_MEMORY`. */
export type CapSource = "containerPolicy" | "spec" | "default" | "ceiling";

/** A container's cap. */
export interface Cap {
  /** The quantity as written (e.g. `2Gi`). */
  readonly maxMemory: string;
  /** Whole bytes, rounded down: a limit never passes the cap. */
  readonly bytes: bigint;
  readonly source: CapSource;
  /** `ceiling`: the cap the AppMonitor gives (or the default), which the ceiling held. */
  readonly over?: Cap;
}

/** The entry of `spec.containerPolicies` that applies to `container`: its own, else `*`, else none. */
export function policyOf(spec: Pick<AppMonitorSpec, "containerPolicies">, container: string): ContainerPolicy | undefined {
  const policies = spec.containerPolicies ?? [];
  return policies.find((p) => p.containerName === container) ?? policies.find((p) => p.containerName === "*");
}

/**
 * The cap of `container` (module comment).
 * @param defaultMaxMemory the install's cap, a quantity (`DEFAULT_MAX_MEMORY`).
 * @param ceiling the install's ceiling `MAX_MEMORY`, a quantity; absent: none.
 * @throws {QuantityError} when a cap is not a valid quantity (spec validation and the
 *   configuration rule that out).
 */
export function capOf(spec: Pick<AppMonitorSpec, "containerPolicies" | "maxMemory">, container: string, defaultMaxMemory: string = DEFAULT_MAX_MEMORY, ceiling?: string): Cap {
  const own = policyOf(spec, container)?.maxMemory;
  const [maxMemory, source]: [string, CapSource] = own !== undefined ? [own, "containerPolicy"] : spec.maxMemory !== undefined ? [spec.maxMemory, "spec"] : [defaultMaxMemory, "default"];
  const cap: Cap = { maxMemory, bytes: floor(parseQuantity(maxMemory)), source };
  if (ceiling === undefined) return cap;
  const bytes = floor(parseQuantity(ceiling));
  return bytes < cap.bytes ? { maxMemory: ceiling, bytes, source: "ceiling", over: cap } : cap;
}

/**
 * How a message names a cap: `spec.maxMemory 2Gi`, `spec.containerPolicies maxMemory 256Mi`,
 * `the install's DEFAULT_MAX_MEMORY 8Gi (no spec.maxMemory)`, `the install's ceiling MAX_MEMORY 4Gi
 * (over spec.maxMemory 16Gi)`.
 */
export function describeCap(cap: Cap): string {
  if (cap.source === "spec") return `spec.maxMemory ${cap.maxMemory}`;
  if (cap.source === "default") return `the install's DEFAULT_MAX_MEMORY ${cap.maxMemory} (no spec.maxMemory)`;
  if (cap.source === "ceiling") {
    const over = cap.over === undefined ? "" : cap.over.source === "default" ? ` (over the install's DEFAULT_MAX_MEMORY ${cap.over.maxMemory})` : ` (over ${describeCap(cap.over)})`;
    return `the install's ceiling MAX_MEMORY ${cap.maxMemory}${over}`;
  }
  return `spec.containerPolicies maxMemory ${cap.maxMemory}`;
}
