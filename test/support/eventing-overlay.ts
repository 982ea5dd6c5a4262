/**
 * What test/harness/eventing-overlay may change in the shipped knative/ files it renders, and the check
 * that it changes nothing else: Knative Serving cannot run on the stack's real node, so each
 * reference to a Serving `Service` (a Trigger's subscriber, a delivery's dead-letter sink, the
 * SinkBinding's subject) may name what stands in for it instead, under the same name, and a shipped
 * Knative Service may run as a Deployment of the same name and Pod template (its image the same
 * Knative command built here); every other field must be byte-for-byte what users install.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";
import { parseManifests, type Manifest } from "./knative.ts";

/** The kind a shipped reference names when it means a Knative Service. */
export const SERVING_SERVICE = { apiVersion: "serving.knative.dev/v1", kind: "Service" } as const;

/** What may stand in for a Knative Service of the same name: its `v1` Service, or (for a SinkBinding's subject) its Deployment. */
export const STAND_INS: readonly { readonly apiVersion: string; readonly kind: string }[] = [
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "apps/v1", kind: "Deployment" },
];

/** One difference between a shipped object and its rendered form that the overlay may not make. */
export interface OverlayDifference {
  /** A JSON Pointer into the object (`/spec/subscriber/ref/name`); "" for the whole object. */
  readonly path: string;
  readonly shipped: unknown;
  readonly rendered: unknown;
}

/** The shipped files and the overlay's own files of a kustomization, as paths. */
export interface OverlaySources {
  /** Resources outside the overlay's directory: the shipped files it renders. */
  readonly shipped: string[];
  /** Resources inside it: what it adds (stand-ins for what cannot run). */
  readonly own: string[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Whether `value` is an object reference to a Knative Service (`apiVersion`, `kind`, `name`). */
export function isServingReference(value: unknown): value is Record<string, unknown> & { name: string } {
  return isRecord(value) && value.apiVersion === SERVING_SERVICE.apiVersion && value.kind === SERVING_SERVICE.kind && typeof value.name === "string";
}

/** Whether `rendered` is an allowed stand-in for the Serving reference `shipped`: the same fields and name, a {@link STAND_INS} kind. */
function isStandIn(shipped: Record<string, unknown>, rendered: unknown): boolean {
  if (!isRecord(rendered)) return false;
  const keys = (o: Record<string, unknown>) => Object.keys(o).sort().join(",");
  if (keys(shipped) !== keys(rendered)) return false;
  if (!STAND_INS.some((s) => s.apiVersion === rendered.apiVersion && s.kind === rendered.kind)) return false;
  return Object.keys(shipped).every((k) => k === "apiVersion" || k === "kind" || shipped[k] === rendered[k]);
}

/**
 * The differences between a shipped object and its rendered form other than Serving references
 * substituted by stand-ins (a Serving reference left as it is counts as no difference here:
 * {@link servingReferences} finds those). Objects compare by key regardless of order, arrays
 * element by element, scalars by value and type.
 * @param at the JSON Pointer of `shipped` within its object ("" at the top).
 */
export function overlayDifferences(shipped: unknown, rendered: unknown, at = ""): OverlayDifference[] {
  if (at !== "" && isServingReference(shipped)) {
    return isStandIn(shipped, rendered) || JSON.stringify(shipped) === JSON.stringify(rendered) ? [] : [{ path: at, shipped, rendered }];
  }
  if (isRecord(shipped) && isRecord(rendered)) {
    const keys = [...new Set([...Object.keys(shipped), ...Object.keys(rendered)])].sort();
    return keys.flatMap((k) => overlayDifferences(shipped[k], rendered[k], `${at}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`));
  }
  if (Array.isArray(shipped) && Array.isArray(rendered) && shipped.length === rendered.length) {
    return shipped.flatMap((item, i) => overlayDifferences(item, rendered[i], `${at}/${i}`));
  }
  return Object.is(shipped, rendered) ? [] : [{ path: at, shipped, rendered }];
}

/** The JSON Pointers of every Serving reference inside `value` (its top level excluded: an object is not a reference). */
export function servingReferences(value: unknown, at = ""): string[] {
  if (at !== "" && isServingReference(value)) return [at];
  if (Array.isArray(value)) return value.flatMap((item, i) => servingReferences(item, `${at}/${i}`));
  if (isRecord(value)) return Object.entries(value).flatMap(([k, v]) => servingReferences(v, `${at}/${k}`));
  return [];
}

/** `apiVersion kind namespace/name` of an object, which identifies it in a rendered install. */
export function objectKey(o: Manifest): string {
  return `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}

/** Where the stack's images of Knative's own commands are named (`test/harness/bins/eventing.sh`), a tag being the pinned module's version. */
const LOCAL_KNATIVE_IMAGE = /^localhost\/appmonitor\/knative-eventing\/([\w.-]+):v\d+\.\d+\.\d+$/;

/** Whether a shipped object is itself a Knative Service (which the overlay runs as a Deployment). */
export function isServingService(o: Manifest): boolean {
  return o.apiVersion === SERVING_SERVICE.apiVersion && o.kind === SERVING_SERVICE.kind;
}

/** The key of the object the overlay renders for a shipped one: a Knative Service's Deployment of the same name, else the same key. */
export function renderedKey(o: Manifest): string {
  return isServingService(o) ? objectKey({ ...o, apiVersion: "apps/v1", kind: "Deployment" }) : objectKey(o);
}

type PodTemplateOwner = { spec?: { template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: { containers?: { image?: string }[] } } } };

/**
 * The differences between a shipped Knative Service and the Deployment standing in for it, other
 * than those the stand-in needs: `apiVersion`/`kind` apps/v1 Deployment, `spec.replicas` its
 * `autoscaling.knative.dev/min-scale` (1 without one), `spec.selector` its template's
 * `app.kubernetes.io/name` label, and each container's image the same Knative command's image
 * built here (`localhost/appmonitor/knative-eventing/<command>:<version>` for `…/cmd/<command>`).
 * Everything else, the whole Pod template included, must be as shipped.
 */
export function servingServiceStandInDifferences(shipped: Manifest, rendered: unknown): OverlayDifference[] {
  const expected = structuredClone(shipped) as Manifest & PodTemplateOwner & { spec: Record<string, unknown> };
  const template = expected.spec.template;
  Object.assign(expected, { apiVersion: "apps/v1", kind: "Deployment" });
  expected.spec.replicas = Number(template?.metadata?.annotations?.["autoscaling.knative.dev/min-scale"] ?? 1);
  expected.spec.selector = { matchLabels: { "app.kubernetes.io/name": template?.metadata?.labels?.["app.kubernetes.io/name"] } };
  const renderedContainers = (rendered as PodTemplateOwner | undefined)?.spec?.template?.spec?.containers ?? [];
  for (const [i, container] of (template?.spec?.containers ?? []).entries()) {
    const image = renderedContainers[i]?.image ?? "";
    if (LOCAL_KNATIVE_IMAGE.exec(image)?.[1] === container.image?.split("/").pop()) container.image = image;
  }
  return overlayDifferences(expected, rendered);
}

/**
 * The resources of the kustomization in `overlayDir`, split into the shipped files (outside it)
 * and its own (inside it).
 * @throws Error when kustomization.yaml cannot be read or lists something that is not a file path.
 */
export async function overlaySources(overlayDir: string): Promise<OverlaySources> {
  const kustomization = parse(await readFile(path.join(overlayDir, "kustomization.yaml"), "utf8")) as { resources?: unknown };
  const resources = Array.isArray(kustomization.resources) ? kustomization.resources : [];
  const shipped: string[] = [];
  const own: string[] = [];
  for (const r of resources) {
    if (typeof r !== "string" || !/\.ya?ml$/.test(r)) throw new Error(`${overlayDir}/kustomization.yaml: resource ${JSON.stringify(r)} is not a YAML file`);
    const file = path.resolve(overlayDir, r);
    (path.relative(overlayDir, file).startsWith("..") ? shipped : own).push(file);
  }
  return { shipped, own };
}

/** The objects of YAML files, in order. @throws Error on a file that cannot be read or parsed. */
export async function objectsOf(files: readonly string[]): Promise<Manifest[]> {
  const texts = await Promise.all(files.map((f) => readFile(f, "utf8")));
  return texts.flatMap((text, i) => parseManifests(text, files[i] ?? ""));
}
