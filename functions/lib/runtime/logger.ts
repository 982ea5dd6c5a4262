/**
 * JSON logs with pino: one object per line on stdout, ISO time, the level as a word, and the
 * function's name on every line so a log pipeline can tell the functions apart.
 */
import { pino } from "pino";
import type { DestinationStream, Logger } from "pino";
import type { LogLevel } from "./config.ts";

/**
 * Creates the process logger. `destination` defaults to stdout; tests pass a stream to
 * capture or drop the lines.
 */
export function createLogger(functionName: string, level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { function: functionName },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
