/**
 * The memory-threshold CloudEvent that alert-receiver sends and memory-scaler receives: its
 * types and its `data`. Contract: DESIGN.md "The memory-threshold CloudEvent"; `data` schema:
 * `schemas/alert-event.schema.json`.
 */
import validateData from "../../schemas/validators/alert-event.js";
import { APPMONITOR_ALERT_NAME, APPMONITOR_HEAP_ERROR_ALERT_NAME, APPMONITOR_HEAP_THRESHOLD_ALERT_NAME, APPMONITOR_OOM_ALERT_NAME, APPMONITOR_TREND_ALERT_NAME } from "./appmonitor.ts";
import type { SchemaValidator } from "./json-schema.ts";

/** Type of the event of a firing alert (memory-scaler decides and acts). */
export const FIRING_TYPE = "com.kubedemo.appmonitor.alert.firing";
/** Type of the event of a resolved alert (memory-scaler acknowledges it; nothing changes). */
export const RESOLVED_TYPE = "com.kubedemo.appmonitor.alert.resolved";

/**
 * Which of an AppMonitor's alerts the event comes from (DESIGN.md "The memory-threshold
 * CloudEvent"): `threshold` for the working-set alert (`AppMonitorMemoryHigh`), `oomKilled` for
 * the OOM-kill alert (`AppMonitorOOMKilled`), `trend` for the early-warning alert
 * (`AppMonitorMemoryTrend`), `heapError` for the heap-error alert (`AppMonitorHeapError`),
 * `heapThreshold` for the heap-threshold alert (`AppMonitorHeapThreshold`). An event without it is a `threshold` event, as every event was
 * before the OOM-kill alert existed.
 */
export type AlertTrigger = "threshold" | "oomKilled" | "trend" | "heapError" | "heapThreshold";

/** The `alertname` of each trigger's alert, as the generated rules raise it, in the schema's order. */
export const TRIGGER_ALERT_NAMES: Readonly<Record<AlertTrigger, string>> = {
  threshold: APPMONITOR_ALERT_NAME,
  oomKilled: APPMONITOR_OOM_ALERT_NAME,
  trend: APPMONITOR_TREND_ALERT_NAME,
  heapError: APPMONITOR_HEAP_ERROR_ALERT_NAME,
  heapThreshold: APPMONITOR_HEAP_THRESHOLD_ALERT_NAME,
};

/** Every {@link AlertTrigger}, in the schema's order. */
export const ALERT_TRIGGERS = Object.keys(TRIGGER_ALERT_NAMES) as readonly AlertTrigger[];

/**
 * The trigger an alert name stands for: `oomKilled` for exactly
 * {@link APPMONITOR_OOM_ALERT_NAME}, `trend` for exactly {@link APPMONITOR_TREND_ALERT_NAME},
 * `heapError` for exactly {@link APPMONITOR_HEAP_ERROR_ALERT_NAME}, `heapThreshold` for exactly
 * {@link APPMONITOR_HEAP_THRESHOLD_ALERT_NAME}, `threshold` for any other name (alert-receiver maps
 * every alert; memory-scaler acts only on the five names the generated rules raise).
 *
 * @param alertname the alert's `alertname` label, `""` when it had none.
 * @returns the trigger.
 */
export function triggerOf(alertname: string): AlertTrigger {
  return ALERT_TRIGGERS.find((trigger) => trigger !== "threshold" && TRIGGER_ALERT_NAMES[trigger] === alertname) ?? "threshold";
}

/** The alert's own status (not its group's); matches the event type. */
export type AlertEventStatus = "firing" | "resolved";

/**
 * The event's `data`. A receiver validates it ({@link validateAlertEventData}) and
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
  /**
   * Which alert fired, from `alertname` ({@link triggerOf}); absent (events of an older
   * alert-receiver): `threshold`.
   */
  readonly trigger?: AlertTrigger;
  /** The observed percent of the memory limit in use, when known (threshold and trend alerts). */
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
export type AlertEventDataValidator = SchemaValidator<AlertEventData>;

/** The `data` validator, precompiled (`schemas/validators/alert-event.js`). */
export const validateAlertEventData = validateData as AlertEventDataValidator;
