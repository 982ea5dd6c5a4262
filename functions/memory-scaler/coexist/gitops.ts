/**
 * Which GitOps tool, if any, manages a workload, from the workload's own labels and annotations
 * (pure). A tool that manages it applies its manifest again and puts back the memory
 * memory-scaler raised, so `spec.gitOpsManaged` decides: `Skip` (the default) reports the value to
 * set in the manifest, `Patch` patches and warns.
 *
 * The signals accepted, each one the tool itself writes on every object it applies:
 * - Argo CD, annotation `argocd.argoproj.io/tracking-id` (`<app>:<group>/<kind>:<namespace>/<name>`):
 *   the tracking method `annotation` (Argo CD's default since 3.0) and `annotation+label` write it
 *   (https://argo-cd.readthedocs.io/en/stable/user-guide/resource_tracking/).
 * - Argo CD, label `argocd.argoproj.io/instance`: the tracking label when an install sets
 *   `application.instanceLabelKey` to it, which the same page recommends over the default.
 * - Flux, labels `kustomize.toolkit.fluxcd.io/name` and `kustomize.toolkit.fluxcd.io/namespace`
 *   (kustomize-controller) or `helm.toolkit.fluxcd.io/name` and `helm.toolkit.fluxcd.io/namespace`
 *   (helm-controller), both of a pair: Flux's inventory labels (https://fluxcd.io/flux/components/kustomize/kustomizations/).
 * Not accepted alone: `app.kubernetes.io/instance`, Argo CD's legacy default tracking label, which
 * Helm charts and operators also set (the same Argo CD page names the clash), so it would call a
 * plain `helm install` GitOps-managed.
 */
import { type ContainerChange, FIELD_MANAGER } from "../model.ts";

/** The Argo CD tracking annotation. */
export const ARGOCD_TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id";
/** The Argo CD tracking label an install may choose (`application.instanceLabelKey`). */
export const ARGOCD_INSTANCE_LABEL = "argocd.argoproj.io/instance";

/** The label pairs Flux's controllers put on what they apply: `<prefix>/name` and `<prefix>/namespace`. */
const FLUX_PREFIXES = [
  { prefix: "kustomize.toolkit.fluxcd.io", owner: "Kustomization" },
  { prefix: "helm.toolkit.fluxcd.io", owner: "HelmRelease" },
] as const;

/** A GitOps tool that manages a workload, and the evidence. */
export interface GitOpsOwner {
  readonly tool: "Argo CD" | "Flux";
  /** The label or annotation that says so, as `key=value` (the Flux pair as `key=value,key=value`). */
  readonly signal: string;
  /** What owns it there: the Argo CD Application, or the Flux Kustomization/HelmRelease as `Kind namespace/name`. */
  readonly owner: string;
}

/**
 * The GitOps tool managing an object with these `labels` and `annotations` (its own
 * `metadata`, not its Pod template's), or undefined. Argo CD's annotation wins over its label,
 * Argo CD over Flux (an object both claim is in trouble anyway; one name is enough to warn).
 */
export function gitOpsOwner(metadata: { readonly labels?: Readonly<Record<string, string>> | undefined; readonly annotations?: Readonly<Record<string, string>> | undefined } | undefined): GitOpsOwner | undefined {
  const labels = metadata?.labels ?? {};
  const annotations = metadata?.annotations ?? {};
  const tracking = annotations[ARGOCD_TRACKING_ANNOTATION];
  if (tracking !== undefined && tracking !== "") {
    // `<app>:<group>/<kind>:<namespace>/<name>`; the application is what a user looks up.
    return { tool: "Argo CD", signal: `${ARGOCD_TRACKING_ANNOTATION}=${tracking}`, owner: `Application ${tracking.split(":")[0] ?? tracking}` };
  }
  const instance = labels[ARGOCD_INSTANCE_LABEL];
  if (instance !== undefined && instance !== "") return { tool: "Argo CD", signal: `${ARGOCD_INSTANCE_LABEL}=${instance}`, owner: `Application ${instance}` };
  for (const { prefix, owner } of FLUX_PREFIXES) {
    const name = labels[`${prefix}/name`];
    const namespace = labels[`${prefix}/namespace`];
    if (name !== undefined && name !== "" && namespace !== undefined && namespace !== "") {
      return { tool: "Flux", signal: `${prefix}/name=${name},${prefix}/namespace=${namespace}`, owner: `${owner} ${namespace}/${name}` };
    }
  }
  return undefined;
}

/** "container memhog: resources.limits.memory 768Mi, resources.requests.memory 512Mi; …": what to write in a manifest. */
export function manifestValues(changes: readonly ContainerChange[]): string {
  return changes
    .map((c) => `container ${c.container}: resources.limits.memory ${c.to.limit}${c.to.request === undefined ? "" : `, resources.requests.memory ${c.to.request}`}`)
    .join("; ");
}

/**
 * The note of the `GitOpsManaged` Warnings that come with a scale under `spec.gitOpsManaged:
 * Patch`: the tool's next sync may put the manifest's memory back (a revert, then bounded by
 * `spec.revertBudgetPerHour`), and how to keep the scale.
 */
export function gitOpsPatchedNote(workload: { readonly kind: string; readonly name: string }, gitOps: GitOpsOwner, changes: readonly ContainerChange[]): string {
  return (
    `scaled ${workload.kind} ${workload.name}, which ${gitOps.tool} manages (${gitOps.owner}, ${gitOps.signal}): its next sync may put the manifest's memory back; ` +
    `to keep the scale, set in the manifest: ${manifestValues(changes)}, or have ${gitOps.tool} leave the fields of field manager ${FIELD_MANAGER} alone (docs/gitops.md)`
  );
}
