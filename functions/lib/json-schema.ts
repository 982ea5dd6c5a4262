/**
 * The one way the functions set up ajv for the JSON Schemas in `schemas/`: draft-07, every
 * error collected, strict mode, and the ajv-formats formats (`date-time` is RFC 3339 §5.6,
 * https://www.rfc-editor.org/rfc/rfc3339#section-5.6).
 */
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";

// ajv-formats is CommonJS with `exports.default`; under Node's ESM loader the default import is the module object or the function.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

/**
 * A new ajv instance with `allErrors` and `strict` on and the standard formats added. Compile
 * each schema once per process (a few ms, at start-up); one instance accepts a schema `$id`
 * only once, so a second compile of the same schema needs another instance.
 */
export function createAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv;
}
