/**
 * The install's ceilings (pure): bounds an AppMonitor cannot lift, set by whoever runs the install
 * (the ConfigMap `appmonitor-ceilings`, which memory-scaler's environment and the admission policy
 * `appmonitor-ceilings` both read; `config.ts`, scripts/ceilings-policy.ts). A namespace admin may
 * write any AppMonitor; the policy refuses one that asks for more than a ceiling, and memory-scaler
 * applies the tighter of the AppMonitor's value and the ceiling whatever the AppMonitor says (one
 * written before the ceiling, or while the policy was not installed). Each ceiling unset: no bound.
 *
 * The memory ceiling enters each container's cap (`caps.ts` `capOf`); the others bound the spec
 * once, where AppMonitors are read (`scale/decide/bound-spec.ts`), so every decision, Event and
 * record sees the bounded value, and the messages say which bound held ({@link HeldCeiling}).
 */
/** The ConfigMap, in the install's namespace, that holds the ceilings (its keys: {@link CEILINGS}' `variable`). */
export const CEILINGS_CONFIGMAP = "appmonitor-ceilings";

/** The ceilings as memory-scaler read them; each absent: no bound. */
export interface Ceilings {
  /** `MAX_MEMORY`: a quantity no container's memory limit is raised above. */
  readonly maxMemory?: string;
  /** `MAX_MEM_MULTIPLIER`: the largest `spec.memMultiplier` applied. */
  readonly maxMemMultiplier?: number;
  /** `MIN_COOLDOWN_SECONDS`: the shortest `spec.cooldownSeconds` applied. */
  readonly minCooldownSeconds?: number;
  /** `LEAK_GUARD_MAX_SCALES`: the most `spec.leakGuard.maxScales` applied. */
  readonly leakGuardMaxScales?: number;
  /** `LEAK_GUARD_MIN_WINDOW_SECONDS`: the shortest `spec.leakGuard.windowSeconds` applied. */
  readonly leakGuardMinWindowSeconds?: number;
}

/** One ceiling: its key in {@link Ceilings} (and the chart's `ceilings`), its variable, the field it bounds, how. */
export interface CeilingSpec {
  readonly key: keyof Ceilings;
  /** The environment variable and the ConfigMap's key. */
  readonly variable: string;
  /** The AppMonitor field it bounds, as messages name it. */
  readonly field: string;
  /** `max`: the field may not be above it; `min`: not below. */
  readonly limit: "max" | "min";
  /** A quantity, a decimal number, or an integer within `range` (inclusive; a number's `min` exclusive). */
  readonly type: "quantity" | "number" | "integer";
  readonly range?: { readonly min: number; readonly max: number };
}

/**
 * Every ceiling, in the order messages and docs list them. Ranges are the AppMonitor schema's for
 * the field (`schemas/appmonitor.schema.json`), so a ceiling is a value some AppMonitor can meet.
 */
export const CEILINGS: readonly CeilingSpec[] = [
  { key: "maxMemory", variable: "MAX_MEMORY", field: "spec.maxMemory", limit: "max", type: "quantity" },
  { key: "maxMemMultiplier", variable: "MAX_MEM_MULTIPLIER", field: "spec.memMultiplier", limit: "max", type: "number", range: { min: 1, max: 10 } },
  { key: "minCooldownSeconds", variable: "MIN_COOLDOWN_SECONDS", field: "spec.cooldownSeconds", limit: "min", type: "integer", range: { min: 0, max: 604_800 } },
  { key: "leakGuardMaxScales", variable: "LEAK_GUARD_MAX_SCALES", field: "spec.leakGuard.maxScales", limit: "max", type: "integer", range: { min: 1, max: 10 } },
  { key: "leakGuardMinWindowSeconds", variable: "LEAK_GUARD_MIN_WINDOW_SECONDS", field: "spec.leakGuard.windowSeconds", limit: "min", type: "integer", range: { min: 60, max: 604_800 } },
];

/** A decimal as a ceiling of the multiplier is written (RE2 and JavaScript alike): `3`, `1.5`, `.5`. */
export const DECIMAL_PATTERN = "^([0-9]+([.][0-9]*)?|[.][0-9]+)$";

/** A ceiling that held over what an AppMonitor asks: its variable, the field, what the field asks and what applies. */
export interface HeldCeiling {
  readonly variable: string;
  readonly field: string;
  /** The AppMonitor's value as it reads (`10`, or `3 (the default)` for an absent field). */
  readonly asked: string;
  /** The ceiling's value, what applies. */
  readonly bound: string;
}

/** `the install's ceiling MAX_MEM_MULTIPLIER 3 over spec.memMultiplier 10`. */
export function describeHeld(held: HeldCeiling): string {
  return `the install's ceiling ${held.variable} ${held.bound} over ${held.field} ${held.asked}`;
}

/** The clause a message adds for `field` when a ceiling held it: ` (the install's ceiling …)`, else empty. */
export function heldClause(held: readonly HeldCeiling[] | undefined, field: string): string {
  const h = held?.find((x) => x.field === field);
  return h === undefined ? "" : ` (${describeHeld(h)})`;
}
