/**
 * Reading an Alertmanager webhook request: content type, JSON, payload version, schema.
 * Payload reference: https://prometheus.io/docs/alerting/latest/configuration/#webhook_config
 * and `schemas/alertmanager-webhook.schema.json`.
 */
import validatePayload from "../../schemas/validators/alertmanager-webhook.js";
import { describeSchemaErrors, type SchemaValidator } from "../lib/json-schema.ts";
import { HttpError } from "../lib/runtime/errors.ts";
import type { FunctionRequest } from "../lib/runtime/types.ts";

/** Alert status, per alert and per payload. */
export type AlertStatus = "firing" | "resolved";

/** One alert of a webhook payload. */
export interface AlertmanagerAlert {
  readonly status: AlertStatus;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** RFC 3339. */
  readonly startsAt: string;
  /** RFC 3339; `0001-01-01T00:00:00Z` while not ended. */
  readonly endsAt: string;
  readonly generatorURL?: string;
  readonly fingerprint: string;
}

/** The webhook payload, version 4. */
export interface AlertmanagerWebhook {
  readonly version: "4";
  readonly groupKey?: string;
  /** Alerts left out because of `max_alerts`; absent = 0. */
  readonly truncatedAlerts?: number;
  readonly status: AlertStatus;
  readonly receiver: string;
  readonly groupLabels?: Readonly<Record<string, string>>;
  readonly commonLabels?: Readonly<Record<string, string>>;
  readonly commonAnnotations?: Readonly<Record<string, string>>;
  readonly externalURL?: string;
  readonly alerts: readonly AlertmanagerAlert[];
}

/** The only payload version understood. */
export const PAYLOAD_VERSION = "4";

/** `schemas/alertmanager-webhook.schema.json`, precompiled (`schemas/validators/alertmanager-webhook.js`). */
export const validateWebhook = validatePayload as SchemaValidator<AlertmanagerWebhook>;

/**
 * Parses and validates a webhook request body.
 *
 * @throws HttpError 415 unless the content type is `application/json` (what Alertmanager
 * sends); 400 "malformed JSON" with the parser's message; 400 for a payload that is not an
 * object or has no or another `version` (naming it); 400 with `details` = the schema errors
 * `[{ path, message }]` (at most 20) when it does not match the schema.
 */
export function readWebhook(request: FunctionRequest): AlertmanagerWebhook {
  const contentType = request.headers["content-type"];
  const mediaType = typeof contentType === "string" ? (contentType.split(";")[0] ?? "").trim().toLowerCase() : "";
  if (mediaType !== "application/json") {
    throw new HttpError(415, `content type must be application/json, got ${mediaType === "" ? "none" : JSON.stringify(mediaType.slice(0, 100))}`, {
      headers: { "accept-post": "application/json" },
    });
  }
  if (request.body.length === 0) throw new HttpError(400, "empty body: expected an Alertmanager webhook payload");
  let payload: unknown;
  try {
    payload = JSON.parse(request.body.toString("utf8"));
  } catch (error) {
    throw new HttpError(400, `malformed JSON: ${(error as Error).message.slice(0, 200)}`, { cause: error });
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new HttpError(400, "payload must be a JSON object (an Alertmanager webhook payload)");
  }
  const version = (payload as { version?: unknown }).version;
  if (version === undefined) throw new HttpError(400, `payload has no version: expected Alertmanager webhook version "${PAYLOAD_VERSION}"`);
  if (version !== PAYLOAD_VERSION) {
    throw new HttpError(400, `unsupported payload version ${JSON.stringify(version).slice(0, 40)}: this receiver understands version "${PAYLOAD_VERSION}"`);
  }
  if (!validateWebhook(payload)) {
    throw new HttpError(400, "payload does not match the Alertmanager webhook schema (version 4)", {
      details: describeSchemaErrors(validateWebhook.errors),
    });
  }
  return payload;
}
