/**
 * Knative Eventing's install, rendered from Eventing's own YAML (the `config/` tree of the pinned
 * `knative.dev/eventing` module) the way its release does it with `ko resolve`: the same files,
 * in the same order, each `ko://knative.dev/eventing/cmd/<command>` replaced by the name of the
 * image `test/harness/bins/build.sh` made of that command, and nothing else changed. Pure: text in,
 * objects out; reading the files is `eventing-source.ts`'s job, placing Pods on a node
 * `eventing-placement.ts`'s.
 */
import { parseAllDocuments } from "yaml";

/**
 * The parts installed, as directories under `config/`, in install order: the core (Namespace,
 * CRDs, RBAC, ConfigMaps, controller, webhook and its configurations, the PingSource adapter),
 * the in-memory channel, and the multi-tenant channel-based Broker (release files
 * eventing-core.yaml, in-memory-channel.yaml, mt-channel-broker.yaml).
 */
export const EVENTING_PARTS = ["core", "channels/in-memory-channel", "brokers/mt-channel-broker"] as const;

/**
 * Files of those parts left out, with the reason: the workloads of Eventing features appmonitor
 * does not use, whose commands are therefore not built. Their CRDs and RBAC stay (the controller
 * watches those kinds whether or not their receivers run).
 */
export const EVENTING_LEFT_OUT: Readonly<Record<string, string>> = {
  "core/deployments/job-sink.yaml": "the JobSink receiver (Deployment, Service): appmonitor sends no event to a JobSink",
  "core/deployments/request-reply.yaml": "the RequestReply receiver (StatefulSet, Service): appmonitor makes no request-reply call",
};

/** The namespace Eventing installs into (its `core/100-namespace.yaml`). */
export const EVENTING_NAMESPACE = "knative-eventing";

/** Where our Eventing images are named: `<repository>/<command>:<version>`. */
export const EVENTING_IMAGE_REPOSITORY = "localhost/appmonitor/knative-eventing";

/** How Eventing's YAML names an image to be built from one of its commands. */
export const KO_COMMAND_PREFIX = "ko://knative.dev/eventing/cmd/";

/** One YAML file of Eventing's `config/` tree: its path relative to `config/`, and its text. */
export interface EventingFile {
  readonly path: string;
  readonly text: string;
}

/** A Kubernetes object of the install, as its YAML says it. */
export interface EventingObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [field: string]: unknown };
  [field: string]: unknown;
}

/**
 * The image made of Eventing command `command` (its package path under `cmd/`, such as
 * `broker/ingress`) at module version `version`: `localhost/appmonitor/knative-eventing/broker/ingress:v0.50.0`.
 * The same name build.sh's `eventing.sh` writes into the image archive.
 */
export function eventingImage(command: string, version: string): string {
  return `${EVENTING_IMAGE_REPOSITORY}/${command}:${version}`;
}

/** Orders paths as ko's recursive walk does: directory by directory, each one's entries by name (for Serving's install too). */
export function koWalkOrder(a: string, b: string): number {
  const as = a.split("/");
  const bs = b.split("/");
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    const x = as[i] as string;
    const y = bs[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return as.length - bs.length;
}

/**
 * The files of `paths` (relative to `config/`) that make the install, in install order: the
 * `.yaml` files under each of {@link EVENTING_PARTS}, in that order and walked as ko walks them,
 * less {@link EVENTING_LEFT_OUT}. READMEs, Go placeholders and stray files are not YAML and drop out.
 */
export function selectEventingFiles(paths: readonly string[]): string[] {
  return EVENTING_PARTS.flatMap((part) =>
    paths.filter((p) => p.startsWith(`${part}/`) && p.endsWith(".yaml") && !(p in EVENTING_LEFT_OUT)).sort(koWalkOrder),
  );
}

/**
 * Replaces every string of `value` that is a ko:// reference by what `image` returns for it;
 * the rest is copied as is.
 */
function replaceKoReferences(value: unknown, image: (reference: string) => string): unknown {
  if (typeof value === "string") return value.startsWith("ko://") ? image(value) : value;
  if (Array.isArray(value)) return value.map((v) => replaceKoReferences(v, image));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceKoReferences(v, image)]));
  }
  return value;
}

/**
 * Parses the objects of one file: every non-empty YAML document, which must be a Kubernetes object.
 * @throws Error naming the file on a YAML error or a document that is not an object with
 *   apiVersion, kind and metadata.name.
 */
export function parseEventingFile(file: EventingFile): EventingObject[] {
  return parseAllDocuments(file.text).flatMap((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${file.path}: document ${i + 1}: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) return [];
    const o = value as Partial<EventingObject>;
    if (typeof o.apiVersion !== "string" || typeof o.kind !== "string" || typeof o.metadata?.name !== "string") {
      throw new Error(`${file.path}: document ${i + 1} is not a Kubernetes object with apiVersion, kind and metadata.name`);
    }
    return [o as EventingObject];
  });
}

/**
 * The objects of `files` (already selected and ordered), in order, each ko:// reference replaced
 * by `image(command)`, the command its path under `koPrefix` (such as `ko://knative.dev/eventing/cmd/`).
 * `commands` are those build.sh builds: a reference to any other command, or outside `koPrefix`,
 * names an image that does not exist, and is refused rather than rendered. Eventing's install
 * ({@link renderEventing}) and Serving's (`serving-manifests.ts`) alike.
 * @throws Error naming the file and the reference.
 */
export function renderKoFiles(files: readonly EventingFile[], koPrefix: string, commands: readonly string[], image: (command: string) => string): EventingObject[] {
  const built = new Set(commands);
  return files.flatMap((file) =>
    parseEventingFile(file).map(
      (object) =>
        replaceKoReferences(object, (reference) => {
          const command = reference.startsWith(koPrefix) ? reference.slice(koPrefix.length) : undefined;
          if (command === undefined || !built.has(command)) {
            throw new Error(`${file.path}: ${object.kind} ${object.metadata.name} names ${reference}, which is not among the built commands (${commands.join(", ")})`);
          }
          return image(command);
        }) as EventingObject,
    ),
  );
}

/**
 * The install: the objects of `files` (already selected and ordered, {@link selectEventingFiles}),
 * in order, each ko:// reference replaced by {@link eventingImage} of its command at `version`
 * ({@link renderKoFiles} with {@link KO_COMMAND_PREFIX}). `commands` are those build.sh builds
 * (the eventing module's tool block, as paths under `cmd/`).
 * @throws Error naming the file and the reference.
 */
export function renderEventing(files: readonly EventingFile[], version: string, commands: readonly string[]): EventingObject[] {
  return renderKoFiles(files, KO_COMMAND_PREFIX, commands, (command) => eventingImage(command, version));
}
