/**
 * JSON Schema validators for what alert-receiver reads and writes, compiled once with ajv
 * (draft-07) and ajv-formats (`date-time` is RFC 3339 §5.6, https://www.rfc-editor.org/rfc/rfc3339#section-5.6).
 */
import { Ajv } from "ajv";
import type { ErrorObject, ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import webhookSchema from "../../schemas/alertmanager-webhook.schema.json" with { type: "json" };
import eventDataSchema from "../../schemas/alert-event.schema.json" with { type: "json" };
import type { AlertmanagerWebhook } from "./webhook.ts";
import type { AlertEventData } from "./mapping.ts";

// ajv-formats is CommonJS with `exports.default`; under Node's ESM loader the default import is the module object or the function.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

/** The compiled validators. */
export interface Validators {
  /** `schemas/alertmanager-webhook.schema.json`. */
  readonly webhook: ValidateFunction<AlertmanagerWebhook>;
  /** `schemas/alert-event.schema.json` (the CloudEvent's `data`). */
  readonly eventData: ValidateFunction<AlertEventData>;
}

/** Compiles both schemas (a few ms; done once at start-up). */
export function compileValidators(): Validators {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  return {
    webhook: ajv.compile<AlertmanagerWebhook>(webhookSchema),
    eventData: ajv.compile<AlertEventData>(eventDataSchema),
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
