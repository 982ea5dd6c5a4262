/**
 * JSON Schema validators for what alert-receiver reads and writes, compiled once with ajv
 * (draft-07) and ajv-formats (`functions/lib/json-schema.ts`).
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import webhookSchema from "../../schemas/alertmanager-webhook.schema.json" with { type: "json" };
import { compileAlertEventDataValidator, type AlertEventDataValidator } from "../lib/alert-event.ts";
import { createAjv } from "../lib/json-schema.ts";
import type { AlertmanagerWebhook } from "./webhook.ts";

/** The compiled validators. */
export interface Validators {
  /** `schemas/alertmanager-webhook.schema.json`. */
  readonly webhook: ValidateFunction<AlertmanagerWebhook>;
  /** `schemas/alert-event.schema.json` (the CloudEvent's `data`). */
  readonly eventData: AlertEventDataValidator;
}

/** Compiles both schemas (a few ms; done once at start-up). */
export function compileValidators(): Validators {
  return {
    webhook: createAjv().compile<AlertmanagerWebhook>(webhookSchema),
    eventData: compileAlertEventDataValidator(),
  };
}

/** Maximum number of schema errors returned to a caller. */
export const MAX_REPORTED_ERRORS = 20;

/** ajv errors as `{ path, message }`, at most {@link MAX_REPORTED_ERRORS}. */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined): { path: string; message: string }[] {
  return (errors ?? []).slice(0, MAX_REPORTED_ERRORS).map((error) => ({
    path: error.instancePath === "" ? "/" : error.instancePath,
    message: error.message ?? error.keyword,
  }));
}
