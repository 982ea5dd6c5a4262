/**
 * Knative Serving's install, all but the ingress layer, rendered from Serving's own YAML (the
 * `config/core/` tree of the pinned `knative.dev/serving` module) as its release's serving-core.yaml
 * is: the same files in ko's walk order, each `ko://knative.dev/serving/cmd/<command>` replaced by
 * the name of the image `test/harness/bins/serving.sh` made of that command. What this machine
 * needs beyond that is kept in separate named steps below, each changing one ConfigMap's data:
 * {@link withoutIngress}, {@link skippingTagResolution} and, for a test, {@link withAutoscalerWindows}.
 * Pure: text in, objects out; reading the files is `serving-source.ts`'s job, placing Pods on a
 * node `eventing-placement.ts`'s.
 */
import { koWalkOrder, renderKoFiles, type EventingFile, type EventingObject } from "./eventing-manifests.ts";

/** The namespace Serving installs into (its `core/100-namespace.yaml`). */
export const SERVING_NAMESPACE = "knative-serving";

/** Where our Serving images are named: `<repository>/<command>:<version>`. */
export const SERVING_IMAGE_REPOSITORY = "localhost/appmonitor/knative-serving";

/** How Serving's YAML names an image to be built from one of its commands. */
export const SERVING_KO_PREFIX = "ko://knative.dev/serving/cmd/";

/**
 * Files of `config/core/` that are symbolic links in Serving's repository (into its vendored
 * knative.dev/networking and knative.dev/caching), which a Go module zip leaves out: their path
 * under `config/`, and the module and file they point at. Without them the controller has no
 * ServerlessService, Ingress or Certificate kinds to create and no `config-network` to read.
 */
export const SERVING_LINKED_FILES: Readonly<Record<string, { readonly module: "knative.dev/networking" | "knative.dev/caching"; readonly file: string }>> = {
  "core/300-resources/certificate.yaml": { module: "knative.dev/networking", file: "config/certificate.yaml" },
  "core/300-resources/domain-claim.yaml": { module: "knative.dev/networking", file: "config/domain-claim.yaml" },
  "core/300-resources/image.yaml": { module: "knative.dev/caching", file: "config/image.yaml" },
  "core/300-resources/ingress.yaml": { module: "knative.dev/networking", file: "config/ingress.yaml" },
  "core/300-resources/serverlessservice.yaml": { module: "knative.dev/networking", file: "config/serverlessservice.yaml" },
  "core/configmaps/network.yaml": { module: "knative.dev/networking", file: "config/config-network.yaml" },
};

/**
 * The ingress class {@link withoutIngress} names: one that no controller implements, as none runs
 * here (Kourier, Istio and Contour need Envoy). Serving's Route reconciler still creates each
 * Route's KIngress with it; nothing reconciles that, so Routes and Knative Services stay not Ready.
 */
export const NO_INGRESS_CLASS = "none.ingress.networking.knative.dev";

/**
 * Registries whose tags Serving's controller does not resolve to digests: its defaults
 * (`kind.local,ko.local,dev.local`, config-deployment's `_example`) and `index.docker.io`, the
 * registry go-containerregistry (which Serving parses names with) reads into the images built here
 * and imported into the real node by tag (`localhost/appmonitor/…`):
 * it takes a first component for a registry only with a dot or a colon, so `localhost/…` is a
 * Docker Hub repository to it. No Pod reaches a registry there. The functions' images are named
 * by digest, which Serving never resolves.
 */
export const SKIP_TAG_RESOLVING = ["kind.local", "ko.local", "dev.local", "index.docker.io"] as const;

/**
 * The image made of Serving command `command` (its package path under `cmd/`, such as `queue`)
 * at module version `version`: `localhost/appmonitor/knative-serving/queue:v0.50.0`, the name
 * serving.sh writes into the image archive.
 */
export function servingImage(command: string, version: string): string {
  return `${SERVING_IMAGE_REPOSITORY}/${command}:${version}`;
}

/** The files of `paths` (relative to `config/`) that make the install: the `.yaml` files under `core/`, walked as ko walks them. */
export function selectServingFiles(paths: readonly string[]): string[] {
  return paths.filter((p) => p.startsWith("core/") && p.endsWith(".yaml")).sort(koWalkOrder);
}

/**
 * The install: the objects of `files` (selected and ordered, {@link selectServingFiles}), each
 * ko:// reference replaced by {@link servingImage} of its command at `version`.
 * @throws Error naming the file and a reference to a command not among `commands` (those built).
 */
export function renderServing(files: readonly EventingFile[], version: string, commands: readonly string[]): EventingObject[] {
  return renderKoFiles(files, SERVING_KO_PREFIX, commands, (command) => servingImage(command, version));
}

/**
 * `objects` with ConfigMap `name` of {@link SERVING_NAMESPACE}'s `data` given `entries` (over
 * any of the same key); the rest, and the inputs, as they are.
 * @throws Error when the install has no such ConfigMap.
 */
function withConfigData(objects: readonly EventingObject[], name: string, entries: Readonly<Record<string, string>>): EventingObject[] {
  if (!objects.some((o) => o.kind === "ConfigMap" && o.metadata.name === name && o.metadata.namespace === SERVING_NAMESPACE)) {
    throw new Error(`Serving's install has no ConfigMap ${SERVING_NAMESPACE}/${name}`);
  }
  return objects.map((o) => (o.kind === "ConfigMap" && o.metadata.name === name && o.metadata.namespace === SERVING_NAMESPACE
    ? { ...structuredClone(o), data: { ...(o.data as Record<string, string> | undefined), ...entries } }
    : o));
}

/** config-network says there is no ingress: its `ingress-class` is {@link NO_INGRESS_CLASS}. */
export function withoutIngress(objects: readonly EventingObject[]): EventingObject[] {
  return withConfigData(objects, "config-network", { "ingress-class": NO_INGRESS_CLASS });
}

/** config-deployment's `registries-skipping-tag-resolving` is {@link SKIP_TAG_RESOLVING}. */
export function skippingTagResolution(objects: readonly EventingObject[]): EventingObject[] {
  return withConfigData(objects, "config-deployment", { "registries-skipping-tag-resolving": SKIP_TAG_RESOLVING.join(",") });
}

/**
 * The autoscaler's windows a test shortens, so that scale to zero is watched in seconds rather
 * than minutes: the stable window (default 60 s; Serving's minimum is 6 s) and the grace period
 * before the last Pod goes (default 30 s). Durations as config-autoscaler writes them (`6s`).
 */
export interface AutoscalerWindows {
  readonly stableWindow: string;
  readonly scaleToZeroGracePeriod: string;
}

/** config-autoscaler with `windows` ({@link AutoscalerWindows}); Serving's defaults otherwise. */
export function withAutoscalerWindows(objects: readonly EventingObject[], windows: AutoscalerWindows): EventingObject[] {
  return withConfigData(objects, "config-autoscaler", { "stable-window": windows.stableWindow, "scale-to-zero-grace-period": windows.scaleToZeroGracePeriod });
}
