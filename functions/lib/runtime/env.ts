/**
 * Reading configuration from the environment, as Knative passes it: each helper validates
 * one variable and throws {@link ConfigError} naming it, so a bad deployment fails at start-up
 * with one clear line instead of at the first request. An empty value counts as unset.
 */
import { readFileSync } from "node:fs";
import type { Env } from "./types.ts";

/** A configuration problem; `message` is `<VARIABLE>: <problem>`. */
export class ConfigError extends Error {
  readonly variable: string;

  constructor(variable: string, problem: string, options?: { cause?: unknown }) {
    super(`${variable}: ${problem}`, options);
    this.name = "ConfigError";
    this.variable = variable;
  }
}

/** The variable's value, or `undefined` when unset or empty. */
export function readString(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

/**
 * The variable's value. @throws ConfigError "`NAME`: is required: <hint>" when unset or empty.
 */
export function requireString(env: Env, name: string, hint: string): string {
  const value = readString(env, name);
  if (value === undefined) throw new ConfigError(name, `is required: ${hint}`);
  return value;
}

/**
 * A base-10 integer in `[min, max]`, or `fallback` when unset.
 * @throws ConfigError when not an integer or out of range.
 */
export function readInteger(env: Env, name: string, fallback: number, range: { min: number; max: number }): number {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(name, `must be an integer, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < range.min || value > range.max) {
    throw new ConfigError(name, `must be between ${range.min} and ${range.max}, got ${value}`);
  }
  return value;
}

/**
 * One of `allowed` (case-sensitive), or `fallback` when unset.
 * @throws ConfigError listing the allowed values.
 */
export function readEnum<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  const found = allowed.find((candidate) => candidate === raw);
  if (found === undefined) throw new ConfigError(name, `must be one of ${allowed.join(", ")}, got ${JSON.stringify(raw)}`);
  return found;
}

/**
 * An absolute http(s) URL, or `undefined` when unset.
 * @throws ConfigError when it does not parse or has another scheme.
 */
export function readHttpUrl(env: Env, name: string): URL | undefined {
  const raw = readString(env, name);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch (error) {
    throw new ConfigError(name, `must be an absolute http(s) URL, got ${JSON.stringify(raw)}`, { cause: error });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(name, `must be an http or https URL, got ${JSON.stringify(raw)}`);
  }
  return url;
}

/**
 * A secret given either inline as `NAME` or as a mounted file `NAME_FILE` (a Kubernetes
 * Secret volume); trailing CR/LF of the file are dropped (editors and `kubectl create secret
 * --from-file` keep them). `undefined` when neither is set.
 * @throws ConfigError when both are set, the file cannot be read, or it is empty.
 */
export function readSecret(env: Env, name: string): string | undefined {
  const inline = readString(env, name);
  const fileVariable = `${name}_FILE`;
  const file = readString(env, fileVariable);
  if (inline !== undefined && file !== undefined) {
    throw new ConfigError(name, `set either ${name} or ${fileVariable}, not both`);
  }
  if (file === undefined) return inline;
  let content: string;
  try {
    content = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(fileVariable, `cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  const secret = content.replace(/[\r\n]+$/, "");
  if (secret === "") throw new ConfigError(fileVariable, `${file} is empty`);
  return secret;
}
