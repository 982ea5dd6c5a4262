/**
 * The stack's local OCI registry and the real node's mirrors of it, as pure text from plain data:
 * distribution's registry configuration, and containerd's `hosts.toml` for each registry whose
 * images the stack serves. The process and the pushes are `registry.ts`'s.
 *
 * Naming: an image keeps its whole name inside the local registry, registry host included
 * (`quay.io/metral/memhog:v0.0.1` is the repository `quay.io/metral/memhog` there), so two
 * registries' images never collide, and a mirror is one path prefix per registry
 * (`http://127.0.0.1:<port>/v2/quay.io`).
 */
import { stringify } from "yaml";

/** A parsed image reference: `host/path:tag`. */
export interface ImageReference {
  /** The registry host, e.g. `quay.io`, `ghcr.io`, `localhost:5000`. */
  readonly host: string;
  /** The repository inside that registry, e.g. `metral/memhog`. */
  readonly path: string;
  readonly tag: string;
}

/** A path component of a repository name (the distribution spec's grammar). */
const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";

/** Docker's rule: a name's first component is a registry host only with a dot, a port or as `localhost`. */
function isRegistryHost(host: string): boolean {
  return /^[A-Za-z0-9.-]+(?::\d+)?$/.test(host) && (host.includes(".") || host.includes(":") || host === "localhost");
}

/**
 * Splits a fully qualified reference `host/path:tag` (the form the stack's images have; no
 * digest, no short Docker Hub name).
 * @throws Error naming the reference when it has no registry host, no path or no tag.
 */
export function parseReference(reference: string): ImageReference {
  const m = new RegExp(`^([^/]+)/(${COMPONENT}(?:/${COMPONENT})*):([\\w][\\w.-]{0,127})$`).exec(reference);
  const host = m?.[1] ?? "";
  if (!m || !isRegistryHost(host)) {
    throw new Error(`${JSON.stringify(reference)} is not a fully qualified image reference (registry host/path:tag)`);
  }
  return { host, path: m[2] ?? "", tag: m[3] ?? "" };
}

/**
 * Where the local registry at `address` (`127.0.0.1:<port>`) holds `reference`: the same name
 * under the registry's address, e.g. `127.0.0.1:5000/quay.io/metral/memhog:v0.0.1`.
 */
export function mirroredReference(address: string, reference: string): string {
  const { host, path, tag } = parseReference(reference);
  return `${address}/${host}/${path}:${tag}`;
}

/** The registry hosts of `references`, each once, sorted: the registries that get a mirror. */
export function mirroredHosts(references: readonly string[]): string[] {
  return [...new Set(references.map((r) => parseReference(r).host))].sort();
}

/**
 * The directory under containerd's `config_path` (its `certs.d`) that holds `host`'s
 * hosts.toml: the host itself, a port written `host_port_` as containerd 1.6 looks for it
 * (remotes/docker/config hostDirectory).
 */
export function hostsDirName(host: string): string {
  const i = host.lastIndexOf(":");
  return i > 0 ? `${host.slice(0, i)}_${host.slice(i + 1)}_` : host;
}

/**
 * containerd's `hosts.toml` for `host`, making the local registry at `address` its only server:
 * `server` (not a `[host."…"]` entry, which containerd would try before `server`) so that containerd
 * has no default left to fall back to (it adds `https://<host>` only when `server` is empty);
 * plain HTTP; `override_path` with the path `/v2/<host>`, the prefix under which the registry holds
 * that host's images; pull and resolve only (nothing is pushed through containerd). It ends with
 * an empty `[host]` table: containerd 1.6 refuses a file without one ("invalid `host` tree",
 * remotes/docker/config getSortedHosts) and then pulls from `https://<host>` as if there were none.
 * @throws Error when `host` is not a registry host name (with a dot, a port, or `localhost`).
 */
export function hostsToml(host: string, address: string): string {
  if (!isRegistryHost(host)) throw new Error(`${JSON.stringify(host)} is not a registry host`);
  return [
    "# Written by test/harness/stack/registry-config.ts: the appmonitor stack's local registry serves this host's images.",
    `server = ${JSON.stringify(`http://${address}/v2/${host}`)}`,
    "override_path = true",
    'capabilities = ["pull", "resolve"]',
    "# No host but the server; the table must be there for containerd 1.6 to read this file at all.",
    "[host]",
    "",
  ].join("\n");
}

/**
 * distribution's registry configuration (version 0.1): HTTP on `address` (`127.0.0.1:<port>`),
 * files under `rootDirectory`, no deletes, access log on (what the registry served, and to
 * whom, is in its log), no debug server, no upload purging (a stack lives hours, not weeks), no
 * storage health check.
 */
export function registryConfig(input: { address: string; rootDirectory: string }): string {
  return stringify({
    version: 0.1,
    log: { level: "info", formatter: "text", accesslog: { disabled: false } },
    storage: {
      filesystem: { rootdirectory: input.rootDirectory },
      delete: { enabled: false },
      maintenance: { uploadpurging: { enabled: false } },
    },
    http: { addr: input.address, headers: { "X-Content-Type-Options": ["nosniff"] } },
    health: { storagedriver: { enabled: false } },
  });
}

/**
 * The registry's environment additions: OpenTelemetry's span exporter off (distribution 3 starts
 * an OTLP exporter by default, which would dial localhost:4318 for every request's trace).
 */
export const REGISTRY_ENV = { OTEL_TRACES_EXPORTER: "none" } as const;
