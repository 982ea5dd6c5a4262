/**
 * The shared function runtime: what a function folder imports. The contract is documented in
 * `types.ts`; the launcher is `functions/run.ts`.
 */
export type * from "./types.ts";
export { HttpError, RequestAbortedError, toHttpError } from "./errors.ts";
export { HANDLED_STATUS, OUTCOME_HEADER, REASON_HEADER } from "./cloudevent.ts";
export { ConfigError, readEnum, readHttpUrl, readInteger, readSecret, readString, requireString } from "./env.ts";
export { BODY_LIMIT_BYTES, DEFAULT_PORT } from "./config.ts";
export { startServer } from "./server.ts";
export type { RunningServer, StartOptions } from "./server.ts";
