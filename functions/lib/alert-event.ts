/**
 * The memory-threshold CloudEvent that alert-receiver sends and memory-scaler receives: its
 * types and its `data`. Contract: DESIGN.md "The memory-threshold CloudEvent"; `data` schema:
 * `schemas/alert-event.schema.json`.
 */
import type { ValidateFunction } from "ajv";
import eventDataSchema from "../../schemas/alert-event.schema.json" with { type: "json" };
import { createAjv } from "./json-schema.ts";

/** Type of the event of a firing alert (memory-scaler decides and acts). */
export const FIRING_TYPE = "com.kubedemo.appmonitor.alert.firing";
/** Type of the event of a resolved alert (memory-scaler acknowledges it; nothing changes). */
export const RESOLVED_TYPE = "com.kubedemo.appmonitor.alert.resolved";

/** The alert's own status (not its group's); matches the event type. */
export type AlertEventStatus = "firing" | "resolved";

/**
 * The event's `data`. A receiver validates it ({@link compileAlertEventDataValidator}) and
 * treats it as input to check, never as authority.
 */
export interface AlertEventData {
  /** The alert's `alertname` label; empty when it had none. */
  readonly alertname: string;
  readonly status: AlertEventStatus;
  /** The Pod's namespace (RFC 1123 label). */
  readonly namespace: string;
  /** The Pod's name (RFC 1123 subdomain). */
  readonly pod: string;
  /** The container the alert measured, when it names one. */
  readonly container?: string;
  /** The AppMonitor whose rule fired, when the alert names one. */
  readonly appmonitor?: string;
  /** The observed percent of the memory limit in use, when known. */
  readonly value?: number;
  /** Alertmanager's fingerprint of the alert's label set. */
  readonly fingerprint: string;
  /** RFC 3339, as Alertmanager sent it. */
  readonly startsAt: string;
  /** RFC 3339, or `null` while the alert has not ended. */
  readonly endsAt: string | null;
  /** All labels of the alert. */
  readonly labels: Readonly<Record<string, string>>;
  /** All annotations of the alert. */
  readonly annotations: Readonly<Record<string, string>>;
  /** The alert's `generatorURL`; empty when it had none. */
  readonly generatorURL: string;
}

/** Validates `data` objects against `schemas/alert-event.schema.json`. */
export type AlertEventDataValidator = ValidateFunction<AlertEventData>;

/** Compiles the `data` schema (draft-07 with formats, {@link createAjv}); once per process. */
export function compileAlertEventDataValidator(): AlertEventDataValidator {
  return createAjv().compile<AlertEventData>(eventDataSchema);
}
