/**
 * How the two install profiles may differ, and the check that they differ in nothing else: the
 * Eventing-only profile (knative/eventing-only/) runs each Knative Service of the Serving profile
 * (knative/) as a Deployment of the same name and Pod template, and each reference to a Serving
 * `Service` (a Trigger's subscriber, a delivery's dead-letter sink, the SinkBinding's subject)
 * names what stands in for it, under the same name; every other field must be the same.
 */
import type { Manifest } from "./knative.ts";

/** The kind a shipped reference names when it means a Knative Service. */
export const SERVING_SERVICE = { apiVersion: "serving.knative.dev/v1", kind: "Service" } as const;

/** What may stand in for a Knative Service of the same name: its `v1` Service, or (for a SinkBinding's subject) its Deployment. */
export const STAND_INS: readonly { readonly apiVersion: string; readonly kind: string }[] = [
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "apps/v1", kind: "Deployment" },
];

/** One difference between a Serving profile's object and its Eventing-only form that the profile may not make. */
export interface OverlayDifference {
  /** A JSON Pointer into the object (`/spec/subscriber/ref/name`); "" for the whole object. */
  readonly path: string;
  readonly shipped: unknown;
  readonly rendered: unknown;
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

/** Whether a shipped object is itself a Knative Service (which the Eventing-only profile runs as a Deployment). */
export function isServingService(o: Manifest): boolean {
  return o.apiVersion === SERVING_SERVICE.apiVersion && o.kind === SERVING_SERVICE.kind;
}

/** The key of the object the Eventing-only profile has for a Serving one: a Knative Service's Deployment of the same name, else the same key. */
export function renderedKey(o: Manifest): string {
  return isServingService(o) ? objectKey({ ...o, apiVersion: "apps/v1", kind: "Deployment" }) : objectKey(o);
}

type PodTemplateOwner = {
  metadata: { labels?: Record<string, string> };
  spec: Record<string, unknown> & { template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Record<string, unknown> } };
};

/** The Knative Serving annotations of a Revision template that a Deployment has no use for. */
const AUTOSCALING_ANNOTATIONS = ["autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/max-scale", "autoscaling.knative.dev/target-burst-capacity"];

/**
 * The Deployment the Eventing-only profile must make of a Knative Service: `apps/v1` Deployment of
 * the same name, one replica, selected by its template's `app.kubernetes.io/name` label, the
 * template itself unchanged but for what only Knative Serving reads (`timeoutSeconds`, the
 * autoscaling annotations) and the Service's `networking.knative.dev/visibility` label gone.
 */
export function expectedDeployment(ksvc: Manifest): Manifest {
  const expected = structuredClone(ksvc) as Manifest & PodTemplateOwner;
  Object.assign(expected, { apiVersion: "apps/v1", kind: "Deployment" });
  delete expected.metadata.labels?.["networking.knative.dev/visibility"];
  const template = expected.spec.template;
  expected.spec.replicas = 1;
  expected.spec.selector = { matchLabels: { "app.kubernetes.io/name": template?.metadata?.labels?.["app.kubernetes.io/name"] } };
  delete template?.spec?.timeoutSeconds;
  const annotations = template?.metadata?.annotations;
  for (const a of AUTOSCALING_ANNOTATIONS) delete annotations?.[a];
  if (annotations && Object.keys(annotations).length === 0) delete template?.metadata?.annotations;
  return expected;
}

/**
 * The differences between a shipped Knative Service and the Eventing-only profile's Deployment of
 * it, other than those {@link expectedDeployment} names: everything else, the whole Pod template
 * (image, env, probes, resources, securityContext, volumes) included, must be as shipped.
 */
export function deploymentDifferences(ksvc: Manifest, rendered: unknown): OverlayDifference[] {
  return overlayDifferences(expectedDeployment(ksvc), rendered);
}
