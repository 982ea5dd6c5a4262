// An AppMonitor's spec under the install's ceilings (`../../ceilings.ts`): the tighter of each.
import type { AppMonitorSpecWithDefaults } from "../../../lib/appmonitor.ts";
import { CEILINGS, type Ceilings, type CeilingSpec, type HeldCeiling } from "../../ceilings.ts";
import { DEFAULT_LEAK_MAX_SCALES, DEFAULT_LEAK_WINDOW_SECONDS } from "./leak-guard.ts";

/** A spec bounded by the ceilings, and the ceilings that held over it (empty: it asks for no more than they allow). */
export interface BoundedSpec {
  readonly spec: AppMonitorSpecWithDefaults;
  readonly held: readonly HeldCeiling[];
}

const specOf = (key: keyof Ceilings): CeilingSpec => CEILINGS.find((c) => c.key === key) as CeilingSpec;

/**
 * `spec` with the multiplier, the cooldown and the leak guard bounded by `ceilings`: a `max`
 * ceiling lowers a field above it, a `min` one raises a field below it. An absent leak guard field
 * counts as its default (`leak-guard.ts`), so a ceiling below the default holds too. The memory
 * ceiling is the caps' (`../../caps.ts` `capOf`). The same object when none held.
 */
export function boundSpec(spec: AppMonitorSpecWithDefaults, ceilings: Ceilings | undefined): BoundedSpec {
  if (ceilings === undefined) return { spec, held: [] };
  const held: HeldCeiling[] = [];
  const bound = (key: keyof Ceilings, asked: number, isDefault: boolean): number => {
    const ceiling = ceilings[key];
    if (typeof ceiling !== "number") return asked;
    const { limit, variable, field } = specOf(key);
    if (limit === "max" ? asked <= ceiling : asked >= ceiling) return asked;
    held.push({ variable, field, asked: isDefault ? `${asked} (the default)` : String(asked), bound: String(ceiling) });
    return ceiling;
  };
  const memMultiplier = bound("maxMemMultiplier", spec.memMultiplier, false);
  const cooldownSeconds = bound("minCooldownSeconds", spec.cooldownSeconds, false);
  const guard = spec.leakGuard ?? {};
  const maxScales = bound("leakGuardMaxScales", guard.maxScales ?? DEFAULT_LEAK_MAX_SCALES, guard.maxScales === undefined);
  const windowSeconds = bound("leakGuardMinWindowSeconds", guard.windowSeconds ?? DEFAULT_LEAK_WINDOW_SECONDS, guard.windowSeconds === undefined);
  if (held.length === 0) return { spec, held };
  const leakHeld = held.some((h) => h.field.startsWith("spec.leakGuard."));
  return { spec: { ...spec, memMultiplier, cooldownSeconds, ...(leakHeld ? { leakGuard: { maxScales, windowSeconds } } : {}) }, held };
}
